package primitives

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// MaxProcRead is the most bytes the "read" operation returns of a /proc file.
const MaxProcRead = 65536

// inspectOp is one decoded operation. Pointers tell a missing field from a
// zero one (fd 0 is stdin).
type inspectOp struct {
	Op      string   `json:"op"`
	Path    *string  `json:"path"`
	PID     *string  `json:"pid"`
	FD      *int     `json:"fd"`
	Targets []string `json:"targets"`
}

// result is one answer of mcp_resume_inspect: a success object or
// {"error": ...}. A map keeps fields the plugin needs even when empty (the
// "data" of an empty file).
type result = map[string]any

func failed(werr *hostfuncs.Error) result { return result{"error": werr} }

// inspect serves mcp_resume_inspect (hostfuncs/README.md): up to
// hostfuncs.MaxInspectOps read-only operations, one result each, in order. Every
// operation answers explicitly: a success object, or not_found, permission,
// unsupported, invalid_request or io.
func (f *Funcs) inspect(req []byte) any {
	var r struct {
		Ops []json.RawMessage `json:"ops"`
	}
	if err := json.Unmarshal(req, &r); err != nil {
		return empty(invalid("mcp_resume_inspect: request is not the JSON document the contract defines: " + err.Error()))
	}
	if len(r.Ops) == 0 || len(r.Ops) > hostfuncs.MaxInspectOps {
		return empty(invalid(fmt.Sprintf("mcp_resume_inspect: %d operations; send 1 to %d", len(r.Ops), hostfuncs.MaxInspectOps)))
	}
	results := make([]result, len(r.Ops))
	for i, raw := range r.Ops {
		var op inspectOp
		if err := json.Unmarshal(raw, &op); err != nil {
			results[i] = failed(invalid("operation is not the JSON object the contract defines: " + err.Error()))
			continue
		}
		results[i] = f.inspectOne(op)
	}
	return map[string]any{"results": results}
}

func (f *Funcs) inspectOne(op inspectOp) result {
	switch op.Op {
	case hostfuncs.OpRead, hostfuncs.OpReadlink:
		if op.Path == nil {
			return failed(invalid(op.Op + `: operation lacks "path"`))
		}
		rel, ok := allowed(op.Op, *op.Path)
		if !ok {
			return failed(invalid(fmt.Sprintf("%s: %q is not on the /proc allowlist", op.Op, *op.Path)))
		}
		if !f.procOK {
			return failed(unsupported("no /proc on this system"))
		}
		if op.Op == hostfuncs.OpRead {
			return f.procRead(rel)
		}
		target, err := os.Readlink(filepath.Join(f.proc, rel))
		if err != nil {
			return failed(osError("readlink "+*op.Path, err, false))
		}
		return result{"target": target}
	case hostfuncs.OpFDs:
		if op.PID == nil || (*op.PID != "self" && !validPID(*op.PID)) {
			return failed(invalid(`fds: "pid" must be "self" or decimal digits without a leading zero`))
		}
		if !f.procOK {
			return failed(unsupported("no /proc on this system"))
		}
		return f.fds(*op.PID, op.Targets)
	case hostfuncs.OpKill0, hostfuncs.OpSysctl, hostfuncs.OpProcargs, hostfuncs.OpPs:
		if op.PID == nil || !validPID(*op.PID) {
			return failed(invalid(op.Op + `: "pid" must be decimal digits without a leading zero, at most 2147483647`))
		}
		if r, ok := f.pinned(op.Op + " " + *op.PID); ok {
			return r
		}
		pid, _ := strconv.Atoi(*op.PID)
		switch op.Op {
		case hostfuncs.OpKill0:
			if err := syscall.Kill(pid, 0); err != nil {
				return failed(osError("kill(pid, 0)", err, false))
			}
			return result{}
		case hostfuncs.OpSysctl:
			return sysctlProc(pid)
		case hostfuncs.OpProcargs:
			return sysctlProcargs(pid)
		default:
			// The Go host answers sysctl on macOS, so it need not run ps.
			return failed(unsupported("the Go host answers sysctl, not ps"))
		}
	case hostfuncs.OpExe:
		if op.PID == nil || !validPID(*op.PID) {
			return failed(invalid(op.Op + `: "pid" must be decimal digits without a leading zero, at most 2147483647`))
		}
		if r, ok := f.pinned(op.Op + " " + *op.PID); ok {
			return r
		}
		if !f.procOK {
			return failed(unsupported("no /proc on this system"))
		}
		return exeStat(filepath.Join(f.proc, *op.PID, "exe"), "/proc/"+*op.PID+"/exe")
	case hostfuncs.OpFstat, hostfuncs.OpPeer:
		if op.FD == nil || *op.FD < 0 || *op.FD > math.MaxInt32 {
			return failed(invalid(op.Op + `: "fd" must be a file descriptor number (0 to 2147483647)`))
		}
		if r, ok := f.pinned(op.Op + " " + strconv.Itoa(*op.FD)); ok {
			return r
		}
		if op.Op == hostfuncs.OpFstat {
			return fstat(*op.FD)
		}
		return peer(*op.FD)
	default:
		return failed(invalid(fmt.Sprintf("unknown operation %q", op.Op)))
	}
}

// The conformance default answer of the exe operation, for every pid
// (hostfuncs/conformance/README.md): never the real system's.
const (
	ConformanceExeDev = "2049"
	ConformanceExeIno = "1234567"
)

func unsupported(msg string) *hostfuncs.Error {
	return &hostfuncs.Error{Code: hostfuncs.CodeUnsupported, Message: msg}
}

// pinned answers an operation from the fixture (conformance tests only):
// the pinned result, or the conformance default (hostfuncs/conformance/README.md).
// ok is false when there is no fixture.
func (f *Funcs) pinned(key string) (result, bool) {
	if f.fixture == nil {
		return nil, false
	}
	if raw, ok := f.fixture.Answers[key]; ok {
		var r result
		if err := json.Unmarshal(raw, &r); err != nil || r == nil {
			return failed(&hostfuncs.Error{Code: hostfuncs.CodeIO, Message: "fixture answer for " + key + " is not a JSON object"}), true
		}
		return r, true
	}
	op, _, _ := strings.Cut(key, " ")
	switch op {
	case hostfuncs.OpKill0:
		return failed(&hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: "no such process (conformance default)"}), true
	case hostfuncs.OpFstat:
		return result{"type": hostfuncs.FileTypeChar}, true
	case hostfuncs.OpExe:
		return result{"dev": ConformanceExeDev, "ino": ConformanceExeIno}, true
	}
	return failed(unsupported(op + " is not answered here (conformance default)")), true
}

// validPID reports whether s is a pid as the contract writes it: decimal
// digits without a leading zero, within pid_t (so never 0, which kill(2)
// would read as "my process group").
func validPID(s string) bool {
	if s == "" || s[0] < '1' || s[0] > '9' || len(s) > 10 {
		return false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return err == nil && n <= math.MaxInt32
}

// digits reports whether s is 1-20 ASCII decimal digits.
func digits(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// allowed checks path against the /proc allowlist of op (hostfuncs/README.md,
// "The allowlist") before any system call, and returns it relative to /proc.
//
//	read      /proc/sys/kernel/random/boot_id, /proc/self/timens_offsets,
//	          /proc/<pid>/stat, /proc/<pid>/cmdline
//	readlink  /proc/self, /proc/<pid>/ns/pid, /proc/<pid>/fd/<n>
//
// <pid> is "self" or digits, <n> digits. The "fds" operation builds its own
// paths (/proc/<pid>/fd, /proc/<pid>/fdinfo/<n>) from a checked pid.
func allowed(op, path string) (string, bool) {
	rel, ok := strings.CutPrefix(path, "/proc/")
	if !ok {
		return "", false
	}
	parts := strings.Split(rel, "/")
	pid := len(parts) > 1 && (parts[0] == "self" || digits(parts[0]))
	switch op {
	case hostfuncs.OpRead:
		ok = rel == "sys/kernel/random/boot_id" || rel == "self/timens_offsets" ||
			pid && len(parts) == 2 && (parts[1] == "stat" || parts[1] == "cmdline")
	case hostfuncs.OpReadlink:
		ok = rel == "self" ||
			pid && len(parts) == 3 && parts[1] == "ns" && parts[2] == "pid" ||
			pid && len(parts) == 3 && parts[1] == "fd" && digits(parts[2])
	}
	return rel, ok
}

// procRead reads the first MaxProcRead bytes of an allowlisted /proc file,
// opened O_RDONLY|O_NOFOLLOW.
func (f *Funcs) procRead(rel string) result {
	file, err := os.OpenFile(filepath.Join(f.proc, rel), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return failed(osError("open /proc/"+rel, err, false))
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, MaxProcRead))
	if err != nil {
		return failed(osError("read /proc/"+rel, err, false))
	}
	return result{"data": data}
}

// fds lists /proc/<pid>/fd: each fd with its link target and the octal
// "flags:" of /proc/<pid>/fdinfo/<fd> (proc_pid_fdinfo(5)) as a number, -1
// when fdinfo cannot be read; sorted by fd. With targets, only fds whose
// target is one of them. An fd that closes during the listing is skipped.
func (f *Funcs) fds(pid string, targets []string) result {
	dir := filepath.Join(f.proc, pid, "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return failed(osError("list /proc/"+pid+"/fd", err, false))
	}
	out := []hostfuncs.FD{}
	for _, e := range entries {
		if !digits(e.Name()) {
			continue
		}
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			if werr := osError("", err, false); werr.Code == hostfuncs.CodeNotFound {
				continue // closed during the listing
			}
			return failed(osError("readlink /proc/"+pid+"/fd/"+e.Name(), err, false))
		}
		if targets != nil && !slices.Contains(targets, target) {
			continue
		}
		out = append(out, hostfuncs.FD{FD: n, Target: target, Flags: fdFlags(filepath.Join(f.proc, pid, "fdinfo", e.Name()))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FD < out[j].FD })
	return result{"fds": out}
}

// fdFlags returns the octal "flags:" value of an fdinfo file, or -1.
func fdFlags(path string) int {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return -1
	}
	defer file.Close()
	b, err := io.ReadAll(io.LimitReader(file, MaxProcRead))
	if err != nil {
		return -1
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "flags:"); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64); err == nil && n >= 0 && n <= math.MaxInt32 {
				return int(n)
			}
			return -1
		}
	}
	return -1
}

// fstat reports the file type of this process's fd.
func fstat(fd int) result {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		if err == syscall.EBADF {
			return failed(&hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: fmt.Sprintf("fd %d is closed", fd)})
		}
		return failed(osError(fmt.Sprintf("fstat(%d)", fd), err, false))
	}
	t := hostfuncs.FileTypeOther
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		t = hostfuncs.FileTypeFIFO
	case syscall.S_IFSOCK:
		t = hostfuncs.FileTypeSocket
	case syscall.S_IFCHR:
		t = hostfuncs.FileTypeChar
	case syscall.S_IFREG:
		t = hostfuncs.FileTypeFile
	case syscall.S_IFDIR:
		t = hostfuncs.FileTypeDir
	}
	return result{"type": t}
}
