package handles

import (
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

func TestRoundtrip(t *testing.T) {
	e := openEnv(t, nil)
	const now = 1_700_000_000_000
	h := e.create("alice", "hello", now)
	if _, ok := ParseHandle(h); !ok || len(h) != HandleLen {
		t.Fatalf("handle %q does not parse", h)
	}
	v, werr := e.get(h, "alice", now+1)
	if werr != nil || string(v.Value) != "hello" || v.Generation != 1 || v.CreatedMS != now {
		t.Fatalf("get: %+v %v", v, werr)
	}
	out, werr := e.s.Put(input(map[string]any{"handle": h, "principal": "alice", "value": []byte("v2"), "generation": 1, "now_ms": now + 2}))
	if werr != nil || out.Generation != 2 {
		t.Fatalf("put: %+v %v", out, werr)
	}
	_, werr = e.s.Put(input(map[string]any{"handle": h, "principal": "alice", "value": []byte("v3"), "generation": 1, "now_ms": now + 3}))
	if werr == nil || werr.Code != hostfuncs.CodeConflict || werr.Generation != 2 {
		t.Fatalf("stale put: %+v", werr)
	}
	if v, _ := e.get(h, "alice", now+4); string(v.Value) != "v2" || v.Generation != 2 {
		t.Fatalf("after conflict: %+v", v)
	}
	_, werr = e.get(h, "bob", now+5)
	wantCode(t, werr, hostfuncs.CodeHandleNotFound)
	if werr := e.s.Delete(input(map[string]any{"handle": h, "principal": "alice", "generation": 2, "now_ms": now + 6})); werr != nil {
		t.Fatal(werr)
	}
	_, werr = e.get(h, "alice", now+7)
	wantCode(t, werr, hostfuncs.CodeHandleNotFound)
	if n := e.count("h-"); n != 0 {
		t.Errorf("%d records left after delete", n)
	}
	for _, f := range e.files() {
		b, _ := readFile(e.dir, f)
		if strings.Contains(string(b), "hello") || strings.Contains(string(b), h) || strings.Contains(string(b), "alice") {
			t.Errorf("file %s holds a secret", f)
		}
	}
	// lock, read index, read record, write record, write index, unlock.
	e.h.Calls = map[string]int{}
	h = e.create("alice", "x", now+8)
	e.h.Calls = map[string]int{}
	e.get(h, "alice", now+9)
	if n := total(e.h.Calls); n > 5 {
		t.Errorf("get made %d host calls (%v), want at most 5", n, e.h.Calls)
	}
	e.h.Calls = map[string]int{}
	e.s.Put(input(map[string]any{"handle": h, "principal": "alice", "value": []byte("y"), "now_ms": now + 10}))
	if n := total(e.h.Calls); n != 6 {
		t.Errorf("put made %d host calls (%v), want 6", n, e.h.Calls)
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}
