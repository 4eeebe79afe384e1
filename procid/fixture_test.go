package procid

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// The policy is tested with fixture answers: a system serves the
// operations of mcp_resume_inspect from maps, with the defaults of the
// conformance runner (hostfuncs/conformance/README.md): kill0 not_found,
// fstat "char", peer, sysctl, procargs and ps unsupported. As in the
// default conformance system, stdin and stdout are the terminal
// /dev/pts/3, which every process of the tree holds as its fd 0 unless the
// test lists its fds.

// testBootUUID is the boot ID fixture trees use, as the kernel prints it.
const testBootUUID = "0f1e2d3c-4b5a-6978-8796-A5B4C3D2E1F0\n"

// testBoot is testBootUUID as it appears in a Linux start time.
const testBoot = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"

// testTTY is the terminal on the fixture's stdio.
const testTTY = "/dev/pts/3"

// testNS is the PID namespace inode of the fixture (/proc/self/ns/pid).
const testNS = "4026531836"

// system answers inspect operations from fixture maps.
type system struct {
	files   map[string][]byte                  // read: path -> content
	links   map[string]string                  // readlink: path -> target
	fds     map[string][]hostfuncs.FD          // fds: "self" or pid -> fds
	answers map[string]hostfuncs.InspectResult // "<op> <pid or fd>" -> result
	// afterOp, when set, runs after each operation is answered; tests use
	// it to change the tree in the middle of a batch.
	afterOp func(op hostfuncs.InspectOp)
	// fail, when set, makes the whole call fail (no usable answer), or
	// answer a wrong number of results with short.
	fail, short bool

	calls int                   // inspect calls made
	ops   []hostfuncs.InspectOp // every operation asked, in order
}

// newSystem returns an empty system whose /proc is this namespace's for
// pid self, with the boot ID and namespace set.
func newSystem(self int) *system {
	return &system{
		files: map[string][]byte{procBootID: []byte(testBootUUID)},
		links: map[string]string{
			procSelf:      strconv.Itoa(self),
			procSelfNS:    "pid:[" + testNS + "]",
			procSelfFD(0): testTTY,
			procSelfFD(1): testTTY,
		},
		fds:     map[string][]hostfuncs.FD{},
		answers: map[string]hostfuncs.InspectResult{},
	}
}

func errResult(code string) hostfuncs.InspectResult {
	return hostfuncs.InspectResult{Error: &hostfuncs.Error{Code: code, Message: code + " (fixture)"}}
}

// inspect implements Inspector.
func (s *system) inspect(ops []hostfuncs.InspectOp) ([]hostfuncs.InspectResult, error) {
	s.calls++
	if s.fail {
		return nil, errors.New("fixture: no answer")
	}
	var out []hostfuncs.InspectResult
	for _, op := range ops {
		s.ops = append(s.ops, op)
		out = append(out, s.answer(op))
		if s.afterOp != nil {
			s.afterOp(op)
		}
	}
	if s.short {
		out = out[:len(out)-1]
	}
	return out, nil
}

// opPath maps a typed /proc operation to the file it reads, as every host
// does (hostfuncs/README.md, "mcp_resume_inspect"): link is true for the
// operations that answer a link target. ok is false for other operations.
func opPath(op hostfuncs.InspectOp) (path string, link, ok bool) {
	switch op.Op {
	case hostfuncs.OpBootID:
		return procBootID, false, true
	case hostfuncs.OpTimens:
		return procTimens, false, true
	case hostfuncs.OpSelf:
		return procSelf, true, true
	case hostfuncs.OpStat:
		return "/proc/" + op.PID + "/stat", false, true
	case hostfuncs.OpCmdline:
		return "/proc/" + op.PID + "/cmdline", false, true
	case hostfuncs.OpPidNS:
		return "/proc/" + op.PID + "/ns/pid", true, true
	case hostfuncs.OpFDLink:
		return "/proc/" + op.PID + "/fd/" + strconv.Itoa(op.FD), true, true
	case hostfuncs.OpEnviron:
		return "/proc/" + op.PID + "/environ", false, true
	case hostfuncs.OpNS:
		return "/proc/" + op.PID + "/ns/" + op.NS, true, true
	case hostfuncs.OpNet:
		return "/proc/" + op.PID + "/net/" + op.Table, false, true
	}
	return "", false, false
}

func (s *system) answer(op hostfuncs.InspectOp) hostfuncs.InspectResult {
	if path, link, ok := opPath(op); ok {
		if link {
			if t, ok := s.links[path]; ok {
				return hostfuncs.InspectResult{Target: t}
			}
		} else if b, ok := s.files[path]; ok {
			return hostfuncs.InspectResult{Data: b}
		}
		return errResult(hostfuncs.CodeNotFound)
	}
	switch op.Op {
	case hostfuncs.OpFDs:
		if r, ok := s.answers["fds "+op.PID]; ok {
			return r
		}
		all, ok := s.fds[op.PID]
		if _, exists := s.files["/proc/"+op.PID+"/stat"]; !ok && (exists || op.PID == "self") {
			all, ok = []hostfuncs.FD{{FD: 0, Target: testTTY, Flags: 0o2}}, true
		}
		if !ok {
			return errResult(hostfuncs.CodeNotFound)
		}
		got := []hostfuncs.FD{}
		for _, fd := range all {
			if op.Targets == nil || slices.Contains(op.Targets, fd.Target) {
				got = append(got, fd)
			}
		}
		return hostfuncs.InspectResult{FDs: got}
	}
	key := op.Op + " " + op.PID
	if op.Op == hostfuncs.OpFstat || op.Op == hostfuncs.OpPeer {
		key = op.Op + " " + strconv.Itoa(op.FD)
	}
	if r, ok := s.answers[key]; ok {
		return r
	}
	switch op.Op {
	case hostfuncs.OpKill0:
		return errResult(hostfuncs.CodeNotFound)
	case hostfuncs.OpFstat:
		return hostfuncs.InspectResult{Type: hostfuncs.FileTypeChar}
	case hostfuncs.OpExe:
		return hostfuncs.InspectResult{Dev: fixtureExeDev, Ino: fixtureExeIno}
	}
	return errResult(hostfuncs.CodeUnsupported)
}

// The default answer of the exe operation for every pid (as in the
// conformance runners): the program image's device and inode.
const (
	fixtureExeDev = "2049"
	fixtureExeIno = "1234567"
	fixtureExe    = fixtureExeDev + "x" + fixtureExeIno
)

// fakeProc is one process in a fixture /proc tree.
type fakeProc struct {
	pid, ppid int
	comm      string
	state     byte   // 0 means 'S'
	start     uint64 // starttime ticks; 0 means 1000+pid
	// cmdline is the raw contents of /proc/<pid>/cmdline; use argv to build
	// it from arguments.
	cmdline string
	// tty is field 7 of stat, tty_nr: 0 for no controlling terminal.
	tty int
}

// argv returns the cmdline contents for args: each followed by a NUL.
func argv(args ...string) string {
	if len(args) == 0 {
		return ""
	}
	return strings.Join(args, "\x00") + "\x00"
}

// startTicks returns p's starttime field.
func (p fakeProc) startTicks() uint64 {
	if p.start == 0 {
		return 1000 + uint64(p.pid)
	}
	return p.start
}

// startTime returns p's start time as the policy formats it.
func (p fakeProc) startTime() string {
	return strconv.FormatUint(p.startTicks(), 10) + "." + testBoot + "." + testNS
}

// statLine returns p's /proc/<pid>/stat contents: 52 fields, starttime at 22.
func (p fakeProc) statLine() string {
	state := p.state
	if state == 0 {
		state = 'S'
	}
	// Fields 5 (pgrp) to 21 (itrealvalue): 17 fields, 7 tty_nr.
	mid := "0 0 " + strconv.Itoa(p.tty) + " " + strings.TrimSpace(strings.Repeat("0 ", 14))
	// Fields 23 (vsize) to 52 (exit_code): 30 fields.
	tail := strings.TrimSpace(strings.Repeat("7 ", 30))
	return fmt.Sprintf("%d (%s) %c %d %s %d %s\n", p.pid, p.comm, state, p.ppid, mid, p.startTicks(), tail)
}

// with returns p with ppid changed.
func (p fakeProc) with(ppid int) fakeProc {
	p.ppid = ppid
	return p
}

// put writes p into the system's /proc.
func (s *system) put(procs ...fakeProc) *system {
	for _, p := range procs {
		s.files[procStat(p.pid)] = []byte(p.statLine())
		s.files[procCmdline(p.pid)] = []byte(p.cmdline)
	}
	return s
}

// drop removes pid from the system's /proc.
func (s *system) drop(pid int) {
	delete(s.files, procStat(pid))
	delete(s.files, procCmdline(pid))
}

// linuxFacts returns the facts of a Linux server with pid.
func linuxFacts(pid int) hostfuncs.Facts {
	return hostfuncs.Facts{OS: "linux", PID: pid, EUID: 1000, Home: "/home/u", Env: map[string]string{}, Runtime: "test"}
}

// diff returns "" when want and got are deeply equal, and otherwise a
// description in (-want +got) form.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("(-want +got):\n-%+v\n+%+v", want, got)
}
