//go:build linux && faults

package faults_test

// The three example servers the suite runs (Go, Python, TypeScript): where
// each is built, its stress helpers, and the Linux start time every host's
// plugin puts in token file names.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// lang is one language whose example server the suite runs.
type lang struct{ name, title string }

// allLangs are the languages in table-column order.
var allLangs = []lang{{"go", "Go"}, {"python", "Python"}, {"typescript", "TypeScript"}}

// server is one language's example server and its stress helpers.
type server struct {
	lang
	// argv is the server's command line, absolute paths, no arguments
	// (so no instance key: token files are token-<pid>-<start>).
	argv []string
	// stressArgv runs the stress helpers of faults 8 and 9 (FAULTS_HELPER
	// storeloop, loader, hammer) through this language's binding; nil for
	// Go, whose helpers are this test binary (helperBin).
	stressArgv []string
	// kills is fault 8's number of SIGKILLed store loops.
	kills int
}

// cmd returns a copy of the server's command line.
func (s *server) cmd() []string { return append([]string{}, s.argv...) }

// app is the app name the server opens its store with (examples/*-server),
// which names its state directory under the state root.
func (s *server) app() string { return "example-" + s.name }

// shell returns the command line for an unquoted $FAULTS_SERVER in sh.
func (s *server) shell() string { return strings.Join(s.argv, " ") }

// stress returns the command that runs a stress helper.
func (s *server) stress(t *testing.T) []string {
	if s.stressArgv == nil {
		return []string{helperBin(t)}
	}
	return append([]string{}, s.stressArgv...)
}

// repoRoot is the repository root (the test runs in examples/faults).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// findServer returns l's server, or skips l (fails with -faults.require)
// when it is not built.
func findServer(t *testing.T, l lang) *server {
	t.Helper()
	root := repoRoot(t)
	s := &server{lang: l, kills: *faultKillsSlow}
	missing := func(what, target string) *server {
		msg := fmt.Sprintf("the %s example server is not built (%s): run `make %s`", l.title, what, target)
		if *faultRequire {
			t.Fatal(msg)
		}
		skipFault(t, msg)
		return nil
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	switch l.name {
	case "go":
		s.argv, s.kills = []string{bin.Server}, *faultKills
	case "python":
		py := filepath.Join(root, ".venv", "bin", "python")
		script := filepath.Join(root, "examples", "python-server", "server.py")
		if !exists(py) {
			return missing(py+" is missing", "python-setup")
		}
		if out, err := exec.Command(py, "-c", "import mcp_resume, mcp").CombinedOutput(); err != nil {
			return missing(fmt.Sprintf("%s cannot import mcp_resume and mcp: %v %s", py, err, bytes.TrimSpace(out)), "python-setup")
		}
		s.argv = []string{py, script}
		s.stressArgv = []string{py, filepath.Join(root, "examples", "faults", "testdata", "faults_stress.py")}
	case "typescript":
		node, err := exec.LookPath("node")
		if err != nil {
			return missing("node is not on PATH", "typescript-setup")
		}
		script := filepath.Join(root, "examples", "typescript-server", "dist", "server.js")
		binding := filepath.Join(root, "sdk-bindings", "typescript", "dist", "index.js")
		for _, p := range []string{script, binding} {
			if !exists(p) {
				return missing(p+" is missing", "typescript-setup")
			}
		}
		s.argv = []string{node, script}
		s.stressArgv = []string{node, filepath.Join(root, "examples", "faults", "testdata", "faults_stress.mjs")}
	default:
		t.Fatalf("unknown language %q", l.name)
	}
	for _, a := range s.argv {
		if strings.ContainsAny(a, " \t\n'\"$*?[]\\") {
			t.Fatalf("server path %q has characters the suite's shell scripts cannot pass unquoted", a)
		}
	}
	return s
}

// unreachableFor65534 returns the first path among argv's files (and their
// directories) that uid 65534 cannot reach, or "".
func unreachableFor65534(argv []string) string {
	for _, p := range argv {
		if !filepath.IsAbs(p) {
			continue
		}
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
				return d
			}
			if d == "/" {
				break
			}
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o004 == 0 {
			return p
		}
	}
	return ""
}

// cannotImportAs returns why a process of uid:gid cannot start s's Python
// server (its interpreter, then `import mcp_resume, mcp.server` from .venv,
// as packages, not namespace packages made of unreadable directories), or
// "" when it can or s is not the Python server. Reaching the interpreter's
// path (unreachableFor65534) is not enough: a .venv or checkout that other
// users cannot read (made under umask 077, or below a private directory)
// fails only at the import, which would fail the fault with a server that
// never answered instead of naming the cause. `make provision`, as root,
// gives other users what they need (o+x above the interpreter and the
// checkout, o+rX on .venv).
func cannotImportAs(uid, gid int, s *server) string {
	if s.name != "python" {
		return ""
	}
	cmd := exec.Command("setpriv", "--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(gid), "--clear-groups",
		s.argv[0], "-c", "import mcp_resume, mcp.server; assert mcp.__file__ and mcp_resume.__file__, 'a package directory it cannot read was taken for a namespace package'")
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent"}
	if out, err := cmd.CombinedOutput(); err != nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		return fmt.Sprintf("uid %d cannot import mcp_resume and mcp with %s (%v: %s): run `make provision` as root, which lets other users reach the interpreter and the checkout and read .venv", uid, s.argv[0], err, lines[len(lines)-1])
	}
	return ""
}

// linuxStartTime is the Linux start time of pid as every host's plugin
// names it (hostfuncs/README.md, "File names"): field 22 of
// /proc/<pid>/stat, the boot id without dashes, the inode of this
// process's PID namespace, and the device and inode of its program image
// (stat of /proc/<pid>/exe), "<ticks>.<boot_id>.<pid_ns>.<dev>x<ino>". The
// suite computes it on its own, so token file names are checked against an
// independent reading of /proc.
func linuxStartTime(pid int) (string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	fields := strings.Fields(string(stat[i+1:])) // fields 3 ...
	if len(fields) < 20 {
		return "", fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return "", err
	}
	ns = strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	id := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(string(boot)), "-", ""))
	var exe syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/exe", pid), &exe); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s.%s.%s.%dx%d", fields[19], id, ns, uint64(exe.Dev), uint64(exe.Ino)), nil
}
