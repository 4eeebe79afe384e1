//go:build linux && faults

package faults_test

// Faults 26-28: one lock for every host, no directories in another user's
// home, one message per unusable state directory. See docs/RELIABILITY.md.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// lineInstanceBusy is the plugin's line for an instance that lost the lock
// (hostfuncs/README.md, mcp_resume_log).
const lineInstanceBusy = "Another server instance under this host holds the token file, session resume disabled for this instance"

// sharedApp is the app name (EXAMPLE_APP) under which fault 26 runs the Go,
// Python and TypeScript example servers: one app, one token file, one lock.
const sharedApp = "example-shared"

// 26. A Go, a Python and a TypeScript server of one app and one declared
// instance under one host, at once. The row's language stores the session
// first; then all three start together and stay up until each has
// answered: exactly one may resume, and the other two, finding its lock
// held, mark the key ambiguous and delete the token (the marker is removed
// and a session stored before each round, so that every round meets the
// lock afresh).
func faultCrossHostLock(t *testing.T, s *server) {
	var all []*server
	for _, l := range allLangs {
		if l.name == s.name {
			all = append(all, s)
			continue
		}
		all = append(all, findServer(t, l))
	}
	f := newFx(t, s)
	// One declared instance for all three: the default key holds the
	// program, which would give each language its own key and lock.
	app := []string{"EXAMPLE_APP=" + sharedApp, "MCP_RESUME_INSTANCE=shared"}
	shared := filepath.Join(filepath.Dir(f.StateDir), sharedApp)
	wrong := false
	var order []string
	// Round i: this language's server stores a session; server i starts
	// first and answers (so it holds the lock), then the other two start
	// together; all stay up until all answered.
	for lead := range all {
		// The previous round marked the key ambiguous and deleted its
		// token: remove the marker, so that this round meets the lock
		// afresh, and store a session for the lead to resume.
		for _, m := range markerNames(shared) {
			os.Remove(m)
		}
		first := f.launch(s.cmd(), app, "")
		if first.Resumed {
			t.Fatalf("the launch before round %d resumed: %+v", lead+1, first)
		}
		results := make([]launchResult, len(all))
		var leadReady, ready, done sync.WaitGroup
		ready.Add(len(all))
		done.Add(len(all))
		leadReady.Add(1)
		release := make(chan struct{})
		start := func(i int, signal *sync.WaitGroup) {
			go func() {
				defer done.Done()
				results[i] = holdUntil(all[i].cmd(), append(f.Vars(), app...), f, signal, &ready, release)
			}()
		}
		start(lead, &leadReady)
		leadReady.Wait()
		for i := range all {
			if i != lead {
				start(i, nil)
			}
		}
		ready.Wait() // every server answered session_info while all were up
		close(release)
		done.Wait()
		var winners []string
		for i, r := range results {
			f.record(r)
			if r.Resumed {
				winners = append(winners, all[i].name)
				if r.SessionID != first.SessionID {
					t.Errorf("%s resumed session %s, not the stored %s", all[i].name, r.SessionID, first.SessionID)
				}
			}
		}
		order = append(order, all[lead].name+" first: "+strings.Join(winners, "+")+" resumed")
		if len(winners) > 1 {
			wrong = true
			t.Errorf("%s started first: %d servers resumed one session at once: %v", all[lead].name, len(winners), winners)
		}
		if len(winners) != 1 || winners[0] != all[lead].name {
			t.Errorf("%s started first and holds the lock, but %v resumed", all[lead].name, winners)
		}
		if len(markerNames(shared)) != 1 {
			t.Errorf("%s started first: ambiguity markers %v, want one", all[lead].name, markerNames(shared))
		}
	}
	amb := f.mustLog(lineAmbiguousDeclared, "MCP_RESUME_INSTANCE")
	t.Logf("rounds: %v", order)
	f.row("26", "Go, Python and TypeScript servers of one app under one host at once",
		fmt.Sprintf("`EXAMPLE_APP=%s` and one MCP_RESUME_INSTANCE for all three (the default key would part them by program): 3 rounds, each with a different one of the three example servers started first, the other two once it answered, all kept up until all three answered; before each round the test removes the ambiguity marker and this language's server stores a session", sharedApp),
		"in every round exactly one server resumed the stored session, the one started first (it holds the lock: every host binds the plugin's abstract socket); the other two found the lock held, ran fresh sessions and marked the key ambiguous, which deleted the token",
		[]string{amb}, wrongIf(wrong, "two or more servers resumed one session at once"))
}

// holdUntil starts argv as an MCP host would, asks session_info, signals
// first (if set) and ready, waits for release (unless it could not start),
// then recalls and asks session_info again (same answer: alive) and kills
// the server (launchWith).
func holdUntil(argv, env []string, f *fx, first, ready *sync.WaitGroup, release <-chan struct{}) launchResult {
	return launchWith(context.Background(), argv, env, f.Stderr, "", false, func(srv *running) {
		if first != nil {
			first.Done()
		}
		ready.Done()
		if srv != nil {
			<-release
		}
	})
}

// realUser is a real unprivileged account made with useradd for one fault, with
// its own home directory (0700), removed at the end.
type realUser struct {
	name     string
	uid, gid int
	home     string
	cmd      []string // the server's command line, reachable by the user
}

func newUser(t *testing.T, s *server) realUser {
	t.Helper()
	requireRoot(t)
	requireTool(t, "setpriv")
	requireTool(t, "useradd")
	requireTool(t, "userdel")
	base, err := os.MkdirTemp("", "mcp-resume-faults-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	u := realUser{name: fmt.Sprintf("mcprf%d", os.Getpid()%100000), home: filepath.Join(base, "home"), cmd: s.cmd()}
	if out, err := exec.Command("useradd", "--no-create-home", "--home-dir", u.home, "--shell", "/bin/sh", u.name).CombinedOutput(); err != nil {
		t.Fatalf("useradd: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("userdel", u.name).Run() })
	for _, field := range []struct {
		flag string
		dst  *int
	}{{"-u", &u.uid}, {"-g", &u.gid}} {
		out, err := exec.Command("id", field.flag, u.name).Output()
		if err != nil {
			t.Fatal(err)
		}
		*field.dst, _ = strconv.Atoi(strings.TrimSpace(string(out)))
	}
	if err := os.Mkdir(u.home, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(u.home, u.uid, u.gid)
	if s.name == "go" {
		u.cmd = []string{filepath.Join(base, "go-server")}
		if err := os.WriteFile(u.cmd[0], mustRead(t, s.argv[0]), 0o755); err != nil {
			t.Fatal(err)
		}
	} else if p := unreachableFor65534(s.argv); p != "" {
		skipFault(t, fmt.Sprintf("another user cannot reach %s: the %s server cannot run as another user from this checkout; run `make provision` as root, or clone the repository where other users can read it", p, s.title))
	} else if why := cannotImportAs(u.uid, u.gid, s); why != "" {
		skipFault(t, why)
	}
	return u
}

// argv runs the server as the user, keeping CAP_SYS_PTRACE and
// CAP_DAC_READ_SEARCH (ambient) so that it can inspect its MCP host, this
// root test process (its fds and program image): without them the identity
// could not be verified and resume would be off for a reason this fault does
// not test.
func (u realUser) argv() []string {
	caps := "+sys_ptrace,+dac_read_search"
	return append([]string{"setpriv", "--reuid", strconv.Itoa(u.uid), "--regid", strconv.Itoa(u.gid), "--clear-groups", "--inh-caps", caps, "--ambient-caps", caps}, u.cmd...)
}

// env is what a server of this user sees: its HOME, no state or cache
// directory set, the broker.
func (u realUser) env(f *fx) []string {
	return []string{"MCP_EXAMPLE_BROKER_URL=" + f.Broker.URL, "HOME=" + u.home, "XDG_STATE_HOME=", "XDG_CACHE_HOME=", "USER=" + u.name, "LOGNAME=" + u.name}
}

// 27. A server run as root with an unprivileged user's HOME (sudo -E) on a
// home without ~/.local, then that user's servers.
func faultRootWithUserHome(t *testing.T, s *server) {
	u := newUser(t, s)
	f := newFx(t, s)
	app := map[string]string{"go": "example-go", "python": "example-python", "typescript": "example-typescript"}[s.name]
	f.StateDir = filepath.Join(u.home, ".local", "state", "mcp-resume", app)
	before := listing(t, u.home)
	// root, HOME of the user (sudo -E keeps HOME). Root's compile cache
	// goes elsewhere: where a compile cache may be created is the compile
	// cache's rule, not the state directory's (docs/RELIABILITY.md, fault
	// 27, says what happens without this).
	rootCache := t.TempDir()
	r := f.launch(s.cmd(), append(u.env(f), "XDG_CACHE_HOME="+rootCache), "")
	if r.Resumed {
		t.Errorf("root resumed: %+v", r)
	}
	du := f.mustLog(lineDirUnusable, "does not exist, and creating it would create", "/home/.local inside", ", not by this user (uid 0)")
	if !f.findLog(lineDirUnusable, "which is owned by uid "+strconv.Itoa(u.uid)+",") {
		t.Errorf("the line does not name the user's uid %d", u.uid)
	}
	created := ""
	if _, err := os.Lstat(filepath.Join(u.home, ".local")); err == nil {
		created = "~/.local"
		t.Errorf("root created %s in the user's home", filepath.Join(u.home, ".local"))
	}
	var rootOwned []string // top-level entries of the home that root owns
	entries, _ := os.ReadDir(u.home)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && ownerUID(info) == 0 {
			rootOwned = append(rootOwned, "~/"+e.Name())
		}
	}
	if after := listing(t, u.home); after != before || len(rootOwned) > 0 {
		t.Errorf("root changed the user's home (root-owned: %v):\n%s\nwas:\n%s", rootOwned, after, before)
	}
	// The user's next two servers: the first starts a session and stores it,
	// the second resumes it.
	a := f.launch(u.argv(), u.env(f), "")
	b := f.launch(u.argv(), u.env(f), "")
	if a.Resumed || !b.Resumed || b.SessionID != a.SessionID {
		t.Errorf("the user's servers after root's: %+v then %+v; want a fresh session, then that session resumed", a, b)
	}
	resumed := f.mustLog(lineResumed)
	if n := strings.Count(f.Stderr.String(), lineDirUnusable); n != 1 {
		t.Errorf("%d lines %q, want only root's", n, lineDirUnusable)
	}
	outcome := "root: resume off, a fresh session, nothing created in the user's home; the user's next server starts and stores a session, the one after resumes it"
	f.row("27", "A server run as root with a user's HOME (sudo -E)",
		"a real user made with `useradd`, home 0700 without `~/.local`; the server runs as root with `HOME` set to it (its compile cache elsewhere), then twice as the user (`setpriv`, keeping CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH to inspect its root MCP host)",
		outcome, []string{du, resumed}, wrongIf(created != "", "root created "+created+" (the user's servers then lose resume)"))
}

// ownerUID is the owner of info's file (-1 when unknown).
func ownerUID(info os.FileInfo) int {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// 28. The state directory is a regular file or a dangling symlink: the same
// line, worded by the plugin, in every language.
func faultStateDirNotDir(t *testing.T, s *server) {
	for _, c := range []struct {
		id, fault, injection, detail string
		setup                        func(t *testing.T, path string)
	}{
		{"28a", "State dir is a regular file: one message", "the app's state directory under `MCP_RESUME_STATE_DIR` is a regular file",
			"exists and is not a directory; remove it, or point MCP_RESUME_STATE_DIR at a directory",
			func(t *testing.T, path string) { os.WriteFile(path, []byte("x"), 0o600) }},
		{"28b", "State dir is a dangling symlink: one message", "the app's state directory under `MCP_RESUME_STATE_DIR` is a symlink to a missing path",
			"is a symbolic link, which is never followed; point MCP_RESUME_STATE_DIR at the real directory",
			func(t *testing.T, path string) { os.Symlink("missing", path) }},
	} {
		t.Run(c.id, func(t *testing.T) {
			f := newFx(t, s)
			root := filepath.Join(t.TempDir(), "state") // MCP_RESUME_STATE_DIR
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(root, f.App) // the app's state directory in it
			c.setup(t, path)
			f.StateDir = path
			r := f.launch(s.cmd(), nil, "")
			if r.Resumed {
				t.Errorf("resumed: %+v", r)
			}
			du := f.mustLog(lineDirUnusable, c.detail)
			if _, err := os.Lstat(filepath.Join(filepath.Dir(path), "missing")); err == nil {
				t.Errorf("the symlink's target was created")
			}
			f.row(c.id, c.fault, c.injection,
				"resume off for the instance, fresh session; nothing created; the same detail in every language", []string{du}, "no")
		})
	}
}
