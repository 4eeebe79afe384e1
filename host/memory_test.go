package host_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/host"
)

// Memory stays flat over 10,000 calls (a long-running server must not grow
// with every call it makes): the Go heap, the
// process's RSS and the Extism kernel memory after 10,000 load/store calls
// against after the first 1,000, then after 5,000 more. Between 1k and 10k
// the guest's linear memory (part of the Go heap here) still grows once, by
// ~1.7 MiB here, while the guest's Go runtime settles its heap size; a
// linear memory never shrinks. After that it is flat: a leak of even 100
// bytes a call would show in the last 5,000 calls.
func TestMemoryFlat_10kCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 plugin calls")
	}
	ctx := context.Background()
	// A compile other tests left running in the background would show as
	// heap growth here.
	host.WaitAllCompilesForTest(ctx)
	s := open(t, filepath.Join(t.TempDir(), "state", "test-app"), nil)
	calls := 0
	run := func(n int) {
		for ; n > 0; n-- {
			if calls%2 == 0 {
				if err := s.Store(ctx, "tok-"+strconv.Itoa(calls)); err != nil {
					t.Fatal(err)
				}
			} else {
				s.Load(ctx)
			}
			calls++
		}
	}
	type sample struct {
		heap, rss uint64
		kernel    uint32
	}
	measure := func() sample {
		debug.FreeOSMemory() // a GC, and freed pages back to the OS: RSS is then what is live
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return sample{heap: ms.HeapAlloc, rss: rss(t), kernel: s.KernelMemoryForTest()}
	}
	run(1000)
	at1k := measure()
	run(9000)
	at10k := measure()
	run(5000)
	at15k := measure()
	for _, m := range []struct {
		name string
		s    sample
	}{{"1k", at1k}, {"10k", at10k}, {"15k", at15k}} {
		t.Logf("after %s calls: Go heap %.2f MiB, RSS %.1f MiB, Extism kernel memory %d KiB", m.name, mb(m.s.heap), mb(m.s.rss), m.s.kernel>>10)
	}
	if at10k.heap > at1k.heap+6<<20 {
		t.Errorf("Go heap grew by %.2f MiB from 1k to 10k calls", mb(at10k.heap-at1k.heap))
	}
	if at15k.heap > at10k.heap+512<<10 {
		t.Errorf("Go heap grew by %.2f MiB from 10k to 15k calls", mb(at15k.heap-at10k.heap))
	}
	if raceEnabled {
		return // the race detector's shadow memory grows with every allocation
	}
	if at10k.rss > at1k.rss+8<<20 || at15k.rss > at10k.rss+4<<20 {
		t.Errorf("RSS grew: %.1f, %.1f, %.1f MiB", mb(at1k.rss), mb(at10k.rss), mb(at15k.rss))
	}
	if at10k.kernel > at1k.kernel || at15k.kernel > at1k.kernel {
		t.Errorf("Extism kernel memory grew: %d, %d, %d bytes", at1k.kernel, at10k.kernel, at15k.kernel)
	}
}

// rss is this process's resident set size in bytes (/proc/self/statm).
func rss(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm:", err)
	}
	f := strings.Fields(string(b))
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

func mb(n uint64) float64 { return float64(n) / (1 << 20) }
