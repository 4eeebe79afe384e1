package procid

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// trustProc returns p as the walk reads it, for an Identity whose host it is.
func trustProc(p fakeProc) Process {
	return Process{PID: p.pid, PPID: p.ppid, Name: p.comm, Args: splitCmdline([]byte(p.cmdline)), StartTime: p.startTime()}
}

// TestCheckTrust_Linux runs every row of the trust rule on Linux against a
// fixture /proc: the host pid 42, its fds, its network namespace's tcp and
// tcp6 tables and its environment.
func TestCheckTrust_Linux(t *testing.T) {
	const ttyPTS3 = 34816 // /dev/pts/3: major 136, minor 3
	agent := fakeProc{pid: 42, ppid: 10, comm: "agentd", cmdline: argv("/usr/bin/agentd")}
	withTTY := agent
	withTTY.tty = ttyPTS3
	code := fakeProc{pid: 42, ppid: 10, comm: "code", cmdline: argv("/usr/share/code/code", "--type=utility")}
	sockFDs := []hostfuncs.FD{{FD: 0, Target: "/dev/null", Flags: 0}, {FD: 7, Target: "socket:[500]", Flags: 2}, {FD: 8, Target: "socket:[501]", Flags: 2}}
	listen4 := func(addr string) string { return tcpTable(addr+" 00000000:0000 0A", 500) }
	listen6 := func(addr string) string { return tcp6Table(addr+" 00000000000000000000000000000000:0000 0A", 501) }
	tests := []struct {
		name    string
		host    fakeProc
		fds     []hostfuncs.FD // the host's fds; nil: only fd 0 on the terminal
		files   map[string]string
		answers map[string]hostfuncs.InspectResult
		want    string // verdict, or a part of the error
		wantErr error
		// ops the rule must not ask: "environ" (rule 4 only), "net"
		// (only for a host with sockets).
		notAsked []string
	}{
		// Rule 2: a listener on a non-loopback address.
		{name: "listens on 0.0.0.0", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp": listen4("00000000:1F40")},
			want: `The MCP host pid 42 ("agentd") listens on 0.0.0.0:8000, so it may serve several people; session resume disabled for this instance (set MCP_RESUME=on if it acts for one person)`, wantErr: ErrSharedHost},
		{name: "listens on ::", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp6": listen6("00000000000000000000000000000000:1F40")},
			want: `listens on [::]:8000, so it may serve several people`, wantErr: ErrSharedHost},
		{name: "listens on 10.1.2.3", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp": listen4("0302010A:0050")},
			want: `listens on 10.1.2.3:80,`, wantErr: ErrSharedHost},
		{name: "listens on a global IPv6 address", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp6": listen6("B80D0120000000000000000001000000:01BB")},
			want: `listens on [2001:db8::1]:443,`, wantErr: ErrSharedHost},
		{name: "a known host listening on 0.0.0.0 is refused too", host: code, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp": listen4("00000000:1F40")},
			want: `The MCP host pid 42 ("code") listens on 0.0.0.0:8000`, wantErr: ErrSharedHost},
		{name: "another process's listener in the namespace does not count", host: withTTY, fds: sockFDs,
			files: map[string]string{"/proc/42/net/tcp": tcpTable("00000000:1F40 00000000:0000 0A", 999)},
			want:  `single user: pid 42 ("agentd") has a controlling terminal (tty_nr 34816)`},
		{name: "a connected socket to a remote address is no listener", host: withTTY, fds: sockFDs,
			files: map[string]string{"/proc/42/net/tcp": tcpTable("0A01A8C0:A1B2 22B8D85D:01BB 01", 500)},
			want:  `single user: pid 42 ("agentd") has a controlling terminal`},
		// Rule 3: loopback only.
		{name: "listens on loopback, unknown host", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp": listen4("0100007F:1F40")},
			want: `The MCP host pid 42 ("agentd") listens on 127.0.0.1:8000 and is not a known single-user MCP host: it may be an MCP server over HTTP or a gateway behind a proxy, so it may serve several people; session resume disabled`, wantErr: ErrSharedHost},
		{name: "listens on ::1, unknown host", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp6": listen6("00000000000000000000000001000000:1F40")},
			want: `listens on [::1]:8000 and is not a known single-user MCP host`, wantErr: ErrSharedHost},
		{name: "listens on ::ffff:127.0.0.1, unknown host", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp6": listen6("0000000000000000FFFF00000100007F:1F40")},
			want: `listens on [::ffff:7f00:1]:8000 and is not a known`, wantErr: ErrSharedHost},
		{name: "listens on ::ffff:10.0.0.1 is not loopback", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp6": listen6("0000000000000000FFFF00000100000A:1F40")},
			want: `listens on [::ffff:a00:1]:8000, so it may serve several people`, wantErr: ErrSharedHost},
		{name: "listens on loopback, known host", host: code, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp": listen4("0100007F:1F40")},
			want:     `single user: pid 42 ("code") is a known single-user MCP host (VS Code or a fork of it, an editor one person runs; the Remote-SSH server is that person's editor on another machine); it listens on loopback only (127.0.0.1:8000)`,
			notAsked: []string{"environ"}},
		// Rule 4: terminal and desktop.
		{name: "daemon: no terminal, no desktop", host: agent, files: map[string]string{"/proc/42/environ": "HOME=/var/lib/agent\x00PATH=/usr/bin\x00DISPLAY=\x00"},
			want:    `The MCP host pid 42 ("agentd") has no controlling terminal and no desktop session (DISPLAY, WAYLAND_DISPLAY) and is not a known single-user MCP host: a daemon, service or job runner may act for several people; session resume disabled for this instance (set MCP_RESUME=on if it acts for one person)`,
			wantErr: ErrSharedHost, notAsked: []string{"net"}},
		{name: "desktop: DISPLAY", host: agent, files: map[string]string{"/proc/42/environ": "HOME=/home/u\x00DISPLAY=:0\x00"},
			want: `single user: pid 42 ("agentd") runs in a desktop session (DISPLAY is set)`},
		{name: "desktop: WAYLAND_DISPLAY", host: agent, files: map[string]string{"/proc/42/environ": "WAYLAND_DISPLAY=wayland-0\x00"},
			want: `single user: pid 42 ("agentd") runs in a desktop session (WAYLAND_DISPLAY is set)`},
		{name: "terminal", host: withTTY, want: `single user: pid 42 ("agentd") has a controlling terminal (tty_nr 34816)`, notAsked: []string{"environ", "net"}},
		// Known hosts skip rules 3 and 4: no terminal, no desktop.
		{name: "VS Code", host: code, want: `is a known single-user MCP host (VS Code`, notAsked: []string{"environ"}},
		{name: "VS Code Remote-SSH server", host: fakeProc{pid: 42, ppid: 10, comm: "node", cmdline: argv("/home/u/.vscode-server/cli/servers/Stable-abc/server/node", "--dns-result-order=ipv4first", "/home/u/.vscode-server/cli/servers/Stable-abc/server/out/bootstrap-fork", "--type=extensionHost")},
			want: `is a known single-user MCP host (VS Code`, notAsked: []string{"environ"}},
		{name: "Cursor Remote-SSH server", host: fakeProc{pid: 42, ppid: 10, comm: "node", cmdline: argv("/home/u/.cursor-server/bin/abc/node", "/home/u/.cursor-server/bin/abc/out/bootstrap-fork")},
			want: `is a known single-user MCP host (VS Code`},
		{name: "cursor", host: fakeProc{pid: 42, ppid: 10, comm: "cursor", cmdline: argv("/opt/cursor/cursor")}, want: `known single-user MCP host (VS Code`},
		{name: "claude", host: fakeProc{pid: 42, ppid: 10, comm: "claude", cmdline: argv("claude")}, want: `known single-user MCP host (Claude Desktop or Claude Code`},
		{name: "Claude Code as a node script", host: fakeProc{pid: 42, ppid: 10, comm: "node", cmdline: argv("node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js")},
			want: `known single-user MCP host (Claude Desktop or Claude Code`},
		{name: "codex", host: fakeProc{pid: 42, ppid: 10, comm: "codex", cmdline: argv("codex")}, want: `known single-user MCP host (the Codex CLI`},
		{name: "codex native binary, comm truncated", host: fakeProc{pid: 42, ppid: 10, comm: "codex-x86_64-un", cmdline: argv("/usr/lib/node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/codex/codex-x86_64-unknown-linux-musl")},
			want: `known single-user MCP host (the Codex CLI`},
		{name: "zed", host: fakeProc{pid: 42, ppid: 10, comm: "zed-editor", cmdline: argv("/usr/libexec/zed-editor")}, want: `known single-user MCP host (the Zed editor`},
		{name: "a look-alike name is not known", host: fakeProc{pid: 42, ppid: 10, comm: "codexd", cmdline: argv("/usr/bin/codexd")},
			files: map[string]string{"/proc/42/environ": "HOME=/\x00"}, want: "daemon, service or job runner", wantErr: ErrSharedHost},
		// Rule 1: gateways, whatever their terminal.
		{name: "supergateway through node_modules/.bin", host: fakeProc{pid: 42, ppid: 10, comm: "node", tty: ttyPTS3, cmdline: argv("node", "/x/node_modules/.bin/supergateway", "--stdio", "server", "--port", "8000")},
			want:    `The MCP host pid 42 ("node") is an MCP gateway or proxy that exposes stdio servers to remote clients, so it may serve several people; session resume disabled for this instance (set MCP_RESUME=on if it acts for one person)`,
			wantErr: ErrSharedHost, notAsked: []string{"fds", "net", "environ"}},
		{name: "supergateway package script", host: fakeProc{pid: 42, ppid: 10, comm: "node", tty: ttyPTS3, cmdline: argv("node", "/x/node_modules/supergateway/dist/index.js", "--stdio", "server")},
			want: "is an MCP gateway or proxy", wantErr: ErrSharedHost},
		{name: "supergateway through npx, retitled", host: fakeProc{pid: 42, ppid: 10, comm: "supergateway", tty: ttyPTS3, cmdline: argv("supergateway")},
			want: "is an MCP gateway or proxy", wantErr: ErrSharedHost},
		{name: "mcp-proxy, a python script", host: fakeProc{pid: 42, ppid: 10, comm: "mcp-proxy", tty: ttyPTS3, cmdline: argv("/home/u/.local/share/uv/tools/mcp-proxy/bin/python", "/home/u/.local/bin/mcp-proxy", "--port", "8080", "server")},
			want: "is an MCP gateway or proxy", wantErr: ErrSharedHost},
		{name: "mcp-proxy, a python script run by python", host: fakeProc{pid: 42, ppid: 10, comm: "python3", tty: ttyPTS3, cmdline: argv("python3", "/home/u/.local/bin/mcp-proxy", "server")},
			want: "is an MCP gateway or proxy", wantErr: ErrSharedHost},
		{name: "mcpo, python -m", host: fakeProc{pid: 42, ppid: 10, comm: "python3", tty: ttyPTS3, cmdline: argv("python3", "-m", "mcpo", "--port", "8000", "--", "server")},
			want: "is an MCP gateway or proxy", wantErr: ErrSharedHost},
		{name: "mcpo, a python script", host: fakeProc{pid: 42, ppid: 10, comm: "mcpo", tty: ttyPTS3, cmdline: argv("/usr/bin/python3", "/usr/local/bin/mcpo", "--", "server")},
			want: "is an MCP gateway or proxy", wantErr: ErrSharedHost},
		// Rule 5: cannot tell.
		{name: "fds unreadable", host: withTTY, answers: map[string]hostfuncs.InspectResult{"fds 42": errResult(hostfuncs.CodePermission)},
			want: `Cannot tell whether the MCP host pid 42 ("agentd") acts for one person (its open files cannot be listed: list /proc/42/fd: permission`, wantErr: ErrPermission},
		{name: "environ unreadable", host: agent, answers: map[string]hostfuncs.InspectResult{"environ 42": errResult(hostfuncs.CodePermission)},
			want: `Cannot tell whether the MCP host pid 42 ("agentd") acts for one person (it has no terminal and its environment cannot be read`, wantErr: ErrSharedHost},
		{name: "environ at the read limit", host: agent, files: map[string]string{"/proc/42/environ": strings.Repeat("A=b\x00", hostfuncs.MaxProcTableRead/4)},
			want: "its environment fills the read limit", wantErr: ErrNoAnswer},
		{name: "net table at the read limit", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp": fillTo(tcpTable("0100007F:1F40 00000000:0000 0A", 7), hostfuncs.MaxProcTableRead)},
			want: "may be cut short", wantErr: ErrNoAnswer},
		{name: "net table unreadable", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp": ""},
			want: `acts for one person (its sockets: read /proc/42/net/tcp: not_found`, wantErr: ErrSharedHost},
		{name: "net table malformed", host: withTTY, fds: sockFDs, files: map[string]string{"/proc/42/net/tcp": "header\n   0: zz\n"},
			want: "its sockets", wantErr: ErrMalformed},
		{name: "host replaced while its fds were listed", host: withTTY, files: map[string]string{"/proc/42/stat": fakeProc{pid: 42, ppid: 10, comm: "agentd", start: 7}.statLine()},
			want: "exited or was replaced", wantErr: ErrRace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := newSystem(1234).put(tt.host)
			if tt.fds != nil {
				sys.fds["42"] = tt.fds
				sys.files["/proc/42/net/tcp"] = []byte(tcpTable("0100007F:0277 00000000:0000 0A", 9))
				sys.files["/proc/42/net/tcp6"] = []byte(tcp6Table("00000000000000000000000001000000:0277 00000000000000000000000000000000:0000 0A", 9))
			}
			for k, v := range tt.files {
				if v == "" {
					delete(sys.files, k)
					continue
				}
				sys.files[k] = []byte(v)
			}
			for k, v := range tt.answers {
				sys.answers[k] = v
			}
			id := Identity{PID: 42, StartTime: tt.host.startTime(), Chain: []Process{trustProc(tt.host)}}
			got, err := CheckTrust(linuxFacts(1234), id, sys.inspect)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) || !errors.Is(err, ErrSharedHost) {
					t.Fatalf("CheckTrust() = %q, %v; want error %v and %v", got, err, tt.wantErr, ErrSharedHost)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %q\ndoes not contain %q", err, tt.want)
				}
				if !strings.HasSuffix(err.Error(), trustOff) {
					t.Errorf("error %q does not end with the opt-in", err)
				}
			case err != nil:
				t.Fatalf("CheckTrust() error: %v", err)
			case !strings.Contains(got, tt.want):
				t.Errorf("CheckTrust() = %q, want it to contain %q", got, tt.want)
			}
			for _, op := range sys.ops {
				for _, no := range tt.notAsked {
					if op.Op == no {
						t.Errorf("asked %+v", op)
					}
				}
			}
		})
	}
}

// TestCheckTrust_Batches checks what the rule asks of a host with a
// terminal and sockets: its fd list and stat again in one call, then its
// tcp and tcp6 tables in one more, and never its environment.
func TestCheckTrust_Batches(t *testing.T) {
	host := fakeProc{pid: 42, ppid: 10, comm: "mcp-host", tty: 34816, cmdline: argv("mcp-host")}
	sys := newSystem(1234).put(host)
	sys.fds["42"] = []hostfuncs.FD{{FD: 3, Target: "socket:[77]", Flags: 2}}
	sys.files["/proc/42/net/tcp"] = []byte(tcpTable("0100007F:1F40 0100007F:A000 01", 77))
	sys.files["/proc/42/net/tcp6"] = []byte(tcp6Table("00000000000000000000000001000000:0277 00000000000000000000000000000000:0000 0A", 9))
	id := Identity{PID: 42, StartTime: host.startTime(), Chain: []Process{trustProc(host)}}
	if _, err := CheckTrust(linuxFacts(1234), id, sys.inspect); err != nil {
		t.Fatal(err)
	}
	want := []hostfuncs.InspectOp{
		{Op: hostfuncs.OpFDs, PID: "42"}, {Op: hostfuncs.OpStat, PID: "42"},
		{Op: hostfuncs.OpNet, PID: "42", Table: "tcp"}, {Op: hostfuncs.OpNet, PID: "42", Table: "tcp6"},
	}
	if d := diff(want, sys.ops); d != "" || sys.calls != 2 {
		t.Errorf("%d calls, ops %s", sys.calls, d)
	}
}

// TestCheckTrust_Darwin runs the macOS rows: terminal from e_tdev (sysctl)
// or ps, desktop session from the kern.procargs2 environment, known hosts
// and gateways; there is no listening-socket check.
func TestCheckTrust_Darwin(t *testing.T) {
	const ttys001 = 0x10000001
	tests := []struct {
		name    string
		host    Process
		want    string
		wantErr error
	}{
		{name: "terminal", host: Process{PID: 42, Name: "agentd", tty: ttys001, ttyKnown: true},
			want: `single user: pid 42 ("agentd") has a controlling terminal (e_tdev 268435457)`},
		{name: "console is a terminal", host: Process{PID: 42, Name: "agentd", tty: 0, ttyKnown: true}, want: "has a controlling terminal (e_tdev 0)"},
		{name: "desktop application: __CFBundleIdentifier", host: Process{PID: 42, Name: "Agent", tty: darwinNoDev, ttyKnown: true, envKnown: true, env: []string{"HOME=/Users/u", "__CFBundleIdentifier=com.example.agent"}},
			want: "is a desktop application (__CFBundleIdentifier com.example.agent)"},
		{name: "desktop application: XPC_SERVICE_NAME application.*", host: Process{PID: 42, Name: "Agent", tty: darwinNoDev, ttyKnown: true, envKnown: true, env: []string{"XPC_SERVICE_NAME=application.com.example.agent.123.456"}},
			want: "is a desktop application (XPC_SERVICE_NAME application.com.example.agent.123.456)"},
		{name: "launchd daemon", host: Process{PID: 42, Name: "agentd", tty: darwinNoDev, ttyKnown: true, envKnown: true, env: []string{"XPC_SERVICE_NAME=com.example.agentd", "__CFBundleIdentifier="}},
			want: `The MCP host pid 42 ("agentd") has no controlling terminal and is not a desktop application`, wantErr: ErrSharedHost},
		{name: "no terminal, environment refused", host: Process{PID: 42, Name: "agentd", tty: darwinNoDev, ttyKnown: true},
			want: "it has no terminal and its environment cannot be read", wantErr: ErrSharedHost},
		{name: "ps: in the foreground of a terminal", host: Process{PID: 42, Name: "zsh", ttyFG: true}, want: "runs in the foreground of a terminal (ps)"},
		{name: "ps: cannot tell", host: Process{PID: 42, Name: "zsh"}, want: "its terminal and environment cannot be read", wantErr: ErrSharedHost},
		{name: "known: Claude", host: Process{PID: 42, Name: "Claude", tty: darwinNoDev, ttyKnown: true}, want: "known single-user MCP host (Claude Desktop"},
		{name: "known: VS Code extension host", host: Process{PID: 42, Name: "Code Helper (Plu", tty: darwinNoDev, ttyKnown: true,
			Args: []string{"/Applications/Visual Studio Code.app/Contents/Frameworks/Code Helper (Plugin).app/Contents/MacOS/Code Helper (Plugin)", "--type=utility"}},
			want: "known single-user MCP host (VS Code"},
		{name: "known: through ps", host: Process{PID: 42, Name: "Claude"}, want: "known single-user MCP host (Claude Desktop"},
		{name: "gateway", host: Process{PID: 42, Name: "node", tty: ttys001, ttyKnown: true, Args: []string{"node", "/usr/local/lib/node_modules/supergateway/dist/index.js"}},
			want: "is an MCP gateway or proxy", wantErr: ErrSharedHost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := newSystem(0)
			got, err := CheckTrust(hostfuncs.Facts{OS: "darwin", PID: 800}, Identity{PID: 42, Chain: []Process{tt.host}}, sys.inspect)
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("CheckTrust() = %q, %v; want error %v containing %q", got, err, tt.wantErr, tt.want)
				}
			case err != nil:
				t.Fatalf("CheckTrust() error: %v", err)
			case !strings.Contains(got, tt.want):
				t.Errorf("CheckTrust() = %q, want it to contain %q", got, tt.want)
			}
			if sys.calls != 0 {
				t.Errorf("macOS asked %d inspect calls, want none", sys.calls)
			}
		})
	}
}

// TestCheckTrust_DarwinResolved runs Resolve then CheckTrust over raw
// sysctl and procargs2 records: e_tdev and the environment come from the
// walk's own reads.
func TestCheckTrust_DarwinResolved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tdev    uint32
		env     []string
		want    string
		wantErr error
	}{
		{name: "terminal", tdev: 0x10000002, env: []string{"HOME=/Users/u"}, want: "has a controlling terminal (e_tdev 268435458)"},
		{name: "desktop", tdev: 0xFFFFFFFF, env: []string{"__CFBundleIdentifier=com.example.agent"}, want: "is a desktop application"},
		{name: "daemon", tdev: 0xFFFFFFFF, env: []string{"XPC_SERVICE_NAME=com.example.agentd"}, want: "no controlling terminal", wantErr: ErrSharedHost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sys := newSystem(0)
			host := kinfoBytes(500, 1, "agentd", 2, 1700000000, 1)
			host[572], host[573], host[574], host[575] = byte(tc.tdev), byte(tc.tdev>>8), byte(tc.tdev>>16), byte(tc.tdev>>24)
			sys.answers["sysctl 500"] = hostfuncs.InspectResult{Data: host}
			sys.answers["procargs 500"] = hostfuncs.InspectResult{Data: procArgs(1, "/usr/bin/agentd", 3, []string{"agentd"}, append(tc.env, "", "executable_path=/usr/bin/agentd"))}
			sys.answers["sysctl 800"] = hostfuncs.InspectResult{Data: kinfoBytes(800, 500, "server", 2, 1700000100, 1)}
			f := hostfuncs.Facts{OS: "darwin", PID: 800}
			id, err := Resolve(f, NewLauncherSet(nil, ""), sys.inspect)
			if err != nil {
				t.Fatal(err)
			}
			got, err := CheckTrust(f, id, sys.inspect)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("CheckTrust() = %q, %v; want %v containing %q", got, err, tc.wantErr, tc.want)
				}
				return
			}
			if err != nil || !strings.Contains(got, tc.want) {
				t.Fatalf("CheckTrust() = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestParseNetTable checks the parser on tables as the kernel prints them.
func TestParseNetTable(t *testing.T) {
	rows, err := parseNetTable("tcp", []byte(tcpTable("0100007F:1F40 00000000:0000 0A", 500)+"   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 600 1 0 100 0 0 10 0\n"))
	if err != nil || len(rows) != 2 {
		t.Fatalf("parseNetTable = %v, %v", rows, err)
	}
	if rows[0].String() != "127.0.0.1:8000" || rows[0].state != tcpListen || rows[0].inode != 500 || !isLoopback(rows[0].addr) {
		t.Errorf("row 0 = %+v", rows[0])
	}
	if rows[1].String() != "0.0.0.0:22" || isLoopback(rows[1].addr) || rows[1].inode != 600 {
		t.Errorf("row 1 = %+v", rows[1])
	}
	rows, err = parseNetTable("unix", []byte(unixTable(20)+"0000000000000000: 00000002 00000000 00010000 0001 01 31337 /run/x.sock\n"))
	if err != nil || len(rows) != 2 || rows[0].inode != 20 || rows[1].inode != 31337 || rows[1].state != 1 {
		t.Errorf("unix rows = %+v, %v", rows, err)
	}
	for _, bad := range []struct{ table, data string }{
		{"tcp", "h\n 0: 0100007F:1F40 00000000:0000 0A\n"},
		{"tcp", "h\n 0: 0100007:1F40 00000000:0000 0A 0:0 0:0 0 0 0 5\n"},
		{"tcp6", tcpTable("0100007F:1F40 00000000:0000 0A", 5)},
		{"unix", "h\n0000: 2 0 0 1 zz 5\n"},
		{"raw", "h\n"},
	} {
		if _, err := parseNetTable(bad.table, []byte(bad.data)); !errors.Is(err, ErrMalformed) {
			t.Errorf("parseNetTable(%q, %q) error = %v, want ErrMalformed", bad.table, bad.data, err)
		}
	}
	for addr, want := range map[string]string{
		"00000000000000000000000000000000": "::", "00000000000000000000000001000000": "::1",
		"B80D0120000000000000000001000000": "2001:db8::1", "B80D0120010000000000000001000000": "2001:db8:0:1::1",
		"B80D0120000000000000010001000000": "2001:db8::1:0:0:1",
	} {
		b, err := parseNetAddr(addr, 16)
		if err != nil || formatIPv6(b) != want {
			t.Errorf("formatIPv6(%s) = %q, %v; want %q", addr, formatIPv6(b), err, want)
		}
	}
}

// FuzzParseNetTable checks that the net-table parser never panics, that
// every row it returns has an address of its table's length, and that an
// accepted table still parses with its header line replaced.
func FuzzParseNetTable(f *testing.F) {
	f.Add("tcp", []byte(tcpTable("0100007F:1F40 00000000:0000 0A", 500)))
	f.Add("tcp6", []byte(tcp6Table("0000000000000000FFFF00000100007F:1F40 00000000000000000000000000000000:0000 0A", 501)))
	f.Add("udp", []byte(tcpTable("00000000:0035 00000000:0000 07", 20)))
	f.Add("unix", []byte(unixTable(20, 21)))
	f.Fuzz(func(t *testing.T, table string, data []byte) {
		rows, err := parseNetTable(table, data)
		if err != nil {
			return
		}
		want := map[string]int{"tcp": 4, "udp": 4, "tcp6": 16, "udp6": 16, "unix": 0}[table]
		for _, r := range rows {
			if len(r.addr) != want || r.port < 0 || r.port > 0xFFFF || r.state < 0 || r.state > 0xFF {
				t.Fatalf("row %+v of table %q", r, table)
			}
			_ = r.String()
			_ = isLoopback(r.addr)
		}
	})
}
