package handles

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/testhost"
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
	// A get by the instance that made the handle: read_open alone (the
	// keys and the tag are cached since the create). By another instance:
	// the keys (hkdf), the tag (hmac), read_open. A put: lock, read index,
	// read the record's header, seal_write, write index, unlock (and the
	// keys and the tag, unless cached).
	e.h.Calls = map[string]int{}
	h = e.create("alice", "x", now+8)
	e.h.Calls = map[string]int{}
	e.get(h, "alice", now+9)
	if n := total(e.h.Calls); n != 1 || e.h.Calls[hostfuncs.FnCrypto] != 1 {
		t.Errorf("get made %d host calls (%v), want 1, mcp_resume_crypto", n, e.h.Calls)
	}
	e.h.Calls = map[string]int{}
	e.s.Put(input(map[string]any{"handle": h, "principal": "alice", "value": []byte("y"), "now_ms": now + 10}))
	if n := total(e.h.Calls); n != 6 {
		t.Errorf("put made %d host calls (%v), want 6", n, e.h.Calls)
	}
	other := openOn(t, e.h, nil)
	other.get(e.create("alice", "z", now+11), "alice", now+11) // its first call prepares the directory
	e.h.Calls = map[string]int{}
	if v, werr := other.get(h, "alice", now+11); werr != nil || string(v.Value) != "y" {
		t.Fatalf("get by another instance: %q %v", v.Value, werr)
	}
	if n := total(e.h.Calls); n != 3 || e.h.Calls[hostfuncs.FnCrypto] != 3 {
		t.Errorf("get by another instance made %d host calls (%v), want 3, all mcp_resume_crypto", n, e.h.Calls)
	}
}

// The key cache never answers one principal's call with another's tag:
// bob's get of alice's handle, right after alice's, is handle_not_found
// and derives bob's own tag; a cache filled past its size starts over and
// still answers each principal its own.
func TestKeyCacheIsPerPrincipal(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 1000, "max_handles_per_principal": 1000})
	const now = 1_700_000_000_000
	h := e.create("alice", "secret", now)
	if v, werr := e.get(h, "alice", now+1); werr != nil || string(v.Value) != "secret" {
		t.Fatalf("alice's get: %q %v", v.Value, werr)
	}
	e.h.Calls = map[string]int{}
	_, werr := e.get(h, "bob", now+2)
	wantCode(t, werr, hostfuncs.CodeHandleNotFound)
	if n := e.h.Calls[hostfuncs.FnCrypto]; n != 3 {
		t.Errorf("bob's get made %d crypto calls, want 3 (his own keys and tag)", n)
	}
	var hs []string
	for i := range keyCacheSize + 5 {
		hs = append(hs, e.create("p"+strconv.Itoa(i), "v"+strconv.Itoa(i), now+3))
	}
	for i, h := range hs {
		if v, werr := e.get(h, "p"+strconv.Itoa(i), now+4); werr != nil || string(v.Value) != "v"+strconv.Itoa(i) {
			t.Errorf("get %d after the cache started over: %q %v", i, v.Value, werr)
		}
		_, werr := e.get(h, "p"+strconv.Itoa(i+1), now+4)
		wantCode(t, werr, hostfuncs.CodeHandleNotFound)
	}
	if len(e.s.keyCache) > keyCacheSize {
		t.Errorf("the key cache holds %d entries, over %d", len(e.s.keyCache), keyCacheSize)
	}
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func TestNotOpenAndSecondOpen(t *testing.T) {
	s := New(func(string, []byte) []byte { t.Fatal("a host call before handles_open"); return nil })
	_, werr := s.Get([]byte(`{"handle": "x", "principal": ""}`))
	wantCode(t, werr, hostfuncs.CodeNotOpen)
	e := openEnv(t, nil)
	_, werr = e.s.Open([]byte(`{"app": "conformance"}`))
	wantCode(t, werr, hostfuncs.CodeInvalidOption)
}

// Compare-and-set increments from eight plugin instances, each with its
// own host (its own flock'd locks, as two instances of one process or two
// processes have): the final count equals the successful puts.
func TestConcurrentCompareAndSet(t *testing.T) {
	e := openEnv(t, map[string]any{"lock_wait_ms": 10000})
	h := e.create("", "0", 0)
	const perWorker = 15
	done := make(chan int)
	for w := 0; w < 8; w++ {
		st := openOn(t, e.h.Sibling(), map[string]any{"lock_wait_ms": 10000}).s
		go func() {
			ok := 0
			for ok < perWorker {
				v, werr := st.Get(input(map[string]any{"handle": h, "principal": ""}))
				if werr != nil {
					t.Error(werr)
					break
				}
				n := atoi(string(v.Value))
				_, werr = st.Put(input(map[string]any{"handle": h, "principal": "", "value": []byte(strconv.Itoa(n + 1)), "generation": v.Generation}))
				if werr == nil {
					ok++
				} else if werr.Code != hostfuncs.CodeConflict {
					t.Error(werr)
					break
				}
			}
			done <- ok
		}()
	}
	total := 0
	for w := 0; w < 8; w++ {
		total += <-done
	}
	v, werr := e.get(h, "", 0)
	if werr != nil || atoi(string(v.Value)) != total || v.Generation != int64(total+1) {
		t.Fatalf("final value %s generation %d, want %d and %d (%v)", v.Value, v.Generation, total, total+1, werr)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func TestBusyShardIsStoreUnavailable(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100, "lock_wait_ms": 50})
	now := time.Now().UnixMilli()
	h := e.create("a", "v", now)
	other := openOn(t, e.h.Sibling(), map[string]any{"max_handles": 100})
	// Another process holds the one shard's lock.
	other.h.Call(hostfuncs.FnLock, padded(`{"name": "lock-00"}`))
	// A get within the refresh resolution of the last use needs no lock.
	if v, werr := e.get(h, "a", now+maxResolutionMS-1); werr != nil || string(v.Value) != "v" {
		t.Fatalf("hot get beside a held shard lock: %v", werr)
	}
	// One a resolution later refreshes the last use: it waits for the lock.
	_, werr := e.get(h, "a", now+maxResolutionMS)
	wantCode(t, werr, hostfuncs.CodeStoreUnavailable)
	if !strings.Contains(werr.Message, "shard 00 for 50ms") {
		t.Errorf("message %q does not say which shard and how long", werr.Message)
	}
	other.h.Call(hostfuncs.FnUnlock, padded(`{"name": "lock-00"}`))
	if _, werr := e.get(h, "a", now+1001); werr != nil {
		t.Fatal(werr)
	}
	// Every path released its locks: the other process takes them at once.
	if out := other.h.Call(hostfuncs.FnLock, padded(`{"name": "lock-00"}`)); strings.Contains(string(out), "error") {
		t.Errorf("lock-00 still held after the operations: %s", out)
	}
}

func padded(s string) []byte { return hostfuncs.Pad8([]byte(s)) }

func TestCorruptLayoutIsStoreUnavailable(t *testing.T) {
	e := openEnv(t, nil)
	e.create("a", "v", 0)
	if err := writeFile(e.dir, "layout", "mcp-resume handles v1 shards=3\n"); err != nil {
		t.Fatal(err)
	}
	s := New(e.h.Call)
	s.Open(input(map[string]any{"app": "conformance", "state_root": e.h.Facts.Home + "/state"}))
	_, werr := s.Create(input(map[string]any{"principal": "a", "value": []byte("v")}))
	wantCode(t, werr, hostfuncs.CodeStoreUnavailable)
	if !strings.Contains(werr.Message, "layout") {
		t.Errorf("message %q does not name the layout file", werr.Message)
	}
}

func TestLayoutKeepsItsShards(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100})
	h := e.create("a", "v", 0)
	// A later open with another capacity keeps the directory's shard count,
	// so the handle is still found.
	big := openOn(t, e.h, map[string]any{"max_handles": 100000})
	if v, werr := big.get(h, "a", 0); werr != nil || string(v.Value) != "v" {
		t.Fatalf("get after reopening with more shards: %v", werr)
	}
	out, _ := big.s.List(nil)
	if out.Shards != 1 || out.Live != 1 {
		t.Errorf("list: %+v, want 1 shard and 1 live handle", out)
	}
}

func TestMissingIndexIsRebuiltAndOrphansCollected(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100})
	now := time.Now().UnixMilli()
	h := e.create("a", "v", now)
	if err := removeFile(e.dir, "i-00"); err != nil {
		t.Fatal(err)
	}
	// A stale last use sends the get to the slow path, which rebuilds.
	if v, werr := e.get(h, "a", now+maxResolutionMS); werr != nil || string(v.Value) != "v" {
		t.Fatalf("get after the index went: %v", werr)
	}
	if got := e.h.Events(); len(got) != 1 || got[0] != EventIndexRebuilt {
		t.Errorf("events %v, want one %s", got, EventIndexRebuilt)
	}
	// A record without an entry (a writer killed between the record and
	// the index) is an orphan: get cannot see it, gc removes it.
	b, _ := readFile(e.dir, "h-"+hashHexOf(t, h))
	orphan := "h-00000000000000000000000000000000"
	if err := writeFile(e.dir, orphan, string(b)); err != nil {
		t.Fatal(err)
	}
	out, werr := e.s.GC(nil)
	if werr != nil || out.OrphansRemoved != 1 || out.Live != 1 {
		t.Fatalf("gc: %+v %v, want 1 orphan removed and 1 live", out, werr)
	}
}

func hashHexOf(t *testing.T, handle string) string {
	raw, ok := ParseHandle(handle)
	if !ok {
		t.Fatalf("bad handle")
	}
	k := deriveKeys(raw, "conformance")
	return hashHex(k.hash)
}

func TestEventsNeverHoldSecrets(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 1, "idle_ttl_ms": 1000})
	const now = 1_700_000_000_000
	h1 := e.create("principal-secret", "value-secret", now)
	h2 := e.create("principal-secret", "value-secret", now+10)
	e.get(h1, "principal-secret", now+20)
	e.s.Put(input(map[string]any{"handle": h2, "principal": "principal-secret", "value": []byte("v"), "generation": 9, "now_ms": now + 30}))
	e.get(h2, "principal-secret", now+5000)
	e.s.Delete(input(map[string]any{"handle": h2, "principal": "principal-secret"}))
	if len(e.h.Logs) < 4 {
		t.Fatalf("only %d log lines", len(e.h.Logs))
	}
	for _, l := range e.h.Logs {
		all := l.Message + l.Detail
		for _, secret := range []string{h1, h2, h1[5:15], h2[5:15], "principal-secret", "value-secret"} {
			if strings.Contains(all, secret) {
				t.Errorf("log line %+v holds a secret", l)
			}
		}
		if l.Event != EventIndexRebuilt && l.Event != EventStoreUnavailable && !strings.HasPrefix(l.Detail, "key=") {
			t.Errorf("log line %+v does not name its key hash", l)
		}
	}
}

// TestHostCallsPerOperation pins the host calls of each warm operation
// (plugin/README.md, Handle store, Locks): no listing, one lock and unlock;
// a get within the refresh resolution of its last use no lock and no file
// read but its read_open. Each operation on a handle starts with two
// mcp_resume_crypto calls: its keys (hkdf) and its principal tag (hmac).
func TestHostCallsPerOperation(t *testing.T) {
	e := openEnv(t, nil)
	const now = 1_700_000_000_000
	h := e.create("a", "v", now) // the first call prepares the directory
	for _, op := range []struct {
		name string
		max  int
		run  func()
	}{
		// and the debug line handle_created, and the lock's socket name
		// (sha256) when the handle falls on a shard not locked before.
		{"create", 9, func() { e.create("a", "v", now+1) }},
		{"get (hot)", 3, func() { e.get(h, "a", now+2) }},
		// read_open (hot), lock, read the index, read_open, seal_write,
		// write the index, unlock.
		{"get (refresh)", 9, func() { e.get(h, "a", now+maxResolutionMS+5000) }},
		{"put", 8, func() {
			e.s.Put(input(map[string]any{"handle": h, "principal": "a", "value": []byte("w"), "now_ms": now + maxResolutionMS + 6000}))
		}},
		{"touch (no refresh)", 6, func() {
			e.s.Touch(input(map[string]any{"handle": h, "principal": "a", "now_ms": now + maxResolutionMS + 6001}))
		}},
		{"exists", 6, func() {
			e.s.Exists(input(map[string]any{"handle": h, "principal": "a", "now_ms": now + maxResolutionMS + 6002}))
		}},
		// and the debug line handle_deleted
		{"delete", 9, func() {
			e.s.Delete(input(map[string]any{"handle": h, "principal": "a", "now_ms": now + maxResolutionMS + 6003}))
		}},
	} {
		e.h.Calls = map[string]int{}
		op.run()
		n := total(e.h.Calls)
		t.Logf("%s: %d host calls %v", op.name, n, e.h.Calls)
		locks := 1
		if op.name == "get (hot)" {
			locks = 0
		}
		if op.name == "get (hot)" && e.h.Calls[hostfuncs.FnRead] > 0 {
			t.Errorf("a hot get read a file besides its record: %v", e.h.Calls)
		}
		if n > op.max || e.h.Calls[hostfuncs.FnList] > 0 || e.h.Calls[hostfuncs.FnLock] != locks || e.h.Calls[hostfuncs.FnUnlock] != locks {
			t.Errorf("%s made %d host calls %v, want at most %d, %d lock and unlock, no listing", op.name, n, e.h.Calls, op.max, locks)
		}
	}
}

// A process killed between writing a record and its index leaves the index
// one put behind: the record is authoritative (its value, generation and a
// size larger than the index says).
func TestIndexBehindItsRecord(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100})
	h := e.create("a", "v", 0)
	old, err := readFile(e.dir, "i-00")
	if err != nil {
		t.Fatal(err)
	}
	if _, werr := e.s.Put(input(map[string]any{"handle": h, "principal": "a", "value": []byte("a longer value")})); werr != nil {
		t.Fatal(werr)
	}
	if err := writeFile(e.dir, "i-00", string(old)); err != nil {
		t.Fatal(err)
	}
	v, werr := e.get(h, "a", 0)
	if werr != nil || string(v.Value) != "a longer value" || v.Generation != 2 {
		t.Fatalf("get: %q generation %d, %v; want the record's value at generation 2", v.Value, v.Generation, werr)
	}
	_, werr = e.s.Put(input(map[string]any{"handle": h, "principal": "a", "value": []byte("x"), "generation": 1}))
	if werr == nil || werr.Code != hostfuncs.CodeConflict || werr.Generation != 2 {
		t.Fatalf("put expecting the index's generation: %v, want conflict at 2", werr)
	}
}

func TestUnusableDirectoryAndFailedWrites(t *testing.T) {
	h := testhost.New(t)
	dir := h.Facts.Home + "/state/conformance/handles"
	h.DirErr = map[string]string{"mkdir " + h.Facts.Home + "/state": hostfuncs.CodeNoSpace}
	e := openOn(t, h, nil)
	_, werr := e.s.Create(input(map[string]any{"principal": "a", "value": []byte("v")}))
	wantCode(t, werr, hostfuncs.CodeStoreUnavailable)
	if !strings.Contains(werr.Message, "no space left") || !strings.Contains(werr.Message, dir) {
		t.Errorf("message %q does not say what failed and where", werr.Message)
	}
	// The disk has room again: the store works without a new open.
	h.DirErr = nil
	handle := e.create("a", "v", 0)
	// A host's crypto that fails (it answers nothing usable) fails only
	// its own operation, and changes nothing.
	h.Broken[hostfuncs.FnCrypto] = true
	_, werr = e.s.Put(input(map[string]any{"handle": handle, "principal": "a", "value": []byte("w")}))
	wantCode(t, werr, hostfuncs.CodeStoreUnavailable)
	h.Broken[hostfuncs.FnCrypto] = false
	if v, werr := e.get(handle, "a", 0); werr != nil || string(v.Value) != "v" || v.Generation != 1 {
		t.Fatalf("after a failed put: %q generation %d, %v", v.Value, v.Generation, werr)
	}
	if got := e.h.Events(); len(got) != 2 || got[0] != EventStoreUnavailable || got[1] != EventStoreUnavailable {
		t.Errorf("events %v, want two %s", got, EventStoreUnavailable)
	}
}

// TestWorldWritableStateRoot: a state root of this user with mode 0777 and
// no sticky bit lets another user rename the app's directory away, so the
// handle store refuses it (store_unavailable, naming the root and the chmod
// that fixes it) and writes nothing; after that chmod the store works, and
// so does a sticky 1777 root.
func TestWorldWritableStateRoot(t *testing.T) {
	h := testhost.New(t)
	root := filepath.Join(h.Facts.Home, "state")
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	e := openOn(t, h, nil)
	_, werr := e.s.Create(input(map[string]any{"principal": "alice", "value": []byte("v")}))
	want := "run: chmod go-w " + root
	if werr == nil || werr.Code != hostfuncs.CodeStoreUnavailable || !strings.Contains(werr.Message, "the state root "+root+", which has mode 0777") || !strings.HasSuffix(werr.Message, want) {
		t.Fatalf("Create under a 0777 root: %v; want store_unavailable ending %q", werr, want)
	}
	if entries, _ := os.ReadDir(e.dir); len(entries) != 0 {
		t.Errorf("files written under a refused root: %v", entries)
	}
	for _, mode := range []os.FileMode{0o755, 0o777 | os.ModeSticky} {
		if err := os.Chmod(root, mode); err != nil {
			t.Fatal(err)
		}
		e := openOn(t, h, nil)
		if _, werr := e.s.Create(input(map[string]any{"principal": "alice", "value": []byte("v")})); werr != nil {
			t.Errorf("Create under a root of mode %v: %v", mode, werr)
		}
	}
}

// TestCallerNames: a store opened with a caller words the options and
// operations its messages name as that language does (docs/API.md): the
// open options, the per-call options of create and put, and the cap.
func TestCallerNames(t *testing.T) {
	for _, c := range []struct {
		caller                           string
		open, lifetime, expect, sizeWord string
	}{
		{"", "max_age_ms must be between 1 and 3153600000000, not 0", "idle_ttl_ms may only shorten the store's 1m0s: give 1 to 60000, not 120000", "generation must", "max_value_bytes"},
		{"go", "MaxAge must be between 1ms and 876000h0m0s, not 0s", "WithIdleTTL may only shorten the store's 1m0s: give 1ms to 1m0s, not 2m0s", "IfGeneration must", "MaxValueBytes"},
		{"python", "max_age must be between 1ms and 876000h0m0s, not 0s", "idle_ttl may only shorten the store's 1m0s: give 1ms to 1m0s, not 2m0s", "expect must", "max_value_bytes"},
		{"typescript", "maxAgeMs must be between 1 and 3153600000000, not 0", "idleTtlMs may only shorten the store's 1m0s: give 1 to 60000, not 120000", "expect must", "maxValueBytes"},
	} {
		h := testhost.New(t)
		in := map[string]any{"app": "conformance", "state_root": filepath.Join(h.Facts.Home, "state"), "max_age_ms": 0}
		if c.caller != "" {
			in["caller"] = c.caller
		}
		if _, werr := New(h.Call).Open(input(in)); werr == nil || werr.Code != hostfuncs.CodeInvalidOption || werr.Message != c.open {
			t.Errorf("caller %q: open = %v, want %q", c.caller, werr, c.open)
		}
		opts := map[string]any{"idle_ttl_ms": 60000, "max_value_bytes": 4}
		if c.caller != "" {
			opts["caller"] = c.caller
		}
		e := openOn(t, h, opts)
		_, werr := e.s.Create(input(map[string]any{"principal": "p", "value": []byte("v"), "idle_ttl_ms": 120000}))
		if werr == nil || werr.Message != c.lifetime {
			t.Errorf("caller %q: create = %v, want %q", c.caller, werr, c.lifetime)
		}
		_, werr = e.s.Create(input(map[string]any{"principal": "p", "value": []byte("too long")}))
		if werr == nil || werr.Code != hostfuncs.CodeValueTooLarge || !strings.Contains(werr.Message, "the store's "+c.sizeWord+" 4;") {
			t.Errorf("caller %q: create too large = %v, want it to name %s", c.caller, werr, c.sizeWord)
		}
		h2 := e.create("p", "v", 0)
		_, werr = e.s.Put(input(map[string]any{"handle": h2, "principal": "p", "value": []byte("w"), "generation": 0}))
		if werr == nil || !strings.HasPrefix(werr.Message, c.expect) {
			t.Errorf("caller %q: put generation 0 = %v, want %q", c.caller, werr, c.expect)
		}
		_, werr = e.s.Put(input(map[string]any{"handle": h2, "principal": "p", "value": []byte("w"), "generation": "2"}))
		if werr == nil || !strings.HasPrefix(werr.Message, c.expect+" be a whole number") {
			t.Errorf("caller %q: put generation \"2\" = %v, want %q", c.caller, werr, c.expect)
		}
	}
}

// A record file put back after acknowledged puts (its sealed generation
// below the index's) is refused on every operation: it is removed,
// handle_rollback is logged (the short key and the generations, never the
// value), and the handle reads as not found; the old value never returns.
func TestRollbackRecordRefused(t *testing.T) {
	for _, op := range []string{"get", "put", "touch", "exists", "delete"} {
		t.Run(op, func(t *testing.T) {
			e := openEnv(t, map[string]any{"max_handles": 100})
			const now = 1_700_000_000_000
			h := e.create("a", "old-secret-value", now)
			rec := "h-" + hashHexOf(t, h)
			old, err := readFile(e.dir, rec)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				if _, werr := e.s.Put(input(map[string]any{"handle": h, "principal": "a", "value": []byte("new"), "now_ms": now + 1})); werr != nil {
					t.Fatal(werr)
				}
			}
			if err := writeFile(e.dir, rec, string(old)); err != nil {
				t.Fatal(err)
			}
			// A resolution after the restored record was written: past
			// the refresh resolution, so a get takes the slow path.
			in := input(map[string]any{"handle": h, "principal": "a", "value": []byte("x"), "now_ms": now + maxResolutionMS})
			var werr *hostfuncs.Error
			switch op {
			case "get":
				var v hostfuncs.HandleValue
				v, werr = e.s.Get(in)
				if strings.Contains(string(v.Value), "old") {
					t.Fatalf("get answered the old value %q", v.Value)
				}
			case "put":
				_, werr = e.s.Put(in)
			case "touch":
				_, werr = e.s.Touch(in)
			case "exists":
				var x hostfuncs.HandleExists
				x, werr = e.s.Exists(in)
				if werr == nil && x.Exists {
					t.Fatal("exists answered true for a rolled-back record")
				}
				werr = notFound()
			case "delete":
				werr = e.s.Delete(in)
			}
			wantCode(t, werr, hostfuncs.CodeHandleNotFound)
			if e.count("h-") != 0 {
				t.Errorf("files %v: the rolled-back record is still there", e.files())
			}
			var lines []hostfuncs.LogRequest
			for _, l := range e.h.Logs {
				if l.Event == EventRollback {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || lines[0].Level != hostfuncs.LevelWarn || lines[0].Message != MsgRollback ||
				lines[0].Detail != "key="+hashHexOf(t, h)[:12]+" generation=1 acknowledged=3" {
				t.Fatalf("rollback lines %+v, want one warn line naming key, generation 1 and acknowledged 3", lines)
			}
			_, werr = e.get(h, "a", now+1001)
			wantCode(t, werr, hostfuncs.CodeHandleNotFound)
		})
	}
}
