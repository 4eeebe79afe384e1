package procid

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// Processes shared by the resolve fixtures. The server under test is pid 300
// unless a case says otherwise.
var (
	initProc   = fakeProc{pid: 1, ppid: 0, comm: "systemd", cmdline: argv("/sbin/init")}
	terminal   = fakeProc{pid: 50, ppid: 1, comm: "tmux: server", cmdline: argv("tmux")}
	claude     = fakeProc{pid: 100, ppid: 50, comm: "claude", cmdline: argv("claude")}
	vscode     = fakeProc{pid: 110, ppid: 50, comm: "code", cmdline: argv("/usr/share/code/code", "--type=utility")}
	npmExec    = fakeProc{pid: 150, ppid: 100, comm: "npm exec @model", cmdline: "npm exec @modelcontextprotocol/server-everything" + string(make([]byte, 30))}
	shC        = fakeProc{pid: 200, ppid: 150, comm: "sh", cmdline: argv("sh", "-c", "mcp-server-everything")}
	serverNode = fakeProc{pid: 300, ppid: 200, comm: "node", cmdline: argv("node", "/home/u/.npm/_npx/1/node_modules/.bin/mcp-server-everything")}
)

// launcherRun returns n chained "sh -c" launchers with pids from+1 to
// from+n, the first a child of parent; the last one's pid is from+n.
func launcherRun(parent, from, n int) []fakeProc {
	var procs []fakeProc
	for i := 1; i <= n; i++ {
		procs = append(procs, fakeProc{pid: from + i, ppid: parent, comm: "sh", cmdline: argv("sh", "-c", "next")})
		parent = from + i
	}
	return procs
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name      string
		procs     []fakeProc
		noBoot    bool
		pid       int      // 0 means 300
		extra     []string // Options.Launchers
		env       string   // MCP_RESUME_LAUNCHERS
		wantChain []int    // pids, nearest first; the last is the host
		wantErr   error
	}{
		{
			name:      "direct child",
			procs:     []fakeProc{initProc, terminal, claude, serverNode.with(100)},
			wantChain: []int{100},
		},
		{
			name:      "npx: npm exec title then sh -c",
			procs:     []fakeProc{initProc, terminal, claude, npmExec, shC, serverNode},
			wantChain: []int{200, 150, 100},
		},
		{
			name: "npx: title truncated in comm, args unreadable",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 150, ppid: 100, comm: "npm exec @model"}, shC, serverNode},
			wantChain: []int{200, 150, 100},
		},
		{
			name: "old npx: node running npx-cli.js",
			procs: []fakeProc{initProc, terminal, vscode,
				fakeProc{pid: 150, ppid: 110, comm: "node", cmdline: argv("/usr/bin/node", "/usr/lib/node_modules/npm/bin/npx-cli.js", "-y", "server")},
				serverNode.with(150)},
			wantChain: []int{150, 110},
		},
		{
			name: "pnpm dlx: node running pnpm.cjs",
			procs: []fakeProc{initProc, terminal, vscode,
				fakeProc{pid: 150, ppid: 110, comm: "node", cmdline: argv("node", "/opt/pnpm/bin/pnpm.cjs", "dlx", "server")},
				serverNode.with(150)},
			wantChain: []int{150, 110},
		},
		{
			name: "bun x",
			procs: []fakeProc{initProc, terminal, vscode,
				fakeProc{pid: 150, ppid: 110, comm: "bun", cmdline: argv("/home/u/.bun/bin/bun", "x", "server")},
				serverNode.with(150)},
			wantChain: []int{150, 110},
		},
		{
			name: "uvx, env and timeout",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 120, ppid: 100, comm: "timeout", cmdline: argv("timeout", "600", "env", "FOO=1", "uvx", "mcp-server-fetch")},
				fakeProc{pid: 150, ppid: 120, comm: "uv", cmdline: argv("/home/u/.local/bin/uv", "tool", "uvx", "mcp-server-fetch")},
				fakeProc{pid: 300, ppid: 150, comm: "python3", cmdline: argv("python3", "-m", "mcp_server_fetch")}},
			wantChain: []int{150, 120, 100},
		},
		{
			name: "node is not a launcher by itself",
			procs: []fakeProc{initProc, terminal,
				fakeProc{pid: 100, ppid: 50, comm: "node", cmdline: argv("node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js")},
				serverNode.with(100)},
			wantChain: []int{100},
		},
		{
			name: "wrapper script: comm is the script, Args[0] the shell",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 200, ppid: 100, comm: "run-server.sh", cmdline: argv("/bin/bash", "/opt/run-server.sh")},
				serverNode},
			wantChain: []int{200, 100},
		},
		{
			name: "login shell running a command",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 200, ppid: 100, comm: "zsh", cmdline: argv("/bin/zsh", "-ilc", "mcp-server")},
				serverNode},
			wantChain: []int{200, 100},
		},
		{
			name: "interactive login shell is the host",
			procs: []fakeProc{initProc, terminal,
				fakeProc{pid: 100, ppid: 50, comm: "bash", cmdline: argv("-bash")},
				serverNode.with(100)},
			wantChain: []int{100},
		},
		{
			name: "interactive shell with options is the host",
			procs: []fakeProc{initProc, terminal,
				fakeProc{pid: 100, ppid: 50, comm: "zsh", cmdline: argv("/bin/zsh", "-l", "--login")},
				serverNode.with(100)},
			wantChain: []int{100},
		},
		{
			name: "shell reading stdin is the host",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 200, ppid: 100, comm: "sh", cmdline: argv("sh", "-s")},
				serverNode},
			wantChain: []int{200},
		},
		{
			name: "shell with unknown args is the host",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 200, ppid: 100, comm: "sh"},
				serverNode},
			wantChain: []int{200},
		},
		{
			name: "extra launcher from options",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 200, ppid: 100, comm: "my-wrapper", cmdline: argv("./my-wrapper", "server")},
				serverNode},
			extra:     []string{"my-wrapper"},
			wantChain: []int{200, 100},
		},
		{
			name: "extra launcher from environment",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 200, ppid: 100, comm: "direnv", cmdline: argv("direnv", "exec", ".", "server")},
				serverNode},
			env:       " foo , direnv,,",
			wantChain: []int{200, 100},
		},
		{
			name: "extra launcher matched by truncated comm",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 200, ppid: 100, comm: "very-long-launc"},
				serverNode},
			extra:     []string{"very-long-launcher"},
			wantChain: []int{200, 100},
		},
		{
			name: "unknown wrapper is the host",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 200, ppid: 100, comm: "my-wrapper", cmdline: argv("./my-wrapper", "server")},
				serverNode},
			wantChain: []int{200},
		},
		{
			name:      "fifteen launchers",
			procs:     append([]fakeProc{initProc, terminal, claude, serverNode.with(415)}, launcherRun(100, 400, 15)...),
			wantChain: []int{415, 414, 413, 412, 411, 410, 409, 408, 407, 406, 405, 404, 403, 402, 401, 100},
		},
		{
			name:    "sixteen launchers",
			procs:   append([]fakeProc{initProc, terminal, claude, serverNode.with(416)}, launcherRun(100, 400, 16)...),
			wantErr: ErrTooDeep,
		},
		{
			name: "launcher cycle",
			procs: []fakeProc{initProc, claude,
				fakeProc{pid: 200, ppid: 200, comm: "sh", cmdline: argv("sh", "-c", "x")},
				serverNode},
			wantErr: ErrTooDeep,
		},
		{
			name:    "server orphaned to pid 1",
			procs:   []fakeProc{initProc, serverNode.with(1)},
			wantErr: ErrReaper,
		},
		{
			name:    "host outside the pid namespace",
			procs:   []fakeProc{serverNode.with(0)},
			wantErr: ErrReaper,
		},
		{
			name:    "launcher orphaned to pid 1",
			procs:   []fakeProc{initProc, shC.with(1), serverNode},
			wantErr: ErrReaper,
		},
		{
			name: "launcher orphaned to a user systemd",
			procs: []fakeProc{initProc,
				fakeProc{pid: 900, ppid: 1, comm: "systemd", cmdline: argv("/lib/systemd/systemd", "--user")},
				shC.with(900), serverNode},
			wantErr: ErrReaper,
		},
		{
			name: "tini in a container",
			procs: []fakeProc{
				fakeProc{pid: 7, ppid: 0, comm: "tini", cmdline: argv("/sbin/tini", "--", "server")},
				serverNode.with(7)},
			wantErr: ErrReaper,
		},
		{
			name: "containerd shim by truncated comm",
			procs: []fakeProc{initProc,
				fakeProc{pid: 40, ppid: 1, comm: "containerd-shim"},
				serverNode.with(40)},
			wantErr: ErrReaper,
		},
		{
			name: "reaper listed as launcher is still a reaper",
			procs: []fakeProc{
				fakeProc{pid: 7, ppid: 0, comm: "dumb-init", cmdline: argv("dumb-init", "server")},
				serverNode.with(7)},
			extra:   []string{"dumb-init"},
			wantErr: ErrReaper,
		},
		{
			// ssh connection sharing: every channel of the shared connection,
			// whichever local MCP host opened it, is a child of one
			// sshd-session (OpenSSH 9.8 and later) titled "sshd-session:
			// user@notty", which runs each remote command through the user's
			// shell.
			name: "ssh connection sharing: sshd-session",
			procs: []fakeProc{initProc,
				fakeProc{pid: 40, ppid: 1, comm: "sshd", cmdline: "sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups" + string(make([]byte, 20))},
				fakeProc{pid: 60, ppid: 40, comm: "sshd-session", cmdline: "sshd-session: alice@notty" + string(make([]byte, 40))},
				fakeProc{pid: 200, ppid: 60, comm: "bash", cmdline: argv("bash", "-c", "mcp-server")},
				serverNode},
			wantErr: ErrSharedServer,
		},
		{
			name: "ssh connection sharing: older sshd titled sshd: user@notty",
			procs: []fakeProc{initProc,
				fakeProc{pid: 60, ppid: 1, comm: "sshd", cmdline: "sshd: alice@notty" + string(make([]byte, 40))},
				serverNode.with(60)},
			wantErr: ErrSharedServer,
		},
		{
			name: "tmux window command",
			procs: []fakeProc{initProc, terminal,
				fakeProc{pid: 200, ppid: 50, comm: "sh", cmdline: argv("sh", "-c", "mcp-server")},
				serverNode},
			wantErr: ErrSharedServer,
		},
		{
			name: "VS Code terminal: bash --init-file is the host, not the terminal owner",
			procs: []fakeProc{initProc, terminal, vscode,
				fakeProc{pid: 200, ppid: 110, comm: "bash", cmdline: argv("/bin/bash", "--init-file", "/usr/share/code/resources/app/out/vs/workbench/contrib/terminal/common/scripts/shellIntegration-bash.sh")},
				serverNode},
			wantChain: []int{200},
		},
		{
			name: "npm start: the title is a launcher",
			procs: []fakeProc{initProc, terminal, claude,
				fakeProc{pid: 150, ppid: 100, comm: "npm start", cmdline: "npm start" + string(make([]byte, 40))},
				shC, serverNode},
			wantChain: []int{200, 150, 100},
		},
		{
			name: "shared server listed as launcher is still refused",
			procs: []fakeProc{initProc, terminal,
				fakeProc{pid: 200, ppid: 50, comm: "sh", cmdline: argv("sh", "-c", "mcp-server")},
				serverNode},
			extra:   []string{"tmux"},
			wantErr: ErrSharedServer,
		},
		{
			name:    "parent exited",
			procs:   []fakeProc{initProc, serverNode.with(250)},
			wantErr: ErrRace,
		},
		{
			name:    "server absent",
			procs:   []fakeProc{initProc, claude},
			wantErr: ErrNotFound,
		},
		{
			name:    "no boot id",
			procs:   []fakeProc{initProc, terminal, claude, serverNode.with(100)},
			noBoot:  true,
			wantErr: ErrNoBootID,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pid := tt.pid
			if pid == 0 {
				pid = 300
			}
			sys := newSystem(pid).put(tt.procs...)
			if tt.noBoot {
				delete(sys.files, procBootID)
			}
			got, err := Resolve(linuxFacts(pid), NewLauncherSet(tt.extra, tt.env), sys.inspect)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Resolve(%d) error = %v, want %v", pid, err, tt.wantErr)
			}
			if err != nil {
				t.Logf("Resolve(%d) error: %v", pid, err)
				return
			}
			byPID := map[int]fakeProc{}
			for _, p := range tt.procs {
				byPID[p.pid] = p
			}
			host := byPID[tt.wantChain[len(tt.wantChain)-1]]
			if got.PID != host.pid || got.StartTime != host.startTime()+"."+fixtureExe {
				t.Errorf("Resolve(%d) = pid %d start %q, want pid %d start %q", pid, got.PID, got.StartTime, host.pid, host.startTime()+"."+fixtureExe)
			}
			var chain []int
			for _, p := range got.Chain {
				chain = append(chain, p.PID)
				if w := byPID[p.PID]; p.Name != w.comm || p.PPID != w.ppid || p.StartTime != w.startTime() {
					t.Errorf("Resolve(%d) chain holds %+v, want name %q ppid %d", pid, p, w.comm, w.ppid)
				}
			}
			if d := diff(tt.wantChain, chain); d != "" {
				t.Errorf("Resolve(%d) chain pids mismatch %s", pid, d)
			}
			// One call for the server, one per level, one for the stdio
			// check: the host must hold the terminal on stdin.
			if want := 2 + len(tt.wantChain); sys.calls != want {
				t.Errorf("Resolve(%d) made %d inspect calls, want %d", pid, sys.calls, want)
			}
			if got.Stdio != "verified: stdin "+testTTY+" is held by the host as fd 0" {
				t.Errorf("Resolve(%d) Stdio = %q", pid, got.Stdio)
			}
		})
	}
}

// TestResolve_Exec: a host that exec'd into another program keeps its pid
// and start ticks; the program image (the exe operation) makes it another
// host, and a host whose image cannot be read gets no identity at all.
// Only the host's image counts: a launcher's cannot be read and that is fine.
func TestResolve_Exec(t *testing.T) {
	procs := []fakeProc{initProc, terminal, claude, npmExec, shC, serverNode}
	resolve := func(change func(s *system)) (Identity, error) {
		sys := newSystem(300).put(procs...)
		change(sys)
		return Resolve(linuxFacts(300), NewLauncherSet(nil, ""), sys.inspect)
	}
	before, err := resolve(func(s *system) { s.answers["exe 150"] = errResult(hostfuncs.CodePermission) })
	if err != nil {
		t.Fatal(err)
	}
	after, err := resolve(func(s *system) { s.answers["exe 100"] = hostfuncs.InspectResult{Dev: "2049", Ino: "99"} })
	if err != nil {
		t.Fatal(err)
	}
	if before.PID != after.PID || before.StartTime == after.StartTime {
		t.Errorf("host before exec %d %q, after %d %q: want the same pid and another start time", before.PID, before.StartTime, after.PID, after.StartTime)
	}
	if !strings.HasSuffix(after.StartTime, ".2049x99") {
		t.Errorf("start time %q does not end in the image 2049x99", after.StartTime)
	}
	for _, bad := range []hostfuncs.InspectResult{
		errResult(hostfuncs.CodePermission), errResult(hostfuncs.CodeUnsupported), errResult(hostfuncs.CodeNotFound),
		{Dev: "2049"}, {Dev: "08", Ino: "1"}, {Dev: "-1", Ino: "1"}, {Dev: "1x", Ino: "1"},
	} {
		if _, err := resolve(func(s *system) { s.answers["exe 100"] = bad }); !errors.Is(err, ErrExe) {
			t.Errorf("exe answers %+v: error = %v, want ErrExe", bad, err)
		}
	}
}

// TestResolve_Race changes the fixture tree between the operations of one
// walk step: the parent read, then the child read again.
func TestResolve_Race(t *testing.T) {
	tests := []struct {
		name string
		// atPID is the pid whose stat read triggers change, once.
		atPID  int
		change func(s *system)
	}{
		{name: "server re-parented after its parent was read", atPID: 200, change: func(s *system) { s.put(serverNode.with(1)) }},
		{name: "server pid reused after its parent was read", atPID: 200, change: func(s *system) {
			p := serverNode
			p.start = 99999
			s.put(p)
		}},
		{name: "launcher re-parented after its parent was read", atPID: 150, change: func(s *system) { s.put(shC.with(1)) }},
		{name: "launcher exited after its parent was read", atPID: 150, change: func(s *system) { s.drop(200) }},
		{name: "parent exited between stat and cmdline", atPID: 200, change: func(s *system) { s.drop(200) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := newSystem(300).put(initProc, terminal, claude, npmExec, shC, serverNode)
			done := false
			sys.afterOp = func(op hostfuncs.InspectOp) {
				if path, _, _ := opPath(op); path == procStat(tt.atPID) && !done {
					done = true
					tt.change(sys)
				}
			}
			got, err := Resolve(linuxFacts(300), NewLauncherSet(nil, ""), sys.inspect)
			if !errors.Is(err, ErrRace) {
				t.Fatalf("Resolve(300) = %+v, %v; want error %v", got, err, ErrRace)
			}
			if !done {
				t.Fatalf("the tree was never changed")
			}
			t.Logf("Resolve(300) error: %v", err)
		})
	}
}

// TestResolve_Hidden: a /proc mounted hidepid hides the host, which exists
// (kill answers permission): resolving fails as "cannot tell" naming
// hidepid, not as "the parent exited" (fault 12).
func TestResolve_Hidden(t *testing.T) {
	server := fakeProc{pid: 300, ppid: 200, comm: "server"}
	sys := newSystem(300).put(server) // the host, pid 200, is not in /proc
	sys.answers["kill0 200"] = errResult(hostfuncs.CodePermission)
	_, err := Resolve(linuxFacts(300), NewLauncherSet(nil, ""), sys.inspect)
	if !errors.Is(err, ErrHidden) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrRace) {
		t.Fatalf("Resolve() error = %v, want ErrHidden", err)
	}
	if want := "pid 200 exists but /proc hides it (mounted hidepid=1 or 2)"; !strings.Contains(err.Error(), want) {
		t.Errorf("Resolve() error = %q, want it to contain %q", err, want)
	}
	// kill answers ESRCH: the host is gone, which is a race.
	sys.answers["kill0 200"] = errResult(hostfuncs.CodeNotFound)
	if _, err := Resolve(linuxFacts(300), NewLauncherSet(nil, ""), sys.inspect); !errors.Is(err, ErrRace) {
		t.Errorf("Resolve() with the host gone: error = %v, want %v", err, ErrRace)
	}
}

// TestResolve_Namespace covers the own-/proc check (faults 10b and 11d): a
// /proc of another PID namespace, where /proc/self is not facts.pid, turns
// resume off before any process is read; so do a missing boot ID or
// namespace link.
func TestResolve_Namespace(t *testing.T) {
	tree := []fakeProc{initProc, terminal, claude, serverNode.with(100)}
	tests := []struct {
		name    string
		change  func(s *system)
		wantErr error
		wantIn  string
	}{
		{name: "foreign /proc", change: func(s *system) { s.links[procSelf] = "1" }, wantErr: ErrNamespace,
			wantIn: "/proc/self is pid 1 but this process is pid 300"},
		{name: "no /proc/self", change: func(s *system) { delete(s.links, procSelf) }, wantErr: ErrNamespace},
		{name: "no /proc at all", change: func(s *system) {
			for _, p := range []string{procSelf, procSelfNS} {
				s.links[p] = ""
				delete(s.links, p)
			}
			s.files = map[string][]byte{}
		}, wantErr: ErrNamespace},
		{name: "bad namespace link", change: func(s *system) { s.links[procSelfNS] = "net:[1]" }, wantErr: ErrNamespace},
		{name: "no namespace link", change: func(s *system) { delete(s.links, procSelfNS) }, wantErr: ErrNamespace},
		{name: "boot id unreadable", change: func(s *system) { delete(s.files, procBootID) }, wantErr: ErrNoBootID},
		{name: "boot id garbage", change: func(s *system) { s.files[procBootID] = []byte("nope") }, wantErr: ErrNoBootID},
		{name: "server stat of another pid", change: func(s *system) { s.files[procStat(300)] = []byte(claude.statLine()) }, wantErr: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := newSystem(300).put(tree...)
			tt.change(sys)
			_, err := Resolve(linuxFacts(300), NewLauncherSet(nil, ""), sys.inspect)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Resolve() error = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantIn) {
				t.Errorf("Resolve() error = %q, want it to contain %q", err, tt.wantIn)
			}
			if sys.calls != 1 {
				t.Errorf("Resolve() made %d calls, want 1", sys.calls)
			}
		})
	}
}

// TestResolve_NoAnswer: a host function that fails without answering (the
// Python SDK swallows exceptions), or answers the wrong number of results,
// means "cannot tell": resume off, at any step.
func TestResolve_NoAnswer(t *testing.T) {
	tree := []fakeProc{initProc, terminal, claude, npmExec, shC, serverNode}
	for _, failAt := range []int{1, 2, 3} {
		for _, short := range []bool{false, true} {
			sys := newSystem(300).put(tree...)
			inner := sys.inspect
			calls := 0
			in := func(ops []hostfuncs.InspectOp) ([]hostfuncs.InspectResult, error) {
				calls++
				if calls == failAt {
					if short {
						sys.short = true
						defer func() { sys.short = false }()
					} else {
						return nil, errors.New("not json")
					}
				}
				return inner(ops)
			}
			_, err := Resolve(linuxFacts(300), NewLauncherSet(nil, ""), in)
			if !errors.Is(err, ErrNoAnswer) {
				t.Errorf("call %d fails (short %v): error = %v, want %v", failAt, short, err, ErrNoAnswer)
			}
		}
	}
}

func TestResolve_Unsupported(t *testing.T) {
	for _, os := range []string{"win32", "freebsd", ""} {
		sys := newSystem(300)
		f := linuxFacts(300)
		f.OS = os
		if _, err := Resolve(f, NewLauncherSet(nil, ""), sys.inspect); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Resolve on %q: error = %v, want %v", os, err, ErrUnsupported)
		}
		if sys.calls != 0 {
			t.Errorf("Resolve on %q made %d calls", os, sys.calls)
		}
	}
}

func TestIdentity_WireChain(t *testing.T) {
	id := Identity{Chain: []Process{{PID: 200, PPID: 100, Name: "sh", Args: []string{"sh", "-c", "x"}, StartTime: "1"}, {PID: 100, PPID: 50, Name: "claude", StartTime: "2"}}}
	want := []hostfuncs.Process{
		{PID: 200, PPID: 100, Name: "sh", Args: []string{"sh", "-c", "x"}, StartTime: "1", Role: RoleLauncher},
		{PID: 100, PPID: 50, Name: "claude", Args: []string{}, StartTime: "2", Role: RoleHost},
	}
	if d := diff(want, id.WireChain(true)); d != "" {
		t.Errorf("WireChain(true) %s", d)
	}
	want[1].Role = RoleLauncher
	if d := diff(want, id.WireChain(false)); d != "" {
		t.Errorf("WireChain(false) %s", d)
	}
}
