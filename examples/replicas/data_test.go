//go:build linux && replicas

package replicas_test

// Rows R4, R5 and R8: the server's script cache flushed, garbage planted
// under record keys, and the server out of memory, under one replica of
// each language (faults_test.go runs them).

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// R4: SCRIPT FLUSH between the calls of a run.
func faultScriptFlush(t *testing.T, l lang) {
	ctx := context.Background()
	rs := redistest.Start(t)
	f := newFx(t)
	r := f.start(l, rs.URL)
	c := f.client(r, "alice")
	o := makeOther(t, f, c)
	nb, err := c.NotebookCreate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.seen(nb.Handle)
	var seen codes
	const n = 30
	for i := range n {
		if i%3 == 0 {
			if _, err := rs.Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		g, err := c.NotebookAdd(ctx, nb.Handle, casNote("f", 0, i), int64(i+1))
		seen.add(err)
		if err != nil || g != int64(i+2) {
			t.Errorf("notebook_add %d after SCRIPT FLUSH: generation %d, %v", i, g, err)
		}
	}
	notes, gen, err := c.NotebookRead(ctx, nb.Handle)
	seen.add(err)
	if err != nil || gen != n+1 || len(notes) != n {
		t.Errorf("notebook_read: %d notes at generation %d, %v; want %d at %d", len(notes), gen, err, n, n+1)
	}
	addRow(l, "R4", "Scripts flushed mid-run",
		"`SCRIPT FLUSH` before every third of 30 notebook_add calls (compare-and-set) on one replica, so the store's `EVALSHA` meets `NOSCRIPT`",
		result{Outcome: "every notebook_add succeeded (generation 31, 30 notes in order): NOSCRIPT was recovered by loading the script, invisibly to the caller",
			Seen: seen.String(), Serving: serving(t, c, o)})
}

// recordKeys lists the record keys (mcp-resume:{…}:h:<hash>) on rs.
func recordKeys(t *testing.T, rs *redistest.Server) []string {
	v, err := rs.Do("KEYS", "mcp-resume:*:h:*")
	if err != nil {
		t.Fatalf("KEYS: %v", err)
	}
	var keys []string
	if a, ok := v.([]any); ok {
		for _, k := range a {
			keys = append(keys, fmt.Sprint(k))
		}
	}
	return keys
}

// R5: garbage planted under a record key.
func faultGarbage(t *testing.T, l lang) {
	ctx := context.Background()
	rs := redistest.Start(t)
	f := newFx(t)
	r := f.start(l, rs.URL)
	c := f.client(r, "alice")
	// plant creates a notebook, finds its record key (the one new key),
	// runs cmd on it, and returns the handle and the key.
	plant := func(cmd ...string) (string, string) {
		before := recordKeys(t, rs)
		nb, err := c.NotebookCreate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f.seen(nb.Handle)
		var key string
		for _, k := range recordKeys(t, rs) {
			if !slices.Contains(before, k) {
				key = k
			}
		}
		if key == "" {
			t.Fatalf("no new record key after notebook_create (keys %d)", len(before))
		}
		args := append([]string{cmd[0], key}, cmd[1:]...)
		if _, err := rs.Do(args...); err != nil {
			t.Fatalf("%s: %v", cmd[0], err)
		}
		return nb.Handle, key
	}
	a, ka := plant("SET", "garbage")
	b, kb := plant("HSET", "g", "two")
	o := makeOther(t, f, c)
	var seen codes
	var gone []string
	for _, h := range []struct{ name, handle, key string }{{"string", a, ka}, {"text generation", b, kb}} {
		_, _, err := c.NotebookRead(ctx, h.handle)
		seen.add(err)
		if mcphost.ErrorCode(err) != "handle_not_found" {
			t.Errorf("notebook_read of the notebook with a %s planted: %v; want handle_not_found", h.name, err)
		}
		n, err := rs.Do("EXISTS", h.key)
		if err != nil || fmt.Sprint(n) != "0" {
			t.Errorf("the record key with a %s planted is still there (EXISTS %v, %v)", h.name, n, err)
		} else {
			gone = append(gone, h.name)
		}
		_, err = c.NotebookAdd(ctx, h.handle, "x", 0)
		seen.add(err)
		if mcphost.ErrorCode(err) != "handle_not_found" {
			t.Errorf("notebook_add after the %s: %v; want handle_not_found", h.name, err)
		}
	}
	out := "notebook_read and then notebook_add answered handle_not_found for both; both keys were removed; another notebook reads back unchanged"
	if len(gone) != 2 {
		out = fmt.Sprintf("handle_not_found, but only the keys with %q were removed", gone)
	}
	addRow(l, "R5", "Garbage under a record key",
		"two notebooks' record keys overwritten by hand: one with the string `garbage` (`SET`, a wrong type), one with its generation field set to text (`HSET <key> g two`)",
		result{Outcome: out, Seen: seen.String(), Serving: serving(t, c, o)})
}

// R8: Redis at maxmemory under noeviction, the policy the store needs.
func faultOutOfMemory(t *testing.T, l lang) {
	ctx := context.Background()
	rs := redistest.Start(t, redistest.Args("--maxmemory", "4mb", "--maxmemory-policy", "noeviction"))
	f := newFx(t)
	r := f.start(l, rs.URL)
	c := f.client(r, "alice")
	o := makeOther(t, f, c)
	big := strings.Repeat("m", 100<<10)
	type nbk struct{ handle string }
	var made []nbk
	var seen codes
	var full error
	for range 200 {
		nb, err := c.NotebookCreate(ctx)
		if err == nil {
			f.seen(nb.Handle)
			_, err = c.NotebookAdd(ctx, nb.Handle, big, 1)
			if err == nil {
				made = append(made, nbk{nb.Handle})
				continue
			}
		}
		full = err
		break
	}
	seen.add(full)
	if mcphost.ErrorCode(full) != "store_unavailable" {
		t.Fatalf("filling Redis to maxmemory: %d notebooks of 100 KiB, then %v; want store_unavailable", len(made), full)
	}
	// Full: writes are refused, what was written still reads.
	notes, _, err := c.NotebookRead(ctx, made[0].handle)
	seen.add(err)
	if err != nil || len(notes) != 1 || notes[0] != big {
		t.Errorf("notebook_read at maxmemory: %d notes, %v; want the note written before", len(notes), err)
	}
	if _, err := rs.Do("CONFIG", "SET", "maxmemory", "0"); err != nil {
		t.Fatal(err)
	}
	for i, nb := range made {
		notes, gen, err := c.NotebookRead(ctx, nb.handle)
		if err != nil || gen != 2 || len(notes) != 1 || notes[0] != big {
			t.Errorf("notebook %d of %d after maxmemory was lifted: %d notes at generation %d, %v", i, len(made), len(notes), gen, err)
		}
	}
	if nb, err := c.NotebookCreate(ctx); err != nil {
		t.Errorf("notebook_create after maxmemory was lifted: %v", err)
	} else if _, err := c.NotebookAdd(ctx, nb.Handle, big, 1); err != nil {
		t.Errorf("notebook_add after maxmemory was lifted: %v", err)
	}
	t.Logf("%d notebooks of 100 KiB before maxmemory (4 MiB); then %v", len(made), full)
	addRow(l, "R8", "Redis out of memory",
		"redis-server with `maxmemory 4mb` and `maxmemory-policy noeviction` (the policy the store needs), filled with notebooks of one 100 KiB note until a call fails; then `CONFIG SET maxmemory 0`",
		result{Outcome: "once full, a write (notebook_create or notebook_add) answered store_unavailable (Redis's `OOM` error); notebook_read still answered the notes written before; nothing was evicted: with the limit lifted every notebook read back whole and new ones were written",
			Seen: seen.String(), Serving: serving(t, c, o)})
}
