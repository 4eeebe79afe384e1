//go:build linux && faults

package main_test

// Fault injection against the three real example servers: go-server
// (the real plugin in the Go host), examples/python-server (the Python
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
// The suite is behind the build tag "faults" so that the plain `go test
// ./...` of `make test-go` does not run it; `make test-faults` does:
//
//	go test -tags faults -count=1 -run '^TestFaults$' ./examples/go-server/ -faults.require
//
// Servers: the Go server is built by TestMain; the Python server runs as
// <repo>/.venv/bin/python examples/python-server/server.py (`make
// python-setup`), the TypeScript server as node
// examples/typescript-server/dist/server.js (`make typescript-setup`). A
// language whose server is not built is skipped with a message saying
// which make target builds it, unless -faults.require is given, when it
// fails, as it does when any fault skips, so that the table is always
// compared. -faults.langs picks languages (default go,python,typescript).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

const reliabilityDoc = "../../docs/RELIABILITY.md"

const (
	tableBegin = "<!-- fault-table:begin -->"
	tableEnd   = "<!-- fault-table:end -->"
)

// ---------------------------------------------------------------------------
// The fault table.

// langResult is what one fault did under one language's server.
type langResult struct {
	Outcome, Log, Alive, Clean, Wrong string
}

// faultRow is one fault: what was injected, and what each language did.
type faultRow struct {
	ID, Fault, Injection string
	ByLang               map[string]langResult
}

var table struct {
	mu         sync.Mutex
	rows       []*faultRow // in the order first seen
	incomplete []string
}

func addRow(lang, id, fault, injection string, r langResult) {
	table.mu.Lock()
	defer table.mu.Unlock()
	for _, row := range table.rows {
		if row.ID == id {
			if row.Fault != fault || row.Injection != injection {
				r.Outcome = "(injected differently: " + injection + ") " + r.Outcome
			}
			row.ByLang[lang] = r
			return
		}
	}
	table.rows = append(table.rows, &faultRow{ID: id, Fault: fault, Injection: injection, ByLang: map[string]langResult{lang: r}})
}

// skipFault skips a fault that cannot run here; the table is then not
// compared.
func skipFault(t *testing.T, why string) {
	t.Helper()
	table.mu.Lock()
	table.incomplete = append(table.incomplete, t.Name()+": "+why)
	table.mu.Unlock()
	t.Skip(why)
}

// renderTable writes one row per fault. The Outcome and Log columns are the
// Go server's (or, without it, the first language's); each language column
// is "✓" when that language's server did exactly that (same outcome, same
// log lines), stayed alive, kept stdout clean and resumed no wrong session,
// and otherwise spells out what differed.
func renderTable(rows []*faultRow) string {
	cell := func(s string) string {
		return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
	}
	var b strings.Builder
	b.WriteString("| # | Fault | Injected by | Outcome | Log line seen |")
	for _, l := range allLangs {
		b.WriteString(" " + l.title + " |")
	}
	b.WriteString("\n|---|---|---|---|---|")
	for range allLangs {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		var ref langResult
		for _, l := range allLangs {
			if lr, ok := r.ByLang[l.name]; ok {
				ref = lr
				break
			}
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |", cell(r.ID), cell(r.Fault), cell(r.Injection), cell(ref.Outcome), cell(ref.Log))
		for _, l := range allLangs {
			lr, ok := r.ByLang[l.name]
			if !ok {
				b.WriteString(" not run |")
				continue
			}
			var parts []string
			if lr.Outcome != ref.Outcome {
				parts = append(parts, lr.Outcome)
			}
			if lr.Log != ref.Log {
				parts = append(parts, "log: "+lr.Log)
			}
			if lr.Alive != "yes" {
				parts = append(parts, "server alive: "+lr.Alive)
			}
			if lr.Clean != "yes" {
				parts = append(parts, "stdout clean: "+lr.Clean)
			}
			if lr.Wrong != "no" {
				parts = append(parts, "wrong resume: "+lr.Wrong)
			}
			if len(parts) == 0 {
				parts = []string{"✓"}
			}
			b.WriteString(" " + cell(strings.Join(parts, "; ")) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// checkFaultTable compares (or, with -update-fault-table, rewrites) the
// table in docs/RELIABILITY.md, when every fault ran in every language.
func checkFaultTable(t *testing.T, complete bool) {
	table.mu.Lock()
	rows, incomplete := table.rows, table.incomplete
	table.mu.Unlock()
	if run := flag.Lookup("test.run"); run != nil && strings.Contains(run.Value.String(), "/") {
		complete = false
	}
	if !complete || len(incomplete) > 0 || t.Failed() {
		if *faultRequire && !t.Failed() {
			t.Fatalf("-faults.require: every fault must run in every language, but the fault table could not be compared: %v", incomplete)
		}
		t.Logf("fault table not compared: not every fault ran and passed in every language %v", incomplete)
		if len(rows) > 0 {
			// The rows of this run, rendered as in docs/RELIABILITY.md, to
			// copy by hand when only some faults ran.
			t.Logf("rows of this run:\n%s", renderTable(rows))
		}
		return
	}
	got := renderTable(rows)
	doc, err := os.ReadFile(reliabilityDoc)
	if err != nil {
		t.Fatalf("%v (create it with a %s / %s section)", err, tableBegin, tableEnd)
	}
	before, rest, ok1 := strings.Cut(string(doc), tableBegin+"\n")
	want, after, ok2 := strings.Cut(rest, tableEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the %s / %s markers", reliabilityDoc, tableBegin, tableEnd)
	}
	if *updateFaultTable {
		if err := os.WriteFile(reliabilityDoc, []byte(before+tableBegin+"\n"+got+tableEnd+after), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the fault table in %s (%d rows)", reliabilityDoc, len(rows))
		return
	}
	if want != got {
		t.Errorf("the fault table in %s differs from this run; if the new behaviour is intended, rerun with\n"+
			"  make test-faults FAULTS_FLAGS=-update-fault-table\n--- this run:\n%s--- document:\n%s", reliabilityDoc, got, want)
	}
}

// ---------------------------------------------------------------------------
// Per-fault fixture.

type fx struct {
	*env
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
	f := &fx{env: newEnv(t), t: t, srv: s, tokens: map[string]bool{}}
	// The server's app names its state directory under the root; "-" (no
	// instance) keeps the names this suite computes (hostNames) free of a
	// suffix whatever the launch's arguments, working directory and
	// environment. Faults about the default instance key override it.
	f.app = s.app()
	f.stateDir = filepath.Join(filepath.Dir(f.stateDir), f.app)
	f.extra = []string{"MCP_RESUME_INSTANCE=-"}
	os.Mkdir(filepath.Dir(f.stateDir), 0o700) // the state root; the plugin creates the app's directory
	t.Cleanup(f.checkNoTokenInLogs)
	return f
}

// launch launches argv (env: broker URL, state dir, extra) and records the
// result: the server must have answered every call and written only
// JSON-RPC to stdout.
func (f *fx) launch(argv, extra []string, note string) launchResult {
	f.t.Helper()
	r := launchOnce(context.Background(), argv, append(f.vars(), extra...), f.stderr, note, false)
	f.record(r)
	return r
}

func (f *fx) record(r launchResult) {
	f.t.Helper()
	f.results = append(f.results, r)
	if r.SessionID == "" {
		f.t.Fatalf("the server did not answer session_info: %s\nstderr:\n%s", r.Err, f.stderr)
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
	for _, d := range append([]string{f.stateDir}, f.dirs...) {
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
	logs := f.stderr.String()
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
	return watch(f.t, f.stateDir)
}

// findLog returns whether one stderr line contains every part. The first
// part (the spec's line) must match exactly; the others, which quote the
// host's operating-system error or the plugin's detail, ignore case, since
// each host words OS errors its own way ("no space left on device",
// "No space left on device") and quotes details its own way.
func (f *fx) findLog(parts ...string) bool {
	for _, line := range strings.Split(f.stderr.String(), "\n") {
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
	f.t.Errorf("stderr lacks a line with %q\nstderr:\n%s", parts, f.stderr)
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

func (f *fx) logged(s string) bool { return strings.Contains(f.stderr.String(), s) }

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
		skipFault(t, fmt.Sprintf("uid 65534 cannot reach %s (a directory on its path lacks o+x or the file o+r): the %s server cannot run as another user from this checkout; clone the repository where other users can read it", p, s.title))
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
	h := startRemoteHostBin(t, f.env, wrapper, bin, n.cmd, n.env)
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

// 1. No space left on device.
func faultNoSpace(t *testing.T, s *server) {
	requireRoot(t)
	ns := newMountNS(t)
	f := newFx(t, s)
	me := hostNames(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	os.Mkdir(mnt, 0o700)
	ns.run("mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", mnt)
	f.stateDir = filepath.Join(mnt, "state", f.app)
	inside := ns.path(f.stateDir)
	f.dirs = []string{inside}
	argv := ns.argv(s.cmd()...)

	first := f.launch(argv, nil, "")
	before := mustRead(t, filepath.Join(inside, me.token))

	fill, err := os.OpenFile(ns.path(filepath.Join(mnt, "fill")), os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err = fill.Write(chunk); err != nil {
			break
		}
	}
	fill.Close()
	if !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("filling the tmpfs ended with %v, want ENOSPC", err)
	}

	second := f.launch(argv, nil, "")
	if !second.Resumed || second.SessionID != first.SessionID {
		t.Errorf("relaunch on a full file system: %+v, want session %s resumed (reading needs no space)", second, first.SessionID)
	}
	wf := f.mustLog(lineWriteFailed, "no space left on device")
	if after := mustRead(t, filepath.Join(inside, me.token)); !bytes.Equal(after, before) {
		t.Errorf("the token file changed (%d bytes -> %d) although the write failed", len(before), len(after))
	}
	if tmp := tempFiles(inside); len(tmp) > 0 {
		t.Errorf("a failed write left temporary files: %v", tmp)
	}
	third := f.launch(argv, nil, "")
	if third.Resumed {
		t.Errorf("resumed with a token the broker had rotated: %+v", third)
	}
	rej := f.mustLog(lineRejected)
	f.row("1", "No space left on device",
		"state dir on a 64 KiB tmpfs in a private mount namespace (server entered with `nsenter`, so the test stays its host), filled until ENOSPC",
		"relaunch resumed its own session (reading needs no space); writing the rotated token failed, the file kept the previous token complete and no temp file was left; the next launch offered that stale token, the broker refused it, fresh session",
		[]string{wf, rej}, "no")
}

// 2. Read-only state directory.
func faultReadOnly(t *testing.T, s *server) {
	requireRoot(t)
	t.Run("lock_file_present", func(t *testing.T) {
		f := newFx(t, s)
		me := hostNames(t)
		first := f.launch(s.cmd(), nil, "")
		tokenPath := filepath.Join(f.stateDir, me.token)
		before := mustRead(t, tokenPath)
		ns := newMountNS(t)
		ns.run("mount", "--bind", f.stateDir, f.stateDir)
		ns.run("mount", "-o", "remount,bind,ro", f.stateDir)
		argv := ns.argv(s.cmd()...)

		second := f.launch(argv, nil, "")
		if !second.Resumed || second.SessionID != first.SessionID {
			t.Errorf("read-only relaunch: %+v, want session %s resumed (loading needs no write)", second, first.SessionID)
		}
		wf := f.mustLog(lineWriteFailed, "read-only file system")
		third := f.launch(argv, nil, "")
		if third.Resumed {
			t.Errorf("resumed with a token the broker had rotated: %+v", third)
		}
		rej := f.mustLog(lineRejected)
		df := f.mustLog(lineDeleteFailed, "read-only file system")
		if after := mustRead(t, tokenPath); !bytes.Equal(after, before) {
			t.Error("the token file changed on a read-only file system")
		}
		f.row("2a", "Read-only state directory",
			"a token stored, then the state dir bind-mounted read-only in a private mount namespace (`nsenter`)",
			"relaunch resumed its own session; the rotated token could not be written; the next launch offered the stale token, the broker refused it, deleting the file failed too, fresh session; the file is unchanged",
			[]string{wf, rej, df}, "no")
	})
	t.Run("no_lock_file", func(t *testing.T) {
		f := newFx(t, s)
		first := f.launch(s.cmd(), nil, "")
		locks, _ := filepath.Glob(filepath.Join(f.stateDir, "lock-*"))
		for _, l := range locks {
			os.Remove(l)
		}
		ns := newMountNS(t)
		ns.run("mount", "--bind", f.stateDir, f.stateDir)
		ns.run("mount", "-o", "remount,bind,ro", f.stateDir)
		second := f.launch(ns.argv(s.cmd()...), nil, "")
		var outcome string
		var logs []string
		switch {
		case f.logged(lineLockFailed):
			if second.Resumed {
				t.Errorf("resumed although the lock failed: %+v", second)
			}
			logs = []string{f.mustLog(lineLockFailed, "read-only file system")}
			outcome = "resume off for the instance: the lock file cannot be created on a read-only file system, so the stored token was not even read; fresh session (the session is lost, never another's resumed)"
		default:
			if !second.Resumed || second.SessionID != first.SessionID {
				t.Errorf("read-only relaunch: %+v, want session %s resumed", second, first.SessionID)
			}
			logs = []string{f.mustLog(lineWriteFailed, "read-only file system")}
			outcome = "relaunch resumed its own session; the rotated token could not be written"
		}
		f.row("2b", "Read-only state directory, no lock file yet",
			"as 2a, with the lock file deleted before the remount (a directory restored from a backup)",
			outcome, logs, "no")
	})
}

// 3. Unwritable state directory: the server runs as uid 65534.
func faultUnwritable(t *testing.T, s *server) {
	n := newNobody(t, s)
	t.Run("write_eacces", func(t *testing.T) {
		f := newFx(t, s)
		f.stateDir = n.appDir(t, "state-3a", f.app, 0o700)
		lock := filepath.Join(f.stateDir, hostNames(t).lock)
		os.WriteFile(lock, nil, 0o600)
		os.Chown(lock, 65534, 65534)
		os.Chmod(f.stateDir, 0o500)
		before := listing(t, f.stateDir)
		a := f.launch(n.argvCaps(), n.env, "")
		b := f.launch(n.argvCaps(), n.env, "")
		if a.Resumed || b.Resumed || a.SessionID == b.SessionID {
			t.Errorf("resume without a stored token: %+v %+v", a, b)
		}
		nf := f.mustLog(lineNotFound)
		wf := f.mustLog(lineWriteFailed, "permission denied")
		if after := listing(t, f.stateDir); after != before {
			t.Errorf("state directory changed:\n%s\nwas:\n%s", after, before)
		}
		f.row("3a", "Unwritable state directory",
			"server run as uid 65534 (`setpriv`, keeping only CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH so that it can check its root host's stdio) with a state dir it owns at mode 0500 (its lock file present)",
			"the directory check passes; every launch: no token, the write fails with EACCES, fresh session; the directory is unchanged",
			[]string{nf, wf}, "no")
	})
	t.Run("lock_eacces", func(t *testing.T) {
		f := newFx(t, s)
		f.stateDir = n.appDir(t, "state-3b", f.app, 0o500)
		a := f.launch(n.argvCaps(), n.env, "")
		if a.Resumed {
			t.Errorf("resumed: %+v", a)
		}
		var logs []string
		outcome := "fresh session; nothing written"
		if f.logged(lineLockFailed) {
			logs = []string{f.mustLog(lineLockFailed, "permission denied")}
			outcome = "the lock file cannot be created: resume off for the instance, fresh session, nothing written"
		} else {
			logs = []string{f.mustLog(lineWriteFailed, "permission denied")}
		}
		if entries, _ := os.ReadDir(f.stateDir); len(entries) != 0 {
			t.Errorf("files appeared in an unwritable directory: %v", entries)
		}
		f.row("3b", "Unwritable state directory, no lock file", "as 3a without the lock file", outcome, logs, "no")
	})
	t.Run("mkdir_eacces", func(t *testing.T) {
		f := newFx(t, s)
		parent := filepath.Join(n.base, "root-owned")
		os.Mkdir(parent, 0o755)
		f.stateDir = filepath.Join(parent, "state", f.app)
		a := f.launch(n.argvCaps(), n.env, "")
		if a.Resumed {
			t.Errorf("resumed: %+v", a)
		}
		// The plugin creates a directory only inside one of this user's (or
		// a root-owned sticky one): it never tries the mkdir.
		du := f.mustLog(lineDirUnusable, "does not exist, and creating it would create", "which is owned by uid 0, not by this user (uid 65534)")
		if _, err := os.Lstat(f.stateDir); !os.IsNotExist(err) {
			t.Errorf("state directory exists: %v", err)
		}
		f.row("3c", "State directory cannot be created",
			"server as uid 65534, keeping CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH to inspect its root host, as in 3a; the state dir is missing and its parent is root's (0755)",
			"resume off for the instance, fresh session", []string{du}, "no")
	})
}

// 4. Symlinks planted at the token path, at temporary names, at the lock.
func faultSymlinks(t *testing.T, s *server) {
	t.Run("token_path", func(t *testing.T) {
		f := newFx(t, s)
		me := hostNames(t)
		other := filepath.Join(t.TempDir(), "other", f.app)
		otherRun := f.launch(s.cmd(), []string{f.stateVar(other)}, "")
		target := filepath.Join(other, me.token)
		otherTok := mustRead(t, target)
		f.tokens[string(otherTok)] = true
		os.Mkdir(f.stateDir, 0o700)
		link := filepath.Join(f.stateDir, me.token)
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		a := f.launch(s.cmd(), nil, "")
		wrong := a.SessionID == otherRun.SessionID
		if wrong || a.Resumed {
			t.Errorf("followed a symlink to another session's token: %+v (other %s)", a, otherRun.SessionID)
		}
		c := f.mustLog(lineCorrupt)
		checkTokenFile(t, link)
		if !bytes.Equal(mustRead(t, target), otherTok) {
			t.Error("the symlink's target changed")
		}
		b := f.launch(s.cmd(), nil, "")
		if !b.Resumed || b.SessionID != a.SessionID {
			t.Errorf("relaunch: %+v, want %s resumed", b, a.SessionID)
		}
		f.row("4a", "Symlink at the token path",
			"`token-<pid>-<start>` is a symlink to a file outside the state dir holding another live session's valid token",
			"not followed (O_NOFOLLOW): treated as corrupt, the symlink was unlinked and replaced by a regular 0600 file, the target untouched; fresh session, resumed on the next launch",
			[]string{c}, wrongIf(wrong, "followed the symlink"))
	})
	t.Run("temp_names", func(t *testing.T) {
		f := newFx(t, s)
		me := hostNames(t)
		os.Mkdir(f.stateDir, 0o700)
		outside := t.TempDir()
		sentinel := filepath.Join(outside, "sentinel")
		os.WriteFile(sentinel, []byte("sentinel"), 0o600)
		var planted []string
		for i := 0; i < 2000; i++ {
			var rnd [8]byte
			for j := range rnd {
				rnd[j] = byte(rand.Uint32())
			}
			name := filepath.Join(f.stateDir, "."+me.token+"."+hex.EncodeToString(rnd[:])+".tmp")
			target := sentinel
			if i%2 == 1 {
				target = filepath.Join(outside, fmt.Sprintf("ghost-%d", i)) // dangling: O_CREAT through it would create it
			}
			if err := os.Symlink(target, name); err != nil {
				t.Fatal(err)
			}
			planted = append(planted, name)
		}
		a := f.launch(s.cmd(), nil, "")
		b := f.launch(s.cmd(), nil, "")
		if a.Resumed || !b.Resumed || b.SessionID != a.SessionID {
			t.Errorf("launches %+v then %+v, want fresh then resumed", a, b)
		}
		if got, _ := os.ReadFile(sentinel); string(got) != "sentinel" {
			t.Error("the sentinel outside the state directory changed")
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 1 {
			t.Errorf("%d entries outside the state directory, want only the sentinel", len(entries))
		}
		for _, p := range planted {
			if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Fatalf("planted symlink %s: %v %v", p, fi, err)
			}
		}
		checkTokenFile(t, filepath.Join(f.stateDir, me.token))
		r := f.mustLog(lineResumed)
		f.row("4b", "Symlinks at temporary names",
			"2000 symlinks named `.token-<pid>-<start>.<16 hex>.tmp`, half to a sentinel file outside, half dangling",
			"stores and resume worked; no target was written or created, the symlinks stayed; a temp name is 64 random bits opened O_CREAT|O_EXCL|O_NOFOLLOW, which fails on any existing name (a forced collision is hostfuncs' TestWrite_TempNameCollision)",
			[]string{r}, "no")
	})
	t.Run("lock_path", func(t *testing.T) {
		f := newFx(t, s)
		me := hostNames(t)
		os.Mkdir(f.stateDir, 0o700)
		sentinel := filepath.Join(t.TempDir(), "sentinel")
		os.WriteFile(sentinel, []byte("sentinel"), 0o600)
		os.Symlink(sentinel, filepath.Join(f.stateDir, me.lock))
		a := f.launch(s.cmd(), nil, "")
		if a.Resumed {
			t.Errorf("resumed: %+v", a)
		}
		if got, _ := os.ReadFile(sentinel); string(got) != "sentinel" {
			t.Error("the sentinel changed")
		}
		var logs []string
		outcome := "the lock path is not used; fresh session"
		if f.logged(lineLockFailed) {
			logs = []string{f.mustLogOne(lineLockFailed, "symbolic link", "symlink", "unsafe")}
			outcome = "not followed (O_NOFOLLOW): resume off for the instance, fresh session, the sentinel untouched"
		}
		f.row("4c", "Symlink at the lock path", "`lock-<pid>-<start>` is a symlink to a sentinel file outside", outcome, logs, "no")
	})
}

// 5. A token file with mode 0644.
func faultMode0644(t *testing.T, s *server) {
	f := newFx(t, s)
	me := hostNames(t)
	a := f.launch(s.cmd(), nil, "")
	path := filepath.Join(f.stateDir, me.token)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	b := f.launch(s.cmd(), nil, "")
	if !b.Resumed || b.SessionID != a.SessionID {
		t.Errorf("relaunch with a 0644 token file: %+v, want %s resumed", b, a.SessionID)
	}
	checkTokenFile(t, path)
	r := f.mustLog(lineResumed)
	f.row("5", "Token file with mode 0644", "`chmod 0644` on the stored token file (the directory stays 0700)",
		"accepted: the 0700 directory is the boundary, only this user or root can have written the file; relaunch resumed its own session and the rotated token was written as a new 0600 file",
		[]string{r}, "no")
}

// 6. A state directory the server must not use.
func faultUnusableDir(t *testing.T, s *server) {
	requireRoot(t)
	me := hostNames(t)
	cases := []struct {
		id, fault, injection string
		// setup makes path unusable with tok (a valid token of this host)
		// inside, and returns what to watch.
		setup func(t *testing.T, path string, tok []byte) string
	}{
		{"6a", "State dir owned by another user, group-writable", "state dir chown 65534, mode 0770",
			func(t *testing.T, path string, tok []byte) string {
				plantDir(t, path, me.token, tok, 0o770)
				os.Chown(path, 65534, 65534)
				return path
			}},
		{"6b", "State dir owned by another user", "state dir chown 65534, mode 0700",
			func(t *testing.T, path string, tok []byte) string {
				plantDir(t, path, me.token, tok, 0o700)
				os.Chown(path, 65534, 65534)
				return path
			}},
		{"6c", "State dir group-writable", "state dir owned by the user, mode 0770",
			func(t *testing.T, path string, tok []byte) string {
				plantDir(t, path, me.token, tok, 0o770)
				return path
			}},
		{"6d", "State dir world-readable", "state dir owned by the user, mode 0755",
			func(t *testing.T, path string, tok []byte) string {
				plantDir(t, path, me.token, tok, 0o755)
				return path
			}},
		{"6e", "State dir is a symlink", "state dir path is a symlink to a 0700 directory",
			func(t *testing.T, path string, tok []byte) string {
				real := path + "-real"
				plantDir(t, real, me.token, tok, 0o700)
				os.Symlink(real, path)
				return real
			}},
		{"6f", "State dir is a regular file", "state dir path is a regular file (holding the token)",
			func(t *testing.T, path string, tok []byte) string {
				os.WriteFile(path, tok, 0o600)
				return path
			}},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			f := newFx(t, s)
			good := filepath.Join(t.TempDir(), "good", f.app)
			s0 := f.launch(s.cmd(), []string{f.stateVar(good)}, "")
			tok := mustRead(t, filepath.Join(good, me.token))
			f.tokens[string(tok)] = true
			path := filepath.Join(t.TempDir(), "state", f.app)
			os.Mkdir(filepath.Dir(path), 0o700)
			watched := c.setup(t, path, tok)
			var before string
			if fi, _ := os.Stat(watched); fi.IsDir() {
				before = listing(t, watched)
			}
			w := watch(t, watched)
			a := f.launch(s.cmd(), []string{f.stateVar(path)}, "")
			events := w.events()
			wrong := a.SessionID == s0.SessionID
			if wrong || a.Resumed {
				t.Errorf("resumed from an unusable directory: %+v (planted session %s)", a, s0.SessionID)
			}
			du := f.mustLog(lineDirUnusable)
			if len(events) > 0 {
				t.Errorf("the server touched the unusable directory: %v", events)
			}
			if before != "" {
				if after := listing(t, watched); after != before {
					t.Errorf("directory changed:\n%s\nwas:\n%s", after, before)
				}
			}
			f.row(c.id, c.fault, c.injection+", a valid token of this host's live session inside",
				"resume off for the instance, fresh session; inotify saw no access at all (nothing read, nothing created)",
				[]string{du}, wrongIf(wrong, "resumed the planted session"))
		})
	}
}

func plantDir(t *testing.T, dir, name string, tok []byte, perm os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), tok, 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, perm)
}

// 7. Corrupt token files.
func faultCorrupt(t *testing.T, s *server) {
	me := hostNames(t)
	type plantFn func(t *testing.T, path string, real []byte)
	content := func(b []byte) plantFn {
		return func(t *testing.T, path string, _ []byte) {
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	binary := make([]byte, 64)
	for i := range binary {
		binary[i] = byte(i * 7)
	}
	cases := []struct {
		id, fault, injection string
		plant                plantFn
		rejected             bool // valid-looking: only the broker can refuse it
		dir                  bool
	}{
		{"7a", "Empty token file", "0 bytes", content(nil), false, false},
		{"7b", "Truncated token file", "the first half of a real token (43 → 21 bytes)",
			func(t *testing.T, path string, real []byte) { os.WriteFile(path, real[:len(real)/2], 0o600) }, true, false},
		{"7c", "Binary token file", "64 bytes 0x00, 0x07, 0x0e, …", content(binary), false, false},
		{"7d", "Non-UTF-8 token file", "`\\xff\\xfe` and an invalid UTF-8 sequence around ASCII", content([]byte("\xff\xfetok\xc3\x28en")), false, false},
		{"7e", "Token with a trailing newline", "a real token followed by `\\n` (what `echo` writes)",
			func(t *testing.T, path string, real []byte) { os.WriteFile(path, append(real, '\n'), 0o600) }, false, false},
		{"7f", "Oversized token file", "4097 bytes of `a`", content(bytes.Repeat([]byte("a"), 4097)), false, false},
		{"7g", "10 MB token file", "10 MiB of `a`", content(bytes.Repeat([]byte("a"), 10<<20)), false, false},
		{"7h", "64 GiB sparse token file", "`truncate -s 64G` (reading it whole would never finish)",
			func(t *testing.T, path string, _ []byte) {
				fl, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				defer fl.Close()
				if err := fl.Truncate(64 << 30); err != nil {
					skipFault(t, "this file system cannot hold a 64 GiB sparse file: "+err.Error())
				}
			}, false, false},
		{"7i", "FIFO at the token path", "`mkfifo` (a blocking open would hang the server)",
			func(t *testing.T, path string, _ []byte) {
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
			}, false, false},
		{"7j", "Directory at the token path", "`mkdir` with a file inside",
			func(t *testing.T, path string, _ []byte) {
				os.Mkdir(path, 0o700)
				os.WriteFile(filepath.Join(path, "x"), []byte("x"), 0o600)
			}, false, true},
	}
	for _, c := range cases {
		t.Run(c.id, func(t *testing.T) {
			f := newFx(t, s)
			var real []byte
			var realSession string
			if c.id == "7b" || c.id == "7e" {
				other := filepath.Join(t.TempDir(), "other", f.app)
				r := f.launch(s.cmd(), []string{f.stateVar(other)}, "")
				real, realSession = mustRead(t, filepath.Join(other, me.token)), r.SessionID
			}
			os.Mkdir(f.stateDir, 0o700)
			path := filepath.Join(f.stateDir, me.token)
			c.plant(t, path, real)
			start := time.Now()
			a := f.launch(s.cmd(), nil, "")
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("launch took %v", d)
			}
			if a.Resumed || (realSession != "" && a.SessionID == realSession) {
				t.Errorf("resumed from a corrupt file: %+v", a)
			}
			var logs []string
			if c.rejected {
				logs = append(logs, f.mustLog(lineRejected))
			} else {
				logs = append(logs, f.mustLog(lineCorrupt))
			}
			b := f.launch(s.cmd(), nil, "")
			var outcome string
			if c.dir {
				logs = append(logs, f.mustLogOne(lineDeleteFailed, "is a directory", "illegal operation on a directory"))
				var how string
				switch {
				case f.findLog(lineWriteFailed, "file exists"):
					logs = append(logs, f.mustLog(lineWriteFailed, "file exists"))
					how = "rename refuses a directory target: EEXIST"
				default:
					logs = append(logs, f.mustLogOne(lineWriteFailed, "is a directory", "illegal operation on a directory"))
					how = "rename onto a directory: EISDIR"
				}
				if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
					t.Errorf("the directory at the token path: %v %v", fi, err)
				}
				if b.Resumed {
					t.Errorf("resumed although no token could be stored: %+v", b)
				}
				outcome = "treated as corrupt; it can be neither deleted (unlink: EISDIR) nor replaced (" + how + "): every launch starts fresh until someone removes it"
			} else {
				checkTokenFile(t, path)
				if !b.Resumed || b.SessionID != a.SessionID {
					t.Errorf("relaunch: %+v, want %s resumed (the file should hold the new token)", b, a.SessionID)
				}
				outcome = "fresh session; the file was deleted and replaced by the new token (the next launch resumed it)"
				if c.rejected {
					outcome = "valid-looking, so offered to the broker, which refused it; file deleted, fresh session, replaced by the new token (the next launch resumed it)"
				}
				switch c.id {
				case "7g", "7h":
					outcome = "bounded read (at most 4097 bytes), no delay; " + outcome
				case "7i":
					outcome = "no hang (opened O_NONBLOCK, refused after fstat: not a regular file); " + outcome
				}
			}
			f.row(c.id, c.fault, c.injection, outcome, logs, "no")
		})
	}
}

// 8. SIGKILL during store, many times.
func faultKillDuringStore(t *testing.T, s *server) {
	stress := s.stress(t)
	const lanes = 2
	per := (s.kills + lanes - 1) / lanes
	stats := make([]laneStats, lanes)
	dirs := make([]string, lanes)
	var wg sync.WaitGroup
	for l := range lanes {
		dirs[l] = filepath.Join(t.TempDir(), "state", s.app())
		wg.Add(1)
		go func() {
			defer wg.Done()
			stats[l] = killLane(stress, dirs[l], l, per)
		}()
	}
	wg.Wait()
	var total laneStats
	for _, st := range stats {
		for _, p := range st.problems {
			t.Error(p)
		}
		if strings.Contains(st.stderr, "plugin failed") || strings.Contains(st.stderr, "panic") || strings.Contains(st.stderr, "Traceback") {
			t.Errorf("a store loop logged a failure:\n%s", st.stderr)
		}
		total.kills += st.kills
		total.newest += st.newest
		total.older += st.older
		total.none += st.none
		total.strays += st.strays
	}
	t.Logf("SIGKILL stress: %d kills; after each, a fresh store loaded the killed loop's token %d times, an earlier loop's %d times, nothing %d times; %d stray temp files left",
		total.kills, total.newest, total.older, total.none, total.strays)
	if total.kills < s.kills {
		t.Errorf("only %d kills", total.kills)
	}
	// A real server on the crashed directory: the stress token is offered,
	// the broker refuses it, the server goes on.
	f := newFx(t, s)
	f.stateDir = dirs[0]
	r := f.launch(s.cmd(), nil, "")
	if r.Resumed {
		t.Errorf("resumed a stress token: %+v", r)
	}
	rej := f.mustLog(lineRejected)
	f.row("8", "SIGKILL during store",
		"processes (the language's binding: the Go host package, mcp_resume, the npm package) store self-checking tokens (40 B–4 KiB) in a tight loop, each SIGKILLed 0–4 ms after its first store; a fresh store loads after each kill (`-faults.kills`: Go 200; `-faults.kills-slow`: Python and TypeScript 100, each loop starts a runtime)",
		"every load returned a complete token that had been stored (the killed loop's or an earlier one), never a partial one, and the token never vanished; temp files of killed writers remain (counted in the test log); a real server then offered the last token, the broker refused it, fresh session",
		[]string{"never `" + lineCorrupt + "` in any load", rej}, "no")
}

// laneStats is what one kill lane saw.
type laneStats struct {
	kills    int // store loops killed
	newest   int // loads that returned the killed loop's own token
	older    int // loads that returned an earlier loop's token
	none     int // loads that found no token
	strays   int // temporary files left in the directory at the end
	problems []string
	stderr   string
}

// killLane runs per store loops (stress helper "storeloop", command
// stress) one after the other in dir, SIGKILLs each after a random delay,
// and after each kill loads through a fresh store (helper "loader", a
// child of this process like the loops, so the same host).
func killLane(stress []string, dir string, lane, per int) (st laneStats) {
	var stderr syncBuffer
	defer func() { st.stderr = stderr.String() }()
	os.MkdirAll(dir, 0o700)
	env := append(os.Environ(), stressEnv(dir)...)
	loader := exec.Command(stress[0], stress[1:]...)
	loader.Env = append(env, "FAULTS_HELPER=loader")
	loader.Stderr = &stderr
	lin, _ := loader.StdinPipe()
	lout, _ := loader.StdoutPipe()
	if err := loader.Start(); err != nil {
		st.problems = append(st.problems, err.Error())
		return st
	}
	defer func() { lin.Close(); loader.Wait() }()
	answers := bufio.NewScanner(lout)
	rng := rand.New(rand.NewPCG(uint64(lane), 8))
	everFound := false
	base := lane * 1_000_000
	for k := 0; k < per && len(st.problems) < 5; k++ {
		seed := base + k
		cmd := exec.Command(stress[0], stress[1:]...)
		cmd.Env = append(env, "FAULTS_HELPER=storeloop", "FAULTS_SEED="+strconv.Itoa(seed))
		cmd.Stderr = &stderr
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			st.problems = append(st.problems, err.Error())
			return st
		}
		ready := make(chan bool, 1)
		go func() {
			line, _ := bufio.NewReader(out).ReadString('\n')
			ready <- line == "ready\n"
			io.Copy(io.Discard, out)
		}()
		started := false
		select {
		case started = <-ready:
		case <-time.After(30 * time.Second):
		}
		if !started {
			cmd.Process.Kill()
			cmd.Wait()
			st.problems = append(st.problems, "a store loop did not start")
			return st
		}
		time.Sleep(time.Duration(rng.IntN(4000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		st.kills++
		st.strays = len(tempFiles(dir))

		fmt.Fprintln(lin, filepath.Dir(dir)) // the state root: the loader's app directory is dir
		if !answers.Scan() {
			st.problems = append(st.problems, "the loader died")
			return st
		}
		var ans loaderAnswer
		json.Unmarshal(answers.Bytes(), &ans)
		switch {
		case ans.OpenErr != "":
			st.problems = append(st.problems, "loader: "+ans.OpenErr)
		case ans.Events["token_corrupted"] > 0:
			st.problems = append(st.problems, fmt.Sprintf("kill %d: a fresh store found the token file corrupt", seed))
		case ans.Found && !ans.Valid:
			st.problems = append(st.problems, fmt.Sprintf("kill %d: loaded a %d-byte token that is not one the loop stored (partial or garbled)", seed, ans.Len))
		case ans.Found && (ans.Seed > seed || ans.Seed < base):
			st.problems = append(st.problems, fmt.Sprintf("kill %d: loaded a token of loop %d", seed, ans.Seed))
		case ans.Found && ans.Seed == seed:
			st.newest++
			everFound = true
		case ans.Found:
			st.older++
			everFound = true
		case everFound:
			st.problems = append(st.problems, fmt.Sprintf("kill %d: the token file vanished", seed))
		default:
			st.none++
		}
	}
	return st
}

// 9. Several instances under one host at once.
func faultConcurrentInstances(t *testing.T, s *server) {
	stress := s.stress(t)
	me := hostNames(t)
	for _, n := range []int{2, 4, 8, 16} {
		t.Run(fmt.Sprintf("%d_instances", n), func(t *testing.T) {
			f := newFx(t, s)
			type proc struct {
				cmd *exec.Cmd
				in  io.WriteCloser
				out *bufio.Reader
			}
			procs := make([]proc, n)
			for i := range procs {
				cmd := exec.Command(stress[0], stress[1:]...)
				cmd.Env = append(append(os.Environ(), stressEnv(f.stateDir)...), "FAULTS_HELPER=hammer",
					"FAULTS_INSTANCE="+strconv.Itoa(i), "FAULTS_ROUNDS=5", "FAULTS_OPS="+strconv.Itoa(*faultHammerOps))
				cmd.Stderr = f.stderr
				in, _ := cmd.StdinPipe()
				out, _ := cmd.StdoutPipe()
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				procs[i] = proc{cmd, in, bufio.NewReader(out)}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			}
			for _, p := range procs {
				if line, _ := p.out.ReadString('\n'); line != "ready\n" {
					t.Fatalf("a hammer instance said %q", line)
				}
			}
			for _, p := range procs {
				io.WriteString(p.in, "go\n")
			}
			reports := make([]hammerReport, n)
			for i, p := range procs {
				b, _ := io.ReadAll(p.out)
				if err := p.cmd.Wait(); err != nil {
					t.Errorf("instance %d crashed: %v", i, err)
				}
				if err := json.Unmarshal(b, &reports[i]); err != nil {
					t.Fatalf("instance %d printed %q: %v", i, b, err)
				}
			}
			events := map[string]int{}
			loads, rejects := 0, 0
			for _, r := range reports {
				if r.Invalid > 0 {
					t.Errorf("instance %d loaded %d partial or garbled tokens", r.Instance, r.Invalid)
				}
				if r.OpenErrs > 0 {
					t.Errorf("instance %d: %d opens failed", r.Instance, r.OpenErrs)
				}
				for _, l := range r.Loads {
					if l[0] < 0 || l[0] >= n || l[1] >= reports[l[0]].Stored {
						t.Errorf("instance %d loaded token s%d.i%d, which no instance stored", r.Instance, l[0], l[1])
					}
				}
				loads, rejects = loads+len(r.Loads), rejects+r.Rejects
				for k, v := range r.Events {
					events[k] += v
				}
			}
			if events["token_corrupted"] > 0 {
				t.Errorf("%d loads found the token file corrupt", events["token_corrupted"])
			}
			final, err := os.ReadFile(filepath.Join(f.stateDir, me.token))
			finalState := "absent"
			if err == nil {
				if _, _, ok := parseStressToken(string(final)); !ok {
					t.Errorf("the final token file holds %d bytes that no instance stored", len(final))
				}
				finalState = "valid"
			}
			t.Logf("%d instances: %d loads (all complete), %d rejects, final file %s, events %v", n, loads, rejects, finalState, events)
			r := f.launch(s.cmd(), nil, "")
			if r.Resumed {
				t.Errorf("resumed a stress token: %+v", r)
			}
			logs := []string{"never `" + lineCorrupt + "`"}
			if finalState == "valid" {
				logs = append(logs, f.mustLog(lineRejected))
			}
			f.row(fmt.Sprintf("9/%d", n), fmt.Sprintf("%d instances under one host at once", n),
				fmt.Sprintf("%d processes of the language's binding (real identity: all children of the test process) each doing 5 × (open a store, %s × load / reject 1 in 4 / store, close)", n, "`-faults.hammer-ops`"),
				"no crash; every load returned a complete token some instance had stored, never a garbled one; no corruption seen; a real server then found a usable file (offered, refused by the broker: stress tokens are not the broker's)",
				logs, "no")
		})
	}
}

// 10. PID reuse across PID namespaces.
func faultPIDReuse(t *testing.T, s *server) {
	requireUnshare(t, "-p", "-f", "--mount-proc", "--kill-child")
	t.Run("sequential", func(t *testing.T) {
		f := newFx(t, s)
		a := startRemoteHost(t, f.env, pidNSWrapper, s.cmd(), nil)
		a1, a2 := a.launch(), a.launch()
		f.record(a1)
		f.record(a2)
		if !a2.Resumed || a2.SessionID != a1.SessionID {
			t.Errorf("host A's relaunch: %+v, want %s resumed", a2, a1.SessionID)
		}
		a.close()
		time.Sleep(30 * time.Millisecond) // a later clock tick
		b := startRemoteHost(t, f.env, pidNSWrapper, s.cmd(), nil)
		if a.Self.PID != b.Self.PID || a.Self.Start == b.Self.Start {
			t.Fatalf("hosts %+v and %+v: want the same pid and different start times", a.Self, b.Self)
		}
		b1, b2 := b.launch(), b.launch()
		f.record(b1)
		f.record(b2)
		wrong := b1.SessionID == a1.SessionID
		if b1.Resumed || wrong {
			t.Errorf("host B's first launch: %+v (host A's session %s)", b1, a1.SessionID)
		}
		if !b2.Resumed || b2.SessionID != b1.SessionID {
			t.Errorf("host B's relaunch: %+v, want %s resumed", b2, b1.SessionID)
		}
		nf := f.mustLog(lineNotFound)
		f.row("10a", "PID reuse (PID namespaces, one after the other)",
			fmt.Sprintf("host A, then host B, each pid %d of a fresh PID namespace (`unshare -p -f --mount-proc`), sharing the state dir", a.Self.PID),
			"the token file names differ only by start time: B found no token, fresh session, and resumed its own on relaunch; A resumed its own before",
			[]string{nf}, wrongIf(wrong, "B resumed A's session"))
	})
	// tickAndBoot keeps the start tick and boot id of a Linux start time
	// (<ticks>.<boot_id>.<pid_ns>.<program image>), dropping the PID
	// namespace and the program image.
	tickAndBoot := func(start string) string {
		if parts := strings.Split(start, "."); len(parts) >= 3 {
			return parts[0] + "." + parts[1]
		}
		return start
	}
	t.Run("same_start_tick", func(t *testing.T) {
		f := newFx(t, s)
		var a, b *remoteHost
		attempts := 0
		for attempts < 50 {
			attempts++
			pa := startRemoteHostAsync(t, f.env, pidNSWrapper, s.cmd(), nil)
			pb := startRemoteHostAsync(t, f.env, pidNSWrapper, s.cmd(), nil)
			pa.readSelf()
			pb.readSelf()
			// The same tick and boot: all the start time had before it also
			// named the PID namespace.
			if pa.Self.PID == pb.Self.PID && tickAndBoot(pa.Self.Start) == tickAndBoot(pb.Self.Start) {
				a, b = pa, pb
				break
			}
			pa.close()
			pb.close()
		}
		if a == nil {
			skipFault(t, "two PID namespaces never started their hosts in the same clock tick in 50 attempts")
		}
		t.Logf("hosts in two PID namespaces with identical identity pid %d start %s after %d attempt(s)", a.Self.PID, a.Self.Start, attempts)
		a1 := a.launch()
		f.record(a1)
		b1 := b.launch()
		f.record(b1)
		wrong := b1.Resumed && b1.SessionID == a1.SessionID
		outcome := "same pid, same start tick, same boot id, but the start time also names the PID namespace (`/proc/self/ns/pid` inode): different token files, B got a fresh session"
		var logs []string
		if wrong {
			t.Logf("KNOWN WRONG RESUME (docs/RELIABILITY.md): host B resumed host A's session %s", a1.SessionID)
			outcome = "both hosts are pid 2 with the same start tick (CLK_TCK 100: 10 ms) and the same boot id, so their token files have the same name: host B loaded host A's token and resumed A's session"
			logs = []string{f.mustLog(lineResumed)}
		} else {
			logs = []string{f.mustLog(lineNotFound)}
		}
		f.row("10b", "Same pid and same start tick in two PID namespaces",
			"two hosts started at once, each pid 2 of its own PID namespace, sharing the state dir; retried until their start ticks are equal (usually the first attempt)",
			outcome, logs, wrongIf(wrong, "known issue, see below"))
	})
	t.Run("both_alive", func(t *testing.T) {
		f := newFx(t, s)
		a := startRemoteHost(t, f.env, pidNSWrapper, s.cmd(), nil)
		a1 := a.launch()
		f.record(a1)
		time.Sleep(30 * time.Millisecond)
		b := startRemoteHost(t, f.env, pidNSWrapper, s.cmd(), nil)
		if a.Self.PID != b.Self.PID || a.Self.Start == b.Self.Start {
			t.Fatalf("hosts %+v and %+v: want the same pid and different start times", a.Self, b.Self)
		}
		b1 := b.launch()
		f.record(b1)
		a2 := a.launch()
		f.record(a2)
		wrong := b1.SessionID == a1.SessionID || (a2.Resumed && a2.SessionID != a1.SessionID)
		if wrong || b1.Resumed {
			t.Errorf("A %+v then %+v, B %+v", a1, a2, b1)
		}
		var outcome string
		var logs []string
		if f.logged(lineStale) {
			logs = []string{f.mustLog(lineStale)}
			if a2.Resumed {
				t.Errorf("A resumed although its token file was pruned: %+v", a2)
			}
			outcome = "B's server saw `token-2-<A's start>`, found its pid 2 alive with another start time in B's namespace, and pruned A's live token: A's relaunch started fresh (session lost, not resumed wrongly)"
		} else {
			if !a2.Resumed || a2.SessionID != a1.SessionID {
				t.Errorf("A's relaunch: %+v, want %s resumed", a2, a1.SessionID)
			}
			logs = []string{f.mustLog(lineResumed)}
			outcome = "each host resumed only its own session"
		}
		f.row("10c", "Two live hosts in two PID namespaces", "host A (ns A) stores a token and stays alive; host B, pid 2 of ns B with a later start, launches; then A relaunches", outcome, logs, wrongIf(wrong, "a host resumed the other's session"))
	})
}

// 11. The server's parent is gone: re-parented to pid 1 or a subreaper.
func faultOrphaned(t *testing.T, s *server) {
	requireUnshare(t, "-p", "-f", "--mount-proc", "--kill-child")
	t.Run("pid1", func(t *testing.T) {
		f := newFx(t, s)
		s0 := f.launch(s.cmd(), nil, "") // a valid token of this host
		w := f.watchState()
		argv := []string{"unshare", "-p", "-f", "--mount-proc", "--kill-child", "sh", "-c", `sh -c "$FAULTS_ORPHAN"; exec sleep 600`}
		a := f.launch(argv, []string{"FAULTS_ORPHAN=" + orphanScript, "FAULTS_SERVER=" + s.shell()}, "")
		wrong := a.SessionID == s0.SessionID
		if wrong || a.Resumed {
			t.Errorf("an orphaned server resumed: %+v", a)
		}
		id := f.mustLog(lineIdentity, "parent pid 1")
		if ev := w.events(); len(ev) > 0 {
			t.Errorf("the orphaned server touched the state directory: %v", ev)
		}
		f.row("11a", "Server orphaned (parent gone, re-parented to pid 1)",
			"the server's launcher shell exits before the server starts, inside a PID namespace; the server keeps the MCP pipes",
			"the walk reaches parent pid 1: resume off for the instance, fresh session; inotify saw no access to the state dir (which held this host's valid token)",
			[]string{id}, wrongIf(wrong, "resumed"))
	})
	t.Run("own_pid_namespace", func(t *testing.T) {
		f := newFx(t, s)
		s0 := f.launch(s.cmd(), nil, "")
		w := f.watchState()
		a := f.launch(append([]string{"unshare", "-p", "-f", "--mount-proc", "--kill-child"}, s.cmd()...), nil, "")
		b := f.launch(append([]string{"unshare", "-p", "-f", "--kill-child"}, s.cmd()...), nil, "")
		wrong := a.SessionID == s0.SessionID || b.SessionID == s0.SessionID
		if wrong || a.Resumed || b.Resumed {
			t.Errorf("resumed: %+v %+v", a, b)
		}
		id := f.mustLog(lineIdentity)
		if ev := w.events(); len(ev) > 0 {
			t.Errorf("the server touched the state directory: %v", ev)
		}
		f.row("11b", "Server alone in its own PID namespace", "`unshare -p -f [--mount-proc] server`: the server is pid 1, its host outside the namespace",
			"with its own /proc: parent pid 0, refused; without: /proc/self is not the server's pid, so /proc belongs to another PID namespace: refused (see 11d); resume off, fresh session, state dir untouched",
			[]string{id}, wrongIf(wrong, "resumed"))
	})
	t.Run("foreign_proc", func(t *testing.T) {
		f := newFx(t, s)
		mine := f.launch(s.cmd(), nil, "") // this host's session and token
		// Another MCP host (a child of this process) launches the server in
		// a new PID namespace without its own /proc, and sets the next pid
		// of that namespace so the server's pid there equals the other
		// host's pid out here.
		script := `echo $((FAULTS_HOST_PID - 1)) > /proc/sys/kernel/ns_last_pid && $FAULTS_SERVER; exit $?`
		h := startRemoteHost(t, f.env, nil, []string{"unshare", "-p", "-f", "--kill-child", "sh", "-c", script},
			[]string{"FAULTS_SERVER=" + s.shell()})
		r := h.launch()
		f.record(r)
		wrong := r.SessionID == mine.SessionID
		var outcome string
		var logs []string
		if wrong {
			t.Logf("KNOWN WRONG RESUME (docs/RELIABILITY.md): host %d's server resumed this host's session %s", h.Self.PID, mine.SessionID)
			outcome = "the server's pid in its namespace equals the other host's pid outside; the plugin reads /proc/<that pid> of the parent namespace, i.e. the other host, walks to its parent (this test process) and resumes this process's session"
			logs = []string{f.mustLog(lineResumed)}
		} else {
			if r.Resumed {
				t.Errorf("resumed: %+v", r)
			}
			outcome = "the server noticed that /proc is not its PID namespace's: resume off, fresh session"
			logs = []string{f.mustLog(lineIdentity)}
		}
		f.row("11d", "/proc of another PID namespace",
			"a second MCP host launches the server via `unshare -p -f` without `--mount-proc`, with `ns_last_pid` set so the server's pid equals the second host's pid outside; the first host (the test) holds a token",
			outcome, logs, wrongIf(wrong, "known issue, see below"))
	})
	for _, tc := range []struct{ id, name, stdio, fault, channel string }{
		{"11c", "subreaper", "pipes", "Servers orphaned under a subreaper", "pipes"},
		{"11e", "subreaper_socketpair", "socketpair", "Servers orphaned under a subreaper, socket-pair stdio", "socket pair (SO_PEERCRED names the host that launched it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFx(t, s)
			cmd := exec.Command(helperBin(t))
			argv, _ := json.Marshal([]string{"sh", "-c", orphanScript})
			cmd.Env = append(append(os.Environ(), f.vars()...), "FAULTS_HELPER=subreaper", "FAULTS_ARGV="+string(argv), "FAULTS_SERVER="+s.shell(), "FAULTS_STDIO="+tc.stdio)
			cmd.Stderr = f.stderr
			var out bytes.Buffer
			cmd.Stdout = &out
			done := make(chan error, 1)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("subreaper helper: %v\n%s", err, f.stderr)
				}
			case <-time.After(90 * time.Second):
				cmd.Process.Kill()
				t.Fatal("subreaper helper timed out")
			}
			var rep subreaperReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Runs) != 2 {
				t.Fatalf("subreaper helper printed %q: %v", out.String(), err)
			}
			f.record(rep.Runs[0])
			f.record(rep.Runs[1])
			wrong := rep.Runs[1].Resumed && rep.Runs[1].SessionID == rep.Runs[0].SessionID
			var outcome string
			var logs []string
			// Node cannot read SO_PEERCRED: the TypeScript host answers
			// peer "unsupported", so a socket pair cannot tell, and the
			// identity stands (docs/RELIABILITY.md, the residual of 11e).
			residual := s.name == "typescript" && tc.stdio == "socketpair"
			wrongWhat := "the second host resumed the first host's session"
			switch {
			case wrong && residual:
				t.Logf("KNOWN RESIDUAL (docs/RELIABILITY.md): host %d resumed host %d's session under subreaper %d", rep.Hosts[1], rep.Hosts[0], rep.Self.PID)
				outcome = "Node cannot read SO_PEERCRED (peer: unsupported), so the socket pair cannot tell and the identity stands: both orphaned servers took the subreaper for their host, and the second host's server resumed the first host's session"
				logs = []string{f.mustLog(lineResumed)}
				wrongWhat += " (residual, see below)"
			case wrong:
				t.Errorf("WRONG RESUME: host %d resumed host %d's session under subreaper %d", rep.Hosts[1], rep.Hosts[0], rep.Self.PID)
				outcome = "both orphaned servers resolved the subreaper as their host: the second host's server resumed the first host's session"
				logs = []string{f.mustLog(lineResumed)}
			default:
				if rep.Runs[0].Resumed || rep.Runs[1].Resumed {
					t.Errorf("an adopted server resumed: %+v", rep.Runs)
				}
				outcome = "both orphaned servers were re-parented to the subreaper, which is not on the plugin's reaper list; the walk took it for the host, but it does not hold the other end of the server's " + tc.channel + ", so resume is off for both: fresh sessions"
				logs = []string{f.mustLog(lineIdentity, "does not hold the other end of the server's stdio")}
			}
			f.row(tc.id, tc.fault,
				"a process with PR_SET_CHILD_SUBREAPER runs two MCP hosts one after the other; each launches the server through a shell that exits at once",
				outcome, logs, wrongIf(wrong, wrongWhat))
		})
	}
}

// 12. /proc hides the host from the server.
func faultProcHidden(t *testing.T, s *server) {
	requireUnshare(t, "-m", "-p", "-f", "--propagation", "private", "--kill-child")
	n := newNobody(t, s)
	wrapper := []string{"unshare", "-m", "-p", "-f", "--propagation", "private", "--kill-child", "sh", "-c",
		`mount -t proc -o "$FAULTS_PROCOPTS" proc /proc && "$0"; exit $?`}
	var control [2]launchResult
	t.Run("control", func(t *testing.T) {
		f := newFx(t, s)
		f.stateDir = n.appDir(t, "state-12-control", f.app, 0o700)
		// The server keeps CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH to list its
		// root host's fds: without them the stdio check cannot tell and
		// turns resume off (fault 22b).
		h := startRemoteHost(t, f.env, wrapper, n.argvCaps(), append(n.env, "FAULTS_PROCOPTS=rw"))
		control[0], control[1] = h.launch(), h.launch()
		f.record(control[0])
		f.record(control[1])
		if !control[1].Resumed || control[1].SessionID != control[0].SessionID {
			t.Fatalf("without hidepid the uid-65534 server should resume under its root host: %+v %+v\n%s", control[0], control[1], f.stderr)
		}
	})
	t.Run("hidepid", func(t *testing.T) {
		f := newFx(t, s)
		f.stateDir = n.appDir(t, "state-12", f.app, 0o700)
		w := f.watchState()
		h := startRemoteHost(t, f.env, wrapper, n.argv(), append(n.env, "FAULTS_PROCOPTS=hidepid=2"))
		a, b := h.launch(), h.launch()
		f.record(a)
		f.record(b)
		wrong := b.Resumed || a.Resumed
		if wrong || a.SessionID == b.SessionID {
			t.Errorf("resumed without a verifiable host: %+v %+v", a, b)
		}
		id := f.mustLog(lineIdentity, "hides it (mounted hidepid=1 or 2)")
		if ev := w.events(); len(ev) > 0 {
			t.Errorf("the server touched the state directory: %v", ev)
		}
		f.row("12", "/proc of the host unreadable",
			"new mount+PID namespace with /proc mounted `hidepid=2`; a root helper host launches the server as uid 65534 (the same setup without hidepid resumes when the server keeps CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH to check its root host's stdio)",
			"the host's /proc entry is invisible, but kill(pid, 0) answers EPERM, so the plugin takes it as hidden rather than gone: identity unavailable, resume off, fresh session each launch, state dir untouched",
			[]string{id}, wrongIf(wrong, "resumed"))
	})
}

// lineKeyInexact is the plugin's line for an instance key input the host
// could not carry exactly (hostfuncs/README.md, "mcp_resume_log").
const lineKeyInexact = "Instance key holds bytes the host could not carry exactly, session resume disabled for this instance"

// 13. Two apps share one state root.
func faultSharedRoot(t *testing.T, s *server) {
	f := newFx(t, s)
	// The other app: the next language's example server, a different MCP
	// server under the same host, launched the same way (no arguments,
	// no instance) with the same MCP_RESUME_STATE_DIR.
	next := map[string]lang{"go": allLangs[1], "python": allLangs[2], "typescript": allLangs[0]}[s.name]
	other := findServer(t, next)
	a := f.launch(s.cmd(), nil, "note of "+s.app())
	b := f.launch(other.cmd(), nil, "")
	again := f.launch(s.cmd(), nil, "")
	wrong := b.SessionID == a.SessionID || b.Resumed
	if wrong {
		t.Errorf("app %s resumed app %s's session: %+v", other.app(), s.app(), b)
	}
	if !again.Resumed || again.SessionID != a.SessionID {
		t.Errorf("app %s did not resume its own session after app %s ran: %+v, want %s", s.app(), other.app(), again, a.SessionID)
	}
	me := hostNames(t)
	root := filepath.Dir(f.stateDir)
	for _, app := range []string{s.app(), other.app()} {
		checkTokenFile(t, filepath.Join(root, app, me.token))
	}
	nf := f.mustLog(lineNotFound)
	f.row("13", "Two apps share one state root",
		"MCP_RESUME_STATE_DIR set once for every server: app A (this language's server) stores a token, then app B (the next language's server, same host, same empty arguments) starts, then A again",
		"each app got its own directory under the root (<root>/example-go, …): B found no token file (fresh session), A resumed its own; no file is shared",
		[]string{nf}, wrongIf(wrong, "app B resumed app A's session"))
}

// inDir runs argv with the working directory dir: sh changes to it and
// execs argv, so the server's parent stays this test process.
func inDir(dir string, argv []string) []string {
	return append([]string{"sh", "-c", `cd "$0" && exec "$@"`, dir}, argv...)
}

// 14. Launches of one server that differ in working directory or environment.
func faultLaunchesDiffer(t *testing.T, s *server) {
	// The default instance key: not "-".
	defaultKey := []string{"MCP_RESUME_INSTANCE="}
	t.Run("cwd", func(t *testing.T) {
		f := newFx(t, s)
		ws := t.TempDir()
		projA, projB := filepath.Join(ws, "A"), filepath.Join(ws, "B")
		os.Mkdir(projA, 0o755)
		os.Mkdir(projB, 0o755)
		a := f.launch(inDir(projA, s.cmd()), defaultKey, "project A")
		b := f.launch(inDir(projB, s.cmd()), defaultKey, "")
		a2 := f.launch(inDir(projA, s.cmd()), defaultKey, "")
		wrong := b.SessionID == a.SessionID || b.Resumed
		if wrong {
			t.Errorf("project B resumed project A's session: %+v", b)
		}
		if !a2.Resumed || a2.SessionID != a.SessionID {
			t.Errorf("project A reopened: %+v, want %s resumed", a2, a.SessionID)
		}
		if n := len(tokenNames(f.stateDir)); n != 2 {
			t.Errorf("%d token files, want one per project", n)
		}
		f.row("14a", "One host, two projects (working directories)",
			"the same server launched by one host process from /ws/A (stores a token), then from /ws/B, then from /ws/A again",
			"the working directory is part of the default instance key: B got its own file and a fresh session; A resumed its own",
			[]string{f.mustLog(lineNotFound)}, wrongIf(wrong, "project B resumed project A's session"))
	})
	t.Run("env", func(t *testing.T) {
		f := newFx(t, s)
		work := append([]string{"ACCOUNT=work"}, defaultKey...)
		personal := append([]string{"ACCOUNT=personal"}, defaultKey...)
		w := f.launch(s.cmd(), append(work, "SHLVL=2", "_=/usr/bin/a"), "work")
		p := f.launch(s.cmd(), append(personal, "SHLVL=2", "_=/usr/bin/a"), "")
		// A relaunch whose per-launch variables changed still resumes.
		w2 := f.launch(s.cmd(), append(work, "SHLVL=5", "_=/usr/bin/b", "OLDPWD=/tmp"), "")
		wrong := p.SessionID == w.SessionID || p.Resumed
		if wrong {
			t.Errorf("ACCOUNT=personal resumed ACCOUNT=work's session: %+v", p)
		}
		if !w2.Resumed || w2.SessionID != w.SessionID {
			t.Errorf("ACCOUNT=work relaunched with other SHLVL, _ and OLDPWD: %+v, want %s resumed", w2, w.SessionID)
		}
		// "Restart all": both entries at once, each must resume its own.
		var rw, rp launchResult
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			rw = launchOnce(context.Background(), s.cmd(), append(f.vars(), work...), f.stderr, "", false)
		}()
		go func() {
			defer wg.Done()
			rp = launchOnce(context.Background(), s.cmd(), append(f.vars(), personal...), f.stderr, "", false)
		}()
		wg.Wait()
		f.record(rw)
		f.record(rp)
		crossed := rw.SessionID == p.SessionID || rp.SessionID == w.SessionID || rw.SessionID == rp.SessionID
		if crossed {
			t.Errorf("restart all: work got %s, personal got %s (work was %s, personal %s)", rw.SessionID, rp.SessionID, w.SessionID, p.SessionID)
		}
		if !rw.Resumed || !rp.Resumed {
			t.Errorf("restart all: work %+v, personal %+v: want both resumed", rw, rp)
		}
		f.row("14b", "One host, two config entries (environment), one after the other and at once",
			"the same command with ACCOUNT=work (stores a token), then ACCOUNT=personal; work relaunched with other SHLVL, _ and OLDPWD; then both at once (\"restart all\")",
			"the environment minus the per-launch variables is part of the default instance key: personal got its own file and a fresh session; work resumed its own across the per-launch changes; at once, each resumed its own session under its own lock",
			[]string{f.mustLog(lineNotFound), f.mustLog(lineResumed)}, wrongIf(wrong || crossed, "one entry resumed the other's session"))
	})
}

// tokenNames lists the token files of dir.
func tokenNames(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "token-*"))
	return m
}

// 15. Arguments that differ only in bytes that are not UTF-8.
func faultUndecodableArgs(t *testing.T, s *server) {
	f := newFx(t, s)
	defaultKey := []string{"MCP_RESUME_INSTANCE="}
	a := f.launch(append(s.cmd(), "--x=\xff"), defaultKey, "entry A")
	b := f.launch(append(s.cmd(), "--x=\xfe"), defaultKey, "")
	a2 := f.launch(append(s.cmd(), "--x=\xff"), defaultKey, "")
	wrong := b.SessionID == a.SessionID || b.Resumed || a2.Resumed
	if wrong {
		t.Errorf("resumed with an inexact key: %+v %+v", b, a2)
	}
	if n := tokenNames(f.stateDir); len(n) != 0 {
		t.Errorf("token files written for an inexact key: %v", n)
	}
	f.row("15", "Arguments differ only in undecodable bytes",
		"two entries launch the same server with `--x=\\xff` and `--x=\\xfe` (bytes that are not UTF-8), one after the other; then the first again",
		"every host hands the plugin `--x=U+FFFD` for both (Go's JSON, Python's surrogateescape replaced, Node's argv decoding), so the key cannot tell them apart: resume off for both, nothing written, fresh sessions; the line says to set an ASCII MCP_RESUME_INSTANCE",
		[]string{f.mustLog(lineKeyInexact, "MCP_RESUME_INSTANCE")}, wrongIf(wrong, "resumed"))
}

// 16. The host execs into another program.
func faultHostExecs(t *testing.T, s *server) {
	f := newFx(t, s)
	h := startRemoteHost(t, f.env, nil, s.cmd(), nil)
	first := h.launch()
	f.record(first)
	before := h.Self
	// Another program: a copy of the helper at another path is another
	// file (another inode), as a Python host that execvp's node would be.
	other := filepath.Join(t.TempDir(), "other-host")
	if err := os.WriteFile(other, mustRead(t, helperBin(t)), 0o755); err != nil {
		t.Fatal(err)
	}
	h.exec(other)
	if h.Self.PID != before.PID {
		t.Fatalf("the host's pid changed across exec: %d -> %d", before.PID, h.Self.PID)
	}
	second := h.launch()
	f.record(second)
	wrong := second.SessionID == first.SessionID || second.Resumed
	if wrong {
		t.Errorf("the exec'd host resumed its predecessor's session: %+v", second)
	}
	if strings.Split(before.Start, ".")[0] != strings.Split(h.Self.Start, ".")[0] || before.Start == h.Self.Start {
		t.Errorf("start times %q -> %q: want the same ticks and another image", before.Start, h.Self.Start)
	}
	f.row("16", "The host execs into another program",
		"a helper MCP host launches the server (which stores a token), then execve's a different program file (a copy of itself at another path, so another inode), keeping its pid and start time, and relaunches the server",
		"the program image (device and inode of /proc/<pid>/exe) is part of the host's start time: the relaunched server named another file and got a fresh session; the old file's host counts as gone and is pruned",
		[]string{f.mustLog(lineNotFound), f.mustLog(lineStale)}, wrongIf(wrong, "the new program resumed the old one's session"))
}

// 17. HOME unset.
func faultHomeUnset(t *testing.T, s *server) {
	requireRoot(t)
	ns := newMountNS(t)
	f := newFx(t, s)
	// The password database's home of root is /root: its .local is a
	// tmpfs inside the namespace, so the real home is never written.
	u, err := user.LookupId(strconv.Itoa(os.Geteuid()))
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		skipFault(t, fmt.Sprintf("no password-database home for uid %d: %v", os.Geteuid(), err))
	}
	local := filepath.Join(u.HomeDir, ".local")
	if fi, err := os.Stat(local); err != nil || !fi.IsDir() {
		skipFault(t, local+" does not exist to mount a tmpfs on")
	}
	ns.run("mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", local)
	f.stateDir = filepath.Join(local, "state", "mcp-resume", f.app)
	inside := ns.path(f.stateDir)
	f.dirs = []string{inside}
	argv := ns.argv(append([]string{"env", "-u", "HOME", "-u", "XDG_STATE_HOME", "-u", "MCP_RESUME_STATE_DIR"}, s.cmd()...)...)
	first := f.launch(argv, nil, "no home")
	second := f.launch(argv, nil, "")
	me := hostNames(t)
	checkTokenFile(t, filepath.Join(inside, me.token))
	if !second.Resumed || second.SessionID != first.SessionID {
		t.Errorf("HOME unset: relaunch %+v, want session %s resumed from the password database's home", second, first.SessionID)
	}
	wrong := second.SessionID != first.SessionID && second.Resumed
	f.row("17", "HOME unset",
		"the server starts without HOME, XDG_STATE_HOME and MCP_RESUME_STATE_DIR (`env -u`), in a mount namespace whose ~/.local is a tmpfs",
		"the host reports the password database's home for the effective uid (Go os/user, Python pwd, Node os.userInfo): the default state directory ~/.local/state/mcp-resume/<app> is used and the relaunch resumed, the same in every language",
		[]string{f.mustLog(lineNotFound)}, wrongIf(wrong, "resumed another session"))
}
