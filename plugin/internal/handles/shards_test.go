package handles

import (
	"crypto/sha256"
	"math/rand"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// For every shard count of a directory made before more than 256 shards
// were allowed, a key hash falls on the shard it did then: its first byte
// modulo the count.
func TestShardOfKeepsSmallLayouts(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := 1; n <= 256; n *= 2 {
		s := &Store{shards: n}
		for i := 0; i < 2000; i++ {
			var h [16]byte
			rng.Read(h[:])
			if got, want := s.shardOf(h), int(h[0])&(n-1); got != want {
				t.Fatalf("%d shards: hash %x on shard %d, want %d", n, h, got, want)
			}
		}
	}
	// 4096 shards use 12 bits: every shard is reached.
	s := &Store{shards: 4096}
	seen := map[int]bool{}
	for i := 0; i < 100000; i++ {
		var h [16]byte
		rng.Read(h[:])
		seen[s.shardOf(h)] = true
	}
	if len(seen) != 4096 {
		t.Errorf("4096 shards: %d reached", len(seen))
	}
}

func TestShardsFor(t *testing.T) {
	for _, c := range []struct {
		max            int64
		shards, bucket int
	}{{1, 1, 1}, {100, 1, 1}, {10000, 64, 64}, {32768, 256, 256}, {200000, 1024, 256}, {1 << 20, 4096, 256}, {MaxHandles, 4096, 256}} {
		if got := ShardsFor(c.max); got != c.shards {
			t.Errorf("ShardsFor(%d) = %d, want %d", c.max, got, c.shards)
		}
		if got := BucketsFor(c.max); got != c.bucket {
			t.Errorf("BucketsFor(%d) = %d, want %d", c.max, got, c.bucket)
		}
	}
}

// A directory of 4096 shards: three-digit shard files, every operation,
// list and gc, a reopen with a smaller cap that keeps the layout, and a
// lost index of a shard above 255 rebuilt (held covers every shard).
func TestManyShards(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 1 << 20})
	var hs []string
	for i := 0; i < 40; i++ {
		hs = append(hs, e.create("a", "v"+string(rune('a'+i%26)), hotNow))
	}
	if b, _ := readFile(e.dir, "layout"); string(b) != "mcp-resume handles v1 shards=4096\n" {
		t.Fatalf("layout %q", b)
	}
	for _, f := range e.files() {
		if strings.HasPrefix(f, "i-") && len(f) != 5 {
			t.Errorf("index file %q: want i- and three hex digits", f)
		}
	}
	for _, h := range hs {
		if _, werr := e.get(h, "a", hotNow+2000); werr != nil {
			t.Fatal(werr)
		}
	}
	e.h.Calls = map[string]int{}
	out, werr := e.s.List(input(map[string]any{"now_ms": hotNow + 2001}))
	if werr != nil || out.Shards != 4096 || out.Live != 40 {
		t.Fatalf("list: shards %d live %d %v", out.Shards, out.Live, werr)
	}
	// list visits only the shards in use: one lock each, not 4096.
	if locks := e.h.Calls[hostfuncs.FnLock]; locks > 40 {
		t.Errorf("list took %d locks for 40 handles", locks)
	}
	gc, werr := e.s.GC(input(map[string]any{"now_ms": hotNow + 2002}))
	if werr != nil || gc.Live != 40 {
		t.Fatalf("gc: %+v %v", gc, werr)
	}
	if _, werr := e.s.Put(input(map[string]any{"handle": hs[0], "principal": "a", "value": []byte("w"), "generation": 1, "now_ms": hotNow + 2003})); werr != nil {
		t.Fatal(werr)
	}
	if werr := e.s.Delete(input(map[string]any{"handle": hs[1], "principal": "a", "now_ms": hotNow + 2003})); werr != nil {
		t.Fatal(werr)
	}

	// A handle on a shard above 255 whose index is lost: a new instance
	// (its first call lists the directory) rebuilds it.
	high := ""
	for _, h := range hs[2:] {
		raw, _ := ParseHandle(h)
		if n := e.s.shardOf(deriveKeys(raw, "conformance").hash); n > 255 {
			high = h
			if err := removeFile(e.dir, indexPrefix+e.s.shardName(n)); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if high == "" {
		t.Fatal("no handle on a shard above 255")
	}
	small := openOn(t, e.h, map[string]any{"max_handles": 100})
	small.h.Logs = nil
	if v, werr := small.get(high, "a", hotNow+4000); werr != nil || v.Generation != 1 {
		t.Fatalf("get after the index went, from a store opened with max_handles 100: %v", werr)
	}
	if got := small.h.Events(); len(got) != 1 || got[0] != EventIndexRebuilt {
		t.Errorf("events %v, want one %s", got, EventIndexRebuilt)
	}
	if out, _ := small.s.List(input(map[string]any{"now_ms": hotNow + 4001})); out.Shards != 4096 || out.Live != 39 {
		t.Errorf("list of the reopened store: shards %d live %d, want 4096 and 39", out.Shards, out.Live)
	}
}

// A directory of 256 shards (the largest before) keeps them and its
// two-digit files when a store with a larger cap opens it.
func TestExisting256ShardDirectory(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 32768})
	var hs []string
	for i := 0; i < 20; i++ {
		hs = append(hs, e.create("a", "v", hotNow))
	}
	big := openOn(t, e.h, map[string]any{"max_handles": 1 << 20})
	for _, h := range hs {
		if v, werr := big.get(h, "a", hotNow+2000); werr != nil || string(v.Value) != "v" {
			t.Fatalf("get from the larger store: %v", werr)
		}
	}
	big.create("a", "w", hotNow+2001)
	out, werr := big.s.List(input(map[string]any{"now_ms": hotNow + 2002}))
	if werr != nil || out.Shards != 256 || out.Live != 21 {
		t.Fatalf("list: shards %d live %d %v, want 256 and 21", out.Shards, out.Live, werr)
	}
	for _, f := range e.files() {
		if strings.HasPrefix(f, "i-") && len(f) != 4 {
			t.Errorf("index file %q in a 256-shard directory", f)
		}
	}
}

// legacyIndexFile is the index file of entries as stores before sealed
// indexes wrote it: MRI2, the entries, the first 4 bytes of their SHA-256.
func legacyIndexFile(entries []entry) []byte {
	b := append([]byte(legacyMagic), encodeEntries(entries)...)
	sum := sha256.Sum256(b)
	return append(b, sum[:4]...)
}

// A legacy index (MRI2, checksummed) is still read, owner ids and
// tombstones included, and replaced by a sealed one (MRI3) at the shard's
// next write; one damaged is rebuilt from the records.
func TestLegacyIndexRead(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 100})
	h := e.create("a", "v", hotNow)
	gone := e.create("a", "w", hotNow)
	if werr := e.s.Delete(input(map[string]any{"handle": gone, "principal": "a", "now_ms": hotNow})); werr != nil {
		t.Fatal(werr)
	}
	sh := &shard{s: e.s, n: 0, now: hotNow}
	if werr := sh.load(); werr != nil || len(sh.entries) != 1 {
		t.Fatalf("load: %v, %d entries", werr, len(sh.entries))
	}
	// A tombstone beside the live entry, to see it survive.
	tomb := sh.entries[0]
	tomb.Hash[0] ^= 0xff
	tomb.State, tomb.LastUsedMS = stateEvicted, hotNow
	legacy := legacyIndexFile([]entry{sh.entries[0], tomb})
	fresh := New(e.h.Call)
	if _, werr := fresh.Open(input(map[string]any{"app": "conformance", "state_root": e.h.Facts.Home + "/state", "max_handles": 100})); werr != nil {
		t.Fatal(werr)
	}
	s2 := &env{t: t, h: e.h, s: fresh, dir: e.dir}
	if err := writeFile(e.dir, "i-00", string(legacy)); err != nil {
		t.Fatal(err)
	}
	s2.h.Logs = nil
	out, werr := s2.s.List(input(map[string]any{"now_ms": hotNow + 1}))
	if werr != nil || out.Live != 1 || out.Tombstones != 1 {
		t.Fatalf("list over a legacy index: %+v %v, want 1 live and 1 tombstone", out, werr)
	}
	if len(s2.h.Events()) != 0 {
		t.Errorf("events %v: a legacy index is not rebuilt", s2.h.Events())
	}
	if owner := ownerOf("conformance", "a"); sh.entries[0].Owner != owner {
		t.Fatalf("the test's entry has no owner id")
	}
	// The next write seals it.
	if _, werr := s2.s.Put(input(map[string]any{"handle": h, "principal": "a", "value": []byte("x"), "now_ms": hotNow + 2})); werr != nil {
		t.Fatal(werr)
	}
	if b, _ := readFile(e.dir, "i-00"); string(b[:4]) != indexMagic {
		t.Errorf("index after a put starts %q, want %q", b[:4], indexMagic)
	}
	sh2 := &shard{s: fresh, n: 0, now: hotNow + 3}
	if werr := sh2.load(); werr != nil || len(sh2.entries) != 2 || sh2.entries[0].Owner != sh.entries[0].Owner {
		t.Fatalf("sealed index: %v, %+v", werr, sh2.entries)
	}
	// A legacy index with a wrong checksum is rebuilt.
	legacy[len(legacy)-1] ^= 1
	if err := writeFile(e.dir, "i-00", string(legacy)); err != nil {
		t.Fatal(err)
	}
	s2.h.Logs = nil
	if _, werr := s2.s.List(input(map[string]any{"now_ms": hotNow + 4})); werr != nil {
		t.Fatal(werr)
	}
	if got := s2.h.Events(); len(got) != 1 || got[0] != EventIndexRebuilt {
		t.Errorf("events %v, want one %s", got, EventIndexRebuilt)
	}
}

// A sealed index moved to another shard does not open there: it is
// rebuilt from that shard's records.
func TestIndexBoundToItsShard(t *testing.T) {
	e := openEnv(t, map[string]any{"max_handles": 1000, "max_handles_per_principal": 1000})
	byShard := map[int]string{}
	for len(byShard) < 2 {
		h := e.create("a", "v", hotNow)
		raw, _ := ParseHandle(h)
		byShard[e.s.shardOf(deriveKeys(raw, "conformance").hash)] = h
	}
	var ns []int
	for n := range byShard {
		ns = append(ns, n)
	}
	a, err := readFile(e.dir, indexPrefix+e.s.shardName(ns[0]))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFile(e.dir, indexPrefix+e.s.shardName(ns[1]), string(a)); err != nil {
		t.Fatal(err)
	}
	e.h.Logs = nil
	if _, werr := e.get(byShard[ns[1]], "a", hotNow+2*maxResolutionMS); werr != nil {
		t.Fatalf("get from the shard whose index was replaced: %v", werr)
	}
	if got := e.h.Events(); len(got) != 1 || got[0] != EventIndexRebuilt {
		t.Errorf("events %v, want one %s", got, EventIndexRebuilt)
	}
}
