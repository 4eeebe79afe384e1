package host_test

import (
	"context"
	"crypto/rand"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// BenchmarkHandles measures a get and a put of a 1 KiB value on the file
// backend, before and after the per-call savings of the Go host, in one
// run, alternating operation by operation (the order swapped every round)
// between two stores of one instance each (Pool 1), each with its own
// handle:
//
//   - before: the host functions reach plugin memory through go-sdk's
//     CurrentPlugin (a kernel function lookup, that is a new wazero call
//     engine, per access) and every shard lock opens its lock file again
//     (the kept files are closed after each operation, outside the timing;
//     the reopen costs one fstat more than the earlier code did);
//   - after: the instance's Kernel cache and the lock files kept open.
//
// It reports the p50 of each, in µs, and after/before ratios (ns/op is
// the time of a whole round: two gets and two puts). docs/BENCHMARKS.md
// ("The Go host's per-call costs") has the figures:
//
//	go test -run '^$' -bench BenchmarkHandles -benchtime 2000x ./host/
func BenchmarkHandles(b *testing.B) {
	ctx := context.Background()
	// Compiled code for both stores: the first instance of a process runs
	// on wazero's interpreter while a cold cache compiles.
	warm := openHandles(b, "bench-warm", host.HandleOptions{Pool: 1})
	if _, err := warm.Create(ctx, "p", []byte("x")); err != nil {
		b.Fatal(err)
	}
	if err := host.WaitAllCompilesForTest(ctx); err != nil {
		b.Fatal(err)
	}
	value := make([]byte, 1024)
	rand.Read(value)
	type side struct {
		h        *host.Handles
		handle   string
		get, put []time.Duration
		before   bool
	}
	sides := make([]*side, 2)
	for i, name := range []string{"bench-before", "bench-after"} {
		h := openHandles(b, name, host.HandleOptions{Pool: 1})
		c, err := h.Create(ctx, "p", value)
		if err != nil {
			b.Fatal(err)
		}
		sides[i] = &side{h: h, handle: c.Handle, before: i == 0}
		if sides[i].before {
			h.PayPerCallForTest()
		}
	}
	op := func(s *side, put bool) {
		start := time.Now()
		var err error
		if put {
			_, err = s.h.Put(ctx, s.handle, "p", value)
		} else {
			_, err = s.h.Get(ctx, s.handle, "p")
		}
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if put {
			s.put = append(s.put, took)
		} else {
			s.get = append(s.get, took)
		}
		if s.before {
			s.h.DropLockFilesForTest()
		}
	}
	for range 50 { // warm-up, not recorded
		for _, s := range sides {
			op(s, false)
			op(s, true)
		}
	}
	for _, s := range sides {
		s.get, s.put = s.get[:0], s.put[:0]
	}
	b.ResetTimer()
	for i := range b.N {
		order := sides
		if i%2 == 1 {
			order = []*side{sides[1], sides[0]}
		}
		for _, put := range []bool{false, true} {
			for _, s := range order {
				op(s, put)
			}
		}
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		d = slices.Clone(d)
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds()) / 1e3
	}
	before, after := sides[0], sides[1]
	b.ReportMetric(p50(before.get), "get-before-p50-µs")
	b.ReportMetric(p50(after.get), "get-after-p50-µs")
	b.ReportMetric(p50(after.get)/p50(before.get), "get-after/before")
	b.ReportMetric(p50(before.put), "put-before-p50-µs")
	b.ReportMetric(p50(after.put), "put-after-p50-µs")
	b.ReportMetric(p50(after.put)/p50(before.put), "put-after/before")
}

// BenchmarkHandlesBinaryForm measures a get and a put of a value through
// the binary form (Get, Put) and through the JSON form (the same exports
// with JSON input and output, base64 values), in one run, alternating
// operation by operation on one store (Pool 1) and one handle, for 1 KiB
// and 64 KiB values. It reports the p50 of each, in µs, and the
// binary/json ratios:
//
//	go test -run '^$' -bench BenchmarkHandlesBinaryForm -benchtime 1000x ./host/
func BenchmarkHandlesBinaryForm(b *testing.B) {
	for _, size := range []int{1024, 64 << 10} {
		b.Run(strconv.Itoa(size>>10)+"KiB", func(b *testing.B) { benchBinaryForm(b, size) })
	}
}

func benchBinaryForm(b *testing.B, size int) {
	ctx := context.Background()
	h := openHandles(b, "bench-form", host.HandleOptions{Pool: 1, MaxValueBytes: 1 << 20})
	value := make([]byte, size)
	rand.Read(value)
	c, err := h.Create(ctx, "p", value)
	if err != nil {
		b.Fatal(err)
	}
	if err := host.WaitAllCompilesForTest(ctx); err != nil {
		b.Fatal(err)
	}
	in := hostfuncs.HandleInput{Handle: c.Handle, HandleSet: true, Principal: "p", PrincipalSet: true}
	// times[binary][put]
	var times [2][2][]time.Duration
	op := func(binary, put bool) {
		start := time.Now()
		var err error
		switch {
		case binary && put:
			_, err = h.Put(ctx, c.Handle, "p", value)
		case binary:
			var v host.Value
			if v, err = h.Get(ctx, c.Handle, "p"); err == nil && len(v.Data) != size {
				b.Fatalf("got %d bytes", len(v.Data))
			}
		case put:
			pin := in
			pin.Value, pin.ValueSet = value, true
			var out hostfuncs.HandleGeneration
			err = h.CallJSONForTest(ctx, hostfuncs.ExportHandlePut, pin, &out)
		default:
			var out hostfuncs.HandleValue
			if err = h.CallJSONForTest(ctx, hostfuncs.ExportHandleGet, in, &out); err == nil && len(out.Value) != size {
				b.Fatalf("got %d bytes", len(out.Value))
			}
		}
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		t := &times[btoi(binary)][btoi(put)]
		*t = append(*t, took)
	}
	round := func(i int) {
		for _, put := range []bool{false, true} {
			op(i%2 == 0, put)
			op(i%2 == 1, put)
		}
	}
	for i := range 50 { // warm-up, not recorded
		round(i)
	}
	times = [2][2][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		round(i)
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 {
		d = slices.Clone(d)
		slices.Sort(d)
		return float64(d[len(d)/2].Nanoseconds()) / 1e3
	}
	for put, name := range []string{"get", "put"} {
		j, bin := p50(times[0][put]), p50(times[1][put])
		b.ReportMetric(j, name+"-json-p50-µs")
		b.ReportMetric(bin, name+"-binary-p50-µs")
		b.ReportMetric(bin/j, name+"-binary/json")
	}
}

// btoi is 1 for true, 0 for false.
func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}
