package primitives_test

// Tests of the Go host functions on the real system, one per contract rule
// of hostfuncs/README.md (names, confinement, each file function, facts,
// log): a little over 500 lines because each rule gets its own real-file
// test rather than a shared table that would hide which rule failed.

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// The host's name rule (hostfuncs.ValidName): a name given to read, write
// (name and temp), remove and lock must be one path element. Anything else
// is invalid_request before any system call: the state directory here does
// not exist, so a name that reached the file system would answer not_found.
func TestFuncs_RefusesNames(t *testing.T) {
	root := t.TempDir()
	f := primitives.New(primitives.Config{})
	f.SetStateDir(filepath.Join(root, "missing"))
	for _, name := range []string{"", ".", "..", "/", root + "/x", "../x", "a/b", "a/", "/a", "a\x00b", "\x00", strings.Repeat("a", 256)} {
		for _, fn := range []string{hostfuncs.FnRead, hostfuncs.FnWrite, hostfuncs.FnRemove, hostfuncs.FnLock} {
			req, _ := json.Marshal(map[string]any{"name": name, "temp": ".t.tmp", "limit": 10, "data": []byte("tok")})
			if r := call[hostfuncs.Empty](t, f, fn, req); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
				t.Errorf("%s(%q) = %+v, want invalid_request", fn, name, r.Error)
			}
		}
		req, _ := json.Marshal(map[string]any{"name": "token-1", "temp": name, "data": []byte("tok")})
		if r := call[hostfuncs.Empty](t, f, hostfuncs.FnWrite, req); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("write with temp %q = %+v, want invalid_request", name, r.Error)
		}
	}
	// One path element is all the rule asks: the plugin's stricter naming
	// is its own. These reach the file system (not_found here).
	for _, name := range []string{".hidden", "sp ace", "t\u00f6k", "...", strings.Repeat("a", 255), "a\\b"} {
		if r := call[hostfuncs.Empty](t, f, hostfuncs.FnRemove, hostfuncs.NameRequest{Name: name}); r.Error == nil || r.Error.Code != hostfuncs.CodeNotFound {
			t.Errorf("remove(%q) = %+v, want not_found", name, r.Error)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "missing")); !os.IsNotExist(err) {
		t.Errorf("the state directory was created: %v", err)
	}
}

func TestFuncs_MalformedRequests(t *testing.T) {
	f := prepare(t, stateDir(t))
	for _, fn := range append(hostfuncs.Functions(), "no_such_function") {
		for _, req := range []string{"{not json", "[]", `"x"`, "null", "1", "", "   ", "{}x", "{\"level\":\"\xff\"}"} {
			var resp hostfuncs.Empty
			out := f.Call(fn, []byte(req))
			if err := json.Unmarshal(out, &resp); err != nil {
				t.Fatalf("%s: response %q not JSON", fn, out)
			}
			if resp.Error == nil || resp.Error.Code != hostfuncs.CodeInvalidRequest {
				t.Errorf("%s(%s) = %s, want invalid_request", fn, req, out)
			}
		}
	}
}

// Required fields are required, and of their type: a request without them
// is refused rather than guessed at (an empty token file, an empty log line).
func TestFuncs_MissingFields(t *testing.T) {
	dir := stateDir(t)
	f := prepare(t, dir)
	for _, c := range []struct{ fn, req string }{
		{hostfuncs.FnWrite, `{"name":"token-5-1.a","temp":".t.tmp"}`},
		{hostfuncs.FnWrite, `{"name":"token-5-1.a","temp":".t.tmp","data":null}`},
		{hostfuncs.FnWrite, `{"name":"token-5-1.a","data":"dG9r"}`},
		{hostfuncs.FnWrite, `{"temp":".t.tmp","data":"dG9r"}`},
		{hostfuncs.FnWrite, `{"name":"token-5-1.a","temp":".t.tmp","data":"!!"}`},
		{hostfuncs.FnRead, `{"name":"token-5-1.a"}`},
		{hostfuncs.FnRead, `{"limit":10}`},
		{hostfuncs.FnRead, `{"name":"token-5-1.a","limit":"10"}`},
		{hostfuncs.FnRead, `{"name":"token-5-1.a","limit":1.5}`},
		{hostfuncs.FnRead, `{"name":"token-5-1.a","limit":0}`},
		{hostfuncs.FnRead, `{"name":"token-5-1.a","limit":8388609}`},
		{hostfuncs.FnRemove, `{}`},
		{hostfuncs.FnRemove, `{"name":7}`},
		{hostfuncs.FnLock, `{}`},
		{hostfuncs.FnLock, `{"name":"lock-1","socket":7}`},
		{hostfuncs.FnLock, `{"name":"lock-1","socket":"a\u0000b"}`},
		{hostfuncs.FnLock, `{"name":"lock-1","socket":"` + strings.Repeat("s", 108) + `"}`},
		{hostfuncs.FnLock, `{"name":"lock-1","wait_ms":10001}`},
		{hostfuncs.FnLock, `{"name":"lock-1","wait_ms":-1}`},
		{hostfuncs.FnLock, `{"name":"lock-1","wait_ms":"1"}`},
		{hostfuncs.FnUnlock, `{}`},
		{hostfuncs.FnUnlock, `{"name":"lock-1","socket":7}`},
		{hostfuncs.FnLog, `{"level":"info","message":"m"}`},
		{hostfuncs.FnLog, `{"level":"info","event":"e"}`},
		{hostfuncs.FnLog, `{"event":"e","message":"m"}`},
		{hostfuncs.FnLog, `{"level":"INFO","event":"e","message":"m"}`},
		{hostfuncs.FnLog, `{"level":"info","event":1,"message":"m"}`},
		{hostfuncs.FnLog, `{"level":"info","event":"e","message":"m","detail":1}`},
		{hostfuncs.FnPrepareDir, `{"path":"/tmp"}`},
		{hostfuncs.FnPrepareDir, `{"op":"stat"}`},
		{hostfuncs.FnPrepareDir, `{"op":"stat","path":"/tmp","follow":"yes"}`},
		{hostfuncs.FnInspect, `{}`},
		// Member names are exact: "NAME" is not "name".
		{hostfuncs.FnRemove, `{"NAME":"token-5-1.a"}`},
		{hostfuncs.FnRead, `{"Name":"token-5-1.a","limit":10}`},
		// A repeated member keeps its last value, as in Python and JavaScript.
		{hostfuncs.FnRemove, `{"name":"token-5-1.a","name":"../x"}`},
	} {
		if r := call[hostfuncs.Empty](t, f, c.fn, []byte(c.req)); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("%s(%s) = %+v; want invalid_request", c.fn, c.req, r.Error)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused requests left %v", entries)
	}
}

// The confinement rule (hostfuncs/README.md, "Confinement fixed at open"):
// no file function before SetStateDir (the state_dir of a successful open);
// the first absolute, clean directory is fixed for good; mkdir acts only
// on it and its ancestors; prepare_dir has no fix any more.
func TestConfinement(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "state", "app")
	f := primitives.New(primitives.Config{})
	fileCalls := map[string]string{
		hostfuncs.FnRead:   `{"name":"token-1-1","limit":10}`,
		hostfuncs.FnWrite:  `{"name":"token-1-1","temp":".token-1-1.0.tmp","data":"dG9r"}`,
		hostfuncs.FnRemove: `{"name":"token-1-1"}`,
		hostfuncs.FnList:   `{}`,
		hostfuncs.FnLock:   `{"name":"lock-1-1"}`,
		hostfuncs.FnUnlock: `{"name":"lock-1-1"}`,
	}
	mkdir := func(p string) *hostfuncs.Error {
		return call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpMkdir, Path: p}).Error
	}
	for fn, req := range fileCalls {
		if r := call[hostfuncs.Empty](t, f, fn, []byte(req)); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("%s before open = %+v, want invalid_request", fn, r.Error)
		}
	}
	if werr := mkdir(dir); werr == nil || werr.Code != hostfuncs.CodeInvalidRequest {
		t.Errorf("mkdir before open = %+v, want invalid_request", werr)
	}
	for _, p := range []string{"", "relative/state", root + "/a/../state", root + "/state/", root + "/./state", root + "/a\x00b"} {
		if f.SetStateDir(p) {
			t.Errorf("SetStateDir(%q) accepted", p)
		}
		for _, op := range []string{hostfuncs.DirOpStat, hostfuncs.DirOpMkdir} {
			if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: op, Path: p}); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
				t.Errorf("prepare_dir %s(%q) = %+v, want invalid_request", op, p, r.Error)
			}
		}
	}
	if !f.SetStateDir(dir) || !f.SetStateDir(dir) {
		t.Fatal("SetStateDir refused the state directory")
	}
	other := filepath.Join(root, "other")
	if f.SetStateDir(other) {
		t.Error("SetStateDir moved the state directory")
	}
	for _, p := range []string{other, dir + "/sub", root + "/stat", dir + "x"} {
		if werr := mkdir(p); werr == nil || werr.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("mkdir(%s), outside the state directory's line = %+v, want invalid_request", p, werr)
		}
	}
	for _, op := range []string{"fix", "create"} {
		if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: op, Path: dir}); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("prepare_dir op %q = %+v, want invalid_request", op, r.Error)
		}
	}
	// The ancestors, then the directory itself; "/" is an ancestor too.
	for _, p := range []string{filepath.Dir(dir), dir} {
		if werr := mkdir(p); werr != nil {
			t.Fatalf("mkdir(%s): %v", p, werr)
		}
	}
	if werr := mkdir("/"); werr == nil || werr.Code != hostfuncs.CodeExists {
		t.Errorf("mkdir(/) = %+v, want exists", werr)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 1 {
		t.Errorf("%s holds %v, want only state", root, entries)
	}
	for fn, req := range fileCalls {
		if r := call[hostfuncs.Empty](t, f, fn, []byte(req)); r.Error != nil && fn != hostfuncs.FnRead && fn != hostfuncs.FnRemove {
			t.Errorf("%s after open: %v", fn, r.Error)
		}
	}
	f.Close()
}

// The primitives of prepare_dir report precise facts and codes, and hold no
// rule: a 0755 directory, another path's symlink, a regular file are
// answered as what they are; the plugin judges them.
func TestPrepareDir_Primitives(t *testing.T) {
	root := t.TempDir()
	f := primitives.New(primitives.Config{})
	open := filepath.Join(root, "open")
	os.Mkdir(open, 0o755)
	os.Chmod(open, 0o755)
	os.WriteFile(filepath.Join(root, "file"), nil, 0o600)
	os.Symlink("open", filepath.Join(root, "link"))
	os.Symlink("nowhere", filepath.Join(root, "dangling"))
	sticky := filepath.Join(root, "sticky")
	os.Mkdir(sticky, 0o700)
	os.Chmod(sticky, 0o777|os.ModeSticky)
	euid := os.Geteuid()
	for _, c := range []struct {
		path   string
		follow bool
		want   hostfuncs.DirStat
	}{
		{open, false, hostfuncs.DirStat{Type: hostfuncs.StatDir, UID: euid, Mode: 0o755}},
		{sticky, false, hostfuncs.DirStat{Type: hostfuncs.StatDir, UID: euid, Mode: 0o1777}},
		{root + "/file", false, hostfuncs.DirStat{Type: hostfuncs.StatFile, UID: euid, Mode: 0o600}},
		{root + "/link", false, hostfuncs.DirStat{Type: hostfuncs.StatSymlink, UID: euid, Mode: 0o777}},
		{root + "/link", true, hostfuncs.DirStat{Type: hostfuncs.StatDir, UID: euid, Mode: 0o755}},
		{root + "/dangling", false, hostfuncs.DirStat{Type: hostfuncs.StatSymlink, UID: euid, Mode: 0o777}},
		{root + "/dangling", true, hostfuncs.DirStat{Error: &hostfuncs.Error{Code: hostfuncs.CodeNotFound}}},
		{root + "/missing", false, hostfuncs.DirStat{Error: &hostfuncs.Error{Code: hostfuncs.CodeNotFound}}},
		{root + "/file/x", false, hostfuncs.DirStat{Error: &hostfuncs.Error{Code: hostfuncs.CodeNotDir}}},
	} {
		got := call[hostfuncs.DirStat](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpStat, Path: c.path, Follow: c.follow})
		if got.Error != nil && c.want.Error != nil && got.Error.Code == c.want.Error.Code {
			continue
		}
		if got.Error != nil || c.want.Error != nil || got != c.want {
			t.Errorf("stat(%s, follow %v) = %+v %v, want %+v %v", c.path, c.follow, got, got.Error, c.want, c.want.Error)
		}
	}
	// mkdir of each path as the state directory open answered.
	for path, code := range map[string]string{
		root + "/file":      hostfuncs.CodeExists,
		root + "/dangling":  hostfuncs.CodeExists,
		root + "/file/x":    hostfuncs.CodeNotDir,
		root + "/no/such":   hostfuncs.CodeNotFound,
		"/proc/self/mcp-rs": hostfuncs.CodeNotFound, // proc refuses creation: ENOENT
		"":                  "",
	} {
		if path == "" {
			path = filepath.Join(root, "made")
		}
		g := primitives.New(primitives.Config{})
		g.SetStateDir(path)
		if r := call[hostfuncs.Empty](t, g, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpMkdir, Path: path}); code == "" && r.Error != nil || code != "" && (r.Error == nil || r.Error.Code != code) {
			t.Errorf("mkdir(%s) = %+v, want %q", path, r.Error, code)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "nowhere")); !os.IsNotExist(err) {
		t.Errorf("mkdir followed the dangling symlink: %v", err)
	}
	if info, err := os.Stat(filepath.Join(root, "made")); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("mkdir made %v %v, want mode 0700", info, err)
	}
}

func TestReadWriteRemove(t *testing.T) {
	dir := stateDir(t)
	f := prepare(t, dir)
	write := func(name, temp, data string) *hostfuncs.Error {
		return call[hostfuncs.Empty](t, f, hostfuncs.FnWrite, hostfuncs.WriteRequest{Name: name, Temp: temp, Data: []byte(data)}).Error
	}
	if werr := write("token-1-1", ".token-1-1.00000000000000aa.tmp", "tok-A"); werr != nil {
		t.Fatal(werr)
	}
	if info, err := os.Lstat(filepath.Join(dir, "token-1-1")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("written file: %v %v, want mode 0600", info, err)
	}
	if r := call[hostfuncs.ReadResponse](t, f, hostfuncs.FnRead, hostfuncs.ReadRequest{Name: "token-1-1", Limit: 3}); r.Error != nil || string(r.Data) != "tok" {
		t.Errorf("read limit 3 = %q %v", r.Data, r.Error)
	}
	if werr := write("empty", ".empty.0.tmp", ""); werr != nil {
		t.Fatal(werr)
	}
	if out := f.Call(hostfuncs.FnRead, []byte(`{"name":"empty","limit":10}`)); !strings.HasPrefix(string(out), `{"data":""}`) {
		t.Errorf("read of an empty file = %s, want data \"\"", out)
	}
	// A symlink at a name is replaced by write, never followed by read.
	os.WriteFile(filepath.Join(filepath.Dir(dir), "target"), []byte("outside"), 0o600)
	os.Symlink("../target", filepath.Join(dir, "token-2-2"))
	if r := call[hostfuncs.ReadResponse](t, f, hostfuncs.FnRead, hostfuncs.ReadRequest{Name: "token-2-2", Limit: 100}); r.Error == nil || r.Error.Code != hostfuncs.CodeUnsafe {
		t.Errorf("read of a symlink = %+v, want unsafe", r.Error)
	}
	syscall.Mkfifo(filepath.Join(dir, "token-fifo"), 0o600)
	os.Mkdir(filepath.Join(dir, "token-dir"), 0o700)
	for _, n := range []string{"token-fifo", "token-dir"} {
		if r := call[hostfuncs.ReadResponse](t, f, hostfuncs.FnRead, hostfuncs.ReadRequest{Name: n, Limit: 100}); r.Error == nil || r.Error.Code != hostfuncs.CodeUnsafe {
			t.Errorf("read of %s = %+v, want unsafe", n, r.Error)
		}
	}
	if werr := write("token-2-2", ".token-2-2.1.tmp", "new"); werr != nil {
		t.Fatal(werr)
	}
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(dir), "target")); string(b) != "outside" {
		t.Errorf("write followed the symlink: target holds %q", b)
	}
	// A directory given to remove is unsafe (EISDIR), and stays.
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnRemove, hostfuncs.NameRequest{Name: "token-dir"}); r.Error == nil || r.Error.Code != hostfuncs.CodeUnsafe {
		t.Errorf("remove of a directory = %+v, want unsafe", r.Error)
	}
	if info, err := os.Lstat(filepath.Join(dir, "token-dir")); err != nil || !info.IsDir() {
		t.Errorf("remove deleted a directory: %v", err)
	}
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnRemove, hostfuncs.NameRequest{Name: "token-1-1"}); r.Error != nil {
		t.Error(r.Error)
	}
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnRemove, hostfuncs.NameRequest{Name: "token-1-1"}); r.Error == nil || r.Error.Code != hostfuncs.CodeNotFound {
		t.Errorf("remove of a missing file = %+v, want not_found", r.Error)
	}
	if r := call[hostfuncs.ReadResponse](t, f, hostfuncs.FnRead, hostfuncs.ReadRequest{Name: "token-1-1", Limit: 100}); r.Error == nil || r.Error.Code != hostfuncs.CodeNotFound {
		t.Errorf("read of a missing file = %+v, want not_found", r.Error)
	}
	want := []string{"empty", "token-2-2", "token-dir", "token-fifo"}
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Errorf("state directory holds %v, want %v (no temporary file left)", got, want)
	}
}

// write creates its temp exclusively: an existing temp (a file, a symlink
// to a file outside, a dangling symlink) answers exists, is left as it was,
// and name is not written. A failure after the create (the rename over a
// directory: EISDIR, unsafe) unlinks the temp it made.
func TestWrite_Temp(t *testing.T) {
	dir := stateDir(t)
	f := prepare(t, dir)
	outside := filepath.Join(filepath.Dir(dir), "outside")
	os.WriteFile(outside, []byte("outside"), 0o600)
	temp := ".token-5-1.a.0123456789abcdef.tmp"
	for _, plant := range []func(string) error{
		func(p string) error { return os.WriteFile(p, []byte("other writer"), 0o600) },
		func(p string) error { return os.Symlink("../outside", p) },
		func(p string) error { return os.Symlink("../ghost", p) },
	} {
		p := filepath.Join(dir, temp)
		if err := plant(p); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Lstat(p)
		r := call[hostfuncs.Empty](t, f, hostfuncs.FnWrite, hostfuncs.WriteRequest{Name: "token-5-1.a", Temp: temp, Data: []byte("tok")})
		if r.Error == nil || r.Error.Code != hostfuncs.CodeExists {
			t.Errorf("write with an existing temp (%s) = %+v, want exists", before.Mode(), r.Error)
		}
		if after, err := os.Lstat(p); err != nil || !os.SameFile(before, after) || after.ModTime() != before.ModTime() {
			t.Errorf("the existing temp changed: %v", err)
		}
		if got := names(t, dir); !slices.Equal(got, []string{temp}) {
			t.Errorf("after the refused write: %v", got)
		}
		os.Remove(p)
	}
	if b, _ := os.ReadFile(outside); string(b) != "outside" {
		t.Errorf("outside holds %q", b)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(dir), "ghost")); !os.IsNotExist(err) {
		t.Errorf("write created the dangling symlink's target: %v", err)
	}
	os.Mkdir(filepath.Join(dir, "token-dir"), 0o700)
	r := call[hostfuncs.Empty](t, f, hostfuncs.FnWrite, hostfuncs.WriteRequest{Name: "token-dir", Temp: temp, Data: []byte("tok")})
	if r.Error == nil || r.Error.Code != hostfuncs.CodeUnsafe {
		t.Errorf("write over a directory = %+v, want unsafe", r.Error)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"token-dir"}) {
		t.Errorf("after the failed rename: %v, want the temp unlinked", got)
	}
}

// names lists dir, sorted.
func names(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// list answers every entry directly in the state directory (dotfiles,
// temporary files, directories, symlinks, FIFOs, names outside the
// plugin's rule and names that are not UTF-8) with its lstat type and age,
// never its contents; a missing state directory is not_found.
func TestList(t *testing.T) {
	dir := stateDir(t)
	f := prepare(t, dir)
	for _, n := range []string{"token-b", "token-a", ".hidden", ".token-a.0123456789abcdef.tmp", "token with space", "bad-\xff"} {
		os.WriteFile(filepath.Join(dir, n), []byte("secret"), 0o600)
	}
	old := time.Now().Add(-90*time.Second - 500*time.Millisecond)
	os.Chtimes(filepath.Join(dir, "token-b"), old, old)
	future := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(dir, "token-a"), future, future)
	os.Symlink("nowhere", filepath.Join(dir, "token-link"))
	os.Mkdir(filepath.Join(dir, "token-dir"), 0o700)
	os.WriteFile(filepath.Join(dir, "token-dir", "inner"), nil, 0o600)
	syscall.Mkfifo(filepath.Join(dir, "token-fifo"), 0o600)
	r := call[hostfuncs.ListResponse](t, f, hostfuncs.FnList, []byte(`{"prefix":"token-","ignored":1}`))
	got := map[string]hostfuncs.ListEntry{}
	for _, e := range r.Files {
		got[e.Name] = e
	}
	want := map[string]string{
		"token-a": "file", "token-b": "file", ".hidden": "file", ".token-a.0123456789abcdef.tmp": "file", "token with space": "file",
		"bad-\ufffd": "file", "token-link": "symlink", "token-dir": "dir", "token-fifo": "other",
	}
	if r.Error != nil || len(r.Files) != len(want) {
		t.Fatalf("list = %+v", r)
	}
	for n, typ := range want {
		if got[n].Type != typ {
			t.Errorf("%q: %+v, want type %s", n, got[n], typ)
		}
	}
	if a, b, c := got["token-a"].AgeSeconds, got["token-b"].AgeSeconds, got[".hidden"].AgeSeconds; a > -3590 || a < -3601 || b != 90 || c < 0 || c > 5 {
		t.Errorf("ages = %d, %d, %d; want about -3600 (mtime ahead), 90 (rounded down), about 0", a, b, c)
	}
	os.RemoveAll(dir)
	if r := call[hostfuncs.ListResponse](t, f, hostfuncs.FnList, []byte(`{}`)); r.Error == nil || r.Error.Code != hostfuncs.CodeNotFound {
		t.Errorf("list of a missing directory = %+v, want not_found", r.Error)
	}
}

func TestFacts(t *testing.T) {
	t.Setenv("MCP_RESUME_INSTANCE", "work")
	t.Setenv("MCP_RESUME", "on")
	t.Setenv("MCP_RESUMEX", "no")
	t.Setenv("XDG_STATE_HOME", "~/x")
	f := primitives.New(primitives.Config{})
	var facts hostfuncs.Facts
	if err := json.Unmarshal(f.Call(hostfuncs.FnFacts, []byte(`{}`)), &facts); err != nil {
		t.Fatal(err)
	}
	wantEnv := map[string]string{}
	for _, kv := range os.Environ() {
		name, val, _ := strings.Cut(kv, "=")
		wantEnv[name] = val
	}
	if wantEnv["MCP_RESUME_INSTANCE"] != "work" || wantEnv["MCP_RESUME"] != "on" || len(wantEnv) < 2 {
		t.Fatalf("environment not set up: %v", wantEnv)
	}
	if facts.PID != os.Getpid() || facts.EUID != os.Geteuid() || facts.OS != "linux" && facts.OS != "darwin" ||
		facts.Runtime != "go" || facts.XDGStateHome != "~/x" || !slices.Equal(facts.Args, os.Args[1:]) || len(facts.Env) != len(wantEnv) {
		t.Errorf("facts = %+v", facts)
	}
	if wd, _ := syscall.Getwd(); facts.Cwd != wd || wd == "" {
		t.Errorf("facts.cwd = %q, want getcwd %q", facts.Cwd, wd)
	}
	for k, v := range wantEnv {
		if facts.Env[k] != v {
			t.Errorf("env[%s] = %q, want %q", k, facts.Env[k], v)
		}
	}
}

func TestLog(t *testing.T) {
	var buf bytes.Buffer
	f := primitives.New(primitives.Config{Logger: slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	for _, lvl := range []string{"debug", "info", "warn", "error"} {
		if r := call[hostfuncs.Empty](t, f, hostfuncs.FnLog, hostfuncs.LogRequest{Level: lvl, Event: "e_" + lvl, Message: "m", Detail: "d"}); r.Error != nil {
			t.Fatal(r.Error)
		}
	}
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnLog, hostfuncs.LogRequest{Level: "loud", Event: "e", Message: "m"}); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
		t.Errorf("unknown level = %+v", r.Error)
	}
	var lines []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var m map[string]any
		json.Unmarshal(l, &m)
		lines = append(lines, m)
	}
	want := []string{"DEBUG", "INFO", "WARN", "ERROR"}
	for i, m := range lines {
		if m["level"] != want[i] || m["msg"] != "m" || m["event"] != "e_"+strings.ToLower(want[i]) || m["detail"] != "d" {
			t.Errorf("line %d = %v", i, m)
		}
	}
	if len(lines) != 4 {
		t.Errorf("%d lines", len(lines))
	}
}

// TestFacts_Home: HOME unset, empty or relative gives the password
// database's home directory for the effective uid, as Python (pwd) and
// Node (os.userInfo) report it; an absolute HOME wins.
func TestFacts_Home(t *testing.T) {
	u, err := user.LookupId(strconv.Itoa(os.Geteuid()))
	if err != nil || !filepath.IsAbs(u.HomeDir) {
		t.Skipf("no password-database entry with a home directory for uid %d: %v", os.Geteuid(), err)
	}
	f := primitives.New(primitives.Config{})
	home := func() string {
		var facts hostfuncs.Facts
		if err := json.Unmarshal(f.Call(hostfuncs.FnFacts, []byte(`{}`)), &facts); err != nil {
			t.Fatal(err)
		}
		return facts.Home
	}
	t.Setenv("HOME", "/some/where")
	if got := home(); got != "/some/where" {
		t.Errorf("HOME=/some/where: home %q", got)
	}
	for _, h := range []string{"", "rel/dir", "~"} {
		t.Setenv("HOME", h)
		if got := home(); got != u.HomeDir {
			t.Errorf("HOME=%q: home %q, want the password database's %q", h, got, u.HomeDir)
		}
	}
	os.Unsetenv("HOME")
	if got := home(); got != u.HomeDir {
		t.Errorf("HOME unset: home %q, want the password database's %q", got, u.HomeDir)
	}
}

// TestFacts_Undecodable pins what the Go host sends for environment bytes
// that are not UTF-8: U+FFFD in place of each, so "\xff" and "\xfe" reach
// the plugin equal and the plugin turns resume off for such a key.
func TestFacts_Undecodable(t *testing.T) {
	t.Setenv("MCP_RESUME_TEST_FF", "--x=\xff")
	t.Setenv("MCP_RESUME_TEST_FE", "--x=\xfe")
	var facts hostfuncs.Facts
	if err := json.Unmarshal(primitives.New(primitives.Config{}).Call(hostfuncs.FnFacts, []byte(`{}`)), &facts); err != nil {
		t.Fatal(err)
	}
	if ff, fe := facts.Env["MCP_RESUME_TEST_FF"], facts.Env["MCP_RESUME_TEST_FE"]; ff != "--x=\ufffd" || fe != ff {
		t.Errorf("env values %q and %q, want both %q", ff, fe, "--x=\ufffd")
	}
}

// mcp_resume_read reads up to hostfuncs.MaxReadLimit (8 MiB) in one call:
// a sealed handle record of the largest value fits.
func TestRead_LimitUpTo8MiB(t *testing.T) {
	dir := stateDir(t)
	f := prepare(t, dir)
	defer f.Close()
	data := bytes.Repeat([]byte{0xa5}, hostfuncs.MaxReadLimit+10)
	if err := os.WriteFile(filepath.Join(dir, "big"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := call[hostfuncs.ReadResponse](t, f, hostfuncs.FnRead, hostfuncs.ReadRequest{Name: "big", Limit: hostfuncs.MaxReadLimit})
	if r.Error != nil || !bytes.Equal(r.Data, data[:hostfuncs.MaxReadLimit]) {
		t.Fatalf("read of 8 MiB: %d bytes, %v", len(r.Data), r.Error)
	}
}
