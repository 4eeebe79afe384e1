package procid

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// testBootUUID is the boot ID fixture trees use, as the kernel prints it.
const testBootUUID = "0f1e2d3c-4b5a-6978-8796-A5B4C3D2E1F0\n"

// testBoot is testBootUUID as it appears in a Linux StartTime.
const testBoot = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"

// testNS is the PID namespace inode of every fixture process (and of "self").
const testNS = "4026531836"

// fakeProc is one process in a fixture /proc tree.
type fakeProc struct {
	pid, ppid int
	comm      string
	state     byte   // 0 means 'S'
	start     uint64 // starttime ticks; 0 means 1000+pid
	// cmdline is the raw contents of /proc/<pid>/cmdline; use argv to build
	// it from arguments.
	cmdline string
}

// argv returns the cmdline contents for args: each followed by a NUL.
func argv(args ...string) string {
	if len(args) == 0 {
		return ""
	}
	return strings.Join(args, "\x00") + "\x00"
}

// startTicks returns p's starttime field.
func (p fakeProc) startTicks() uint64 {
	if p.start == 0 {
		return 1000 + uint64(p.pid)
	}
	return p.start
}

// statLine returns p's /proc/<pid>/stat contents: 52 fields, starttime at 22.
func (p fakeProc) statLine() string {
	state := p.state
	if state == 0 {
		state = 'S'
	}
	// Fields 5 (pgrp) to 21 (itrealvalue): 17 fields.
	mid := strings.TrimSpace(strings.Repeat("0 ", 17))
	// Fields 23 (vsize) to 52 (exit_code): 30 fields.
	tail := strings.TrimSpace(strings.Repeat("7 ", 30))
	return fmt.Sprintf("%d (%s) %c %d %s %d %s\n", p.pid, p.comm, state, p.ppid, mid, p.startTicks(), tail)
}

// want returns the Process a reader should report for p with args.
func (p fakeProc) want(args ...string) Process {
	return Process{
		PID:       p.pid,
		PPID:      p.ppid,
		Name:      p.comm,
		Args:      args,
		StartTime: strconv.FormatUint(p.startTicks(), 10) + "." + testBoot + "." + testNS,
	}
}

// writeProc writes p into the fixture tree at root.
func writeProc(t *testing.T, root string, p fakeProc) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(p.pid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(p.statLine()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cmdline"), []byte(p.cmdline), 0o644); err != nil {
		t.Fatal(err)
	}
	writeNS(t, dir)
}

// writeNS links <dir>/ns/pid to the fixture PID namespace.
func writeNS(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "ns"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pid:["+testNS+"]", filepath.Join(dir, "ns", "pid")); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
}

// writeTree writes a fixture /proc tree holding procs and, unless noBoot,
// the boot ID testBootUUID, and returns its root.
func writeTree(t *testing.T, noBoot bool, procs ...fakeProc) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range procs {
		writeProc(t, root, p)
	}
	writeNS(t, filepath.Join(root, "self"))
	if !noBoot {
		dir := filepath.Join(root, "sys", "kernel", "random")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "boot_id"), []byte(testBootUUID), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// diff returns "" when want and got are deeply equal, and otherwise a
// description in (-want +got) form.
func diff(want, got any) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return fmt.Sprintf("(-want +got):\n-%+v\n+%+v", want, got)
}
