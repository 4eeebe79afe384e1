//go:build linux && handles

package handles_test

// Bad input over MCP (rows H1-H8): handles that are not handles, a note too
// large to store, and records on disk that are truncated, owned by another
// user or replaced by a symbolic link. One server per language serves every
// row in turn; after each row it must still answer another tool and read
// back another notebook unchanged.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

// badFx is one language's server for the bad-input rows, with a notebook
// no row touches ("keep me", generation 2).
type badFx struct {
	*fx
	s     *server
	srv   *mcphost.Server
	other string
}

// serving reports "yes" when the server answers session_info and reads the
// untouched notebook back unchanged, else what failed.
func (b *badFx) serving() string {
	ctx := context.Background()
	if _, err := b.srv.SessionInfo(ctx); err != nil {
		return "no: session_info: " + err.Error()
	}
	notes, gen, err := b.srv.NotebookRead(ctx, b.other)
	if err != nil || gen != 2 || !slices.Equal(notes, []string{"keep me"}) {
		return fmt.Sprintf("no: another notebook read back %q generation %d, %v", notes, gen, err)
	}
	return "yes"
}

// codes calls notebook_read, notebook_add and notebook_delete with handle
// and returns the error code each answered ("ok" for none).
func (b *badFx) codes(handle string) []string { return codesOn(b.srv, handle) }

// codesOn is codes on the server srv.
func codesOn(srv *mcphost.Server, handle string) []string {
	ctx := context.Background()
	_, _, e1 := srv.NotebookRead(ctx, handle)
	_, e2 := srv.NotebookAdd(ctx, handle, "x", 0)
	e3 := srv.NotebookDelete(ctx, handle, 0)
	var out []string
	for _, err := range []error{e1, e2, e3} {
		switch c := mcphost.ErrorCode(err); {
		case err == nil:
			out = append(out, "ok")
		case c == "":
			out = append(out, "call failed: "+err.Error())
		default:
			out = append(out, c)
		}
	}
	return out
}

// distinct returns the sorted distinct values of xs, joined by ", ".
func distinct(xs []string) string {
	s := slices.Clone(xs)
	sort.Strings(s)
	return strings.Join(slices.Compact(s), ", ")
}

// snapshot describes every entry of dir but the lock files (name, type,
// size, mode, mtime), to tell whether anything in it changed.
func snapshot(dir string) string {
	var b strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		// A shard's lock file is made, empty, the first time the shard
		// is locked (an unknown handle's slow path may be the first): it
		// coordinates, it holds nothing of the store.
		if strings.HasPrefix(e.Name(), "lock-") {
			continue
		}
		if fi, err := e.Info(); err == nil {
			fmt.Fprintf(&b, "%s %v %d %d\n", e.Name(), fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return b.String()
}

// createWithRecord creates a notebook holding note (generation 2) and
// returns its handle and its record file, the one h-* file that appeared.
func (b *badFx) createWithRecord(note string) (string, string) {
	t := b.T
	t.Helper()
	before := b.recordFiles()
	nb := b.create(b.srv)
	if _, err := b.srv.NotebookAdd(context.Background(), nb.Handle, note, 1); err != nil {
		t.Fatal(err)
	}
	var added []string
	for _, f := range b.recordFiles() {
		if !slices.Contains(before, f) {
			added = append(added, f)
		}
	}
	if len(added) != 1 {
		t.Fatalf("creating a notebook added record files %v, want one h-<key hash>", added)
	}
	return nb.Handle, added[0]
}

func faultBadInput(t *testing.T, s *server) {
	f := newFx(t)
	b := &badFx{fx: f, s: s, srv: f.launch(s.argv)}
	nb := f.create(b.srv)
	b.other = nb.Handle
	if _, err := b.srv.NotebookAdd(context.Background(), b.other, "keep me", 1); err != nil {
		t.Fatal(err)
	}
	t.Run("handles", b.handleSyntax)
	t.Run("oversized_note", b.oversizedNote)
	t.Run("foreign_owned", b.foreignOwned)
	for _, rf := range recordFaults {
		t.Run(rf.name, func(t *testing.T) { b.T = t; b.recordFault(rf) })
	}
}

// handleSyntax: rows H1-H4, handles the server must refuse before any I/O
// (invalid_handle, nothing in the store changes) or not know
// (handle_not_found).
func (b *badFx) handleSyntax(t *testing.T) {
	b.T = t
	var random [24]byte
	rand.Read(random[:])
	a31 := strings.Repeat("A", 31)
	rows := []struct {
		id, fault, injection string
		handles              []string
	}{
		{"H1", "Unknown handle", "a well-formed handle (mrh1_ + 24 random bytes in base64url) the store never issued",
			[]string{"mrh1_" + base64.RawURLEncoding.EncodeToString(random[:])}},
		{"H2", "Malformed handles", "8 variants: empty, `not-a-handle`, one character short, one too many, prefix `MRH1_`, a `=` pad, a `/` (standard base64), a NUL",
			[]string{"", "not-a-handle", "mrh1_" + a31, "mrh1_" + a31 + "AA", "MRH1_" + a31 + "A", "mrh1_" + a31 + "=", "mrh1_" + a31 + "/", "mrh1_" + a31 + "\x00"}},
		{"H3", "Oversized handle", "`mrh1_` followed by 64 KiB of `A`",
			[]string{"mrh1_" + strings.Repeat("A", 64<<10)}},
		{"H4", "Non-ASCII handles", "`mrh1_` + 16 × `é` (37 bytes, the right length), and `mrh1_` + 31 `A` + `ß`",
			[]string{"mrh1_" + strings.Repeat("é", 16), "mrh1_" + a31 + "ß"}},
	}
	for _, r := range rows {
		before := snapshot(b.handlesDir())
		var all []string
		for _, h := range r.handles {
			all = append(all, b.codes(h)...)
		}
		changed := "no file of the store changed"
		if snapshot(b.handlesDir()) != before {
			changed = "files of the store changed"
		}
		want := "invalid_handle"
		if r.id == "H1" {
			want = "handle_not_found"
		}
		if got := distinct(all); got != want || changed != "no file of the store changed" {
			t.Errorf("%s %s: notebook_read/add/delete answered %s, %s; want only %s and no change", r.id, r.fault, got, changed, want)
		}
		outcome := fmt.Sprintf("notebook_read, notebook_add and notebook_delete answered %s for every variant; %s", distinct(all), changed)
		addRow(b.s.lang, r.id, r.fault, r.injection, result{Outcome: outcome, Seen: distinct(all), Serving: b.serving()})
	}
}

// oversizedNote: row H5, a note that makes the notebook larger than the
// store's 1 MiB value limit.
func (b *badFx) oversizedNote(t *testing.T) {
	b.T = t
	h, rec := b.createWithRecord("small")
	before, _ := os.ReadFile(rec)
	_, err := b.srv.NotebookAdd(context.Background(), h, strings.Repeat("n", 1<<20+1), 0)
	after, _ := os.ReadFile(rec)
	notes, gen, rerr := b.srv.NotebookRead(context.Background(), h)
	kept := "the record is unchanged and reads back generation 2"
	if !bytes.Equal(before, after) || rerr != nil || gen != 2 || !slices.Equal(notes, []string{"small"}) {
		kept = fmt.Sprintf("the notebook changed: %d notes, generation %d, %v", len(notes), gen, rerr)
	}
	code := mcphost.ErrorCode(err)
	if code != "value_too_large" || !strings.HasPrefix(kept, "the record is unchanged") {
		t.Errorf("notebook_add of a 1 MiB + 1 byte note: %v (%s); want value_too_large and nothing written", err, kept)
	}
	addRow(b.s.lang, "H5", "Oversized note", "notebook_add of a 1 MiB + 1 byte note (the store's value limit is 1 MiB)",
		result{Outcome: "notebook_add answered " + code + "; " + kept, Seen: code, Serving: b.serving()})
}

// recordFault is a damage done to one notebook's record file.
type recordFault struct {
	name, id, fault, injection string
	// damage damages rec and returns a check of what it left outside the
	// store ("" when nothing to check).
	damage func(t testing.TB, rec string) func() string
}

var recordFaults = []recordFault{
	{"truncated", "H6", "Truncated record", "the notebook's record file `h-<key hash>` truncated to half its size",
		func(t testing.TB, rec string) func() string {
			fi, err := os.Stat(rec)
			if err == nil {
				err = os.Truncate(rec, fi.Size()/2)
			}
			if err != nil {
				t.Fatal(err)
			}
			return nil
		}},
	{"symlinked", "H8", "Symlinked record", "the record file replaced by a symbolic link to a copy of it outside the state directory",
		func(t testing.TB, rec string) func() string {
			data, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			outside := filepath.Join(t.TempDir(), "outside")
			if err := os.WriteFile(outside, data, 0o600); err == nil {
				if err = os.Remove(rec); err == nil {
					err = os.Symlink(outside, rec)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			return func() string {
				if got, err := os.ReadFile(outside); err != nil || !bytes.Equal(got, data) {
					return "the link's target was changed"
				}
				return "the link's target is untouched"
			}
		}},
}

// recordFault: rows H6-H8. The notebook answers handle_not_found on every
// later call; the outcome says whether the damaged file was removed.
func (b *badFx) recordFault(rf recordFault) {
	t := b.T
	h, rec := b.createWithRecord("note of the damaged notebook")
	check := rf.damage(t, rec)
	mark := len(b.Stderr.String())
	answers := b.codes(h) // read, add, delete
	_, _, again := b.srv.NotebookRead(context.Background(), h)
	answers = append(answers, mcphost.ErrorCode(again))
	logged := strings.Contains(strings.ToLower(b.Stderr.String()[mark:]), "corrupt")
	fate := "the file was removed"
	if _, err := os.Lstat(rec); err == nil {
		fate = "the file was left in place"
	}
	if check != nil {
		fate += "; " + check()
	}
	seen := distinct(answers)
	if seen != "handle_not_found" {
		t.Errorf("%s: notebook_read/add/delete/read answered %q; want handle_not_found every time", rf.fault, answers)
	}
	if logged {
		seen += "; logged as corrupt"
	}
	addRow(b.s.lang, rf.id, rf.fault, rf.injection, result{
		Outcome: fmt.Sprintf("notebook_read, notebook_add, notebook_delete and a second notebook_read answered %s; %s", distinct(answers), fate),
		Seen:    seen, Serving: b.serving()})
}

// dropDAC runs a command as root without CAP_DAC_OVERRIDE and
// CAP_DAC_READ_SEARCH: it cannot read another user's 0600 file, as a
// server run by an ordinary user cannot.
var dropDAC = []string{"setpriv", "--inh-caps=-dac_override,-dac_read_search", "--bounding-set=-dac_override,-dac_read_search", "--"}

// foreignOwned: row H7, a record chown'ed to uid 65534. The server, root
// with every capability, reads it as usual: the 0700 directory is the
// boundary, as for token files (fault 5). A second server of the same
// language on the same store, as root without the capabilities that
// bypass file permissions, cannot read it: it answers handle_not_found.
func (b *badFx) foreignOwned(t *testing.T) {
	b.T = t
	if os.Geteuid() != 0 {
		skipRow(t, "chown to another user needs root")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		skipRow(t, "setpriv is not on PATH")
	}
	ctx := context.Background()
	h, rec := b.createWithRecord("note of the foreign notebook")
	if err := os.Chown(rec, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	notes, gen, err := b.srv.NotebookRead(ctx, h)
	privileged := "the server (root) read the notes as usual"
	if err != nil || gen != 2 || !slices.Equal(notes, []string{"note of the foreign notebook"}) {
		privileged = fmt.Sprintf("the server (root) read %q generation %d, %v", notes, gen, err)
		t.Errorf("root server reading a record owned by uid 65534: %s; want the notes (the 0700 directory is the boundary)", privileged)
	}
	weak := b.launch(append(slices.Clone(dropDAC), b.s.argv...))
	mark := len(b.Stderr.String())
	answers := codesOn(weak, h)
	_, _, again := weak.NotebookRead(ctx, h)
	answers = append(answers, mcphost.ErrorCode(again))
	fate := "the file was removed"
	if _, err := os.Lstat(rec); err == nil {
		fate = "the file was left in place"
	}
	seen := distinct(answers)
	if seen != "handle_not_found" {
		t.Errorf("a server that cannot read the record: notebook_read/add/delete/read answered %q; want handle_not_found every time", answers)
	}
	if strings.Contains(strings.ToLower(b.Stderr.String()[mark:]), "corrupt") {
		seen += "; logged as corrupt"
	}
	serving := b.serving()
	if _, err := weak.SessionInfo(ctx); err != nil && serving == "yes" {
		serving = "no: the unprivileged server's session_info: " + err.Error()
	}
	addRow(b.s.lang, "H7", "Record owned by another user",
		"the record file chown'ed to uid 65534 (mode 0600 kept); read by the server (root), then by a second server of the language on the same store run as root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (`setpriv`), which cannot read it, as an ordinary user's server could not",
		result{Outcome: fmt.Sprintf("%s (the 0700 directory is the boundary, as for token files in fault 5); the second server's notebook_read, notebook_add, notebook_delete and a second notebook_read answered %s; %s", privileged, distinct(answers), fate),
			Seen: seen, Serving: serving})
}
