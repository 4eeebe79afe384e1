package resume_test

import (
	"encoding/json"
	"errors"
	"fmt"
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
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// testHost is a small host for the store's native tests: the file
// functions act on a real temporary state directory; facts and the process
// inspection answer from fixtures (hostfuncs/conformance/README.md allows
// pinned answers for the policy; the Go host's real primitives are tested in
// host/internal/primitives, and the real plugin.wasm in the conformance suites).
type testHost struct {
	t     *testing.T
	facts hostfuncs.Facts
	// proc answers mcp_resume_inspect: "read <path>" (boot_id, timens,
	// stat, cmdline), "readlink <path>" (self, pid_ns, fd_link) with the
	// /proc path a host reads for the typed operation, "kill0 <pid>",
	// "fstat <fd>", "fds <pid>"... An operation without an
	// entry gets not_found (fstat: "char"; peer, sysctl, procargs, ps:
	// unsupported), as in the conformance runner.
	proc map[string]hostfuncs.InspectResult
	// broken names host functions whose response is not JSON.
	broken map[string]bool
	// locks are the lock names held, shared between the hosts of one test
	// (standing in for other processes).
	locks map[string]*testHost

	// dirErr answers mcp_resume_prepare_dir "<op> <path>" with this error
	// code (an injected ENOSPC, EROFS, EACCES...).
	dirErr map[string]string
	// owner overrides the uid that "stat" reports for a path (another
	// user's directory, which a test cannot chown without root).
	owner  map[string]int
	mkdirs []string // directories made by "mkdir", in order
	temps  []string // the temp names of every write request, in order
	cfgDir string   // a state directory a test case sets instead of the default

	dir   string         // fixed by a successful open (the confinement rule)
	calls map[string]int // host function -> calls
	reqs  []string       // every request, "fn json"
	logs  []hostfuncs.LogRequest
}

// The default system of the conformance cases: the server is pid 100, its
// parent the MCP host pid 4242 ("claude"), started 98765 ticks after boot.
const (
	bootID     = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\n"
	hostStart  = "98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x1234567"
	tokenFile  = "token-4242-" + hostStart
	lockFile   = "lock-4242-" + hostStart
	serverStat = "100 (server) S 4242 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5555 0 0\n"
	hostStat   = "4242 (claude) S 50 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 98765 0 0\n"
)

func data(s string) hostfuncs.InspectResult { return hostfuncs.InspectResult{Data: []byte(s)} }
func link(s string) hostfuncs.InspectResult { return hostfuncs.InspectResult{Target: s} }
func fail(code string) hostfuncs.InspectResult {
	return hostfuncs.InspectResult{Error: &hostfuncs.Error{Code: code, Message: code + " (fixture)"}}
}

// newHost returns a host with the default system and the state directory
// path (not created) of app "conformance" under the state root
// <tmp>/state (openInput passes that root).
func newHost(t *testing.T) (*testHost, string) {
	root := t.TempDir()
	h := &testHost{
		t:     t,
		facts: hostfuncs.Facts{OS: "linux", PID: 100, EUID: os.Geteuid(), Home: root, Args: []string{}, Env: map[string]string{}, Runtime: "test"},
		proc: map[string]hostfuncs.InspectResult{
			"readlink /proc/self":                  link("100"),
			"read /proc/sys/kernel/random/boot_id": data(bootID),
			"readlink /proc/self/ns/pid":           link("pid:[4026531836]"),
			"read /proc/100/stat":                  data(serverStat),
			"read /proc/100/cmdline":               data("server\x00"),
			"read /proc/4242/stat":                 data(hostStat),
			"read /proc/4242/cmdline":              data("claude\x00"),
			// stdio is the terminal /dev/pts/3, which the host holds.
			"readlink /proc/self/fd/0": link("/dev/pts/3"),
			"readlink /proc/self/fd/1": link("/dev/pts/3"),
			"fds self":                 {FDs: []hostfuncs.FD{{FD: 0, Target: "/dev/pts/3", Flags: 0o2}, {FD: 1, Target: "/dev/pts/3", Flags: 0o2}}},
			"fds 4242":                 {FDs: []hostfuncs.FD{{FD: 0, Target: "/dev/pts/3", Flags: 0o2}}},
		},
		broken: map[string]bool{},
		locks:  map[string]*testHost{},
		calls:  map[string]int{},
	}
	return h, filepath.Join(root, "state", "conformance")
}

// sibling returns another host (another server process) on the same
// system, sharing the fixtures and the locks.
func (h *testHost) sibling() *testHost {
	return &testHost{t: h.t, facts: h.facts, proc: h.proc, broken: map[string]bool{}, locks: h.locks, calls: map[string]int{}}
}

// open returns a store over h, opened with input.
func (h *testHost) open(input string) *resume.Store {
	h.t.Helper()
	s := resume.New(h.call)
	out, werr := s.Open([]byte(input))
	if werr != nil {
		h.t.Fatalf("Open(%s): %v", input, werr)
	}
	// A host takes open's state_dir as the store's state directory.
	h.dir = out.StateDir
	return s
}

// events returns the events logged at info level and above.
func (h *testHost) events() []string {
	var out []string
	for _, l := range h.logs {
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

// call implements resume.Caller.
func (h *testHost) call(fn string, req []byte) []byte {
	h.calls[fn]++
	h.reqs = append(h.reqs, fn+" "+strings.TrimSpace(string(req)))
	if len(req)%8 != 0 {
		h.t.Errorf("%s request of %d bytes is not padded to 8", fn, len(req))
	}
	if h.broken[fn] {
		return []byte("\x00not json")
	}
	switch fn {
	case hostfuncs.FnFacts:
		return respond(h.facts)
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
		if code, ok := h.dirErr[r.Op+" "+r.Path]; ok {
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
			if uid, ok := h.owner[r.Path]; ok {
				st.UID = uid
			}
			return respond(st)
		case hostfuncs.DirOpMkdir:
			if h.dir == "" || r.Path != h.dir && !strings.HasPrefix(h.dir, r.Path+"/") {
				return errResp(hostfuncs.CodeInvalidRequest, "mkdir outside the open state directory's path")
			}
			if err := os.Mkdir(r.Path, 0o700); err != nil {
				if errors.Is(err, fs.ErrExist) {
					return errResp(hostfuncs.CodeExists, err.Error())
				}
				return osErr(err)
			}
			h.mkdirs = append(h.mkdirs, r.Path)
			return respond(hostfuncs.Empty{})
		}
		return errResp(hostfuncs.CodeInvalidRequest, "unknown prepare_dir op")
	case hostfuncs.FnLog:
		var r hostfuncs.LogRequest
		if json.Unmarshal(req, &r) != nil || r.Level == "" || r.Event == "" || r.Message == "" {
			h.t.Errorf("bad log request %s", req)
		}
		h.logs = append(h.logs, r)
		return respond(hostfuncs.Empty{})
	}
	// File functions: confined to the directory open answered.
	var r struct {
		Name  string `json:"name"`
		Temp  string `json:"temp"`
		Limit int    `json:"limit"`
		Data  []byte `json:"data"`
	}
	if err := json.Unmarshal(req, &r); err != nil || h.dir == "" {
		return errResp(hostfuncs.CodeInvalidRequest, "bad request or no state directory")
	}
	p := filepath.Join(h.dir, r.Name)
	if fn != hostfuncs.FnList && !hostfuncs.ValidName(r.Name) || fn == hostfuncs.FnWrite && !hostfuncs.ValidName(r.Temp) {
		return errResp(hostfuncs.CodeInvalidRequest, "bad name")
	}
	if fn == hostfuncs.FnWrite {
		h.temps = append(h.temps, r.Temp)
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
		b := make([]byte, r.Limit)
		n, _ := f.Read(b)
		return respond(hostfuncs.ReadResponse{Data: b[:n]})
	case hostfuncs.FnWrite:
		tmp := filepath.Join(h.dir, r.Temp)
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
		entries, err := os.ReadDir(h.dir)
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
		if holder, ok := h.locks[r.Name]; ok && holder != h {
			return errResp(hostfuncs.CodeBusy, r.Name+" is held by another server instance")
		}
		f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return osErr(err)
		}
		f.Close()
		h.locks[r.Name] = h
		return respond(hostfuncs.Empty{})
	}
	return errResp(hostfuncs.CodeInvalidRequest, "unknown host function "+fn)
}

// release drops h's locks, as a process exit does.
func (h *testHost) release() {
	for n, holder := range h.locks {
		if holder == h {
			delete(h.locks, n)
		}
	}
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

// inspect answers one operation from h.proc.
func (h *testHost) inspect(op map[string]any) hostfuncs.InspectResult {
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
	case hostfuncs.OpFDLink:
		fd, ok := op["fd"].(float64)
		if !ok || pid == "" {
			return fail(hostfuncs.CodeInvalidRequest)
		}
		key = "readlink /proc/" + pid + "/fd/" + strconv.Itoa(int(fd))
	case hostfuncs.OpFstat, hostfuncs.OpPeer:
		fd, ok := op["fd"].(float64)
		if !ok {
			return fail(hostfuncs.CodeInvalidRequest)
		}
		key += " " + strconv.Itoa(int(fd))
	default:
		key += " " + fmt.Sprint(op["pid"])
	}
	if r, ok := h.proc[key]; ok {
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
		return fail(hostfuncs.CodeUnsupported)
	}
	return fail(hostfuncs.CodeNotFound)
}
