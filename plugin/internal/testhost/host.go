// Package testhost is the small host that the plugin's native tests run
// their stores against (plugin/internal/resume, plugin/internal/handles):
// the file functions act on a real temporary state directory, locks are
// real flock(2) locks (so two Hosts, or two goroutines, exclude each other
// as two processes would), and facts and process inspection answer from
// fixtures (hostfuncs/conformance/README.md allows pinned answers for the
// policy; the Go host's real primitives are tested in
// host/internal/primitives, and the real plugin.wasm in the conformance
// suites). Test code only: nothing outside tests imports it.
package testhost

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/cryptohost"
)

// Host is one host (one server process) for a store's native tests.
type Host struct {
	T     *testing.T
	Facts hostfuncs.Facts
	// Proc answers mcp_resume_inspect: "read <path>" (boot_id, timens,
	// stat, cmdline, environ, net), "readlink <path>" (self, pid_ns, ns,
	// fd_link) with the
	// /proc path a host reads for the typed operation (a /proc/self/ path
	// without an entry of its own reaches that of the pid "readlink
	// /proc/self" names, as on Linux), "kill0 <pid>",
	// "fstat <fd>", "fds <pid>"... An operation without an
	// entry gets not_found (fstat: "char"; peer, sysctl, procargs, ps:
	// unsupported), as in the conformance runner.
	Proc map[string]hostfuncs.InspectResult
	// Broken names host functions whose response is not JSON.
	Broken map[string]bool
	// locks are the lock files this host holds, flock'd (mcp_resume_lock);
	// another Host's lock of the same file is busy, as another process's is.
	locks map[string]*os.File

	// DirErr answers mcp_resume_prepare_dir "<op> <path>" with this error
	// code (an injected ENOSPC, EROFS, EACCES...).
	DirErr map[string]string
	// Owner overrides the uid that "stat" reports for a path (another
	// user's directory, which a test cannot chown without root).
	Owner  map[string]int
	Mkdirs []string // directories made by "mkdir", in order
	Temps  []string // the temp names of every write request, in order
	CfgDir string   // a state directory a test case sets instead of the default

	// Kept holds the responses CallKept left "in the host's memory", by
	// block number (keptLast counts them from 1); Free and Output take
	// them out.
	Kept     map[uint64][]byte
	keptLast uint64

	Dir   string         // fixed by a successful open (the confinement rule)
	Calls map[string]int // host function -> calls
	Reqs  []string       // every request, "fn json"
	Logs  []hostfuncs.LogRequest
	// Eval answers mcp_resume_eval (the Redis backend's tests set it to the
	// Go host's real client, hostfuncs/redishost); nil answers unsupported.
	Eval func(hostfuncs.EvalRequest) hostfuncs.EvalResponse
}

// The default system of the conformance cases: the server is pid 100, its
// parent the MCP host pid 4242 ("claude"), started 98765 ticks after boot.
const (
	BootID     = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n"
	ServerStat = "100 (server) S 4242 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5555 0 0\n"
	HostStat   = "4242 (claude) S 50 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 98765 0 0\n"
)

// Data is a fixture answer with file contents s.
func Data(s string) hostfuncs.InspectResult { return hostfuncs.InspectResult{Data: []byte(s)} }

// Link is a fixture answer with link target s.
func Link(s string) hostfuncs.InspectResult { return hostfuncs.InspectResult{Target: s} }

// Fail is a fixture answer failing with code.
func Fail(code string) hostfuncs.InspectResult {
	return hostfuncs.InspectResult{Error: &hostfuncs.Error{Code: code, Message: code + " (fixture)"}}
}

// New returns a host with the default system of the conformance cases,
// its home a fresh temporary directory (the state root tests pass is
// usually <home>/state).
func New(t *testing.T) *Host {
	root := t.TempDir()
	h := &Host{
		T:     t,
		Facts: hostfuncs.Facts{OS: "linux", PID: 100, EUID: os.Geteuid(), Home: root, Args: []string{}, Env: map[string]string{}, Runtime: "test"},
		Proc: map[string]hostfuncs.InspectResult{
			"readlink /proc/self":                  Link("100"),
			"read /proc/sys/kernel/random/boot_id": Data(BootID),
			"readlink /proc/self/ns/pid":           Link("pid:[4026531836]"),
			"read /proc/100/stat":                  Data(ServerStat),
			"read /proc/100/cmdline":               Data("server\x00"),
			"read /proc/4242/stat":                 Data(HostStat),
			"read /proc/4242/cmdline":              Data("claude\x00"),
			// The server's environment at exec (the instance key's).
			"read /proc/100/environ": Data(ServerEnviron),
			// stdio is the terminal /dev/pts/3, which the host holds.
			"readlink /proc/self/fd/0": Link("/dev/pts/3"),
			"readlink /proc/self/fd/1": Link("/dev/pts/3"),
			"fds self":                 {FDs: []hostfuncs.FD{{FD: 0, Target: "/dev/pts/3", Flags: 0o2}, {FD: 1, Target: "/dev/pts/3", Flags: 0o2}}},
			"fds 4242":                 {FDs: []hostfuncs.FD{{FD: 0, Target: "/dev/pts/3", Flags: 0o2}}},
		},
		Broken: map[string]bool{},
		locks:  map[string]*os.File{},
		Calls:  map[string]int{},
	}
	// Server and host share the namespaces of the first process (the
	// values of a typical Linux system).
	for pid, set := range map[string]map[string]string{"100": Namespaces, "4242": Namespaces} {
		for ns, target := range set {
			h.Proc["readlink /proc/"+pid+"/ns/"+ns] = Link(target)
		}
	}
	return h
}

// ServerEnviron is the default server's /proc/100/environ.
const ServerEnviron = "HOME=/home/u\x00PATH=/usr/bin:/bin\x00"

// Namespaces are the namespace link targets every process of the default
// system has (readlink /proc/<pid>/ns/<ns>; resume.KeyNamespaces).
var Namespaces = map[string]string{
	"net": "net:[4026531840]", "mnt": "mnt:[4026531841]", "uts": "uts:[4026531838]",
	"ipc": "ipc:[4026531839]", "user": "user:[4026531837]", "cgroup": "cgroup:[4026531835]",
}

// SetNS sets the namespace ns of process pid ("100", "4242"...) to target.
func (h *Host) SetNS(pid, ns, target string) {
	h.Proc["readlink /proc/"+pid+"/ns/"+ns] = Link(target)
}

// Sibling returns another host (another server process) on the same
// system, sharing the fixtures; its locks are its own.
func (h *Host) Sibling() *Host {
	return &Host{T: h.T, Facts: h.Facts, Proc: h.Proc, Broken: map[string]bool{}, locks: map[string]*os.File{}, Calls: map[string]int{}}
}

// Events returns the events logged at info level and above.
func (h *Host) Events() []string {
	var out []string
	for _, l := range h.Logs {
		if l.Level != hostfuncs.LevelDebug {
			out = append(out, l.Event)
		}
	}
	return out
}

func respond(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func errResp(code, msg string) []byte {
	return respond(hostfuncs.Empty{Error: &hostfuncs.Error{Code: code, Message: msg}})
}

// Call implements resume.Caller (and is the Caller of every store).
func (h *Host) Call(fn string, req []byte) []byte {
	h.Calls[fn]++
	h.Reqs = append(h.Reqs, fn+" "+strings.TrimSpace(string(req)))
	binary := fn == hostfuncs.FnCrypto || fn == hostfuncs.FnEval && len(req) > 0 && req[0] == hostfuncs.EvalBinaryForm
	if len(req)%8 != 0 && !binary {
		h.T.Errorf("%s request of %d bytes is not padded to 8", fn, len(req))
	}
	if h.Broken[fn] {
		return []byte("\x00not json")
	}
	switch fn {
	case hostfuncs.FnFacts:
		return respond(h.Facts)
	case hostfuncs.FnEval:
		var r hostfuncs.EvalRequest
		if binary {
			var werr *hostfuncs.Error
			if r, werr = hostfuncs.DecodeEvalBinary(req); werr != nil {
				return errResp(werr.Code, werr.Message)
			}
		} else if err := json.Unmarshal(req, &r); err != nil {
			return errResp(hostfuncs.CodeInvalidRequest, "bad eval request")
		}
		if h.Eval == nil {
			return errResp(hostfuncs.CodeUnsupported, "this test host has no Redis")
		}
		resp := h.Eval(r)
		if binary && resp.Error == nil {
			return hostfuncs.EncodeEvalReply(resp.Reply)
		}
		return respond(resp)
	case hostfuncs.FnInspect:
		var r struct {
			Ops []map[string]any `json:"ops"`
		}
		if err := json.Unmarshal(req, &r); err != nil || len(r.Ops) == 0 || len(r.Ops) > hostfuncs.MaxInspectOps {
			return errResp(hostfuncs.CodeInvalidRequest, "bad inspect request")
		}
		var out hostfuncs.InspectResponse
		for _, op := range r.Ops {
			out.Results = append(out.Results, h.inspect(op))
		}
		return respond(out)
	case hostfuncs.FnPrepareDir:
		var r hostfuncs.PrepareDirRequest
		if json.Unmarshal(req, &r) != nil || !filepath.IsAbs(r.Path) || filepath.Clean(r.Path) != r.Path {
			return errResp(hostfuncs.CodeInvalidRequest, "bad prepare_dir request")
		}
		if code, ok := h.DirErr[r.Op+" "+r.Path]; ok {
			return errResp(code, code+" (fixture)")
		}
		switch r.Op {
		case hostfuncs.DirOpStat:
			stat := os.Lstat
			if r.Follow {
				stat = os.Stat
			}
			info, err := stat(r.Path)
			if err != nil {
				return osErr(err)
			}
			st := hostfuncs.DirStat{Type: hostfuncs.StatOther, UID: int(info.Sys().(*syscall.Stat_t).Uid), Mode: int(info.Sys().(*syscall.Stat_t).Mode & 0o7777)}
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				st.Type = hostfuncs.StatSymlink
			case info.IsDir():
				st.Type = hostfuncs.StatDir
			case info.Mode().IsRegular():
				st.Type = hostfuncs.StatFile
			}
			if uid, ok := h.Owner[r.Path]; ok {
				st.UID = uid
			}
			return respond(st)
		case hostfuncs.DirOpMkdir:
			if h.Dir == "" || r.Path != h.Dir && !strings.HasPrefix(h.Dir, r.Path+"/") {
				return errResp(hostfuncs.CodeInvalidRequest, "mkdir outside the open state directory's path")
			}
			if err := os.Mkdir(r.Path, 0o700); err != nil {
				if errors.Is(err, fs.ErrExist) {
					return errResp(hostfuncs.CodeExists, err.Error())
				}
				return osErr(err)
			}
			h.Mkdirs = append(h.Mkdirs, r.Path)
			return respond(hostfuncs.Empty{})
		}
		return errResp(hostfuncs.CodeInvalidRequest, "unknown prepare_dir op")
	case hostfuncs.FnLog:
		var r hostfuncs.LogRequest
		if json.Unmarshal(req, &r) != nil || r.Level == "" || r.Event == "" || r.Message == "" {
			h.T.Errorf("bad log request %s", req)
		}
		h.Logs = append(h.Logs, r)
		return respond(hostfuncs.Empty{})
	}
	if fn == hostfuncs.FnCrypto {
		return cryptohost.Serve(req, h)
	}
	return h.fileCall(fn, req)
}

// ReadFile implements cryptohost.Files with this host's mcp_resume_read.
func (h *Host) ReadFile(name string, limit int) ([]byte, *hostfuncs.Error) {
	req, _ := json.Marshal(map[string]any{"name": name, "limit": limit})
	var out hostfuncs.ReadResponse
	if err := json.Unmarshal(h.fileCall(hostfuncs.FnRead, req), &out); err != nil {
		return nil, &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: err.Error()}
	}
	return out.Data, out.Error
}

// WriteFile implements cryptohost.Files with this host's mcp_resume_write.
func (h *Host) WriteFile(name, temp string, data []byte) *hostfuncs.Error {
	req, _ := json.Marshal(map[string]any{"name": name, "temp": temp, "data": data})
	var out hostfuncs.Empty
	if err := json.Unmarshal(h.fileCall(hostfuncs.FnWrite, req), &out); err != nil {
		return &hostfuncs.Error{Code: hostfuncs.CodeIO, Message: err.Error()}
	}
	return out.Error
}

// fileCall serves the file functions, confined to the directory open
// answered.
func (h *Host) fileCall(fn string, req []byte) []byte {
	var r struct {
		Name   string `json:"name"`
		Temp   string `json:"temp"`
		Limit  int    `json:"limit"`
		Data   []byte `json:"data"`
		WaitMS int    `json:"wait_ms"`
	}
	if err := json.Unmarshal(req, &r); err != nil || h.Dir == "" {
		return errResp(hostfuncs.CodeInvalidRequest, "bad request or no state directory")
	}
	p := filepath.Join(h.Dir, r.Name)
	if fn != hostfuncs.FnList && !hostfuncs.ValidName(r.Name) || fn == hostfuncs.FnWrite && !hostfuncs.ValidName(r.Temp) {
		return errResp(hostfuncs.CodeInvalidRequest, "bad name")
	}
	if fn == hostfuncs.FnWrite {
		h.Temps = append(h.Temps, r.Temp)
	}
	switch fn {
	case hostfuncs.FnRead:
		f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return osErr(err)
		}
		defer f.Close()
		if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
			return errResp(hostfuncs.CodeUnsafe, "not a regular file")
		}
		b, err := io.ReadAll(io.LimitReader(f, int64(r.Limit)))
		if err != nil {
			return osErr(err)
		}
		return respond(hostfuncs.ReadResponse{Data: b})
	case hostfuncs.FnWrite:
		tmp := filepath.Join(h.Dir, r.Temp)
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return osErr(err)
		}
		_, err = f.Write(r.Data)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, p)
		}
		if err != nil {
			_ = os.Remove(tmp)
			return osErr(err)
		}
		return respond(hostfuncs.Empty{})
	case hostfuncs.FnRemove:
		if err := syscall.Unlink(p); err != nil {
			return osErr(err)
		}
		return respond(hostfuncs.Empty{})
	case hostfuncs.FnList:
		entries, err := os.ReadDir(h.Dir)
		if err != nil {
			return osErr(err)
		}
		// Every entry, in reverse order: the plugin filters and sorts.
		out := hostfuncs.ListResponse{Files: []hostfuncs.ListEntry{}}
		for _, e := range slices.Backward(entries) {
			info, err := e.Info()
			if err != nil {
				continue
			}
			typ := hostfuncs.StatOther
			switch {
			case info.Mode().IsRegular():
				typ = hostfuncs.StatFile
			case info.IsDir():
				typ = hostfuncs.StatDir
			case info.Mode()&fs.ModeSymlink != 0:
				typ = hostfuncs.StatSymlink
			}
			out.Files = append(out.Files, hostfuncs.ListEntry{Name: e.Name(), Type: typ, AgeSeconds: int64(math.Floor(time.Since(info.ModTime()).Seconds()))})
		}
		return respond(out)
	case hostfuncs.FnLock:
		return h.lock(p, r.Name, r.WaitMS)
	case hostfuncs.FnUnlock:
		if f, ok := h.locks[r.Name]; ok {
			f.Close()
			delete(h.locks, r.Name)
		}
		return respond(hostfuncs.Empty{})
	}
	return errResp(hostfuncs.CodeInvalidRequest, "unknown host function "+fn)
}

// Release drops h's locks, as a process exit does.
func (h *Host) Release() {
	for n, f := range h.locks {
		f.Close()
		delete(h.locks, n)
	}
}

// lock takes the flock of lock file p (name) for h, retrying for waitMS
// milliseconds as the hosts do (0.2 ms doubling to 5 ms between tries).
// Taking a lock h holds already is a success.
func (h *Host) lock(p, name string, waitMS int) []byte {
	if _, ok := h.locks[name]; ok {
		return respond(hostfuncs.Empty{})
	}
	f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return osErr(err)
	}
	deadline, sleep := time.Now().Add(time.Duration(waitMS)*time.Millisecond), 200*time.Microsecond
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EWOULDBLOCK || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, 5*time.Millisecond)
	}
	if err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return errResp(hostfuncs.CodeBusy, name+" is held by another server instance")
		}
		return osErr(err)
	}
	h.locks[name] = f
	return respond(hostfuncs.Empty{})
}

func osErr(err error) []byte {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errResp(hostfuncs.CodeNotFound, err.Error())
	case errors.Is(err, syscall.ELOOP):
		return errResp(hostfuncs.CodeUnsafe, err.Error())
	case errors.Is(err, syscall.ENOTDIR):
		return errResp(hostfuncs.CodeNotDir, err.Error())
	}
	return errResp(hostfuncs.CodeIO, err.Error())
}

// inspect answers one operation from h.Proc.
func (h *Host) inspect(op map[string]any) hostfuncs.InspectResult {
	name, _ := op["op"].(string)
	key := name
	pid, _ := op["pid"].(string)
	switch name {
	case hostfuncs.OpBootID:
		key = "read /proc/sys/kernel/random/boot_id"
	case hostfuncs.OpTimens:
		key = "read /proc/self/timens_offsets"
	case hostfuncs.OpSelf:
		key = "readlink /proc/self"
	case hostfuncs.OpStat, hostfuncs.OpCmdline:
		key = "read /proc/" + pid + "/" + name
	case hostfuncs.OpPidNS:
		key = "readlink /proc/" + pid + "/ns/pid"
	case hostfuncs.OpEnviron:
		key = "read /proc/" + pid + "/environ"
	case hostfuncs.OpNS:
		ns, _ := op["ns"].(string)
		key = "readlink /proc/" + pid + "/ns/" + ns
	case hostfuncs.OpNet:
		table, _ := op["table"].(string)
		key = "read /proc/" + pid + "/net/" + table
	case hostfuncs.OpFDLink:
		fd, ok := op["fd"].(float64)
		if !ok || pid == "" {
			return Fail(hostfuncs.CodeInvalidRequest)
		}
		key = "readlink /proc/" + pid + "/fd/" + strconv.Itoa(int(fd))
	case hostfuncs.OpFstat, hostfuncs.OpPeer:
		fd, ok := op["fd"].(float64)
		if !ok {
			return Fail(hostfuncs.CodeInvalidRequest)
		}
		key += " " + strconv.Itoa(int(fd))
	default:
		key += " " + fmt.Sprint(op["pid"])
	}
	r, ok := h.Proc[key]
	if !ok && pid == hostfuncs.PIDSelf && strings.Contains(key, "/proc/self/") {
		// As on Linux: /proc/self is a link to the process's own pid.
		if self, found := h.Proc["readlink /proc/self"]; found && self.Target != "" {
			r, ok = h.Proc[strings.Replace(key, "/proc/self/", "/proc/"+self.Target+"/", 1)]
		}
	}
	if ok {
		if r.FDs != nil && op["targets"] != nil {
			var targets []string
			for _, t := range op["targets"].([]any) {
				targets = append(targets, t.(string))
			}
			var fds []hostfuncs.FD
			for _, fd := range r.FDs {
				if slices.Contains(targets, fd.Target) {
					fds = append(fds, fd)
				}
			}
			r.FDs = fds
		}
		return r
	}
	switch name {
	case hostfuncs.OpFstat:
		return hostfuncs.InspectResult{Type: hostfuncs.FileTypeChar}
	case hostfuncs.OpExe:
		return hostfuncs.InspectResult{Dev: "2049", Ino: "1234567"}
	case hostfuncs.OpPeer, hostfuncs.OpSysctl, hostfuncs.OpProcargs, hostfuncs.OpPs:
		return Fail(hostfuncs.CodeUnsupported)
	}
	return Fail(hostfuncs.CodeNotFound)
}

// CallKept implements the handle store's kept calls (handles.Store.Keep)
// as the guest's glue does over Extism memory: Call, the response kept
// under a new block number, its first n bytes returned.
func (h *Host) CallKept(fn string, req []byte, n int) ([]byte, uint64) {
	resp := h.Call(fn, req)
	if h.Kept == nil {
		h.Kept = map[uint64][]byte{}
	}
	h.keptLast++
	h.Kept[h.keptLast] = resp
	return bytes.Clone(resp[:min(n, len(resp))]), h.keptLast
}

// Free releases a kept block (0: none).
func (h *Host) Free(block uint64) { delete(h.Kept, block) }

// Output is what the guest outputs for a kept block: head written over its
// start, the block whole; the block is released.
func (h *Host) Output(block uint64, head []byte) []byte {
	b := h.Kept[block]
	delete(h.Kept, block)
	copy(b, head)
	return b
}
