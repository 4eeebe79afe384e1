//go:build linux && handles

package handles_test

// TestHandles runs every fault in every language, then checks the handle
// table; TestCrossLanguage passes one notebook between the three servers.

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

// TestHandles runs the bad-input, full-disk, expiry, crash and concurrency
// faults for each language (the languages of one fault in parallel: most
// of their time is process start-up and sleeping), then compares the table
// of what happened with docs/RELIABILITY.md.
func TestHandles(t *testing.T) {
	faults := []struct {
		name string
		run  func(*testing.T, *server)
	}{
		{"bad_input", faultBadInput},
		{"full_disk", faultFullDisk},
		{"expiry", faultIdleExpiry},
		{"crash", faultCrash},
		{"cas", faultCAS},
		{"principals", faultPrincipals},
	}
	for _, fault := range faults {
		t.Run(fault.name, func(t *testing.T) {
			for _, l := range allLangs {
				t.Run(l.name, func(t *testing.T) {
					t.Parallel()
					start := time.Now()
					fault.run(t, findServer(t, l))
					t.Logf("%s/%s took %v", fault.name, l.name, time.Since(start).Round(time.Millisecond))
				})
			}
		})
	}
	checkTable(t)
}

// TestCrossLanguage: the Python server creates a notebook, the Go server
// adds to it, the TypeScript server adds again (compare-and-set on the
// generation the Go server returned), and the Python server reads
// generation 3 and both notes; all four processes share one state root and
// run at once. The Go server runs with MCP_RESUME=off: resume off does not
// turn the handle store off. Then a stale generation is refused across
// languages, a delete is seen by the others, and no file of the store holds
// a note or a handle.
func TestCrossLanguage(t *testing.T) {
	py, goSrv, ts := findServer(t, allLangs[1]), findServer(t, allLangs[0]), findServer(t, allLangs[2])
	f := newFx(t)
	ctx := context.Background()

	p := f.launch(py.argv)
	nb := f.create(p)
	g := f.launch(goSrv.argv, "MCP_RESUME=off")
	gen, err := g.NotebookAdd(ctx, nb.Handle, "added by Go", 0)
	if err != nil || gen != 2 {
		t.Fatalf("Go notebook_add on the Python server's notebook: generation %d, %v; want 2", gen, err)
	}
	n := f.launch(ts.argv)
	gen, err = n.NotebookAdd(ctx, nb.Handle, "added by TypeScript", 2)
	if err != nil || gen != 3 {
		t.Fatalf("TypeScript notebook_add (generation 2): generation %d, %v; want 3", gen, err)
	}
	notes, gen, err := p.NotebookRead(ctx, nb.Handle)
	want := []string{"added by Go", "added by TypeScript"}
	if err != nil || gen != 3 || !slices.Equal(notes, want) {
		t.Fatalf("Python notebook_read: %q generation %d, %v; want %q generation 3", notes, gen, err, want)
	}

	// A stale generation is a conflict whoever wrote the current one.
	_, err = g.NotebookAdd(ctx, nb.Handle, "stale", 2)
	if te, ok := err.(*mcphost.ToolError); !ok || te.Code != "conflict" || te.Generation != 3 {
		t.Errorf("Go notebook_add with generation 2 after TypeScript wrote 3: %v; want conflict with generation 3", err)
	}
	for _, dir := range []string{f.handlesDir()} {
		checkSealed(t, dir, append(want, nb.Handle))
	}
	if err := n.NotebookDelete(ctx, nb.Handle, 3); err != nil {
		t.Fatalf("TypeScript notebook_delete (generation 3): %v", err)
	}
	for name, srv := range map[string]*mcphost.Server{"Python": p, "Go": g} {
		if _, _, err := srv.NotebookRead(ctx, nb.Handle); mcphost.ErrorCode(err) != "handle_not_found" {
			t.Errorf("%s notebook_read after the delete: %v; want handle_not_found", name, err)
		}
	}
}

// checkSealed fails t when a file under dir holds one of secrets, or when
// dir or a file in it is open to others than the owner (0700, 0600).
func checkSealed(t *testing.T, dir string, secrets []string) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("%s has mode %v, want 0700", dir, fi.Mode().Perm())
	}
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s has mode %v, want 0600", p, info.Mode().Perm())
		}
		b, _ := os.ReadFile(p)
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds a secret in clear (%d bytes)", filepath.Base(p), len(s))
			}
		}
		return nil
	})
	if n == 0 {
		t.Errorf("no files in %s", dir)
	}
}

// policyText matches a tool description stating a 2-second idle TTL, in any
// of the languages' duration spellings (2s, 2 s, 2 seconds, 0:00:02).
var policyText = regexp.MustCompile(`\b(2(\.0+)?\s?(s|sec|secs|seconds?)|0:00:02)\b`)

// faultIdleExpiry: MCP_RESUME_STATE_IDLE_TTL=2s (with MCP_RESUME=off): the
// created notebook reports a 2 s idle TTL and notebook_create's description
// states it; read, then 2.5 s idle; notebook_read answers handle_expired
// with reason idle, and again on a second read (the tombstone stays).
func faultIdleExpiry(t *testing.T, s *server) {
	f := newFx(t)
	ctx := context.Background()
	srv := f.launch(s.argv, "MCP_RESUME_STATE_IDLE_TTL=2s", "MCP_RESUME=off")
	desc, err := srv.ToolDescription(ctx, "notebook_create")
	if err != nil {
		t.Fatal(err)
	}
	if !policyText.MatchString(desc) || !bytes.Contains([]byte(desc), []byte("handle_expired")) {
		t.Errorf("notebook_create's description does not state the 2 s idle TTL and handle_expired: %q", desc)
	}
	other := f.create(srv)
	nb := f.create(srv)
	if nb.IdleTTLSeconds != 2 {
		t.Errorf("idle_ttl_seconds = %v, want 2", nb.IdleTTLSeconds)
	}
	if _, err := srv.NotebookAdd(ctx, nb.Handle, "soon gone", 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	var answers []string
	for i := 0; i < 2; i++ {
		_, _, err := srv.NotebookRead(ctx, nb.Handle)
		te, _ := err.(*mcphost.ToolError)
		switch {
		case te == nil:
			answers = append(answers, "notes (no error)")
		case te.Reason != "":
			answers = append(answers, te.Code+" reason "+te.Reason)
		default:
			answers = append(answers, te.Code)
		}
	}
	if answers[0] != "handle_expired reason idle" || answers[1] != answers[0] {
		t.Errorf("notebook_read after 2.5 s idle, twice: %q; want handle_expired reason idle both times", answers)
	}
	// The other notebook expired too (idle as long); the server still
	// creates and reads new ones.
	_, _, errOther := srv.NotebookRead(ctx, other.Handle)
	fresh := f.create(srv)
	_, gen, err := srv.NotebookRead(ctx, fresh.Handle)
	serving := "yes"
	if err != nil || gen != 1 {
		serving = "no: a new notebook could not be read back"
	}
	outcome := "both reads answered " + answers[0] + "; a notebook idle as long answered " + mcphost.ErrorCode(errOther) + "; new notebooks are created and read as usual"
	addRow(s.lang, "H10", "Idle TTL passed",
		"`MCP_RESUME_STATE_IDLE_TTL=2s` (and `MCP_RESUME=off`) in the server's environment; notebook_create, notebook_add, then 2.5 s without a call",
		result{Outcome: outcome, Seen: answers[0], Serving: serving})
}
