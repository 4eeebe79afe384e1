package resume_test

// Ambiguity (ambiguous.go): two live instances of one key under one host.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

func events(h *testHost) []string { return h.events() }

// A second instance launched identically while the first lives finds the
// lock busy: it writes the marker (0600), logs instance_ambiguous once,
// and removes the token; the first then stops too: its loads offer
// nothing, its stores write nothing and delete the token file.
func TestAmbiguous_Marked(t *testing.T) {
	h, dir := newHost(t)
	first := h.open(openInput(dir))
	mustLoad(t, first)
	mustStore(t, first, "tok-1")

	sib := h.sibling()
	second := sib.open(openInput(dir))
	if tok, ok := mustLoad(t, second); ok {
		t.Fatalf("second Load = %q", tok)
	}
	mustStore(t, second, "tok-2")
	mustLoad(t, second)
	if got := events(sib); !slices.Equal(got, []string{resume.EventAmbiguous}) {
		t.Errorf("second logged %v", got)
	}
	l := sib.Logs[len(sib.Logs)-1]
	if l.Level != hostfuncs.LevelWarn || l.Message != resume.MsgAmbiguous || !strings.Contains(l.Detail, "wrote "+markerFile) || !strings.Contains(l.Message, "MCP_RESUME_INSTANCE") {
		t.Errorf("instance_ambiguous line %+v", l)
	}
	info, err := os.Stat(filepath.Join(dir, markerFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("marker: %v, %v", info, err)
	}
	if _, err := os.Stat(filepath.Join(dir, tokenFile)); !os.IsNotExist(err) {
		t.Errorf("token file left by the marking instance: %v", err)
	}

	// The first instance holds the lock; it learns of the marker at its
	// next call and stops.
	write(t, filepath.Join(dir, tokenFile), "tok-1")
	mustStore(t, first, "tok-3")
	if _, err := os.Stat(filepath.Join(dir, tokenFile)); !os.IsNotExist(err) {
		t.Errorf("first instance's store left a token: %v", err)
	}
	if tok, ok := mustLoad(t, first); ok {
		t.Errorf("first Load = %q after the marker", tok)
	}
	mustStore(t, first, "tok-4")
	if got := events(h); !slices.Equal(got, []string{resume.EventNotFound, resume.EventAmbiguous}) {
		t.Errorf("first logged %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, tokenFile)); !os.IsNotExist(err) {
		t.Errorf("token after the first's later store: %v", err)
	}
	if w, _ := first.Whoami(nil); w.MarkerFile != markerFile {
		t.Errorf("whoami marker_file %q", w.MarkerFile)
	}
}

// The marker outlives both instances and their host: a new instance of the
// key (a restart) offers nothing, writes nothing, deletes a token, and
// rewrites the marker (its age is the time since the key was last seen).
func TestAmbiguous_Persists(t *testing.T) {
	h, dir := newHost(t)
	mkdir(t, filepath.Dir(dir), 0o700)
	mkdir(t, dir, 0o700)
	write(t, filepath.Join(dir, markerFile), "x")
	age(t, filepath.Join(dir, markerFile), 10*24*time.Hour)
	write(t, filepath.Join(dir, tokenFile), "tok-old")
	s := h.open(openInput(dir))
	if tok, ok := mustLoad(t, s); ok {
		t.Fatalf("Load = %q with the marker", tok)
	}
	if _, err := os.Stat(filepath.Join(dir, tokenFile)); !os.IsNotExist(err) {
		t.Errorf("token kept: %v", err)
	}
	mustStore(t, s, "tok-new")
	if _, err := os.Stat(filepath.Join(dir, tokenFile)); !os.IsNotExist(err) {
		t.Errorf("store wrote a token: %v", err)
	}
	if got := events(h); !slices.Equal(got, []string{resume.EventAmbiguous}) || !strings.HasPrefix(h.Logs[len(h.Logs)-1].Detail, "found "+markerFile) {
		t.Errorf("logged %+v", h.Logs)
	}
	if info, err := os.Stat(filepath.Join(dir, markerFile)); err != nil || time.Since(info.ModTime()) > time.Hour {
		t.Errorf("marker not refreshed: %v, %v", info, err)
	}
	if h.Calls[hostfuncs.FnLock] != 0 {
		t.Errorf("a marked key took the lock")
	}
}

// Another key is not marked: a declared MCP_RESUME_INSTANCE, or no
// instance (one session per host by choice: busy, no marker).
func TestAmbiguous_OtherKeyOK(t *testing.T) {
	h, dir := newHost(t)
	mkdir(t, filepath.Dir(dir), 0o700)
	mkdir(t, dir, 0o700)
	write(t, filepath.Join(dir, markerFile), "x")
	h.Facts.Env = map[string]string{"MCP_RESUME_INSTANCE": "entry-2"}
	s := h.open(openInput(dir))
	mustLoad(t, s)
	mustStore(t, s, "tok")
	if b, err := os.ReadFile(filepath.Join(dir, plainTokenFile+"-"+keySuffix("entry-2"))); err != nil || string(b) != "tok" {
		t.Errorf("declared key's token: %q, %v (events %v)", b, err, events(h))
	}

	h2, dir2 := newHost(t)
	in := withInstance(dir2, "-")
	mustLoad(t, h2.open(in))
	sib := h2.sibling()
	mustLoad(t, sib.open(in))
	if got := events(sib); !slices.Equal(got, []string{resume.EventInstanceBusy}) {
		t.Errorf("no instance, busy: %v", got)
	}
	entries, _ := os.ReadDir(dir2)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), resume.MarkerPrefix) {
			t.Errorf("marker %s for no instance", e.Name())
		}
	}

	// Two instances that declare one key are ambiguous too, in their words.
	h3, dir3 := newHost(t)
	in = withInstance(dir3, "same")
	mustLoad(t, h3.open(in))
	sib3 := h3.sibling()
	mustLoad(t, sib3.open(in))
	if got := events(sib3); !slices.Equal(got, []string{resume.EventAmbiguous}) || sib3.Logs[len(sib3.Logs)-1].Message != resume.MsgAmbiguousDeclared {
		t.Errorf("declared key twice: %+v", sib3.Logs)
	}
}

// List shows markers as rows of their own (host "ambiguous", no pid),
// never a key; prune removes those unseen for 30 days, never a fresh one
// nor this instance's own.
func TestAmbiguous_ListPrune(t *testing.T) {
	h, dir := newHost(t)
	mkdir(t, filepath.Dir(dir), 0o700)
	mkdir(t, dir, 0o700)
	const (
		oldMarker   = "ambiguous-0123456789abcdef"
		freshMarker = "ambiguous-fedcba9876543210"
	)
	write(t, filepath.Join(dir, oldMarker), "x")
	age(t, filepath.Join(dir, oldMarker), 31*24*time.Hour)
	write(t, filepath.Join(dir, freshMarker), "x")
	age(t, filepath.Join(dir, freshMarker), 29*24*time.Hour)
	write(t, filepath.Join(dir, "ambiguous-XYZ"), "not a marker")
	s := h.open(openInput(dir))
	out, werr := s.List()
	if werr != nil {
		t.Fatal(werr)
	}
	want := []hostfuncs.TokenFile{
		{Name: oldMarker, Instance: "0123456789abcdef", Host: hostfuncs.HostAmbiguous},
		{Name: freshMarker, Instance: "fedcba9876543210", Host: hostfuncs.HostAmbiguous},
	}
	for i := range out.Files {
		out.Files[i].AgeSeconds = 0
	}
	if d := diff(want, out.Files); d != "" {
		t.Errorf("List: %s", d)
	}
	p, _ := s.Prune()
	if d := diff([]hostfuncs.PrunedFile{{Name: oldMarker, Reason: hostfuncs.ReasonUnseen, Host: hostfuncs.HostAmbiguous}}, p.Removed); d != "" {
		t.Errorf("Prune: %s", d)
	}
	// This instance's own marker, however old, is kept (and refreshed).
	write(t, filepath.Join(dir, markerFile), "x")
	age(t, filepath.Join(dir, markerFile), 40*24*time.Hour)
	h2 := h.sibling()
	s2 := h2.open(openInput(dir))
	mustLoad(t, s2)
	if _, err := os.Stat(filepath.Join(dir, markerFile)); err != nil {
		t.Errorf("own marker pruned: %v", err)
	}
	if p, _ := s2.Prune(); len(p.Removed) != 0 {
		t.Errorf("Prune removed %+v", p.Removed)
	}
}
