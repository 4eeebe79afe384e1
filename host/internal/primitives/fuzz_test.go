//go:build linux

package primitives_test

// FuzzCall feeds arbitrary requests to every host function over a state
// directory full of traps (symlinks out of it, a FIFO, a directory), and
// checks that no call panics, every response is JSON with no error or an
// error code of the contract (hostfuncs/README.md, "Error codes"), and
// nothing outside the state directory is read, written or created (inotify
// watches the parent directory and an outside directory).
//
//	go test -run '^$' -fuzz '^FuzzCall$' -fuzztime 10s ./host/internal/primitives/

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// contractCodes reads the error codes from the table under "### Error codes"
// in README.md, the contract every host implements.
func contractCodes(tb testing.TB) map[string]bool {
	tb.Helper()
	f, err := os.Open("../../../hostfuncs/README.md")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	codes := map[string]bool{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "### Error codes"):
			in = true
		case in && strings.HasPrefix(line, "#"):
			in = false
		case in && strings.HasPrefix(line, "| `"):
			code, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
			codes[code] = true
		}
	}
	if len(codes) < 5 {
		tb.Fatalf("README.md error code table: found %v", codes)
	}
	return codes
}

// trap is a state directory with things a careless host would follow,
// inside root, next to a sentinel file and an outside directory that must
// never be touched.
type trap struct {
	root, state, sentinel, outside string
	watches                        map[int32]int // inotify watch descriptor -> 0 (root) or 1 (outside)
}

// inotifyFD is one inotify instance per test process: closing an instance
// costs milliseconds (the kernel waits for an RCU grace period), adding and
// removing watches microseconds.
var inotifyFD = sync.OnceValues(func() (int, error) {
	return syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
})

func newTrap(t *testing.T) *trap {
	t.Helper()
	// On a tmpfs when there is one: deleting files on a disk mounted with
	// "discard" costs milliseconds, which would slow fuzzing tenfold.
	root, err := os.MkdirTemp("/dev/shm", "mcp-resume-fuzz-")
	if err != nil {
		root = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(root) })
	}
	tr := &trap{root: root, state: filepath.Join(root, "state"), sentinel: filepath.Join(root, "sentinel"), outside: filepath.Join(root, "outside")}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(tr.state, 0o700))
	must(os.Mkdir(tr.outside, 0o700))
	must(os.WriteFile(tr.sentinel, []byte("sentinel"), 0o600))
	must(os.WriteFile(filepath.Join(tr.outside, "f"), []byte("outside"), 0o600))
	for name, target := range map[string]string{
		"token-5-1.a":                       "../sentinel", // this identity's token file
		"lock-5-1.a":                        "../sentinel", // and its lock file
		"dirlink":                           "../outside",
		"ghostlink":                         "../ghost", // dangling: following it with O_CREAT would create ../ghost
		".token-5-1.a.0000000000000000.tmp": "../sentinel",
	} {
		must(os.Symlink(target, filepath.Join(tr.state, name)))
	}
	must(syscall.Mkfifo(filepath.Join(tr.state, "fifo"), 0o600))
	must(os.Mkdir(filepath.Join(tr.state, "subdir"), 0o700))
	must(os.WriteFile(filepath.Join(tr.state, "subdir", "x"), []byte("x"), 0o600))
	must(os.WriteFile(filepath.Join(tr.state, "token-5-2.b"), []byte("another-hosts-token"), 0o600))
	fd, err := inotifyFD()
	must(err)
	tr.drain(false) // events of an earlier trap
	tr.watches = map[int32]int{}
	for i, dir := range []string{root, tr.outside} {
		wd, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_ALL_EVENTS)
		must(err)
		tr.watches[int32(wd)] = i
		t.Cleanup(func() { syscall.InotifyRmWatch(fd, uint32(wd)) })
	}
	return tr
}

// check fails if anything outside the state directory was touched.
func (tr *trap) check(t *testing.T) {
	t.Helper()
	for _, p := range tr.problems() {
		t.Error(p)
	}
}

// problems lists what was touched outside the state directory: an inotify
// event on any entry of root but "state" (the directory itself may be
// listed), any event in the outside directory, or changed contents.
func (tr *trap) problems() []string {
	out := tr.drain(true)
	defer tr.drain(false) // the reads below are ours
	if b, err := os.ReadFile(tr.sentinel); err != nil || string(b) != "sentinel" {
		out = append(out, fmt.Sprintf("sentinel: %q, %v", b, err))
	}
	entries, _ := os.ReadDir(tr.root)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if strings.Join(names, " ") != "outside sentinel state" {
		out = append(out, fmt.Sprintf("entries next to the state directory: %v", names))
	}
	if fi, err := os.Lstat(tr.state); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		out = append(out, fmt.Sprintf("state directory: %v, %v", fi, err))
	}
	return out
}

// drain reads the pending inotify events and, when report, describes those
// on the trap's watches that touch something outside the state directory.
func (tr *trap) drain(report bool) []string {
	fd, err := inotifyFD()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if n <= 0 || err != nil {
			return out
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := string(bytes.TrimRight(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+int(ev.Len)], "\x00"))
			off += syscall.SizeofInotifyEvent + int(ev.Len)
			i, ours := tr.watches[ev.Wd]
			if !report || !ours || ev.Mask&syscall.IN_IGNORED != 0 || (i == 0 && name == "state") {
				continue
			}
			out = append(out, fmt.Sprintf("touched outside the state directory: inotify mask %#x on %q (watch %d)", ev.Mask, name, i))
		}
	}
}

// TestTrap_DetectsEscapes checks the fuzz oracle: each way out of the state
// directory is reported, and work inside it is not.
func TestTrap_DetectsEscapes(t *testing.T) {
	for _, c := range []struct {
		name   string
		act    func(tr *trap)
		escape bool
	}{
		{"read through a symlink", func(tr *trap) { os.ReadFile(filepath.Join(tr.state, "token-5-1.a")) }, true},
		{"create through a dangling symlink", func(tr *trap) { os.WriteFile(filepath.Join(tr.state, "ghostlink"), []byte("x"), 0o600) }, true},
		{"list through a directory symlink", func(tr *trap) { os.ReadDir(filepath.Join(tr.state, "dirlink")) }, true},
		{"stat through a symlink", func(tr *trap) { os.Chmod(filepath.Join(tr.state, "token-5-1.a"), 0o644) }, true},
		{"work inside", func(tr *trap) {
			os.WriteFile(filepath.Join(tr.state, "ok"), []byte("x"), 0o600)
			os.ReadDir(tr.state)
			os.Remove(filepath.Join(tr.state, "token-5-1.a"))
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTrap(t)
			c.act(tr)
			if got := tr.problems(); (len(got) > 0) != c.escape {
				t.Errorf("problems = %q, want escape=%v", got, c.escape)
			}
		})
	}
}

// checkResponse fails unless out is one JSON object whose "error", if any,
// has a contract code and a message.
func checkResponse(t *testing.T, fn string, out []byte, codes map[string]bool) {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(out, &obj); err != nil || obj == nil {
		t.Fatalf("%s: response %q is not a JSON object: %v", fn, out, err)
	}
	raw, ok := obj["error"]
	if !ok || string(raw) == "null" {
		return
	}
	var e hostfuncs.Error
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatalf("%s: error %s is not {code, message}: %v", fn, raw, err)
	}
	if !codes[e.Code] || e.Message == "" {
		t.Fatalf("%s: error %+v: code not in the contract %v, or no message", fn, e, codes)
	}
}

func closeFuncs(f *primitives.Funcs) {
	if c, ok := any(f).(interface{ Close() error }); ok { // releases locks taken by mcp_resume_lock
		c.Close()
	}
}

// newFuncs returns Funcs whose state directory is dir, as open fixes it.
func newFuncs(t *testing.T, dir string) *primitives.Funcs {
	f := primitives.New(primitives.Config{
		Logger: slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if !f.SetStateDir(dir) {
		t.Fatalf("SetStateDir(%s) refused", dir)
	}
	return f
}

func FuzzCall(f *testing.F) {
	codes := contractCodes(f)
	fns := append(hostfuncs.Functions(), "no_such_function")
	index := func(fn string) uint8 {
		for i, n := range fns {
			if n == fn {
				return uint8(i)
			}
		}
		panic(fn)
	}
	names := []string{
		"/etc/passwd", "../sentinel", "..", ".", "", "a\x00b", "token-5-1.a", "lock-5-1.a", "dirlink",
		"ghostlink", "fifo", "subdir", "token-5-2.b", strings.Repeat("a", 255), strings.Repeat("a", 256),
		".token-5-1.a.0000000000000000.tmp", "a/b", "subdir/x", "dirlink/f", "tök", `..\..`, "token-5-1.a/",
		"\u202e", "%2e%2e", "con", "-", "token-5-1.a\n",
	}
	for _, name := range names {
		n, _ := json.Marshal(name)
		f.Add(index(hostfuncs.FnRead), []byte(fmt.Sprintf(`{"name":%s,"limit":4097}`, n)))
		f.Add(index(hostfuncs.FnWrite), []byte(fmt.Sprintf(`{"name":%s,"temp":".x.0000000000000001.tmp","data":"dG9r"}`, n)))
		f.Add(index(hostfuncs.FnWrite), []byte(fmt.Sprintf(`{"name":"token-5-9.a","temp":%s,"data":"dG9r"}`, n)))
		f.Add(index(hostfuncs.FnRemove), []byte(fmt.Sprintf(`{"name":%s}`, n)))
		f.Add(index(hostfuncs.FnLock), []byte(fmt.Sprintf(`{"name":%s}`, n)))
		f.Add(index(hostfuncs.FnLock), []byte(fmt.Sprintf(`{"name":%s,"socket":"mcp-resume-fuzz"}`, n)))
		f.Add(index(hostfuncs.FnPrepareDir), []byte(fmt.Sprintf(`{"op":"stat","path":%s}`, n)))
		f.Add(index(hostfuncs.FnPrepareDir), []byte(fmt.Sprintf(`{"op":"mkdir","path":%s}`, n)))
	}
	f.Add(index(hostfuncs.FnList), []byte(`{}`))
	// Inspect: every typed operation, with pids and fds that try to leave
	// the paths the host builds, and the ABI 4 path operations (gone).
	for _, pid := range []string{`"self"`, `"1"`, `"../1"`, `"1/root"`, `"self/root"`, `"-1"`, `"01"`, `"99999999999999999999"`, `1`} {
		for _, op := range []string{"stat", "cmdline", "pid_ns", "fds", "kill0", "exe"} {
			f.Add(index(hostfuncs.FnInspect), []byte(fmt.Sprintf(`{"ops":[{"op":%q,"pid":%s}]}`, op, pid)))
		}
		f.Add(index(hostfuncs.FnInspect), []byte(fmt.Sprintf(`{"ops":[{"op":"fd_link","pid":%s,"fd":0}]}`, pid)))
	}
	for _, op := range []string{
		`{"op":"self"}`, `{"op":"boot_id"}`, `{"op":"timens"}`, `{"op":"fd_link","pid":"self","fd":-1}`,
		`{"op":"read","path":"/etc/passwd"}`, `{"op":"readlink","path":"/proc/self/cwd"}`, `{"op":"stat","pid":"self","path":"/etc/passwd"}`,
		`{"op":"fds","pid":"self"}`, `{"op":"fds","pid":"self","targets":["pipe:[1]"]}`, `{"op":"fds","pid":"1"}`,
		`{"op":"fds","pid":"../self"}`, `{"op":"kill0","pid":"1"}`, `{"op":"kill0","pid":"0"}`, `{"op":"kill0","pid":"-1"}`,
		`{"op":"kill0","pid":"01"}`, `{"op":"kill0","pid":"4294967297"}`, `{"op":"kill0","pid":7}`, `{"op":"fstat","fd":0}`,
		`{"op":"fstat","fd":2}`, `{"op":"peer","fd":1}`, `{"op":"sysctl","pid":"1"}`, `{"op":"procargs","pid":"1"}`,
		`{"op":"ps","pid":"1"}`, `{"op":"nope"}`, `{}`, `null`, `7`,
	} {
		f.Add(index(hostfuncs.FnInspect), []byte(`{"ops":[`+op+`]}`))
	}
	f.Add(index(hostfuncs.FnFacts), []byte(`{}`))
	malformed := []string{
		"", "{", "null", "[]", `"x"`, "1", `{"name":1}`, `{"name":"x","limit":-1}`, `{"name":"x","limit":1e309}`,
		`{"name":"x","limit":8388609}`, `{"name":"token-9-1.a","limit":8388608}`, `{"name":"x","wait_ms":10001}`, `{"name":"x","wait_ms":3}`, `{"name":"x","data":"!!not base64"}`,
		`{"name":"x","temp":".x.tmp","data":null}`, `{"NAME":"../sentinel","temp":".x.tmp","data":"dG9r"}`,
		`{"name":"ok","name":"../sentinel","temp":".x.tmp","data":"dG9r"}`, `{"name":"ok","temp":"../sentinel","data":"dG9r"}`,
		`{"name":"ok","temp":"ok","data":"dG9r"}`, `{"name":"fifo","temp":"fifo","data":"dG9r"}`, `{"level":"x","message":"m"}`, `{"level":"error","event":"e","message":"m","detail":"\u0000"}`,
		`{"ops":[]}`, `{"ops":null}`, `{"op":"fix","path":"/tmp","sweep_seconds":-1}`, "\xff\xfe", `{"name":"\ud800"}`,
	}
	for _, m := range malformed {
		for _, fn := range fns {
			f.Add(index(fn), []byte(m))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, req []byte) {
		tr := newTrap(t)
		funcs := newFuncs(t, tr.state)
		defer closeFuncs(funcs)
		fn := fns[int(which)%len(fns)]
		checkResponse(t, fn, funcs.Call(fn, req), codes)
		tr.check(t)
	})
}
