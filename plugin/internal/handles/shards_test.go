package handles

import (
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
