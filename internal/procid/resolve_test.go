package procid

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
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

// with returns p with ppid changed.
func (p fakeProc) with(ppid int) fakeProc {
	p.ppid = ppid
	return p
}

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
			root := writeTree(t, tt.noBoot, tt.procs...)
			pid := tt.pid
			if pid == 0 {
				pid = 300
			}
			got, err := resolve(&linuxReader{root: root}, pid, newLauncherSet(tt.extra, tt.env))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("resolve(%d) error = %v, want %v", pid, err, tt.wantErr)
			}
			if err != nil {
				t.Logf("resolve(%d) error: %v", pid, err)
				return
			}
			byPID := map[int]fakeProc{}
			for _, p := range tt.procs {
				byPID[p.pid] = p
			}
			host := byPID[tt.wantChain[len(tt.wantChain)-1]]
			want := Identity{PID: host.pid, StartTime: strconv.FormatUint(host.startTicks(), 10) + "." + testBoot + "." + testNS}
			gotTrim := Identity{PID: got.PID, StartTime: got.StartTime}
			if d := diff(want, gotTrim); d != "" {
				t.Errorf("resolve(%d) identity mismatch %s", pid, d)
			}
			var chain []int
			for _, p := range got.Chain {
				chain = append(chain, p.PID)
				if w := byPID[p.PID]; p.Name != w.comm || p.PPID != w.ppid {
					t.Errorf("resolve(%d) chain holds %+v, want name %q ppid %d", pid, p, w.comm, w.ppid)
				}
			}
			if d := diff(tt.wantChain, chain); d != "" {
				t.Errorf("resolve(%d) chain pids mismatch %s", pid, d)
			}
		})
	}
}

// TestResolve_Race changes the fixture tree between the reads of one walk
// step, through linuxReader.afterStat.
func TestResolve_Race(t *testing.T) {
	tests := []struct {
		name string
		// atPID is the pid whose stat read triggers change, once.
		atPID  int
		change func(t *testing.T, root string)
	}{
		{
			name:  "server re-parented after its parent was read",
			atPID: 200,
			change: func(t *testing.T, root string) {
				writeProc(t, root, serverNode.with(1))
			},
		},
		{
			name:  "server pid reused after its parent was read",
			atPID: 200,
			change: func(t *testing.T, root string) {
				p := serverNode
				p.start = 99999
				writeProc(t, root, p)
			},
		},
		{
			name:  "launcher re-parented after its parent was read",
			atPID: 150,
			change: func(t *testing.T, root string) {
				writeProc(t, root, shC.with(1))
			},
		},
		{
			name:  "launcher exited after its parent was read",
			atPID: 150,
			change: func(t *testing.T, root string) {
				if err := os.RemoveAll(filepath.Join(root, "200")); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, false, initProc, terminal, claude, npmExec, shC, serverNode)
			done := false
			r := &linuxReader{root: root, afterStat: func(pid int) {
				if pid == tt.atPID && !done {
					done = true
					tt.change(t, root)
				}
			}}
			got, err := resolve(r, 300, newLauncherSet(nil, ""))
			if !errors.Is(err, ErrRace) {
				t.Fatalf("resolve(300) = %+v, %v; want error %v", got, err, ErrRace)
			}
			if !done {
				t.Fatalf("the tree was never changed")
			}
			t.Logf("resolve(300) error: %v", err)
		})
	}
}
