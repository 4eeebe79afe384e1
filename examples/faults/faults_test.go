//go:build linux && faults

package faults_test

// Fault injection against the three real example servers:
// examples/go-server (the real plugin in the Go host), examples/python-server (the Python
// host) and examples/typescript-server (the TypeScript host), with real
// files, real processes and the official MCP Go SDK client as the MCP host.
// Every fault runs once per server. For every fault the suite checks that
// the server keeps answering MCP tool calls, that nothing but JSON-RPC
// reaches its stdout, that no wrong session is resumed (only this host's
// own session, and only when it should be), that stderr carries the line
// saying what happened, and that no token ever appears in stderr.
//
// Each fault adds one row per server to a table; at the end TestFaults
// merges them (one row per fault, one column per language) and compares the
// result with the table between the fault-table markers in
// docs/RELIABILITY.md (run with -update-fault-table to rewrite it). Faults
// that need root, mount or PID namespaces skip without them; CI runs as
// root, where they all run.
//
// This file (a little over 500 lines) is the suite's spine: the fault list,
// TestFaults and the table merge; the faults themselves live in the
// faults_*_test.go files by concern.
//
// The suite is behind the build tag "faults" so that the plain `go test
// ./...` of `make test-go` does not run it; `make test-faults` does:
//
//	go test -tags faults -count=1 -run '^TestFaults$' ./examples/faults/ -args -faults.require
//
// Servers: the Go server is built by TestMain; the Python server runs as
// <repo>/.venv/bin/python examples/python-server/server.py (`make
// python-setup`), the TypeScript server as node
// examples/typescript-server/dist/server.js (`make typescript-setup`). A
// language whose server is not built is skipped with a message saying
// which make target builds it, unless -faults.require is given, when it
// fails, as it does when any fault skips, so that the table is always
// compared. -faults.langs picks languages (default go,python,typescript).
//
// Files, by concern: this one holds the flags, the per-fault fixture and
// TestFaults; faults_table_test.go the fault table; faults 1-6 (the state
// directory) are in faults_statedir_test.go, 7-9 (token contents and
// concurrency) in faults_tokens_test.go, 10-17 (the host's identity) in
// faults_identity_test.go, the later ones in faults_lists_test.go,
// faults_verdicts_test.go, faults_dirlock_test.go and faults_fds_test.go,
// 30a-30k (hosts that act for several people, and single-user hosts that
// must keep resuming; real supergateway and langchain-mcp-adapters, which
// `make faults-setup` installs) in faults_trust_test.go, 31 (the instance
// key) in faults_key_test.go; harness_test.go, faults_util_test.go,
// faults_helpers_test.go, faults_servers_test.go and faults_keyutil_test.go
// are the infrastructure.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
)

var (
	updateFaultTable = flag.Bool("update-fault-table", false, "rewrite the fault table in docs/RELIABILITY.md from this run")
	faultLangs       = flag.String("faults.langs", "go,python,typescript", "comma-separated languages whose example servers the faults run against")
	faultRequire     = flag.Bool("faults.require", false, "fail, rather than skip, when a language's server is not built or any fault skips (make test-faults, which runs only as root)")
	faultKills       = flag.Int("faults.kills", 200, "fault 8: how many store loops to SIGKILL (Go)")
	faultKillsSlow   = flag.Int("faults.kills-slow", 100, "fault 8: how many store loops to SIGKILL (Python, TypeScript: each loop starts a runtime and compiles the plugin)")
	faultHammerOps   = flag.Int("faults.hammer-ops", 20, "fault 9: load/store operations per round per instance (5 rounds)")
)

// The log lines of spec 000 (verbatim) and of hostfuncs/README.md.
const (
	lineNotFound     = "Token file not found (first run or clean slate)"
	lineCorrupt      = "Token file corrupted, treating as stale"
	lineIdentity     = "Could not verify parent process start time, session resume disabled for this instance"
	lineDirUnusable  = "State directory unusable, session resume disabled for this instance"
	lineRejected     = "Broker rejected resume token, starting fresh session"
	lineResumed      = "Session resumed successfully"
	lineWriteFailed  = "Failed to write token file: "
	lineDeleteFailed = "Failed to delete token file: "
	lineLockFailed   = "Could not lock the token file, session resume disabled for this instance"
	lineStale        = "Removed stale token file"
)

// ---------------------------------------------------------------------------
// Per-fault fixture.

type fx struct {
	*servertest.Env
	t      *testing.T
	srv    *server
	dirs   []string // more directories whose token files are snapshotted
	tokens map[string]bool
	// noSnap defers snapshots of token files to the end (an inotify watch
	// on the state directory would see the snapshot's reads).
	noSnap  bool
	results []launchResult
}

func newFx(t *testing.T, s *server) *fx {
	// The server's app names its state directory under the root; "-" (no
	// instance) keeps the names this suite computes (hostNames) free of a
	// suffix whatever the launch's arguments, working directory and
	// environment. Faults about the default instance key override it.
	f := &fx{Env: servertest.NewEnv(t, bin.Broker, s.app()), t: t, srv: s, tokens: map[string]bool{}}
	f.Extra = []string{"MCP_RESUME_INSTANCE=-"}
	os.Mkdir(filepath.Dir(f.StateDir), 0o700) // the state root; the plugin creates the app's directory
	t.Cleanup(f.checkNoTokenInLogs)
	return f
}

// launch launches argv (env: broker URL, state dir, extra) and records the
// result: the server must have answered every call and written only
// JSON-RPC to stdout.
func (f *fx) launch(argv, extra []string, note string) launchResult {
	f.t.Helper()
	r := launchOnce(context.Background(), argv, append(f.Vars(), extra...), f.Stderr, note, false)
	f.record(r)
	return r
}

func (f *fx) record(r launchResult) {
	f.t.Helper()
	f.results = append(f.results, r)
	if r.SessionID == "" {
		f.t.Fatalf("the server did not answer session_info: %s\nstderr:\n%s", r.Err, f.Stderr)
	}
	if !r.Alive {
		f.t.Errorf("the server stopped answering MCP calls: %s", r.Err)
	}
	if len(r.NonJSON) > 0 {
		f.t.Errorf("non-JSON-RPC output on the server's stdout: %q", r.NonJSON)
	}
	if !f.noSnap {
		f.snapTokens()
	}
}

// snapTokens remembers the content of every token file now present.
func (f *fx) snapTokens() {
	for _, d := range append([]string{f.StateDir}, f.dirs...) {
		matches, _ := filepath.Glob(filepath.Join(d, "token-*"))
		for _, m := range matches {
			if fi, err := os.Lstat(m); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 && fi.Size() <= 4096 {
				if b, err := os.ReadFile(m); err == nil {
					f.tokens[string(b)] = true
				}
			}
		}
	}
}

func (f *fx) checkNoTokenInLogs() {
	f.snapTokens()
	logs := f.Stderr.String()
	if os.Getenv("FAULTS_DUMP_STDERR") != "" {
		f.t.Logf("stderr:\n%s", logs)
	}
	for tok := range f.tokens {
		if len(tok) >= 8 && strings.Contains(logs, tok) {
			f.t.Errorf("a token (%d bytes) appears in the server's stderr", len(tok))
		}
	}
}

// watchState watches the state directory; snapshots wait until the end.
func (f *fx) watchState() *inotifyWatch {
	f.noSnap = true
	return watch(f.t, f.StateDir)
}

// findLog returns whether one stderr line contains every part. The first
// part (the spec's line) must match exactly; the others, which quote the
// host's operating-system error or the plugin's detail, ignore case, since
// each host words OS errors its own way ("no space left on device",
// "No space left on device") and quotes details its own way.
func (f *fx) findLog(parts ...string) bool {
	for _, line := range strings.Split(f.Stderr.String(), "\n") {
		if len(parts) > 0 && !strings.Contains(line, parts[0]) {
			continue
		}
		// Python's example server logs the detail as a repr, escaping quotes.
		low, all := strings.ToLower(strings.NewReplacer(`\'`, "'", `\"`, `"`).Replace(line)), true
		for _, p := range parts[1:] {
			all = all && strings.Contains(low, strings.ToLower(p))
		}
		if all {
			return true
		}
	}
	return false
}

// mustLog asserts that one stderr line contains every part (see findLog),
// and returns the parts joined by "…", as code, for the table.
func (f *fx) mustLog(parts ...string) string {
	f.t.Helper()
	shown := "`" + strings.Join(parts, "…") + "`"
	if f.findLog(parts...) {
		return shown
	}
	f.t.Errorf("stderr lacks a line with %q\nstderr:\n%s", parts, f.Stderr)
	return "MISSING: " + shown
}

// mustLogOne is mustLog for the first of several alternative detail
// wordings that is found (hosts word some OS errors differently).
func (f *fx) mustLogOne(line string, details ...string) string {
	f.t.Helper()
	for _, d := range details {
		if f.findLog(line, d) {
			return "`" + line + "…" + d + "`"
		}
	}
	return f.mustLog(line, strings.Join(details, " or "))
}

func (f *fx) logged(s string) bool { return strings.Contains(f.Stderr.String(), s) }

// row adds this fault's result for the fixture's language; alive and
// stdout-clean come from every launch recorded.
func (f *fx) row(id, fault, injection, outcome string, logs []string, wrong string) {
	alive, clean := "yes", "yes"
	if len(f.results) == 0 {
		alive, clean = "n/a", "n/a"
	}
	for _, r := range f.results {
		if !r.Alive {
			alive = "NO"
		}
		if len(r.NonJSON) > 0 {
			clean = "NO"
		}
	}
	addRow(f.srv.name, id, fault, injection, langResult{Outcome: outcome, Log: strings.Join(logs, "; "), Alive: alive, Clean: clean, Wrong: wrong})
}

// names are this test process's token and lock file names: it is the MCP
// host of every server it launches directly (no instance suffix: newFx
// declares MCP_RESUME_INSTANCE=-).
type names struct {
	pid                int
	start, token, lock string
}

func hostNames(t *testing.T) names {
	t.Helper()
	start, err := linuxStartTime(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	n := names{pid: os.Getpid(), start: start}
	n.token = fmt.Sprintf("token-%d-%s", n.pid, n.start)
	n.lock = fmt.Sprintf("lock-%d-%s", n.pid, n.start)
	return n
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// validToken mirrors the plugin's rule: 1-4096 bytes of 0x21-0x7E.
func validToken(b []byte) bool {
	if len(b) == 0 || len(b) > 4096 {
		return false
	}
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// checkTokenFile asserts path is a regular 0600 file holding a valid token.
func checkTokenFile(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("token file: %v", err)
		return
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want a regular 0600 file", fi.Mode())
	}
	if b, _ := os.ReadFile(path); !validToken(b) {
		t.Errorf("token file holds %d bytes that are not a valid token", len(b))
	}
}

// listing describes a directory's entries (name, type, mode, size) for
// before/after comparisons.
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %v %d\n", e.Name(), fi.Mode(), fi.Size())
	}
	return b.String()
}

func tempFiles(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, ".token-*.tmp"))
	return m
}

func wrongIf(wrong bool, what string) string {
	if wrong {
		return "**YES**: " + what
	}
	return "no"
}

// nobody is a base directory (0755) from which uid 65534 can run the
// server (the Go binary is copied there; the Python and TypeScript servers
// run from the repository, which other users must be able to read), and a
// cache directory it owns.
type nobody struct {
	base string
	cmd  []string
	env  []string
}

func newNobody(t *testing.T, s *server) nobody {
	t.Helper()
	requireRoot(t)
	requireTool(t, "setpriv")
	base, err := os.MkdirTemp("", "mcp-resume-faults-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	n := nobody{base: base, cmd: s.cmd()}
	if s.name == "go" {
		n.cmd = []string{filepath.Join(base, "go-server")}
		if err := os.WriteFile(n.cmd[0], mustRead(t, s.argv[0]), 0o755); err != nil {
			t.Fatal(err)
		}
	} else if p := unreachableFor65534(s.argv); p != "" {
		skipFault(t, fmt.Sprintf("uid 65534 cannot reach %s (a directory on its path lacks o+x or the file o+r): the %s server cannot run as another user from this checkout; run `make provision` as root, or clone the repository where other users can read it", p, s.title))
	} else if why := cannotImportAs(65534, 65534, s); why != "" {
		skipFault(t, why)
	}
	cache := filepath.Join(base, "cache")
	os.Mkdir(cache, 0o700)
	os.Chown(cache, 65534, 65534)
	n.env = []string{"XDG_CACHE_HOME=" + cache, "HOME=" + base}
	return n
}

// host starts a helper MCP host as uid 65534 that launches the server as
// itself: the server's host is then a process of the same user, whose
// program image (/proc/<pid>/exe) the server may read. A host of another
// user cannot be told apart from a program it might exec into, so under the
// test process (root) resume would be off before the state directory is
// even looked at.
func (n nobody) host(t *testing.T, f *fx) *remoteHost {
	t.Helper()
	bin := filepath.Join(n.base, "faults-host")
	if _, err := os.Stat(bin); err != nil {
		if err := os.WriteFile(bin, mustRead(t, helperBin(t)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	setpriv := []string{"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"}
	// A process of uid 65534 must be able to execute the server: a Python
	// whose real path is under a private home (pyenv in /root) is not.
	probe := append(append([]string{}, setpriv...), "sh", "-c", `test -x "$0"`, n.cmd[0])
	if err := exec.Command(probe[0], probe[1:]...).Run(); err != nil {
		skipFault(t, fmt.Sprintf("a process of uid 65534 cannot execute %s (its real path is not reachable by other users): the %s server cannot run under a host of that user here", n.cmd[0], f.srv.title))
	}
	wrapper := append(setpriv, "sh", "-c", `exec "$0"`)
	h := startRemoteHostBin(t, f.Env, wrapper, bin, n.cmd, n.env)
	h.readSelf()
	return h
}

// launch launches the server once under a fresh helper host of uid 65534
// (n.host) and records the result.
func (n nobody) launch(t *testing.T, f *fx) launchResult {
	t.Helper()
	h := n.host(t, f)
	r := h.launch()
	h.close()
	f.record(r)
	return r
}

func (n nobody) argv() []string {
	return append([]string{"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"}, n.cmd...)
}

// argvCaps is argv keeping CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (ambient),
// so that the server can list the fds of its root host and read its program
// image: a host the server cannot inspect proves nothing and turns resume off
// (faults 16 and 22), and faults that run the server as another user than its
// host to test something else need the identity to stand.
func (n nobody) argvCaps() []string {
	caps := "+sys_ptrace,+dac_read_search"
	return append([]string{"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "--inh-caps", caps, "--ambient-caps", caps}, n.cmd...)
}

// appDir creates base/name (the state root) owned by 65534 with mode 0700
// and in it app's state directory, owned by 65534 with mode perm.
func (n nobody) appDir(t *testing.T, name, app string, perm os.FileMode) string {
	t.Helper()
	n.dir(t, name, 0o700)
	return n.dir(t, filepath.Join(name, app), perm)
}

// dir creates base/name owned by 65534 with mode perm.
func (n nobody) dir(t *testing.T, name string, perm os.FileMode) string {
	t.Helper()
	d := filepath.Join(n.base, name)
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(d, 65534, 65534)
	os.Chmod(d, perm)
	return d
}

// orphanScript starts $FAULTS_SERVER (a command line of words without
// spaces) in a background subshell and exits at once. The subshell waits
// until the shell ($$) is gone or a zombie, by which time the kernel has
// re-parented it to the nearest subreaper or pid 1, then execs the server,
// which keeps the MCP pipes via fd 3.
const orphanScript = `exec 3<&0; (while [ -e /proc/$$ ] && ! grep -q ') Z ' /proc/$$/stat; do sleep 0.02; done; exec $FAULTS_SERVER <&3 3<&-) & exit 0`

// pidNSWrapper runs "$0" (the helper host) as the second process of a new
// PID namespace with its own /proc: pid 1 would be refused as a reaper.
var pidNSWrapper = []string{"unshare", "-p", "-f", "--mount-proc", "--kill-child", "sh", "-c", `"$0"; exit $?`}

// ---------------------------------------------------------------------------

func TestFaults(t *testing.T) {
	faults := []struct {
		name string
		fn   func(*testing.T, *server)
	}{
		{"01_no_space", faultNoSpace},
		{"02_read_only", faultReadOnly},
		{"03_unwritable", faultUnwritable},
		{"04_symlinks", faultSymlinks},
		{"05_mode_0644", faultMode0644},
		{"06_unusable_dir", faultUnusableDir},
		{"07_corrupt", faultCorrupt},
		{"08_kill_during_store", faultKillDuringStore},
		{"09_concurrent_instances", faultConcurrentInstances},
		{"10_pid_reuse", faultPIDReuse},
		{"11_orphaned", faultOrphaned},
		{"12_proc_hidden", faultProcHidden},
		{"13_shared_root", faultSharedRoot},
		{"14_launches_differ", faultLaunchesDiffer},
		{"15_undecodable_args", faultUndecodableArgs},
		{"16_host_execs", faultHostExecs},
		{"17_home_unset", faultHomeUnset},
		{"18_ssh_sharing", faultSSHSharing},
		{"19_init_file_shells", faultInitFileShells},
		{"20_npm_run", faultNPMRun},
		{"22_unlistable_subreaper", faultUnlistableSubreaper},
		{"23_multiplexer", faultMultiplexer},
		{"24_boot_clock_zero", faultBootClockZero},
		{"26_cross_host_lock", faultCrossHostLock},
		{"27_root_with_user_home", faultRootWithUserHome},
		{"28_state_dir_not_dir", faultStateDirNotDir},
		{"29_stderr_closed", faultStderrClosed},
		{"30_gateway", faultGateway},
		{"30_agent_service", faultAgentService},
		{"30_single_user_hosts", faultSingleUserHosts},
		{"31_identical_entries", faultIdenticalEntries},
		{"31_program_in_key", faultProgramInKey},
		{"31_key_as_launched", faultKeyAsLaunched},
		{"31_netns", faultNetNS},
		{"31_tcp_stdio", faultTCPStdio},
	}
	defer removeHelperBin()
	want := map[string]bool{}
	for _, l := range strings.Split(*faultLangs, ",") {
		want[strings.TrimSpace(l)] = true
	}
	complete := true
	for _, l := range allLangs {
		if !want[l.name] {
			complete = false
			continue
		}
		t.Run(l.name, func(t *testing.T) {
			s := findServer(t, l)
			start := time.Now()
			ran := 0
			for _, fault := range faults {
				t.Run(fault.name, func(t *testing.T) {
					ran++
					fault.fn(t, s)
				})
			}
			if ran != len(faults) {
				complete = false
			}
			t.Logf("%s: %d faults in %v", l.title, ran, time.Since(start).Round(time.Second))
		})
	}
	checkFaultTable(t, complete)
}
