package loader

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// housekeep removes what killed processes and old versions left, and
// nothing in use.
func TestHousekeep(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-31 * 24 * time.Hour)
	mk := func(name string, mtime time.Time) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "wazero-v1.9.0-amd64-linux"), 0o700); err != nil {
			t.Fatal(err)
		}
		if !mtime.IsZero() {
			os.Chtimes(p, mtime, mtime)
		}
	}
	mk("tmp-"+strconv.Itoa(gone.Process.Pid)+"-1", time.Time{})              // its process is gone
	mk("tmp-"+strconv.Itoa(os.Getpid())+"-2", time.Time{})                   // this process: in use
	mk("tmp-"+strconv.Itoa(os.Getppid())+"-3", time.Time{})                  // a live process
	mk("tmp-"+strconv.Itoa(os.Getppid())+"-4", time.Now().Add(-2*time.Hour)) // live pid, but too old
	mk("plugin-fresh", time.Time{})
	mk("plugin-old", old)
	mk("wazero-v1.9.0-amd64-linux", old) // the earlier layout
	mk("other", old)                     // not ours to judge
	housekeep(dir)
	want := map[string]bool{
		"tmp-" + strconv.Itoa(os.Getpid()) + "-2":  true,
		"tmp-" + strconv.Itoa(os.Getppid()) + "-3": true,
		"plugin-fresh": true,
		"other":        true,
	}
	entries, _ := os.ReadDir(dir)
	got := map[string]bool{}
	for _, e := range entries {
		got[e.Name()] = true
		if !want[e.Name()] {
			t.Errorf("housekeep kept %s", e.Name())
		}
	}
	for name := range want {
		if !got[name] {
			t.Errorf("housekeep removed %s", name)
		}
	}
}

// The entry's name depends on the module's bytes, and on nothing that
// changes between two processes of the same binary.
func TestEntryDir(t *testing.T) {
	a, b := []byte("\x00asm module a"), []byte("\x00asm module b")
	if EntryDir(a, "/c") != EntryDir(append([]byte(nil), a...), "/c") {
		t.Error("the same bytes name two entries")
	}
	if EntryDir(a, "/c") == EntryDir(b, "/c") {
		t.Error("two modules share an entry")
	}
	if filepath.Dir(EntryDir(a, "/c")) != "/c" || EntryDir(a, NoCache) != "" {
		t.Errorf("EntryDir(/c) = %q, EntryDir(-) = %q", EntryDir(a, "/c"), EntryDir(a, NoCache))
	}
}
