package resume_test

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// TestStore_StateDirVerdicts pins, for every kind of unusable state
// directory, the one message the plugin words from the host's primitive
// answers: the same in every host language, whatever the OS said. Each case
// first sets up a real file system (or injects the primitive's error code),
// then checks that load turns resume off with exactly this detail, that no
// token file was written, and which directories were created.
func TestStore_StateDirVerdicts(t *testing.T) {
	const other = 12345 // a uid that is not this process's
	euid := os.Geteuid()
	cases := []struct {
		name   string
		setup  func(t *testing.T, h *testHost, root, dir string)
		detail string // with $D for the state directory and $R for its parent
		mkdirs []string
	}{
		{name: "regular file", setup: func(t *testing.T, h *testHost, root, dir string) { write(t, dir, "x") },
			detail: "state directory $D exists and is not a directory; remove it, or point MCP_RESUME_STATE_DIR at a directory"},
		{name: "dangling symlink", setup: func(t *testing.T, h *testHost, root, dir string) { symlink(t, "nowhere", dir) },
			detail: "state directory $D is a symbolic link, which is never followed; point MCP_RESUME_STATE_DIR at the real directory"},
		{name: "symlink to a directory", setup: func(t *testing.T, h *testHost, root, dir string) {
			mkdir(t, filepath.Join(root, "real"), 0o700)
			symlink(t, "real", dir)
		}, detail: "state directory $D is a symbolic link, which is never followed; point MCP_RESUME_STATE_DIR at the real directory"},
		{name: "another owner", setup: func(t *testing.T, h *testHost, root, dir string) {
			mkdir(t, dir, 0o700)
			h.Owner = map[string]int{dir: other}
		}, detail: "state directory $D is owned by uid 12345, not by this user (uid $U); remove it or choose another with MCP_RESUME_STATE_DIR"},
		{name: "mode 0755", setup: func(t *testing.T, h *testHost, root, dir string) { mkdir(t, dir, 0o755) },
			detail: "state directory $D has mode 0755, which lets other users in; run: chmod 700 $D"},
		{name: "state root 0777 without the sticky bit", setup: func(t *testing.T, h *testHost, root, dir string) {
			mkdir(t, dir, 0o700)
			if err := os.Chmod(root, 0o777); err != nil {
				t.Fatal(err)
			}
		}, detail: "state directory $D is inside the state root $R, which has mode 0777: other users may write in it without the sticky bit, so they could rename $D away and put their own in its place; run: chmod go-w $R"},
		{name: "state root group-writable", setup: func(t *testing.T, h *testHost, root, dir string) {
			mkdir(t, dir, 0o700)
			if err := os.Chmod(root, 0o770); err != nil {
				t.Fatal(err)
			}
		}, detail: "state directory $D is inside the state root $R, which has mode 0770: other users may write in it without the sticky bit, so they could rename $D away and put their own in its place; run: chmod go-w $R"},
		{name: "parent of another owner (root with the user's HOME)", setup: func(t *testing.T, h *testHost, root, dir string) {
			h.Owner = map[string]int{root: other}
		}, detail: "state directory $D does not exist, and creating it would create $D inside $R, which is owned by uid 12345, not by this user (uid $U); run the server as uid 12345, or point MCP_RESUME_STATE_DIR at a directory this user owns"},
		{name: "parent is a regular file", setup: func(t *testing.T, h *testHost, root, dir string) {
			write(t, root+"/file", "x")
			h.CfgDir = root + "/file/conformance"
		}, detail: "state directory $R/file/conformance cannot be created: $R/file is not a directory; point MCP_RESUME_STATE_DIR at a directory"},
		{name: "no space", setup: func(t *testing.T, h *testHost, root, dir string) {
			h.DirErr = map[string]string{"mkdir " + dir: hostfuncs.CodeNoSpace}
		},
			detail: "cannot create $D: no space left on the device (or the disk quota is used up); free some space"},
		{name: "read-only file system", setup: func(t *testing.T, h *testHost, root, dir string) {
			h.DirErr = map[string]string{"mkdir " + dir: hostfuncs.CodeReadOnly}
		},
			detail: "cannot create $D: the file system is read-only; point MCP_RESUME_STATE_DIR at a writable directory"},
		{name: "permission denied", setup: func(t *testing.T, h *testHost, root, dir string) {
			h.DirErr = map[string]string{"mkdir " + dir: hostfuncs.CodePermission}
		},
			detail: "cannot create $D: permission denied; check the permissions of its parent directories, or point MCP_RESUME_STATE_DIR at a directory this user owns"},
		{name: "cannot inspect", setup: func(t *testing.T, h *testHost, root, dir string) {
			h.DirErr = map[string]string{"stat " + dir: hostfuncs.CodePermission}
		},
			detail: "cannot inspect $D: permission denied; check the permissions of its parent directories, or point MCP_RESUME_STATE_DIR at a directory this user owns"},
		{name: "a component is not a directory", setup: func(t *testing.T, h *testHost, root, dir string) {
			h.DirErr = map[string]string{"mkdir " + dir: hostfuncs.CodeNotDir}
		},
			detail: "cannot create $D: a component of the path is not a directory; point MCP_RESUME_STATE_DIR at a directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, dir := newHost(t)
			root := filepath.Dir(dir) // the state root, which holds the app's directory
			mkdir(t, root, 0o700)
			c.setup(t, h, root, dir)
			if h.CfgDir != "" {
				dir = h.CfgDir
			}
			s := h.open(openInput(dir))
			if tok, ok := mustLoad(t, s); ok {
				t.Fatalf("Load = %q with an unusable state directory", tok)
			}
			mustStore(t, s, "tok-A")
			want := strings.NewReplacer("$D", dir, "$R", root, "$U", strconv.Itoa(euid)).Replace(c.detail)
			if len(h.Logs) == 0 || h.Logs[len(h.Logs)-1].Event != resume.EventDirUnusable || h.Logs[len(h.Logs)-1].Detail != want {
				t.Errorf("logs %+v\nwant detail %q", h.Logs, want)
			}
			if h.Calls[hostfuncs.FnLock]+h.Calls[hostfuncs.FnWrite] != 0 {
				t.Errorf("lock or write after an unusable directory: %v", h.Reqs)
			}
			if len(h.Mkdirs) != 0 {
				t.Errorf("created %v", h.Mkdirs)
			}
		})
	}
}

// TestStore_StateDirCreate pins where missing directories are created: in
// a parent of this user, each missing level with its own mkdir (0700), and
// in a shared sticky directory owned by root such as /tmp; never in a
// directory of another user, nor in a root directory without the sticky bit
// (unless this process is root).
func TestStore_StateDirCreate(t *testing.T) {
	t.Run("missing parents", func(t *testing.T) {
		h, dir := newHost(t)
		root := filepath.Dir(dir)
		deep := filepath.Join(root, "a", "b", "conformance") // the app's directory under the root <state>/a/b
		s := h.open(openInput(deep))
		mustStore(t, s, "tok-A")
		if want := []string{root, root + "/a", root + "/a/b", deep}; !slices.Equal(h.Mkdirs, want) {
			t.Errorf("mkdirs %v, want %v", h.Mkdirs, want)
		}
		for _, d := range h.Mkdirs {
			if info, err := os.Stat(d); err != nil || info.Mode().Perm() != 0o700 {
				t.Errorf("%s: %v %v", d, info, err)
			}
		}
		if _, err := os.Stat(filepath.Join(deep, tokenFile)); err != nil {
			t.Error(err)
		}
	})
	const user = 4321 // the euid the server reports
	for _, c := range []struct {
		name   string
		mode   os.FileMode
		create bool
	}{
		{"root-owned sticky directory", 0o777 | os.ModeSticky, true},
		{"root-owned directory without the sticky bit", 0o755, false},
		{"root-owned sticky directory, not world-writable", 0o755 | os.ModeSticky, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, dir := newHost(t)
			root := filepath.Dir(dir)
			mkdir(t, root, 0o700)
			if err := os.Chmod(root, c.mode); err != nil {
				t.Fatal(err)
			}
			h.Facts.EUID = user
			h.Owner = map[string]int{root: 0, dir: user}
			s := h.open(openInput(dir))
			mustStore(t, s, "tok-A")
			if got := len(h.Mkdirs) == 1; got != c.create {
				t.Errorf("created %v, want a directory: %v; logs %+v", h.Mkdirs, c.create, h.Logs)
			}
		})
	}
	t.Run("list never creates", func(t *testing.T) {
		h, dir := newHost(t)
		s := h.open(openInput(filepath.Join(dir, "a")))
		if l, werr := s.List(); werr != nil || len(l.Files) != 0 {
			t.Errorf("List = %+v, %v", l, werr)
		}
		if len(h.Mkdirs) != 0 {
			t.Errorf("created %v", h.Mkdirs)
		}
	})
}

// TestStore_LockSocket pins the lock request: on Linux it carries the
// abstract socket every host binds (LockSocket of the state directory and
// the lock name), and the names export returns the same name.
func TestStore_LockSocket(t *testing.T) {
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	names, werr := s.Names()
	want := lockSocketOf(dir, lockFile)
	if werr != nil || names.LockSocket != want || !strings.HasPrefix(want, "mcp-resume-lock-") || len(want) != len("mcp-resume-lock-")+40 {
		t.Fatalf("Names = %+v, %v; want lock_socket %q", names, werr, want)
	}
	mustLoad(t, s)
	if !slices.ContainsFunc(h.Reqs, func(r string) bool {
		return strings.HasPrefix(r, hostfuncs.FnLock+" ") && strings.Contains(r, `"socket":"`+want+`"`)
	}) {
		t.Errorf("no lock request with the socket: %v", h.Reqs)
	}
	if lockSocketOf(dir+"x", lockFile) == want || lockSocketOf(dir, lockFile+"-0123456789abcdef") == want {
		t.Error("another directory or lock name gives the same socket")
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, p string) {
	t.Helper()
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(p, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}
