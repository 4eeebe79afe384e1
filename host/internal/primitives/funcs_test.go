package primitives_test

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

func TestFuncs_RefusesNames(t *testing.T) {
	root := t.TempDir()
	f := prepare(t, filepath.Join(root, "state"))
	secret := filepath.Join(root, "secret")
	os.WriteFile(secret, []byte("x"), 0o600)
	for _, name := range []string{"", secret, "../secret", "..", ".", ".hidden", "a/b", "a\x00b", "sp ace", string(make([]byte, 256))} {
		for _, fn := range []string{hostfuncs.FnRead, hostfuncs.FnWrite, hostfuncs.FnRemove, hostfuncs.FnLock} {
			req, _ := json.Marshal(map[string]any{"name": name, "limit": 10, "data": []byte("tok")})
			if r := call[hostfuncs.Empty](t, f, fn, req); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
				t.Errorf("%s(%q) = %+v, want invalid_request", fn, name, r.Error)
			}
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "x" {
		t.Error("a file outside the state directory changed")
	}
}

func TestFuncs_MalformedRequests(t *testing.T) {
	f := prepare(t, stateDir(t))
	for _, fn := range append(hostfuncs.Functions(), "no_such_function") {
		var resp hostfuncs.Empty
		out := f.Call(fn, []byte("{not json"))
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("%s: response %q not JSON", fn, out)
		}
		if resp.Error == nil || resp.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("%s(garbage) = %s, want invalid_request", fn, out)
		}
	}
}

// Required fields are required: a request without them is refused rather
// than guessed at (an empty token file, a list of everything, an empty log line).
func TestFuncs_MissingFields(t *testing.T) {
	f := prepare(t, stateDir(t))
	for fn, req := range map[string]string{
		hostfuncs.FnWrite:      `{"name":"token-5-1.a"}`,
		hostfuncs.FnList:       `{}`,
		hostfuncs.FnLog:        `{"level":"info","message":"m"}`,
		hostfuncs.FnRead:       `{"name":"token-5-1.a"}`,
		hostfuncs.FnRemove:     `{}`,
		hostfuncs.FnPrepareDir: `{"path":"/tmp"}`,
		hostfuncs.FnInspect:    `{}`,
	} {
		if r := call[hostfuncs.Empty](t, f, fn, []byte(req)); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("%s(%s) = %+v; want invalid_request", fn, req, r.Error)
		}
	}
}

// The confinement rule (hostfuncs/README.md, mcp_resume_prepare_dir): no file
// function before a successful prepare_dir; the first success fixes the
// directory; the path must be absolute and clean.
func TestPrepareDir_Confinement(t *testing.T) {
	root := t.TempDir()
	f := primitives.New(primitives.Config{})
	for fn, req := range map[string]string{
		hostfuncs.FnRead:   `{"name":"token-1-1","limit":10}`,
		hostfuncs.FnWrite:  `{"name":"token-1-1","data":"dG9r"}`,
		hostfuncs.FnRemove: `{"name":"token-1-1"}`,
		hostfuncs.FnList:   `{"prefix":""}`,
		hostfuncs.FnLock:   `{"name":"lock-1-1"}`,
	} {
		if r := call[hostfuncs.Empty](t, f, fn, []byte(req)); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("%s before prepare_dir = %+v, want invalid_request", fn, r.Error)
		}
	}
	for _, p := range []string{"relative/state", root + "/a/../state", root + "/state/", root + "/./state", ""} {
		for _, op := range []string{hostfuncs.DirOpStat, hostfuncs.DirOpMkdir, hostfuncs.DirOpFix} {
			if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: op, Path: p, SweepSeconds: 60}); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
				t.Errorf("prepare_dir %s(%q) = %+v, want invalid_request", op, p, r.Error)
			}
		}
	}
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: "create", Path: root}); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
		t.Errorf("prepare_dir with an unknown op = %+v, want invalid_request", r.Error)
	}
	dir := filepath.Join(root, "state")
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpMkdir, Path: dir}); r.Error != nil {
		t.Fatalf("mkdir: %v", r.Error)
	}
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpFix, Path: dir, SweepSeconds: 60}); r.Error != nil || f.Dir() != dir {
		t.Fatalf("fix: %v, Dir %q", r.Error, f.Dir())
	}
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpFix, Path: dir, SweepSeconds: 60}); r.Error != nil {
		t.Errorf("fix again, same path: %v", r.Error)
	}
	other := filepath.Join(root, "other")
	for _, op := range []string{hostfuncs.DirOpMkdir, hostfuncs.DirOpFix} {
		if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: op, Path: other, SweepSeconds: 60}); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
			t.Errorf("%s(another path) after a fix = %+v, want invalid_request", op, r.Error)
		}
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("a refused mkdir created %s", other)
	}
	// After the fix, mkdir may still act on the directory and its ancestors.
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpMkdir, Path: root}); r.Error == nil || r.Error.Code != hostfuncs.CodeExists {
		t.Errorf("mkdir(existing ancestor) = %+v, want exists", r.Error)
	}
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
	for path, code := range map[string]string{
		root + "/file":      hostfuncs.CodeExists,
		root + "/dangling":  hostfuncs.CodeExists,
		root + "/file/x":    hostfuncs.CodeNotDir,
		root + "/no/such":   hostfuncs.CodeNotFound,
		"/proc/self/mcp-rs": hostfuncs.CodeNotFound, // proc refuses creation: ENOENT
	} {
		if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpMkdir, Path: path}); r.Error == nil || r.Error.Code != code {
			t.Errorf("mkdir(%s) = %+v, want %s", path, r.Error, code)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "nowhere")); !os.IsNotExist(err) {
		t.Errorf("mkdir followed the dangling symlink: %v", err)
	}
	made := filepath.Join(root, "made")
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpMkdir, Path: made}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if info, err := os.Stat(made); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("mkdir made %v %v, want mode 0700", info, err)
	}
}

// prepare_dir deletes leftover temporary files older than sweep_seconds,
// and only those: regular files named .<...>.tmp.
func TestPrepareDir_Sweep(t *testing.T) {
	dir := stateDir(t)
	old := time.Now().Add(-2 * time.Hour)
	for _, n := range []string{".token-1.aaaa.tmp", ".token-2.bbbb.tmp", "token-1.tmp", ".keep"} {
		os.WriteFile(filepath.Join(dir, n), nil, 0o600)
	}
	os.Symlink("nowhere", filepath.Join(dir, ".link.tmp"))
	for _, n := range []string{".token-1.aaaa.tmp", "token-1.tmp", ".keep"} {
		os.Chtimes(filepath.Join(dir, n), old, old)
	}
	f := primitives.New(primitives.Config{})
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnPrepareDir, hostfuncs.PrepareDirRequest{Op: hostfuncs.DirOpFix, Path: dir, SweepSeconds: 3600}); r.Error != nil {
		t.Fatal(r.Error)
	}
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if want := []string{".keep", ".link.tmp", ".token-2.bbbb.tmp", "token-1.tmp"}; !slices.Equal(got, want) {
		t.Errorf("after the sweep: %v, want %v", got, want)
	}
}

func TestReadWriteRemove(t *testing.T) {
	dir := stateDir(t)
	f := prepare(t, dir)
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnWrite, hostfuncs.WriteRequest{Name: "token-1-1", Data: []byte("tok-A")}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if info, err := os.Lstat(filepath.Join(dir, "token-1-1")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("written file: %v %v, want mode 0600", info, err)
	}
	if r := call[hostfuncs.ReadResponse](t, f, hostfuncs.FnRead, hostfuncs.ReadRequest{Name: "token-1-1", Limit: 3}); r.Error != nil || string(r.Data) != "tok" {
		t.Errorf("read limit 3 = %q %v", r.Data, r.Error)
	}
	if r := call[hostfuncs.ReadResponse](t, f, hostfuncs.FnRead, hostfuncs.ReadRequest{Name: "token-1-1", Limit: primitives.MaxReadLimit + 1}); r.Error == nil || r.Error.Code != hostfuncs.CodeInvalidRequest {
		t.Errorf("read over the limit = %+v", r.Error)
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
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnWrite, hostfuncs.WriteRequest{Name: "token-2-2", Data: []byte("new")}); r.Error != nil {
		t.Fatal(r.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(filepath.Dir(dir), "target")); string(b) != "outside" {
		t.Errorf("write followed the symlink: target holds %q", b)
	}
	if r := call[hostfuncs.Empty](t, f, hostfuncs.FnRemove, hostfuncs.NameRequest{Name: "token-dir"}); r.Error == nil {
		t.Error("remove deleted a directory")
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
}

func TestList(t *testing.T) {
	dir := stateDir(t)
	f := prepare(t, dir)
	for _, n := range []string{"token-b", "token-a", "lock-a", ".token-a.x.tmp", "token with space"} {
		os.WriteFile(filepath.Join(dir, n), []byte("secret"), 0o600)
	}
	old := time.Now().Add(-90*time.Second - 500*time.Millisecond)
	os.Chtimes(filepath.Join(dir, "token-b"), old, old)
	os.Symlink("token-a", filepath.Join(dir, "token-link"))
	os.Mkdir(filepath.Join(dir, "token-dir"), 0o700)
	r := call[hostfuncs.ListResponse](t, f, hostfuncs.FnList, hostfuncs.ListRequest{Prefix: "token-"})
	if r.Error != nil || len(r.Files) != 2 || r.Files[0].Name != "token-a" || r.Files[1].Name != "token-b" {
		t.Fatalf("list = %+v", r)
	}
	if a, b := r.Files[0].AgeSeconds, r.Files[1].AgeSeconds; a < 0 || a > 5 || b != 90 {
		t.Errorf("ages = %d, %d; want ~0 and 90 (rounded down)", a, b)
	}
	if all := call[hostfuncs.ListResponse](t, f, hostfuncs.FnList, hostfuncs.ListRequest{Prefix: ""}); len(all.Files) != 3 {
		t.Errorf("list all = %+v", all.Files)
	}
	os.RemoveAll(dir)
	if r := call[hostfuncs.ListResponse](t, f, hostfuncs.FnList, hostfuncs.ListRequest{Prefix: ""}); r.Error == nil || r.Error.Code != hostfuncs.CodeNotFound {
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
