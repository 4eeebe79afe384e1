package host_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mcp-resume/mcp-resume/internal/hostfuncs"
	"github.com/mcp-resume/mcp-resume/internal/resume"
)

// Warm per-call cost of the plugin through the Go host, against the same
// logic compiled natively (no Wasm) on the same host functions: the price of
// running one plugin everywhere. `make bench` runs these; docs/BENCHMARKS.md
// has the figures.

type ops struct {
	load   func()
	store  func(string)
	reject func()
}

func wasmOps(b *testing.B) ops {
	s := open(b, filepath.Join(b.TempDir(), "state"), nil)
	ctx := context.Background()
	return ops{func() { s.Load(ctx) }, func(t string) { s.Store(ctx, t) }, func() { s.Reject(ctx) }}
}

func nativeOps(b *testing.B) ops {
	funcs := hostfuncs.New(hostfuncs.Config{Dir: filepath.Join(b.TempDir(), "state"), Identity: fixedIdentity})
	s := resume.New(funcs.Call)
	return ops{func() { s.Load() }, func(t string) { s.Store(t) }, s.Reject}
}

func benchOps(b *testing.B, mk func(*testing.B) ops) {
	b.Run("Load", func(b *testing.B) {
		o := mk(b)
		o.store("tok-initial")
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			o.load()
		}
	})
	b.Run("Store", func(b *testing.B) {
		o := mk(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			o.store("tok-" + strconv.Itoa(i))
		}
	})
	b.Run("Reject", func(b *testing.B) {
		// Each iteration: store a token, then reject it (read, compare, delete).
		o := mk(b)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			o.store("tok-" + strconv.Itoa(i))
			b.StartTimer()
			o.reject()
		}
	})
}

func BenchmarkWasm(b *testing.B)   { benchOps(b, wasmOps) }
func BenchmarkNative(b *testing.B) { benchOps(b, nativeOps) }
