//go:build linux && replicas

package replicas_test

// One notebook through three replicas (one per language), and 3 replicas ×
// 8 clients appending to one notebook with compare-and-set; both on one
// Redis here, and on a Redis Cluster in cluster_test.go.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
	"github.com/mcp-resume/mcp-resume/examples/mcphost"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// TestCrossReplica: see crossReplica, on one redis-server.
func TestCrossReplica(t *testing.T) {
	crossReplica(t, redistest.Start(t).URL)
}

// TestConcurrency: see concurrency, on one redis-server.
func TestConcurrency(t *testing.T) {
	concurrency(t, redistest.Start(t).URL)
}

// crossReplica: the Python replica creates a notebook as alice, the Go
// replica adds (generation 1), the TypeScript replica adds (generation 2),
// the Python replica reads generation 3 and both notes; a stale generation
// is refused on the Go replica with the current one; bob's read, add and
// delete answer handle_not_found on every replica, and alice still reads
// generation 3 afterwards. All on the store at stateURL.
func crossReplica(t *testing.T, stateURL string) {
	ctx := context.Background()
	f := newFx(t)
	var py, gs, ts *servertest.HTTPServer
	var wg sync.WaitGroup // the three start at once: most of the time is runtime start-up
	wg.Go(func() { py = f.start(pyLang, stateURL) })
	wg.Go(func() { gs = f.start(goLang, stateURL) })
	wg.Go(func() { ts = f.start(tsLang, stateURL) })
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ap, ag, at := f.client(py, "alice"), f.client(gs, "alice"), f.client(ts, "alice")

	nb, err := ap.NotebookCreate(ctx)
	if err != nil || nb.Generation != 1 {
		t.Fatalf("Python notebook_create: %+v, %v", nb, err)
	}
	f.seen(nb.Handle)
	if gen, err := ag.NotebookAdd(ctx, nb.Handle, "added by Go", 1); err != nil || gen != 2 {
		t.Fatalf("Go notebook_add (generation 1): generation %d, %v; want 2", gen, err)
	}
	if gen, err := at.NotebookAdd(ctx, nb.Handle, "added by TypeScript", 2); err != nil || gen != 3 {
		t.Fatalf("TypeScript notebook_add (generation 2): generation %d, %v; want 3", gen, err)
	}
	want := []string{"added by Go", "added by TypeScript"}
	if notes, gen, err := ap.NotebookRead(ctx, nb.Handle); err != nil || gen != 3 || !slices.Equal(notes, want) {
		t.Fatalf("Python notebook_read: %q generation %d, %v; want %q generation 3", notes, gen, err, want)
	}
	_, err = ag.NotebookAdd(ctx, nb.Handle, "stale", 2)
	var te *mcphost.ToolError
	if !errors.As(err, &te) || te.Code != "conflict" || te.Generation != 3 {
		t.Fatalf("Go notebook_add with the stale generation 2: %v; want conflict naming generation 3", err)
	}
	for _, r := range []struct {
		name string
		r    *servertest.HTTPServer
	}{{"Python", py}, {"Go", gs}, {"TypeScript", ts}} {
		bob := f.client(r.r, "bob")
		_, _, e1 := bob.NotebookRead(ctx, nb.Handle)
		_, e2 := bob.NotebookAdd(ctx, nb.Handle, "bob was here", 0)
		e3 := bob.NotebookDelete(ctx, nb.Handle, 0)
		for i, e := range []error{e1, e2, e3} {
			if mcphost.ErrorCode(e) != "handle_not_found" {
				t.Errorf("%s replica, bob's %s of alice's notebook: %v; want handle_not_found", r.name, []string{"notebook_read", "notebook_add", "notebook_delete"}[i], e)
			}
		}
	}
	if notes, gen, err := at.NotebookRead(ctx, nb.Handle); err != nil || gen != 3 || !slices.Equal(notes, want) {
		t.Fatalf("TypeScript notebook_read after bob's attempts: %q generation %d, %v; want %q generation 3", notes, gen, err, want)
	}
}

// casNote is the note client k of replica lang appends as its i-th
// success: "<lang>/<k>/<i>/<first 8 hex digits of SHA-256 of the rest>",
// so that a note cut short or mixed with another does not check.
func casNote(lang string, k, i int) string {
	s := fmt.Sprintf("%s/%d/%d", lang, k, i)
	h := sha256.Sum256([]byte(s))
	return s + "/" + hex.EncodeToString(h[:4])
}

// parseCASNote returns a note's writer ("<lang>/<k>") and index, or ok
// false when it is not a whole casNote.
func parseCASNote(n string) (writer string, i int, ok bool) {
	parts := strings.Split(n, "/")
	if len(parts) != 4 {
		return "", 0, false
	}
	i, err := strconv.Atoi(parts[2])
	if err != nil || casNote(parts[0], atoi(parts[1]), i) != n {
		return "", 0, false
	}
	return parts[0] + "/" + parts[1], i, true
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// casStats is what the concurrency clients did.
type casStats struct {
	mu        sync.Mutex
	puts      int
	conflicts int
	errs      []string
	failed    int
}

func (s *casStats) fail(format string, a ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed++
	if len(s.errs) < 10 {
		s.errs = append(s.errs, fmt.Sprintf(format, a...))
	}
}

// concurrency: three replicas (Go, Python, TypeScript) on stateURL, 8
// clients on each (each its own MCP session), each appending
// -replicas.cas-ops notes to one notebook by compare-and-set: read the
// generation, notebook_add with it, read again on conflict. Every read
// must have as many notes as its generation - 1, every note whole; every
// conflict must name a newer generation. At the end the notebook holds
// exactly the notes of the successful adds, each writer's in its order,
// at generation successes + 1.
func concurrency(t *testing.T, stateURL string) {
	ctx := context.Background()
	f := newFx(t)
	reps := make([]*servertest.HTTPServer, len(allLangs))
	var wg sync.WaitGroup
	for i, l := range allLangs {
		wg.Go(func() { reps[i] = f.start(l, stateURL) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	nb, err := f.client(reps[0], "alice").NotebookCreate(ctx)
	if err != nil {
		t.Fatalf("notebook_create: %v", err)
	}
	f.seen(nb.Handle)
	const clientsPer = 8
	ops := *casOps
	var st casStats
	start := time.Now()
	for i, l := range allLangs {
		for k := range clientsPer {
			c := f.client(reps[i], "alice")
			wg.Go(func() {
				for done, tries := 0, 0; done < ops && tries < ops*400; tries++ {
					notes, gen, err := c.NotebookRead(ctx, nb.Handle)
					if err != nil {
						st.fail("%s client %d: notebook_read: %v", l.name, k, err)
						continue
					}
					if int64(len(notes)) != gen-1 {
						st.fail("%s client %d: read %d notes at generation %d", l.name, k, len(notes), gen)
					}
					for _, n := range notes {
						if _, _, ok := parseCASNote(n); !ok {
							st.fail("%s client %d: read a note that is not whole: %q", l.name, k, n)
						}
					}
					got, err := c.NotebookAdd(ctx, nb.Handle, casNote(l.name, k, done), gen)
					var te *mcphost.ToolError
					switch {
					case err == nil && got == gen+1:
						done++
						st.mu.Lock()
						st.puts++
						st.mu.Unlock()
					case err == nil:
						st.fail("%s client %d: notebook_add expecting %d answered generation %d", l.name, k, gen, got)
					case errors.As(err, &te) && te.Code == "conflict":
						if te.Generation <= gen {
							st.fail("%s client %d: conflict expecting %d named generation %d", l.name, k, gen, te.Generation)
						}
						st.mu.Lock()
						st.conflicts++
						st.mu.Unlock()
					default:
						st.fail("%s client %d: notebook_add: %v", l.name, k, err)
					}
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	notes, gen, err := f.client(reps[1], "alice").NotebookRead(ctx, nb.Handle)
	if err != nil {
		t.Fatalf("final notebook_read: %v", err)
	}
	t.Logf("%d successful appends, %d conflicts, %d errors in %v; final generation %d with %d notes",
		st.puts, st.conflicts, st.failed, elapsed.Round(time.Millisecond), gen, len(notes))
	if st.failed > 0 {
		t.Errorf("%d errors, the first: %q", st.failed, st.errs)
	}
	want := len(allLangs) * clientsPer * ops
	if st.puts != want {
		t.Errorf("%d successful appends, want %d", st.puts, want)
	}
	if len(notes) != st.puts || gen != int64(st.puts)+1 {
		t.Errorf("final notebook: %d notes at generation %d; want %d notes (the successful appends) at %d", len(notes), gen, st.puts, st.puts+1)
	}
	next := map[string]int{}
	for _, n := range notes {
		w, i, ok := parseCASNote(n)
		if !ok {
			t.Errorf("final notebook: a note is not whole: %q", n)
			continue
		}
		if i != next[w] {
			t.Errorf("final notebook: writer %s's note %d where %d was due (lost or duplicated)", w, i, next[w])
		}
		next[w] = i + 1
	}
}
