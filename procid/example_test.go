package procid_test

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/procid"
)

// A Linux machine in miniature, as the host functions would describe it: an
// MCP host "claude" (pid 4100) ran "sh -c my-server" (pid 4200), which runs
// this server (pid 4242); the host holds the other ends of the server's
// stdin and stdout pipes.
type machine struct {
	procs map[int]proc
	fds   map[string][]hostfuncs.FD // "self" or a pid: open fds
}

// proc is one process of the machine.
type proc struct {
	ppid  int
	comm  string
	args  []string
	start uint64 // clock ticks from boot to its start
}

// example is the machine of the examples.
var example = machine{
	procs: map[int]proc{
		4242: {4200, "my-server", []string{"my-server"}, 98800},
		4200: {4100, "sh", []string{"sh", "-c", "my-server"}, 98790},
		4100: {1, "claude", []string{"/usr/bin/claude"}, 98765},
	},
	fds: map[string][]hostfuncs.FD{
		// Flags are fdinfo's: 0 O_RDONLY, 1 O_WRONLY.
		"self": {{FD: 0, Target: "pipe:[777]", Flags: 0}, {FD: 1, Target: "pipe:[778]", Flags: 1}},
		"4100": {{FD: 31, Target: "pipe:[777]", Flags: 1}, {FD: 32, Target: "pipe:[778]", Flags: 0}},
	},
}

// inspect answers one mcp_resume_inspect batch, op by op, as a host would.
func (m machine) inspect(ops []hostfuncs.InspectOp) ([]hostfuncs.InspectResult, error) {
	out := make([]hostfuncs.InspectResult, len(ops))
	for i, op := range ops {
		pid, _ := strconv.Atoi(op.PID)
		if op.PID == hostfuncs.PIDSelf {
			pid = 4242
		}
		p, known := m.procs[pid]
		r := &out[i]
		switch op.Op {
		case hostfuncs.OpStat, hostfuncs.OpCmdline, hostfuncs.OpExe, hostfuncs.OpKill0:
			if !known {
				r.Error = &hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: "no process " + op.PID}
				continue
			}
		}
		switch op.Op {
		case hostfuncs.OpSelf:
			r.Target = "4242"
		case hostfuncs.OpBootID:
			r.Data = []byte("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n")
		case hostfuncs.OpPidNS:
			r.Target = "pid:[4026531836]"
		case hostfuncs.OpTimens:
			r.Data = []byte("monotonic 0 0\nboottime 0 0\n")
		case hostfuncs.OpStat:
			// Fields 3 to 22 of proc_pid_stat(5); 22 is the start time.
			r.Data = fmt.Appendf(nil, "%d (%s) S %d %d %d 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 %d 0 0\n", pid, p.comm, p.ppid, pid, pid, p.start)
		case hostfuncs.OpCmdline:
			r.Data = []byte(strings.Join(p.args, "\x00") + "\x00")
		case hostfuncs.OpExe:
			r.Dev, r.Ino = "2049", strconv.Itoa(1000+pid)
		case hostfuncs.OpKill0:
			// success: the process exists
		case hostfuncs.OpFstat:
			r.Type = hostfuncs.FileTypeFIFO
		case hostfuncs.OpFDLink:
			r.Target = "pipe:[" + strconv.Itoa(777+op.FD) + "]"
		case hostfuncs.OpFDs:
			r.FDs = m.fds[op.PID]
		default:
			r.Error = &hostfuncs.Error{Code: hostfuncs.CodeUnsupported, Message: op.Op}
		}
	}
	return out, nil
}

// Resolve walks from the server's parent past the launcher to the MCP host,
// then checks that the host holds the other ends of the server's stdio.
func ExampleResolve() {
	facts := hostfuncs.Facts{OS: "linux", PID: 4242}
	id, err := procid.Resolve(facts, procid.NewLauncherSet(nil, ""), example.inspect)
	if err != nil {
		fmt.Println("resume off:", err)
		return
	}
	fmt.Println("MCP host:", id.PID, id.StartTime)
	for _, p := range id.WireChain(true) {
		fmt.Printf("  %-8s pid %d %s\n", p.Role, p.PID, p.Name)
	}
	fmt.Println(id.Stdio)
	// Output:
	// MCP host: 4100 98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x5100
	//   launcher pid 4200 sh
	//   host     pid 4100 claude
	// verified: stdin pipe:[777] is held by the host as fd 31
}

// Liveness tells whether the MCP hosts that token files name still run: the
// host above, the same pid with another start, and a pid that is gone.
func ExampleLiveness() {
	const boot, ns = "0f1e2d3c4b5a69788796a5b4c3d2e1f0", "4026531836"
	refs := []procid.HostRef{
		{PID: 4100, StartTime: "98765." + boot + "." + ns + ".2049x5100"},
		{PID: 4100, StartTime: "12345." + boot + "." + ns + ".2049x5100"},
		{PID: 9999, StartTime: "55555." + boot + "." + ns + ".2049x10999"},
	}
	facts := hostfuncs.Facts{OS: "linux", PID: 4242}
	for i, state := range procid.Liveness(facts, example.inspect, refs) {
		fmt.Println(refs[i].PID, state)
	}
	// Output:
	// 4100 alive
	// 4100 gone
	// 9999 gone
}
