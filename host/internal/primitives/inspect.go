package primitives

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// MaxProcRead is the most bytes a "data" operation returns of a /proc file
// (hostfuncs.ProcOp.Max says which limit an operation has).
const MaxProcRead = hostfuncs.MaxProcRead

// inspectOp is one decoded operation. Pointers tell a missing field from a
// zero one (fd 0 is stdin); a field of the wrong JSON type fails decoding.
type inspectOp struct {
	Op      string   `json:"op"`
	PID     *string  `json:"pid"`
	FD      *int64   `json:"fd"`
	Targets []string `json:"targets"`
	NS      *string  `json:"ns"`
	Table   *string  `json:"table"`
}

// result is one answer of mcp_resume_inspect: a success object or
// {"error": ...}. A map keeps fields the plugin needs even when empty (the
// "data" of an empty file).
type result = map[string]any

func failed(werr *hostfuncs.Error) result { return result{"error": werr} }

func unsupported(msg string) result {
	return failed(&hostfuncs.Error{Code: hostfuncs.CodeUnsupported, Message: msg})
}

// inspect serves mcp_resume_inspect: 1 to hostfuncs.MaxInspectOps typed
// read-only operations, one result each, in order. An operation that is
// not an object, is unknown or has a field of the wrong type or range
// answers invalid_request; no path crosses the boundary.
func inspect(r struct {
	Ops *[]jsontext.Value `json:"ops"`
}) (any, *hostfuncs.Error) {
	if r.Ops == nil || len(*r.Ops) == 0 || len(*r.Ops) > hostfuncs.MaxInspectOps {
		return nil, invalid(fmt.Sprintf(`mcp_resume_inspect: "ops" must be a list of 1 to %d operations`, hostfuncs.MaxInspectOps))
	}
	results := make([]result, len(*r.Ops))
	for i, raw := range *r.Ops {
		var op inspectOp
		if err := jsonv2.Unmarshal(raw, &op, jsontext.AllowDuplicateNames(true)); err != nil || raw.Kind() != '{' {
			results[i] = failed(invalid(fmt.Sprintf("operation %d is not the JSON object the contract defines", i)))
		} else if results[i] = inspectOne(op); results[i] == nil {
			results[i] = failed(invalid(fmt.Sprintf("unknown operation %q", op.Op)))
		}
	}
	return map[string]any{"results": results}, nil
}

// inspectOne answers one operation; nil for an unknown one.
func inspectOne(op inspectOp) result {
	if p, ok := hostfuncs.ProcOpOf(op.Op); ok {
		path := "/proc/" + p.Path
		if strings.Contains(path, "<P>") {
			pid, werr := checkPID(op.PID, true)
			if werr != nil {
				return failed(werr)
			}
			path = strings.Replace(path, "<P>", pid, 1)
		}
		if strings.Contains(path, "<N>") {
			fd, werr := checkFD(op.FD)
			if werr != nil {
				return failed(werr)
			}
			path = strings.Replace(path, "<N>", strconv.Itoa(fd), 1)
		}
		if strings.Contains(path, "<NS>") {
			if op.NS == nil || !slices.Contains(hostfuncs.Namespaces, *op.NS) {
				return failed(invalid(`"ns" must be one of ` + strings.Join(hostfuncs.Namespaces, ", ")))
			}
			path = strings.Replace(path, "<NS>", *op.NS, 1)
		}
		if strings.Contains(path, "<T>") {
			if op.Table == nil || !slices.Contains(hostfuncs.NetTables, *op.Table) {
				return failed(invalid(`"table" must be one of ` + strings.Join(hostfuncs.NetTables, ", ")))
			}
			path = strings.Replace(path, "<T>", *op.Table, 1)
		}
		switch {
		case runtime.GOOS != "linux":
			return unsupported("no /proc on this system")
		case op.Op == hostfuncs.OpFDs:
			return fds(path, op.Targets)
		case p.Link:
			target, err := os.Readlink(path)
			if err != nil {
				return failed(osError("readlink "+path, err))
			}
			return result{"target": target}
		}
		data, err := readProc(path, p.Max)
		if err != nil {
			return failed(osError("read "+path, err))
		}
		return result{"data": data}
	}
	switch op.Op {
	case hostfuncs.OpKill0, hostfuncs.OpExe, hostfuncs.OpSysctl, hostfuncs.OpProcargs, hostfuncs.OpPs:
		pid, werr := checkPID(op.PID, false)
		if werr != nil {
			return failed(werr)
		}
		n, _ := strconv.Atoi(pid)
		switch op.Op {
		case hostfuncs.OpKill0:
			if err := syscall.Kill(n, 0); err != nil {
				return failed(osError("kill(pid, 0)", err))
			}
			return result{}
		case hostfuncs.OpExe:
			// stat(2) follows the link to the program file the process
			// runs, even a deleted one; an inode may exceed 2^53.
			var st syscall.Stat_t
			if runtime.GOOS != "linux" {
				return unsupported("no /proc on this system")
			} else if err := syscall.Stat("/proc/"+pid+"/exe", &st); err != nil {
				return failed(osError("stat /proc/"+pid+"/exe", err))
			}
			return result{"dev": strconv.FormatUint(uint64(st.Dev), 10), "ino": strconv.FormatUint(st.Ino, 10)}
		case hostfuncs.OpSysctl, hostfuncs.OpProcargs:
			return sysctl(op.Op, n)
		}
		// The Go host answers sysctl on macOS, so it need not run ps.
		return unsupported("the Go host answers sysctl, not ps")
	case hostfuncs.OpFstat, hostfuncs.OpPeer:
		fd, werr := checkFD(op.FD)
		switch {
		case werr != nil:
			return failed(werr)
		case op.Op == hostfuncs.OpFstat:
			return fstat(fd)
		case peerPID == nil:
			return unsupported("SO_PEERCRED is read on Linux only")
		}
		pid, err := peerPID(fd)
		if err != nil {
			return failed(osError(fmt.Sprintf("getsockopt(%d, SO_PEERCRED)", fd), err))
		}
		return result{"peer_pid": pid}
	}
	return nil
}

// checkPID checks an operation's "pid": decimal digits without a leading
// zero, 1..2147483647 (so never 0, which kill(2) reads as "my process
// group"), or "self" where self is allowed.
func checkPID(pid *string, self bool) (string, *hostfuncs.Error) {
	if pid != nil && (self && *pid == hostfuncs.PIDSelf || *pid != "" && (*pid)[0] != '0' && len(*pid) <= 10 && strings.Trim(*pid, "0123456789") == "") {
		if n, _ := strconv.ParseInt(*pid, 10, 64); n <= math.MaxInt32 {
			return *pid, nil
		}
	}
	return "", invalid(`"pid" must be a string of decimal digits without a leading zero, 1..2147483647` + map[bool]string{true: `, or "self"`}[self])
}

// checkFD checks an operation's "fd": an integer 0..2147483647.
func checkFD(fd *int64) (int, *hostfuncs.Error) {
	if fd == nil || *fd < 0 || *fd > math.MaxInt32 {
		return 0, invalid(`"fd" must be an integer 0..2147483647`)
	}
	return int(*fd), nil
}

// readProc reads the first max bytes of path, opened
// O_RDONLY|O_NOFOLLOW|O_CLOEXEC.
func readProc(path string, max int) ([]byte, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return io.ReadAll(io.LimitReader(file, int64(max)))
}

// fds lists dir, a /proc/<pid>/fd: each fd with its link target and the
// octal "flags:" of /proc/<pid>/fdinfo/<fd> (proc_pid_fdinfo(5)) as a
// number, -1 when fdinfo cannot be read; sorted by fd. With targets, only
// fds whose target is one of them. An fd that closes meanwhile is skipped;
// any other failure to read a link (EACCES: a non-dumpable host seen by a
// server without CAP_SYS_PTRACE) fails the whole op, as opening dir does.
func fds(dir string, targets []string) result {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return failed(osError("list "+dir, err))
	}
	out := []hostfuncs.FD{}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		target, err := os.Readlink(dir + "/" + e.Name())
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			continue // closed during the listing
		}
		if err != nil { // cannot tell is not closed: a link the host may not read fails the op
			return failed(osError("read link "+dir+"/"+e.Name(), err))
		}
		if targets == nil || slices.Contains(targets, target) {
			out = append(out, hostfuncs.FD{FD: n, Target: target, Flags: fdFlags(dir + "info/" + e.Name())}) // /proc/<pid>/fdinfo/<n>
		}
	}
	slices.SortFunc(out, func(a, b hostfuncs.FD) int { return a.FD - b.FD })
	return result{"fds": out}
}

// fdFlags returns the octal "flags:" value of an fdinfo file, or -1.
func fdFlags(path string) int {
	b, _ := readProc(path, MaxProcRead)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64); err == nil && n >= 0 && n <= math.MaxInt32 {
				return int(n)
			}
			break
		}
	}
	return -1
}

// fstat reports the file type of this process's fd; a closed fd (EBADF)
// answers not_found.
func fstat(fd int) result {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return failed(osError(fmt.Sprintf("fstat(%d)", fd), err))
	}
	types := map[uint32]string{syscall.S_IFIFO: hostfuncs.FileTypeFIFO, syscall.S_IFSOCK: hostfuncs.FileTypeSocket,
		syscall.S_IFCHR: hostfuncs.FileTypeChar, syscall.S_IFREG: hostfuncs.FileTypeFile, syscall.S_IFDIR: hostfuncs.FileTypeDir}
	if t, ok := types[uint32(st.Mode)&syscall.S_IFMT]; ok {
		return result{"type": t}
	}
	return result{"type": hostfuncs.FileTypeOther}
}

// Set where the system has them (lock_linux.go, sysctl_darwin.go); nil
// answers unsupported.
var (
	// peerPID reads SO_PEERCRED (unix(7)) of this process's socket fd: the
	// pid of the process that called socketpair or connect, 0 when it is
	// outside this PID namespace. A closed fd fails with EBADF (not_found),
	// not a socket with ENOTSOCK (io).
	peerPID func(fd int) (int, error)
	// sysctlRaw reads sysctl name.<pid> raw (macOS).
	sysctlRaw func(name string, args ...int) ([]byte, error)
)

// sysctl answers "sysctl" (the raw struct kinfo_proc of sysctl
// kern.proc.pid.<pid>) and "procargs" (raw kern.procargs2.<pid>) on macOS,
// which the plugin decodes. An empty answer is not_found; EINVAL, the
// kernel's answer to procargs for another user's process, permission.
func sysctl(op string, pid int) result {
	name := map[string]string{hostfuncs.OpSysctl: "kern.proc.pid", hostfuncs.OpProcargs: "kern.procargs2"}[op]
	if sysctlRaw == nil {
		return unsupported("sysctl " + name + " exists on macOS only")
	}
	b, err := sysctlRaw(name, pid)
	switch {
	case op == hostfuncs.OpProcargs && errors.Is(err, syscall.EINVAL):
		return failed(&hostfuncs.Error{Code: hostfuncs.CodePermission, Message: "sysctl " + name + ": " + err.Error()})
	case err != nil:
		return failed(osError("sysctl "+name, err))
	case len(b) == 0:
		return failed(&hostfuncs.Error{Code: hostfuncs.CodeNotFound, Message: "sysctl " + name + ": no such process"})
	}
	return result{"data": b}
}
