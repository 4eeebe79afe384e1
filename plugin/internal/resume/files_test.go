package resume_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// age sets the modification time of p (not following a symlink) to ago
// before now.
func age(t *testing.T, p string, ago time.Duration) {
	t.Helper()
	when := time.Now().Add(-ago)
	tv := []unix.Timeval{unix.NsecToTimeval(when.UnixNano()), unix.NsecToTimeval(when.UnixNano())}
	if err := unix.Lutimes(p, tv); err != nil {
		t.Fatal(err)
	}
}

// names returns the names in dir, sorted.
func names(t *testing.T, dir string) []string {
	t.Helper()
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

const staleTemp = ".token-7-1.0123456789abcdef.tmp"

// TestStore_Sweep: after judging the state directory the plugin removes its
// own temporary files left over by a killed writer (regular files named
// .<name>.<16 hex>.tmp, older than 60 s) and nothing else: not a fresh one
// (a writer at work), not another dot file, not a directory or a symlink
// named like one. It sweeps once per store, with the listing the prune uses.
func TestStore_Sweep(t *testing.T) {
	h, dir := newHost(t)
	mkdir(t, filepath.Dir(dir), 0o700)
	mkdir(t, dir, 0o700)
	old := 2 * time.Minute
	write(t, filepath.Join(dir, staleTemp), "half")
	age(t, filepath.Join(dir, staleTemp), old)
	keep := map[string]func(p string){
		".token-7-1.fedcba9876543210.tmp":   func(p string) { write(t, p, "fresh") },
		".notes":                            func(p string) { write(t, p, "mine"); age(t, p, old) },
		".token-7-1.tmp":                    func(p string) { write(t, p, "not the form"); age(t, p, old) },
		".token-7-1.0123456789ABCDEF.tmp":   func(p string) { write(t, p, "upper hex"); age(t, p, old) },
		".a b.0123456789abcdef.tmp":         func(p string) { write(t, p, "not a plugin name"); age(t, p, old) },
		".lock-7-1.0123456789abcdef.tmp":    func(p string) { mkdir(t, p, 0o700); age(t, p, old) },
		".token-8-1.0123456789abcdef.tmp":   func(p string) { symlink(t, "nowhere", p); age(t, p, old) },
		"token-7-1.0123456789abcdef.tmp.ok": func(p string) { write(t, p, "x"); age(t, p, old) },
	}
	for n, make := range keep {
		make(filepath.Join(dir, n))
	}
	s := h.open(openInput(dir))
	mustLoad(t, s)
	want := []string{lockFile}
	for n := range keep {
		want = append(want, n)
	}
	slices.Sort(want)
	if got := names(t, dir); !slices.Equal(got, want) {
		t.Errorf("after load:\n got %q\nwant %q", got, want)
	}
	removes := h.Calls[hostfuncs.FnRemove]
	if removes != 1 {
		t.Errorf("%d mcp_resume_remove calls, want 1 (the stale temp)\n%s", removes, strings.Join(h.Reqs, "\n"))
	}
	// Once per store: a later listing does not sweep again.
	write(t, filepath.Join(dir, staleTemp), "half")
	age(t, filepath.Join(dir, staleTemp), old)
	if _, werr := s.List(); werr != nil {
		t.Fatal(werr)
	}
	if h.Calls[hostfuncs.FnRemove] != removes || h.Calls[hostfuncs.FnList] != 2 {
		t.Errorf("list swept again or listed twice: %v", h.Calls)
	}
	// A new store (the CLI's list) sweeps without creating anything.
	h2 := h.sibling()
	s2 := h2.open(openInput(dir))
	if _, werr := s2.List(); werr != nil {
		t.Fatal(werr)
	}
	if _, err := os.Lstat(filepath.Join(dir, staleTemp)); !os.IsNotExist(err) {
		t.Errorf("list export left the stale temp: %v", err)
	}
}

// TestStore_SweepWhenBusy: the sweep follows the verdict on the directory,
// not the lock: an instance that finds the lock busy still sweeps. (No
// instance key, so the second instance only runs without resume.)
func TestStore_SweepWhenBusy(t *testing.T) {
	h, dir := newHost(t)
	in := `{"app":"conformance","state_root":` + strconv.Quote(filepath.Dir(dir)) + `,"instance":"-"}`
	first := h.open(in)
	mustLoad(t, first)
	write(t, filepath.Join(dir, staleTemp), "half")
	age(t, filepath.Join(dir, staleTemp), 2*time.Minute)
	h2 := h.sibling()
	s := h2.open(in)
	mustLoad(t, s)
	if ev := h2.events(); !slices.Contains(ev, resume.EventInstanceBusy) {
		t.Errorf("events %q, want %s", ev, resume.EventInstanceBusy)
	}
	if _, err := os.Lstat(filepath.Join(dir, staleTemp)); !os.IsNotExist(err) {
		t.Errorf("busy instance left the stale temp: %v", err)
	}
}

// TestStore_ListFilters: the host lists every entry, in any order; the
// plugin keeps regular files whose names obey its rule and parse as token
// files, sorted by name.
func TestStore_ListFilters(t *testing.T) {
	h, dir := newHost(t)
	mkdir(t, filepath.Dir(dir), 0o700)
	mkdir(t, dir, 0o700)
	const (
		a = "token-5000-1000.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x1234567"
		b = "token-5001-1000.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x1234567"
	)
	write(t, filepath.Join(dir, b), "tok-B")
	write(t, filepath.Join(dir, a), "tok-A")
	mkdir(t, filepath.Join(dir, "token-5002-1000.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x1234567"), 0o700)
	symlink(t, a, filepath.Join(dir, "token-5003-1000.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x1234567"))
	write(t, filepath.Join(dir, ".token-5004-1000.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x1234567"), "hidden")
	write(t, filepath.Join(dir, "token-5005-1000.0F1E"), "upper case")
	write(t, filepath.Join(dir, "token-5006-1000 x"), "space")
	write(t, filepath.Join(dir, "token-5007-1000.é"), "not ASCII")
	write(t, filepath.Join(dir, "lock-5008-1000"), "")
	s := h.open(openInput(dir))
	out, werr := s.List()
	if werr != nil {
		t.Fatal(werr)
	}
	var got []string
	for _, f := range out.Files {
		got = append(got, f.Name)
	}
	if want := []string{a, b}; !slices.Equal(got, want) {
		t.Errorf("List names %q, want %q", got, want)
	}
}

// TestStore_RelativeStateRoot: hosts pass state_root as the user gave it; the
// plugin takes a relative one from the server's working directory and
// cleans it, and refuses it when the working directory is unknown or
// inexact.
func TestStore_RelativeStateRoot(t *testing.T) {
	h, dir := newHost(t)
	root := filepath.Dir(filepath.Dir(dir))
	h.Facts.Cwd = root + "/work/"
	s := resume.New(h.Call)
	// No instance: the working directory is part of the default key.
	out, werr := s.Open([]byte(`{"app":"conformance","state_root":"../state/./","instance":""}`))
	if werr != nil || out.StateDir != dir || out.StateRoot != filepath.Dir(dir) {
		t.Fatalf("Open = %+v, %v; want state_dir %s", out, werr, dir)
	}
	h.Dir = out.StateDir
	mustLoad(t, s)
	mustStore(t, s, "tok-A")
	if b, err := os.ReadFile(filepath.Join(dir, plainTokenFile)); err != nil || string(b) != "tok-A" {
		t.Errorf("token file: %q, %v", b, err)
	}
	for cwd, why := range map[string]string{
		"":                "the server's working directory is unknown (the host could not read it)",
		"relative/cwd":    "the server's working directory is unknown (the host could not read it)",
		root + "/\ufffdx": "the server's working directory holds bytes the host could not carry exactly",
	} {
		h, _ := newHost(t)
		h.Facts.Cwd = cwd
		_, werr := resume.New(h.Call).Open([]byte(`{"app":"conformance","state_root":"state"}`))
		want := `state_root "state" is a relative path and ` + why + "; give an absolute path"
		if werr == nil || werr.Code != hostfuncs.CodeInvalidOption || werr.Message != want {
			t.Errorf("cwd %q: Open error %v, want %s", cwd, werr, want)
		}
	}
}

// TestStore_WriteNamesTemp: write sends the temporary name
// .<name>.<16 lowercase hex>.tmp, a new one each time, and the host leaves
// none behind.
func TestStore_WriteNamesTemp(t *testing.T) {
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	mustLoad(t, s)
	mustStore(t, s, "tok-A")
	mustStore(t, s, "tok-B")
	form := regexp.MustCompile(`^\.` + regexp.QuoteMeta(tokenFile) + `\.[0-9a-f]{16}\.tmp$`)
	if len(h.Temps) != 2 || !form.MatchString(h.Temps[0]) || !form.MatchString(h.Temps[1]) || h.Temps[0] == h.Temps[1] {
		t.Errorf("temp names %q", h.Temps)
	}
	if got := names(t, dir); !slices.Equal(got, []string{lockFile, tokenFile}) {
		t.Errorf("state directory holds %q", got)
	}
}

// The plugin's names fit the host rule with their temporary names: 233
// bytes of name make a 255-byte temp name.
func TestTempName(t *testing.T) {
	long := strings.Repeat("a", resume.MaxNameLen)
	if !resume.ValidFileName(long) || resume.ValidFileName(long+"a") {
		t.Errorf("ValidFileName at %d/%d bytes", resume.MaxNameLen, resume.MaxNameLen+1)
	}
	tmp := resume.TempName(long)
	if len(tmp) != hostfuncs.MaxNameLen || !hostfuncs.ValidName(tmp) || !resume.IsTempName(tmp) {
		t.Errorf("TempName(233 bytes) = %d bytes, host-valid %v, IsTempName %v", len(tmp), hostfuncs.ValidName(tmp), resume.IsTempName(tmp))
	}
	for n, want := range map[string]bool{
		staleTemp: true, ".x.0000000000000000.tmp": true,
		".token-7-1.tmp": false, ".0123456789abcdef.tmp": false, "..0123456789abcdef.tmp": false,
		".x.0123456789abcdeg.tmp": false, ".x.0123456789abcde.tmp": false, ".x.0123456789ABCDEF.tmp": false,
		"x.0123456789abcdef.tmp": false, ".x.0123456789abcdef.tmpx": false, ".a/b.0123456789abcdef.tmp": false,
		"." + long + "a.0123456789abcdef.tmp": false,
	} {
		if got := resume.IsTempName(n); got != want {
			t.Errorf("IsTempName(%q) = %v, want %v", n, got, want)
		}
	}
}
