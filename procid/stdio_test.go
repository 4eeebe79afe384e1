package procid

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// fakeFD is one open fd: what its link names and the flags its fdinfo
// shows (-1: fdinfo unreadable).
type fakeFD struct {
	link  string
	flags int
}

func fdList(m map[int]fakeFD) []hostfuncs.FD {
	out := []hostfuncs.FD{}
	for n := 0; n < 64; n++ {
		if fd, ok := m[n]; ok {
			out = append(out, hostfuncs.FD{FD: n, Target: fd.link, Flags: fd.flags})
		}
	}
	return out
}

func ptr(n int) *int { return &n }

// TestCheckStdio runs the stdio verdicts of fault 11c through Resolve: the
// server (pid 1234) is a direct child of the host (pid 42).
func TestCheckStdio(t *testing.T) {
	const hostPID = 42
	host := fakeProc{pid: hostPID, ppid: 10, comm: "mcp-host", cmdline: argv("mcp-host")}
	server := fakeProc{pid: 1234, ppid: hostPID, comm: "server", cmdline: argv("server")}
	// The server's own fds: stdin reads pipe 10, stdout writes pipe 11.
	pipes := map[int]fakeFD{0: {"pipe:[10]", 0o0}, 1: {"pipe:[11]", 0o1}}
	fifo := hostfuncs.InspectResult{Type: hostfuncs.FileTypeFIFO}
	sock := hostfuncs.InspectResult{Type: hostfuncs.FileTypeSocket}
	other := hostfuncs.InspectResult{Type: hostfuncs.FileTypeChar}
	tests := []struct {
		name     string
		self     map[int]fakeFD
		host     map[int]fakeFD // the host's fds; nil: none
		gone     bool           // the host's fds are not_found (it exited)
		types    [2]hostfuncs.InspectResult
		answers  map[string]hostfuncs.InspectResult
		want     string // Stdio, when no error
		wantErr  error
		wantIn   []string
		wantCall int // inspect calls; 0 means 3
		// files replace /proc files of the fixture, such as the socket
		// tables ("" removes one); by default /proc/self/net/unix lists
		// the Unix sockets 20 and 21.
		files map[string]string
	}{
		{
			name:  "host holds the write end of stdin and the read end of stdout",
			self:  pipes,
			host:  map[int]fakeFD{0: {"/dev/null", 0o100000}, 7: {"pipe:[10]", 0o100001}, 9: {"pipe:[11]", 0o100000}},
			types: [2]hostfuncs.InspectResult{fifo, fifo},
			want:  "verified: stdin pipe:[10] is held by the host as fd 7",
		},
		{
			name:  "only stdout verified",
			self:  pipes,
			host:  map[int]fakeFD{9: {"pipe:[11]", 0o2000000}},
			types: [2]hostfuncs.InspectResult{fifo, fifo},
			want:  "verified: stdout pipe:[11] is held by the host as fd 9",
		},
		{
			name:  "host fd opened read-write counts as the other end",
			self:  pipes,
			host:  map[int]fakeFD{3: {"pipe:[10]", 0o2}},
			types: [2]hostfuncs.InspectResult{fifo, fifo},
			want:  "verified: stdin pipe:[10] is held by the host as fd 3",
		},
		{
			name:    "host holds only the server's own ends, as a forking launcher does",
			self:    pipes,
			host:    map[int]fakeFD{0: {"pipe:[10]", 0o0}, 1: {"pipe:[11]", 0o1}},
			types:   [2]hostfuncs.InspectResult{fifo, fifo},
			wantErr: ErrAdopted,
			wantIn:  []string{`the host pid 42 ("mcp-host") does not hold the other end of the server's stdio (stdin pipe:[10] is not held by the host; stdout pipe:[11] is not held by the host)`, "subreaper", EnvLaunchers},
		},
		{
			// Fault 11c: a subreaper adopted the server; the pipes belong to
			// the MCP host that started it, not to the subreaper.
			name:    "host holds neither pipe (adopted by a subreaper)",
			self:    pipes,
			host:    map[int]fakeFD{0: {"/dev/null", 0o0}, 1: {"pipe:[99]", 0o1}},
			types:   [2]hostfuncs.InspectResult{fifo, fifo},
			wantErr: ErrAdopted,
			wantIn:  []string{"stdin pipe:[10] is not held by the host; stdout pipe:[11] is not held by the host"},
		},
		{
			// The Go host's encoder omits an empty "fds" list: {} is none.
			name:    "host fds answer without the fds field",
			self:    pipes,
			types:   [2]hostfuncs.InspectResult{fifo, fifo},
			answers: map[string]hostfuncs.InspectResult{"fds 42": {}},
			wantErr: ErrAdopted,
		},
		{
			name:    "host fd without fdinfo does not count",
			self:    pipes,
			host:    map[int]fakeFD{7: {"pipe:[10]", -1}},
			types:   [2]hostfuncs.InspectResult{fifo, other},
			wantErr: ErrAdopted,
		},
		{
			name:    "disproved beats cannot tell",
			self:    map[int]fakeFD{0: {"/dev/null", 0o0}, 1: {"pipe:[11]", 0o1}},
			host:    map[int]fakeFD{1: {"pipe:[11]", 0o1}},
			types:   [2]hostfuncs.InspectResult{other, fifo},
			wantErr: ErrAdopted,
			wantIn:  []string{"(stdout pipe:[11] is not held by the host)"},
		},
		{
			name:    "host gone",
			self:    pipes,
			gone:    true,
			types:   [2]hostfuncs.InspectResult{fifo, fifo},
			wantErr: ErrRace,
			wantIn:  []string{`the host pid 42 ("mcp-host") exited during the stdio check`},
		},
		{
			// Fault 22: the subreaper that adopted the server is not
			// dumpable, or runs as another user. Cannot tell never lets the
			// identity stand.
			name:    "host fds cannot be listed",
			self:    pipes,
			types:   [2]hostfuncs.InspectResult{fifo, fifo},
			answers: map[string]hostfuncs.InspectResult{"fds 42": errResult(hostfuncs.CodePermission)},
			wantErr: ErrUnverified,
			wantIn: []string{"stdin pipe:[10]: cannot list the host's fds (permission); stdout pipe:[11]: cannot list the host's fds (permission)",
				"not dumpable", "session resume is off"},
		},
		{
			name:    "own fdinfo unreadable",
			self:    map[int]fakeFD{0: {"pipe:[10]", -1}, 1: {"pipe:[11]", -1}},
			host:    map[int]fakeFD{7: {"pipe:[10]", 0o1}},
			types:   [2]hostfuncs.InspectResult{fifo, fifo},
			wantErr: ErrUnverified,
			wantIn:  []string{"stdin pipe:[10]: cannot read its fdinfo flags; stdout pipe:[11]: cannot read its fdinfo flags"},
		},
		{
			name:  "named FIFOs held by the host",
			self:  map[int]fakeFD{0: {"/tmp/in.fifo", 0o0}, 1: {"/tmp/out.fifo", 0o1}},
			host:  map[int]fakeFD{7: {"/tmp/in.fifo", 0o1}},
			types: [2]hostfuncs.InspectResult{fifo, fifo},
			want:  "verified: stdin /tmp/in.fifo is held by the host as fd 7",
		},
		{
			// A shell that opened the FIFOs for the server and exec'd it
			// leaves no holder; a multiplexer that runs that shell holds
			// neither.
			name:    "named FIFOs not held by the host",
			self:    map[int]fakeFD{0: {"/tmp/in.fifo", 0o0}, 1: {"/tmp/out.fifo", 0o1}},
			host:    map[int]fakeFD{3: {"/dev/ptmx", 0o2}},
			types:   [2]hostfuncs.InspectResult{fifo, fifo},
			wantErr: ErrAdopted,
			wantIn:  []string{"stdin /tmp/in.fifo is not held by the host; stdout /tmp/out.fifo is not held by the host"},
		},
		{
			name:    "named FIFO held only at the server's own end",
			self:    map[int]fakeFD{0: {"/tmp/in.fifo", 0o0}, 1: {"/tmp/out.fifo", 0o1}},
			host:    map[int]fakeFD{5: {"/tmp/in.fifo", 0o0}, 6: {"/tmp/out.fifo", 0o1}},
			types:   [2]hostfuncs.InspectResult{fifo, fifo},
			wantErr: ErrAdopted,
		},
		{
			// An interactive shell holds its terminal: a server started
			// by hand resumes under it.
			name:  "terminal held by the host",
			host:  map[int]fakeFD{0: {"/dev/pts/3", 0o2}, 1: {"/dev/pts/3", 0o2}, 255: {"/dev/pts/3", 0o2}},
			types: [2]hostfuncs.InspectResult{other, other},
			want:  "verified: stdin /dev/pts/3 is held by the host as fd 0",
		},
		{
			name:  "terminal held by the host read-only",
			host:  map[int]fakeFD{4: {"/dev/pts/3", 0o0}},
			types: [2]hostfuncs.InspectResult{other, other},
			want:  "verified: stdin /dev/pts/3 is held by the host as fd 4",
		},
		{
			// Fault 23: a terminal multiplexer (tmux: server) runs the
			// server as a window command: it holds only the master side.
			name:    "terminal not held: a multiplexer holds only /dev/ptmx",
			host:    map[int]fakeFD{0: {"/dev/null", 0o0}, 5: {"/dev/ptmx", 0o2}, 6: {"/dev/ptmx", 0o2}, 7: {"/dev/pts/4", 0o2}},
			types:   [2]hostfuncs.InspectResult{other, other},
			wantErr: ErrAdopted,
			wantIn:  []string{"stdin /dev/pts/3 is not held by the host; stdout /dev/pts/3 is not held by the host", "terminal multiplexer"},
		},
		{
			name:    "terminal whose holders cannot be listed",
			types:   [2]hostfuncs.InspectResult{other, other},
			answers: map[string]hostfuncs.InspectResult{"fds 42": errResult(hostfuncs.CodePermission)},
			wantErr: ErrUnverified,
			wantIn:  []string{"stdin /dev/pts/3: cannot list the host's fds (permission)"},
		},
		{
			// /dev/tty names each process's own controlling terminal, so
			// the host holding "/dev/tty" proves nothing.
			name:     "/dev/tty proves nothing",
			self:     map[int]fakeFD{0: {"/dev/tty", 0o2}, 1: {"/dev/tty", 0o2}},
			host:     map[int]fakeFD{0: {"/dev/tty", 0o2}},
			types:    [2]hostfuncs.InspectResult{other, other},
			wantErr:  ErrUnverified,
			wantIn:   []string{`stdin is "/dev/tty" (a char), which proves nothing`},
			wantCall: 2,
		},
		{
			// The Python MCP SDK points fds 0 and 1 at /dev/null while it
			// serves: a first load after that cannot tell, and says why.
			name:     "/dev/null",
			self:     map[int]fakeFD{0: {"/dev/null", 0o0}, 1: {"/dev/null", 0o1}},
			host:     map[int]fakeFD{0: {"/dev/null", 0o0}},
			types:    [2]hostfuncs.InspectResult{other, other},
			wantErr:  ErrUnverified,
			wantIn:   []string{"stdin is /dev/null, which proves nothing", "Python MCP SDK", "import mcp_resume before the SDK starts serving"},
			wantCall: 2,
		},
		{
			name:     "regular files",
			self:     map[int]fakeFD{0: {"/srv/in.jsonl", 0o0}, 1: {"/srv/out.jsonl", 0o1}},
			host:     map[int]fakeFD{3: {"/srv/in.jsonl", 0o1}},
			types:    [2]hostfuncs.InspectResult{{Type: hostfuncs.FileTypeFile}, {Type: hostfuncs.FileTypeFile}},
			wantErr:  ErrUnverified,
			wantIn:   []string{`stdin is "/srv/in.jsonl" (a file), which proves nothing`},
			wantCall: 2,
		},
		{
			name:     "closed",
			types:    [2]hostfuncs.InspectResult{errResult(hostfuncs.CodeNotFound), errResult(hostfuncs.CodeNotFound)},
			wantErr:  ErrUnverified,
			wantIn:   []string{"(stdin is closed; stdout is closed)"},
			wantCall: 2,
		},
		{
			name:  "fstat unsupported, terminal on stdout verifies",
			host:  map[int]fakeFD{0: {"/dev/pts/3", 0o2}},
			types: [2]hostfuncs.InspectResult{errResult(hostfuncs.CodeUnsupported), other},
			want:  "verified: stdout /dev/pts/3 is held by the host as fd 0",
		},
		{
			name:     "fstat unsupported",
			self:     map[int]fakeFD{0: {"/dev/null", 0o0}, 1: {"/dev/null", 0o1}},
			types:    [2]hostfuncs.InspectResult{errResult(hostfuncs.CodeUnsupported), errResult(hostfuncs.CodeUnsupported)},
			wantErr:  ErrUnverified,
			wantIn:   []string{"stdin: cannot tell what it is (fstat: unsupported)"},
			wantCall: 2,
		},
		{
			name:    "socket pair created by the host",
			self:    map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[21]", 0o2}},
			types:   [2]hostfuncs.InspectResult{sock, sock},
			answers: map[string]hostfuncs.InspectResult{"peer 0": {PeerPID: ptr(hostPID)}, "peer 1": {PeerPID: ptr(hostPID)}},
			want:    "verified: stdin socket:[20] peer is the host",
		},
		{
			name:    "socket pair created by another process",
			self:    map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[21]", 0o2}},
			types:   [2]hostfuncs.InspectResult{sock, sock},
			answers: map[string]hostfuncs.InspectResult{"peer 0": {PeerPID: ptr(7)}, "peer 1": {PeerPID: ptr(8)}},
			wantErr: ErrAdopted,
			wantIn:  []string{"(stdin socket:[20] peer is pid 7, not the host; stdout socket:[21] peer is pid 8, not the host)"},
		},
		{
			// The host is inside this PID namespace, so a peer outside it
			// is not the host; cannot tell, resume off.
			name:    "socket peer outside this PID namespace",
			self:    map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[21]", 0o2}},
			types:   [2]hostfuncs.InspectResult{sock, sock},
			answers: map[string]hostfuncs.InspectResult{"peer 0": {PeerPID: ptr(0)}, "peer 1": {PeerPID: ptr(0)}},
			wantErr: ErrUnverified,
			wantIn:  []string{"stdin socket:[20] peer is outside this PID namespace"},
		},
		{
			// Node has no SO_PEERCRED: peer answers unsupported. The
			// documented residual (docs/RELIABILITY.md, 11e): the identity
			// stands when both fds are such sockets.
			name:  "socket peer unsupported",
			self:  map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[21]", 0o2}},
			types: [2]hostfuncs.InspectResult{sock, sock},
			want:  "not checked: stdin socket:[20] is a socket without peer credentials (this host cannot read SO_PEERCRED); stdout socket:[21] is a socket without peer credentials (this host cannot read SO_PEERCRED)",
		},
		{
			name:    "socket peer unsupported and /dev/null",
			self:    map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"/dev/null", 0o1}},
			types:   [2]hostfuncs.InspectResult{sock, other},
			wantErr: ErrUnverified,
			wantIn:  []string{"(stdout is /dev/null, which proves nothing about who launched the server; stdin socket:[20] is a socket without peer credentials"},
		},
		{
			// The stdio socket rule: a socket on stdio must be a Unix
			// socket of /proc/self/net/unix, whatever its peer says.
			name:     "TCP socket on stdio",
			self:     map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[20]", 0o2}},
			types:    [2]hostfuncs.InspectResult{sock, sock},
			answers:  map[string]hostfuncs.InspectResult{"peer 0": errResult(hostfuncs.CodeIO), "peer 1": errResult(hostfuncs.CodeIO)},
			files:    map[string]string{"/proc/self/net/unix": unixTable(30), "/proc/self/net/tcp": tcpTable("0100007F:1388 0300000A:A1A2 01", 20)},
			wantErr:  ErrNetworkStdio,
			wantIn:   []string{"stdin socket:[20] is a TCP socket (local address 127.0.0.1:5000)", "socat TCP-LISTEN"},
			wantCall: 4,
		},
		{
			name:     "TCP socket on stdio, peer unsupported (Node)",
			self:     map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[20]", 0o2}},
			types:    [2]hostfuncs.InspectResult{sock, sock},
			files:    map[string]string{"/proc/self/net/unix": unixTable(30), "/proc/self/net/tcp6": tcp6Table("00000000000000000000000000000000:1388 00000000000000000000000000000000:0000 0A", 20)},
			wantErr:  ErrNetworkStdio,
			wantIn:   []string{"stdin socket:[20] is a TCP socket (local address [::]:5000)"},
			wantCall: 4,
		},
		{
			name:     "TCP socket on stdin, pipe held by the host on stdout",
			self:     map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"pipe:[11]", 0o1}},
			host:     map[int]fakeFD{9: {"pipe:[11]", 0o0}},
			types:    [2]hostfuncs.InspectResult{sock, fifo},
			answers:  map[string]hostfuncs.InspectResult{"peer 0": errResult(hostfuncs.CodeIO)},
			files:    map[string]string{"/proc/self/net/unix": unixTable(30), "/proc/self/net/tcp": tcpTable("0100007F:1388 0300000A:A1A2 01", 20)},
			wantErr:  ErrNetworkStdio,
			wantIn:   []string{"stdin socket:[20] is a TCP socket"},
			wantCall: 4,
		},
		{
			name:     "UDP socket on stdio",
			self:     map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[20]", 0o2}},
			types:    [2]hostfuncs.InspectResult{sock, sock},
			files:    map[string]string{"/proc/self/net/unix": unixTable(30), "/proc/self/net/udp": tcpTable("00000000:0035 00000000:0000 07", 20)},
			wantErr:  ErrNetworkStdio,
			wantIn:   []string{"stdin socket:[20] is a UDP socket (local address 0.0.0.0:53)"},
			wantCall: 4,
		},
		{
			name:     "socket in no table",
			self:     map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[20]", 0o2}},
			types:    [2]hostfuncs.InspectResult{sock, sock},
			answers:  map[string]hostfuncs.InspectResult{"peer 0": {PeerPID: ptr(42)}},
			files:    map[string]string{"/proc/self/net/unix": unixTable(30)},
			wantErr:  ErrNetworkStdio,
			wantIn:   []string{"stdin socket:[20] is not a Unix socket (/proc/self/net/unix does not list it)"},
			wantCall: 4,
		},
		{
			name:    "Unix socket table unreadable",
			self:    map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[21]", 0o2}},
			types:   [2]hostfuncs.InspectResult{sock, sock},
			answers: map[string]hostfuncs.InspectResult{"peer 0": {PeerPID: ptr(42)}},
			files:   map[string]string{"/proc/self/net/unix": ""},
			wantErr: ErrNetworkStdio,
			wantIn:  []string{"cannot tell whether the socket on the server's stdio (stdin socket:[20], stdout socket:[21]) is a Unix socket"},
		},
		{
			name:    "Unix socket table cut at the read limit, socket not in it",
			self:    map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[20]", 0o2}},
			types:   [2]hostfuncs.InspectResult{sock, sock},
			answers: map[string]hostfuncs.InspectResult{"peer 0": {PeerPID: ptr(42)}},
			files:   map[string]string{"/proc/self/net/unix": fillTo(unixTable(30), hostfuncs.MaxProcTableRead)},
			wantErr: ErrNetworkStdio,
			wantIn:  []string{"cannot tell whether stdin socket:[20] is a Unix socket", "read limit"},
		},
		{
			name:    "Unix socket table cut at the read limit, socket in it",
			self:    map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[20]", 0o2}},
			types:   [2]hostfuncs.InspectResult{sock, sock},
			answers: map[string]hostfuncs.InspectResult{"peer 0": {PeerPID: ptr(42)}},
			files:   map[string]string{"/proc/self/net/unix": fillTo(unixTable(20), hostfuncs.MaxProcTableRead)},
			want:    "verified: stdin socket:[20] peer is the host",
		},
		{
			name:    "socket link that is not socket:[N]",
			self:    map[int]fakeFD{0: {"socket:[x]", 0o2}, 1: {"socket:[x]", 0o2}},
			types:   [2]hostfuncs.InspectResult{sock, sock},
			answers: map[string]hostfuncs.InspectResult{"peer 0": {PeerPID: ptr(42)}},
			wantErr: ErrNetworkStdio,
			wantIn:  []string{"stdin socket:[x]: cannot tell what socket it is"},
		},
		{
			name:    "socket peer answer without peer_pid",
			self:    map[int]fakeFD{0: {"socket:[20]", 0o2}, 1: {"socket:[21]", 0o2}},
			types:   [2]hostfuncs.InspectResult{sock, sock},
			answers: map[string]hostfuncs.InspectResult{"peer 0": {}, "peer 1": {}},
			wantErr: ErrUnverified,
			wantIn:  []string{"stdin socket:[20]: the peer answer has no pid"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := newSystem(server.pid).put(host, server)
			for n, fd := range tt.self {
				sys.links[procSelfFD(n)] = fd.link
			}
			// Pipes whose /proc link the test leaves out still get one;
			// other fds keep the fixture's terminal.
			for n, l := range map[int]string{0: "pipe:[10]", 1: "pipe:[11]"} {
				if _, ok := sys.links[procSelfFD(n)]; !ok && tt.types[n].Type == hostfuncs.FileTypeFIFO {
					sys.links[procSelfFD(n)] = l
				}
			}
			if tt.self != nil {
				sys.fds["self"] = fdList(tt.self)
			}
			sys.fds["42"] = fdList(tt.host)
			if tt.gone {
				sys.answers["fds 42"] = errResult(hostfuncs.CodeNotFound)
			}
			sys.answers["fstat 0"], sys.answers["fstat 1"] = tt.types[0], tt.types[1]
			sys.files["/proc/self/net/unix"] = []byte(unixTable(20, 21))
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
			id, err := Resolve(linuxFacts(server.pid), NewLauncherSet(nil, ""), sys.inspect)
			wantCall := tt.wantCall
			if wantCall == 0 {
				wantCall = 3
			}
			if sys.calls != wantCall {
				t.Errorf("Resolve made %d inspect calls, want %d", sys.calls, wantCall)
			}
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve() = %q, %v; want error %v", id.Stdio, err, tt.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "resolve MCP host of pid 1234: ") {
					t.Errorf("error %q does not name the server pid", err)
				}
				for _, s := range tt.wantIn {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve() error: %v", err)
			}
			if id.Stdio != tt.want {
				t.Errorf("Stdio = %q, want %q", id.Stdio, tt.want)
			}
		})
	}
}

// TestCheckStdio_Batch checks what the stdio call asks: the flags of this
// process's fds and the host's fds, filtered by the pipes, in one call.
func TestCheckStdio_Batch(t *testing.T) {
	host := fakeProc{pid: 42, ppid: 10, comm: "mcp-host"}
	server := fakeProc{pid: 1234, ppid: 42, comm: "server"}
	sys := newSystem(server.pid).put(host, server)
	sys.links[procSelfFD(0)], sys.links[procSelfFD(1)] = "pipe:[10]", "pipe:[11]"
	sys.answers["fstat 0"] = hostfuncs.InspectResult{Type: hostfuncs.FileTypeFIFO}
	sys.answers["fstat 1"] = hostfuncs.InspectResult{Type: hostfuncs.FileTypeFIFO}
	sys.fds["self"] = []hostfuncs.FD{{FD: 0, Target: "pipe:[10]", Flags: 0}, {FD: 1, Target: "pipe:[11]", Flags: 1}}
	sys.fds["42"] = []hostfuncs.FD{{FD: 5, Target: "pipe:[11]", Flags: 0}}
	if _, err := Resolve(linuxFacts(1234), NewLauncherSet(nil, ""), sys.inspect); err != nil {
		t.Fatal(err)
	}
	last := sys.ops[len(sys.ops)-2:]
	want := []hostfuncs.InspectOp{
		{Op: hostfuncs.OpFDs, PID: "self", Targets: []string{"pipe:[10]", "pipe:[11]"}},
		{Op: hostfuncs.OpFDs, PID: "42", Targets: []string{"pipe:[10]", "pipe:[11]"}},
	}
	if d := diff(want, last); d != "" {
		t.Errorf("stdio call %s", d)
	}
}

// unixTable returns a /proc/net/unix table listing Unix sockets with these
// inodes.
func unixTable(inodes ...int) string {
	out := "Num       RefCount Protocol Flags    Type St Inode Path\n"
	for _, ino := range inodes {
		out += "0000000000000000: 00000002 00000000 00000000 0001 03 " + strconv.Itoa(ino) + "\n"
	}
	return out
}

// tcpTable returns a tcp (or udp) table with one row: local, remote and
// state as the kernel prints them ("0100007F:1388 00000000:0000 0A"), and
// the inode.
func tcpTable(row string, inode int) string {
	return "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: " + row + " 00000000:00000000 00:00000000 00000000  1000        0 " + strconv.Itoa(inode) + " 1 0000000000000000 100 0 0 10 0\n"
}

// tcp6Table is tcpTable for tcp6 (or udp6).
func tcp6Table(row string, inode int) string {
	return "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: " + row + " 00000000:00000000 00:00000000 00000000  1000        0 " + strconv.Itoa(inode) + " 1 0000000000000000 100 0 0 10 0\n"
}

// fillTo pads table with Unix socket rows of inode 9 to exactly n bytes,
// the last line cut short, as a read that stopped at the limit returns it.
func fillTo(table string, n int) string {
	row := "0000000000000000: 00000002 00000000 00000000 0001 03 9\n"
	b := []byte(table)
	for len(b) < n {
		b = append(b, row...)
	}
	return string(b[:n])
}
