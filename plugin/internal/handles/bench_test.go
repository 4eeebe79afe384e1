package handles

import "testing"

// BenchmarkNative runs the policy natively over the test host (real files
// and flock locks): the store's own cost without Wasm or a host runtime.
func BenchmarkNative(b *testing.B) {
	t := &testing.T{}
	e := openEnv(t, nil)
	e.t = t
	h := e.create("a", "value", 0)
	b.Run("get", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, werr := e.get(h, "a", 0); werr != nil {
				b.Fatal(werr)
			}
		}
	})
	b.Run("put", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, werr := e.s.Put(input(map[string]any{"handle": h, "principal": "a", "value": []byte("v")})); werr != nil {
				b.Fatal(werr)
			}
		}
	})
}
