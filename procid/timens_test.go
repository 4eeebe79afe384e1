package procid

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// TestResolve_TimeNamespace: a sandbox in fresh PID and time namespaces
// whose boot clock starts near zero names its host like the previous such
// sandbox (same pid, same tick, recycled namespace inode), so a non-zero
// boottime offset turns resume off; the monotonic offset enters no start
// time, and a kernel without time namespaces has no file.
func TestResolve_TimeNamespace(t *testing.T) {
	host := fakeProc{pid: 42, ppid: 10, comm: "mcp-host"}
	server := fakeProc{pid: 1234, ppid: 42, comm: "server"}
	tests := []struct {
		name    string
		file    *hostfuncs.InspectResult // nil: not_found
		wantErr bool
		wantIn  string
	}{
		{name: "no file (kernel without time namespaces)"},
		{name: "initial time namespace", file: &hostfuncs.InspectResult{Data: []byte("monotonic           0         0\nboottime            0         0\n")}},
		{name: "monotonic offset only", file: &hostfuncs.InspectResult{Data: []byte("monotonic      -86400 500000000\nboottime            0         0\n")}},
		{name: "numeric clock ids", file: &hostfuncs.InspectResult{Data: []byte("1 0 0\n7 0 0\n")}},
		{
			name:    "boot clock started near zero",
			file:    &hostfuncs.InspectResult{Data: []byte("monotonic           0         0\nboottime     -2736456 -12345678\n")},
			wantErr: true, wantIn: "boottime offset -2736456 -12345678",
		},
		{
			name:    "boot clock shifted forward (checkpoint/restore)",
			file:    &hostfuncs.InspectResult{Data: []byte("monotonic         120         0\nboottime          120         0\n")},
			wantErr: true, wantIn: "checkpoint/restore",
		},
		{name: "numeric boottime shifted", file: &hostfuncs.InspectResult{Data: []byte("1 0 0\n7 -5 0\n")}, wantErr: true},
		{name: "unreadable", file: ptrResult(errResult(hostfuncs.CodePermission)), wantErr: true, wantIn: "cannot tell whether"},
		{name: "no boottime line", file: &hostfuncs.InspectResult{Data: []byte("monotonic 0 0\n")}, wantErr: true, wantIn: "no boottime line"},
		{name: "garbage", file: &hostfuncs.InspectResult{Data: []byte("boottime zero\n")}, wantErr: true, wantIn: "want"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := newSystem(server.pid).put(host, server)
			if tt.file != nil {
				sys.answers["read "+procTimens] = *tt.file
			}
			// The fixture serves reads from files; route this one through answers.
			in := func(ops []hostfuncs.InspectOp) ([]hostfuncs.InspectResult, error) {
				res, err := sys.inspect(ops)
				for i, op := range ops {
					if op.Op == hostfuncs.OpTimens && err == nil {
						if r, ok := sys.answers["read "+procTimens]; ok {
							res[i] = r
						}
					}
				}
				return res, err
			}
			id, err := Resolve(linuxFacts(server.pid), NewLauncherSet(nil, ""), in)
			if !tt.wantErr {
				if err != nil || id.PID != 42 {
					t.Fatalf("Resolve() = %+v, %v; want host 42", id, err)
				}
				return
			}
			if !errors.Is(err, ErrTimeNamespace) {
				t.Fatalf("Resolve() = %+v, %v; want ErrTimeNamespace", id, err)
			}
			if !strings.Contains(err.Error(), tt.wantIn) || !strings.Contains(err.Error(), "session resume is off") {
				t.Errorf("error %q does not contain %q", err, tt.wantIn)
			}
			if sys.calls != 1 {
				t.Errorf("Resolve made %d calls, want 1 (refused before the walk)", sys.calls)
			}
		})
	}
}

func ptrResult(r hostfuncs.InspectResult) *hostfuncs.InspectResult { return &r }

// TestResolve_StdioFDs: facts.stdio_fds names the fds the check inspects
// (the Python binding's copies of fds 0 and 1, taken before its MCP SDK
// points them at /dev/null); anything but two fds of at least 0 cannot tell.
func TestResolve_StdioFDs(t *testing.T) {
	host := fakeProc{pid: 42, ppid: 10, comm: "mcp-host"}
	server := fakeProc{pid: 1234, ppid: 42, comm: "server"}
	t.Run("copies verify", func(t *testing.T) {
		sys := newSystem(server.pid).put(host, server)
		sys.links[procSelfFD(0)], sys.links[procSelfFD(1)] = "/dev/null", "/dev/null"
		sys.links[procSelfFD(7)], sys.links[procSelfFD(8)] = "pipe:[10]", "pipe:[11]"
		sys.answers["fstat 7"] = hostfuncs.InspectResult{Type: hostfuncs.FileTypeFIFO}
		sys.answers["fstat 8"] = hostfuncs.InspectResult{Type: hostfuncs.FileTypeFIFO}
		sys.fds["self"] = []hostfuncs.FD{{FD: 0, Target: "/dev/null"}, {FD: 7, Target: "pipe:[10]", Flags: 0o2000000}, {FD: 8, Target: "pipe:[11]", Flags: 0o2000001}}
		sys.fds["42"] = []hostfuncs.FD{{FD: 5, Target: "pipe:[10]", Flags: 0o1}}
		f := linuxFacts(server.pid)
		f.StdioFDs = []int{7, 8}
		id, err := Resolve(f, NewLauncherSet(nil, ""), sys.inspect)
		if err != nil {
			t.Fatal(err)
		}
		if id.Stdio != "verified: stdin pipe:[10] is held by the host as fd 5" {
			t.Errorf("Stdio = %q", id.Stdio)
		}
		for _, op := range sys.ops {
			if (op.Op == hostfuncs.OpFstat || op.Op == hostfuncs.OpPeer) && op.FD != 7 && op.FD != 8 ||
				op.Op == hostfuncs.OpFDLink && (op.PID != hostfuncs.PIDSelf || op.FD != 7 && op.FD != 8) {
				t.Errorf("asked %+v, want only fds 7 and 8", op)
			}
		}
	})
	t.Run("without copies the late load sees /dev/null", func(t *testing.T) {
		sys := newSystem(server.pid).put(host, server)
		sys.links[procSelfFD(0)], sys.links[procSelfFD(1)] = "/dev/null", "/dev/null"
		_, err := Resolve(linuxFacts(server.pid), NewLauncherSet(nil, ""), sys.inspect)
		if !errors.Is(err, ErrUnverified) || !strings.Contains(err.Error(), "import mcp_resume before the SDK starts serving") || strings.Contains(err.Error(), "subreaper") {
			t.Errorf("Resolve() error = %v; want ErrUnverified naming the SDK, not a subreaper", err)
		}
	})
	for _, bad := range [][]int{{}, {0}, {0, 1, 2}, {-1, 1}, {0, -3}} {
		sys := newSystem(server.pid).put(host, server)
		f := linuxFacts(server.pid)
		f.StdioFDs = bad
		if _, err := Resolve(f, NewLauncherSet(nil, ""), sys.inspect); !errors.Is(err, ErrNoAnswer) || sys.calls != 0 {
			t.Errorf("stdio_fds %v: error %v after %d calls, want ErrNoAnswer before any call", bad, err, sys.calls)
		}
	}
}
