package handles

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// hotNow is the clock of the hot path's tests.
const hotNow = 1_800_000_000_000

// getCalls runs a get of h for principal at now and returns its answer
// and the host calls it made (e.h.Calls, and e.h.Reqs from its first).
func (e *env) getCalls(h, principal string, now int64) (hostfuncs.HandleValue, *hostfuncs.Error, map[string]int) {
	e.h.Calls, e.h.Reqs = map[string]int{}, nil
	v, werr := e.get(h, principal, now)
	return v, werr, e.h.Calls
}

// hot reports whether calls are a hot get's: the handle's keys (hkdf),
// its principal tag (hmac) and the record's read_open, nothing else: no
// lock, no index.
func hot(calls map[string]int) bool {
	n := calls[hostfuncs.FnCrypto]
	return total(calls) == n && (n == 1 || n == 3)
}

// sealWrites counts the seal_write requests (record writes) in e.h.Reqs.
func (e *env) sealWrites() int {
	n := 0
	for _, r := range e.h.Reqs {
		if strings.HasPrefix(r, hostfuncs.FnCrypto+" "+string(rune(hostfuncs.CryptoOpSealWrite))) {
			n++
		}
	}
	return n
}

// A get within the refresh resolution of the record's last use reads the
// record only: no lock, no index, even with the index made unreadable
// (a directory in its place).
func TestHotGetReadsTheRecordOnly(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100})
	h := e.create("a", "v", hotNow)
	if err := removeFile(e.dir, "i-00"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(e.dir, "i-00"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, dt := range []int64{0, 1, 999} {
		v, werr, calls := e.getCalls(h, "a", hotNow+dt)
		if werr != nil || string(v.Value) != "v" || v.Generation != 1 {
			t.Fatalf("get at +%dms: %q %v", dt, v.Value, werr)
		}
		if !hot(calls) {
			t.Errorf("get at +%dms made host calls %v, want one read_open (and the keys and the tag, unless cached)", dt, calls)
		}
	}
	// Another principal's record answers not found from the record alone.
	_, werr, calls := e.getCalls(h, "b", hotNow+2)
	wantCode(t, werr, hostfuncs.CodeHandleNotFound)
	if !hot(calls) {
		t.Errorf("another principal's get made host calls %v, want the hot path's", calls)
	}
}

// The hot get's cost does not depend on how many handles the store holds:
// one read whatever the shard's index holds.
func TestHotGetCostIndependentOfHandles(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100, "max_handles_per_principal": 100})
	var hs []string
	for i := 0; i < 90; i++ {
		hs = append(hs, e.create("a", "v", hotNow))
	}
	for _, h := range []string{hs[0], hs[89]} {
		if _, werr, calls := e.getCalls(h, "a", hotNow+10); werr != nil || !hot(calls) {
			t.Errorf("get among 90 handles: %v, host calls %v, want the hot path's", werr, calls)
		}
	}
}

// A stale last use takes the slow path once: it rewrites the record's
// last use (and the index's), after which gets are hot again; within one
// resolution the record is written at most once.
func TestRefreshOncePerResolution(t *testing.T) {
	// idle 6400ms: resolution 100ms.
	e := openEnv(t, map[string]any{"max_handles": 100, "idle_ttl_ms": 6400})
	h := e.create("a", "v", hotNow)
	writes := 0
	for dt := int64(0); dt <= 1000; dt += 10 {
		v, werr, calls := e.getCalls(h, "a", hotNow+dt)
		if werr != nil || string(v.Value) != "v" {
			t.Fatalf("get at +%dms: %v", dt, werr)
		}
		writes += calls[hostfuncs.FnWrite] + e.sealWrites()
		if calls[hostfuncs.FnLock] > 0 && dt%100 != 0 {
			t.Errorf("get at +%dms took the lock (%v); only a get a resolution after the last refresh does", dt, calls)
		}
	}
	// A refresh at +100, +200 ... +1000: the record and the index each.
	if writes != 20 {
		t.Errorf("%d writes over 1s of gets every 10ms, want 20 (record and index, once per 100ms)", writes)
	}
	// The handle stays alive as long as it is read: +1000 refreshed it,
	// so at +1000+6399 it is live; the get refreshed the record.
	if _, werr := e.get(h, "a", hotNow+1000+6399); werr != nil {
		t.Fatalf("get within the idle TTL of the last refresh: %v", werr)
	}
	_, werr := e.get(h, "a", hotNow+1000+6399+6400)
	wantCode(t, werr, hostfuncs.CodeHandleExpired)
}

// Expiry is the slow path's: a record past its idle TTL or its maximum age
// answers handle_expired with the reason, and its tombstone stays.
func TestHotGetLeavesExpiryToTheSlowPath(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100, "idle_ttl_ms": 6400, "max_age_ms": 10000})
	h := e.create("a", "v", hotNow)
	_, werr := e.get(h, "a", hotNow+6400)
	wantCode(t, werr, hostfuncs.CodeHandleExpired)
	if werr.Reason != hostfuncs.ReasonIdle {
		t.Errorf("reason %q, want idle", werr.Reason)
	}
	_, werr = e.get(h, "a", hotNow+6401)
	wantCode(t, werr, hostfuncs.CodeHandleExpired)

	// Max age: refreshed every 50ms the record is always fresh, but
	// at its age of 10s it expires.
	h2 := e.create("a", "w", hotNow)
	for dt := int64(0); dt < 10000; dt += 50 {
		if _, werr := e.get(h2, "a", hotNow+dt); werr != nil {
			t.Fatalf("get at +%dms: %v", dt, werr)
		}
	}
	_, werr = e.get(h2, "a", hotNow+10000)
	wantCode(t, werr, hostfuncs.CodeHandleExpired)
	if werr.Reason != hostfuncs.ReasonMaxAge {
		t.Errorf("reason %q, want max_age", werr.Reason)
	}
	// Deleted: the record is gone; the slow path answers not found.
	h3 := e.create("a", "x", hotNow)
	if werr := e.s.Delete(input(map[string]any{"handle": h3, "principal": "a", "now_ms": hotNow})); werr != nil {
		t.Fatal(werr)
	}
	_, werr = e.get(h3, "a", hotNow)
	wantCode(t, werr, hostfuncs.CodeHandleNotFound)
}

// An evicted handle's record is gone: a get within the resolution of its
// last use answers handle_evicted (the tombstone), not a value.
func TestHotGetSeesEviction(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 1})
	h := e.create("a", "v", hotNow)
	e.create("a", "w", hotNow+1)
	_, werr := e.get(h, "a", hotNow+2)
	wantCode(t, werr, hostfuncs.CodeHandleEvicted)
}

// A record put back within the refresh resolution of its writing is
// answered by the hot path (the documented window: no index read per
// get); once its last use is a resolution old the slow path compares
// generations and refuses it.
func TestRollbackWindow(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100})
	h := e.create("a", "old", hotNow)
	rec := "h-" + hashHexOf(t, h)
	old, err := readFile(e.dir, rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, werr := e.s.Put(input(map[string]any{"handle": h, "principal": "a", "value": []byte("new"), "now_ms": hotNow + 1})); werr != nil {
		t.Fatal(werr)
	}
	if err := writeFile(e.dir, rec, string(old)); err != nil {
		t.Fatal(err)
	}
	if v, werr := e.get(h, "a", hotNow+maxResolutionMS-1); werr != nil || string(v.Value) != "old" {
		t.Fatalf("get within the window: %q %v, want the restored value (the documented window)", v.Value, werr)
	}
	_, werr := e.get(h, "a", hotNow+maxResolutionMS)
	wantCode(t, werr, hostfuncs.CodeHandleNotFound)
	if e.count("h-") != 0 {
		t.Errorf("files %v: the rolled-back record is still there", e.files())
	}
}

// v1Record is the version 1 record of value for k and principal tag: the
// layout before the last use was added.
func v1Record(k *keys, app string, h header, value []byte) []byte {
	b := []byte(recordMagic)
	b = append(b, 1)
	for _, v := range [...]int64{h.Generation, h.CreatedMS, h.IdleTTLMS, h.MaxAgeMS} {
		b = append64(b, v)
	}
	b = append(b, h.Tag[:]...)
	b = append(b, h.Nonce[:]...)
	return gcm(k.seal).Seal(b, h.Nonce[:], value, aad(app, k.hash, h.Tag, b))
}

// A version 1 record (written before the last use was in the record)
// still reads, through the slow path, which rewrites it as version 2; the
// next get is hot. Put, touch and exists read it too.
func TestVersion1RecordMigrated(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100})
	h := e.create("a", "placeholder", hotNow)
	raw, _ := ParseHandle(h)
	k := deriveKeys(raw, "conformance")
	rec := "h-" + hashHex(k.hash)
	hdr := header{Generation: 1, CreatedMS: hotNow, IdleTTLMS: DefaultIdleTTLMS, MaxAgeMS: DefaultMaxAgeMS, Tag: k.tag("a")}
	hdr.Nonce[0] = 7
	if err := writeFile(e.dir, rec, string(v1Record(&k, "conformance", hdr, []byte("version one")))); err != nil {
		t.Fatal(err)
	}
	if x, werr := e.s.Exists(input(map[string]any{"handle": h, "principal": "a", "now_ms": hotNow + 1})); werr != nil || !x.Exists {
		t.Fatalf("exists of a version 1 record: %v %v", x, werr)
	}
	if o, werr := e.s.Touch(input(map[string]any{"handle": h, "principal": "a", "now_ms": hotNow + 1})); werr != nil || o.Generation != 1 {
		t.Fatalf("touch of a version 1 record: %+v %v", o, werr)
	}
	v, werr, calls := e.getCalls(h, "a", hotNow+2)
	if werr != nil || string(v.Value) != "version one" || v.Generation != 1 || v.CreatedMS != hotNow {
		t.Fatalf("get of a version 1 record: %+v %v", v, werr)
	}
	if calls[hostfuncs.FnLock] != 1 || e.sealWrites() != 1 {
		t.Errorf("get of a version 1 record made %v, want the slow path and the record rewritten", calls)
	}
	b, _ := readFile(e.dir, rec)
	if got, ok := parseHeader(b); !ok || got.Version != recordVersion || got.LastUsedMS != hotNow+2 || got.Generation != 1 {
		t.Errorf("record after the get: %+v %v, want version 2 last used at the get", got, ok)
	}
	v, werr, calls = e.getCalls(h, "a", hotNow+3)
	if werr != nil || string(v.Value) != "version one" || !hot(calls) {
		t.Errorf("get after the migration: %q %v, calls %v, want the hot path", v.Value, werr, calls)
	}
	// Put of a version 1 record writes version 2 at the next generation.
	if err := writeFile(e.dir, rec, string(v1Record(&k, "conformance", hdr, []byte("version one")))); err != nil {
		t.Fatal(err)
	}
	if g, werr := e.s.Put(input(map[string]any{"handle": h, "principal": "a", "value": []byte("two"), "generation": 1, "now_ms": hotNow + 4})); werr != nil || g.Generation != 2 {
		t.Fatalf("put over a version 1 record: %+v %v", g, werr)
	}
	if v, werr, calls := e.getCalls(h, "a", hotNow+5); werr != nil || string(v.Value) != "two" || !hot(calls) {
		t.Errorf("get after the put: %q %v, calls %v, want the hot path", v.Value, werr, calls)
	}
}

// keptGet runs GetKept of h for principal at now through the test host's
// kept calls, as the guest's glue does: the binary output (the block with
// its head written over, or the whole output), whether the value stayed
// in the host's block, and the error.
func (e *env) keptGet(h, principal string, now int64) ([]byte, bool, *hostfuncs.Error) {
	e.s.Keep(e.h.CallKept, e.h.Free)
	defer e.s.Keep(nil, nil)
	in := hostfuncs.HandleInput{Handle: h, Principal: principal, PrincipalSet: true, NowMS: now, NowSet: true}.EncodeBinary()
	v, block, werr := e.s.GetKept(in)
	if werr != nil || block == 0 {
		return v.EncodeBinary(), false, werr
	}
	return e.h.Output(block, v.EncodeBinaryHead()), true, nil
}

// A binary get on the hot path leaves the value in the host's block: the
// output is that block, its head the output's fixed part, and it decodes
// to the value and header a get answers. Another principal's record, a
// stale record and a missing one are answered from the other paths, and
// no block is left behind.
func TestGetKeptLeavesTheValueInTheHost(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100})
	h := e.create("a", "kept value", hotNow)
	out, kept, werr := e.keptGet(h, "a", hotNow+1)
	var v hostfuncs.HandleValue
	if werr != nil || !kept || v.DecodeBinary(out) != nil || string(v.Value) != "kept value" || v.Generation != 1 || v.CreatedMS != hotNow {
		t.Fatalf("kept get: %x kept %v %v -> %+v", out, kept, werr, v)
	}
	want, _ := e.get(h, "a", hotNow+2)
	if !bytes.Equal(out[:hostfuncs.HandleValueAt], want.EncodeBinaryHead()) {
		t.Errorf("kept head %x, a get's %x", out[:hostfuncs.HandleValueAt], want.EncodeBinaryHead())
	}
	_, _, werr = e.keptGet(h, "b", hotNow+3)
	wantCode(t, werr, hostfuncs.CodeHandleNotFound)
	// Past the refresh resolution the get takes the slow path, which
	// reads the record whole (no block), and answers the same.
	out, kept, werr = e.keptGet(h, "a", hotNow+10*60_000)
	if werr != nil || kept || v.DecodeBinary(out) != nil || string(v.Value) != "kept value" {
		t.Errorf("stale kept get: %x kept %v %v", out, kept, werr)
	}
	_, _, werr = e.keptGet("mrh1_"+strings.Repeat("A", 32), "a", hotNow+4)
	wantCode(t, werr, hostfuncs.CodeHandleNotFound)
	if len(e.h.Kept) != 0 {
		t.Errorf("%d blocks left kept", len(e.h.Kept))
	}
}
