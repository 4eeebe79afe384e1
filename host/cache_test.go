package host_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-resume/mcp-resume/host"
)

// Code read from the compilation cache is executed, so the cache gets the
// state directory's rules (host/internal/loader, "Cache directories"): a
// cache directory of another user (a real one, made with useradd), one open
// to the group or others, a symbolic link, a foreign or linked file in a
// finished entry, or a cache that would be created inside another user's
// home must each leave the cache untouched: the process compiles in memory
// (it starts on the interpreter) and logs exactly one warning saying why.
// Each test runs real processes (the test binary as a child) on the real
// plugin.

const (
	cacheChildEnv = "HOST_CACHE_CHILD" // the cache directory, or "default"
	cacheWaitEnv  = "HOST_CACHE_WAIT"  // "1": wait for the background compile before exiting
)

// cacheChild opens two stores on the cache directory named by dir (one
// process, one cache decision) with a JSON logger on stderr, prints the
// first one's engine, and with HOST_CACHE_WAIT=1 waits for the background
// compile.
func cacheChild(dir string) int {
	ctx := context.Background()
	if dir == "default" {
		dir = ""
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	state, err := os.MkdirTemp("", "mcp-resume-cache-state-")
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer os.RemoveAll(state)
	var engine string
	for i := range 2 {
		s, err := host.Open(ctx, "cache-app", &host.Options{CacheDir: dir, StateRoot: state, Instance: strconv.Itoa(i), Logger: logger})
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		if i == 0 {
			engine = s.EngineForTest()
		}
		s.Close(ctx)
	}
	fmt.Println(engine)
	if os.Getenv(cacheWaitEnv) == "1" {
		host.WaitAllCompilesForTest(ctx)
	}
	return 0
}

// runCacheChild runs a cache child on dir (with env added) and returns the
// engine it printed and its cache_unusable log lines' details.
func runCacheChild(t *testing.T, dir string, wait bool, env ...string) (string, []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), cacheChildEnv+"="+dir), env...)
	if wait {
		cmd.Env = append(cmd.Env, cacheWaitEnv+"=1")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cache child: %v\n%s%s", err, out, stderr.Bytes())
	}
	var details []string
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		var rec struct{ Event, Detail, Msg string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Event == "cache_unusable" {
			details = append(details, rec.Msg+": "+rec.Detail)
		}
	}
	return strings.TrimSpace(string(out)), details
}

// refusedOnce fails unless the child ran without the cache (interpreter)
// and said why once, with every word in want.
func refusedOnce(t *testing.T, engine string, details []string, want ...string) {
	t.Helper()
	if engine != "interpreted" {
		t.Errorf("engine %q: the process loaded code from the cache", engine)
	}
	if len(details) != 1 {
		t.Fatalf("want exactly one cache_unusable line, got %q", details)
	}
	for _, w := range want {
		if !strings.Contains(details[0], w) {
			t.Errorf("the line %q does not say %q", details[0], w)
		}
	}
}

// filledCache returns a fresh cache directory holding a finished entry.
func filledCache(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache")
	if engine, details := runCacheChild(t, dir, true); engine != "interpreted" || len(details) != 0 {
		t.Fatalf("filling the cache: %s %q", engine, details)
	}
	if engine, details := runCacheChild(t, dir, false); engine != "compiled" || len(details) != 0 {
		t.Fatalf("the filled cache is not used: %s %q", engine, details)
	}
	return dir
}

// snapshot lists every entry under root with its mode, owner, size and
// modification time.
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		out[p] = fmt.Sprintf("%v %d %d %d", info.Mode(), st.Uid, info.Size(), info.ModTime().UnixNano())
		return nil
	})
	return out
}

// otherUser is a real second user, created with useradd when missing.
func otherUser(t *testing.T) (uid, gid int) {
	t.Helper()
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs Linux and root: files of another user")
	}
	const name = "mcpresume-other"
	u, err := user.Lookup(name)
	if err != nil {
		if out, err := exec.Command("useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
			t.Skipf("useradd: %v %s", err, out)
		}
		if u, err = user.Lookup(name); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// The attack: another user compiled the plugin into a cache directory that
// root's server uses too, and could have replaced its machine code.
func TestCache_AnotherUsersCacheIsNeverUsed(t *testing.T) {
	uid, gid := otherUser(t)
	dir := filledCache(t)
	filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, uid, gid)
		}
		return err
	})
	before := snapshot(t, dir)
	engine, details := runCacheChild(t, dir, true)
	refusedOnce(t, engine, details, dir, "owned by uid "+strconv.Itoa(uid))
	if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
		t.Errorf("the other user's cache was changed:\nbefore %v\nafter  %v", before, after)
	}
}

func TestCache_OpenToOthersIsNotUsed(t *testing.T) {
	dir := filledCache(t)
	for _, mode := range []os.FileMode{0o770, 0o707, 0o755} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			os.Chmod(dir, mode)
			before := snapshot(t, dir)
			engine, details := runCacheChild(t, dir, false)
			refusedOnce(t, engine, details, dir, fmt.Sprintf("mode %04o", mode), "chmod 700 "+dir)
			if after := snapshot(t, dir); !reflect.DeepEqual(before, after) {
				t.Error("the cache was changed")
			}
		})
	}
	os.Chmod(dir, 0o700) // the fix the line gives
	if engine, details := runCacheChild(t, dir, false); engine != "compiled" || len(details) != 0 {
		t.Errorf("after chmod 700: %s %q", engine, details)
	}
}

func TestCache_SymlinkIsNotUsed(t *testing.T) {
	tmp := t.TempDir()
	target := filepath.Join(tmp, "elsewhere")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "cache")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	engine, details := runCacheChild(t, link, true)
	refusedOnce(t, engine, details, link, "symbolic link")
	if entries, _ := os.ReadDir(target); len(entries) != 0 {
		t.Errorf("the cache was written through the symlink: %v", entries)
	}
}

// Left from a time the directory was open to others: a file of another
// user, or a link to code elsewhere, inside a finished entry.
func TestCache_PlantedEntryFileIsNotUsed(t *testing.T) {
	uid, _ := otherUser(t)
	for _, plant := range []string{"foreign", "symlink"} {
		t.Run(plant, func(t *testing.T) {
			dir := filledCache(t)
			var victim string
			filepath.WalkDir(host.CacheEntryForTest(dir), func(p string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() && victim == "" {
					victim = p
				}
				return err
			})
			if victim == "" {
				t.Fatal("no file in the entry")
			}
			if plant == "foreign" {
				os.Lchown(victim, uid, -1)
			} else {
				moved := filepath.Join(t.TempDir(), "code")
				if err := os.Rename(victim, moved); err != nil {
					t.Fatal(err)
				}
				os.Symlink(moved, victim)
			}
			engine, details := runCacheChild(t, dir, false)
			refusedOnce(t, engine, details, victim)
		})
	}
}

// Root running with a user's HOME (sudo -E) must not create the cache
// directory in it: the user's own servers could no longer use it.
func TestCache_NotCreatedInAnotherUsersHome(t *testing.T) {
	uid, gid := otherUser(t)
	home := filepath.Join(t.TempDir(), "home")
	cacheHome := filepath.Join(home, ".cache")
	if err := os.MkdirAll(cacheHome, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(home, uid, gid)
	os.Chown(cacheHome, uid, gid)
	engine, details := runCacheChild(t, "default", true, "XDG_CACHE_HOME="+cacheHome, "HOME="+home)
	refusedOnce(t, engine, details, cacheHome, "owned by uid "+strconv.Itoa(uid))
	if entries, _ := os.ReadDir(cacheHome); len(entries) != 0 {
		t.Errorf("created in another user's home: %v", entries)
	}
}

// A fresh default cache is private, and used by the next start.
func TestCache_FreshDefaultIsPrivate(t *testing.T) {
	cacheHome := filepath.Join(t.TempDir(), "xdg")
	engine, details := runCacheChild(t, "default", true, "XDG_CACHE_HOME="+cacheHome)
	if engine != "interpreted" || len(details) != 0 {
		t.Fatalf("first start: %s %q", engine, details)
	}
	for _, d := range []string{cacheHome, filepath.Join(cacheHome, "mcp-resume"), filepath.Join(cacheHome, "mcp-resume", "wazero")} {
		if info, err := os.Lstat(d); err != nil || info.Mode().Perm() != 0o700 {
			t.Errorf("%s: %v %v, want mode 0700", d, info.Mode(), err)
		}
	}
	if engine, details := runCacheChild(t, "default", false, "XDG_CACHE_HOME="+cacheHome); engine != "compiled" || len(details) != 0 {
		t.Errorf("second start: %s %q", engine, details)
	}
}
