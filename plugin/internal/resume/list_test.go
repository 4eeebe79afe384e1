package resume_test

// The list and prune exports (list.go) over real files.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// TestStore_ListAndPrune covers list (hosts and ages, never contents) and
// prune's reasons: a gone host's token and lock go (host_gone); a token
// whose host cannot be checked goes once older than 30 days (aged), its
// lock stays; live hosts' files and this instance's own stay.
func TestStore_ListAndPrune(t *testing.T) {
	h, dir := newHost(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	other := "5151-12345.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026532000" // another PID namespace: unknown
	files := map[string]int{                                          // name -> age in days
		tokenFile:         0,
		"token-7777-2.cd": 1,  // pid 7777 absent: gone
		"lock-7777-2.cd":  40, // gone: goes too
		"token-" + other:  40, // unknown, old: aged
		"lock-" + other:   40, // unknown lock: kept
		"token-8888-3.ef": 29, // hidden (kill0 permission): unknown, young: kept
		"token-x-1.a":     50, // not a token name: ignored
		"notes.txt":       50,
	}
	for name, days := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("t"), 0o600); err != nil {
			t.Fatal(err)
		}
		mt := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	h.Proc["kill0 8888"] = fail(hostfuncs.CodePermission)
	s := h.open(openInput(dir))
	l, werr := s.List()
	if werr != nil {
		t.Fatal(werr)
	}
	got := map[string]string{}
	for _, f := range l.Files {
		got[f.Name] = f.Host
		if f.Name == "token-"+other && (f.AgeSeconds < 40*86400-5 || f.PID != 5151) {
			t.Errorf("listed %+v", f)
		}
	}
	want := map[string]string{tokenFile: hostfuncs.HostAlive, "token-7777-2.cd": hostfuncs.HostGone, "token-" + other: hostfuncs.HostUnknown, "token-8888-3.ef": hostfuncs.HostUnknown}
	if d := diff(want, got); d != "" {
		t.Errorf("List %s", d)
	}
	p, werr := s.Prune()
	if werr != nil {
		t.Fatal(werr)
	}
	wantRemoved := []hostfuncs.PrunedFile{
		{Name: "token-" + other, Reason: hostfuncs.ReasonAged, Host: hostfuncs.HostUnknown},
		{Name: "token-7777-2.cd", Reason: hostfuncs.ReasonHostGone, Host: hostfuncs.HostGone},
		{Name: "lock-7777-2.cd", Reason: hostfuncs.ReasonHostGone, Host: hostfuncs.HostGone},
	}
	if d := diff(wantRemoved, p.Removed); d != "" {
		t.Errorf("Prune %s", d)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	wantLeft := []string{"lock-" + other, "notes.txt", tokenFile, "token-8888-3.ef", "token-x-1.a"}
	slices.Sort(wantLeft)
	if !slices.Equal(left, wantLeft) {
		t.Errorf("left %v, want %v", left, wantLeft)
	}
	if n := len(h.events()); n != 3 {
		t.Errorf("logged %v", h.events())
	}
	// A live host's files are never pruned, whatever their age.
	old := time.Now().Add(-400 * 24 * time.Hour)
	os.Chtimes(filepath.Join(dir, tokenFile), old, old)
	if p, _ := s.Prune(); len(p.Removed) != 0 {
		t.Errorf("second Prune removed %+v", p.Removed)
	}
}

// TestStore_ListMissingDir: list and prune of a state directory that does
// not exist answer empty and create nothing (no mcp_resume_prepare_dir "mkdir").
func TestStore_ListMissingDir(t *testing.T) {
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	if l, werr := s.List(); werr != nil || len(l.Files) != 0 || l.Files == nil {
		t.Errorf("List = %+v, %v", l, werr)
	}
	if p, werr := s.Prune(); werr != nil || len(p.Removed) != 0 || p.Removed == nil {
		t.Errorf("Prune = %+v, %v", p, werr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state directory exists: %v", err)
	}
	if slices.ContainsFunc(h.Reqs, func(r string) bool { return strings.Contains(r, `"op":"mkdir"`) }) {
		t.Errorf("list or prune asked for a mkdir: %v", h.Reqs)
	}
	// An unsafe directory is an io error for list.
	if err := os.MkdirAll(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o770)
	if _, werr := s.List(); werr == nil || werr.Code != hostfuncs.CodeIO {
		t.Errorf("List of a group-writable directory = %v", werr)
	}
}

// A file stamped ahead of the host's clock lists with age 0, never a
// negative age: hosts report floor(now - mtime), which is -1 for a file
// written within the same second by a clock of coarser resolution.
func TestStore_ListAgeNeverNegative(t *testing.T) {
	h, dir := newHost(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, tokenFile)
	if err := os.WriteFile(p, []byte("t"), 0o600); err != nil {
		t.Fatal(err)
	}
	ahead := time.Now().Add(time.Hour)
	if err := os.Chtimes(p, ahead, ahead); err != nil {
		t.Fatal(err)
	}
	l, werr := h.open(openInput(dir)).List()
	if werr != nil || len(l.Files) != 1 || l.Files[0].AgeSeconds != 0 {
		t.Errorf("List() = %+v, %v; want one file of age 0", l, werr)
	}
}
