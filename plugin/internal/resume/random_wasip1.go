//go:build wasip1

package resume

import "unsafe"

// randomGet is WASI's random source, the one crypto/rand reads on wasip1.
// Imported directly because crypto/rand would add about 60 KB to
// plugin.wasm (plugin_test.go holds the size budget).
//
//go:wasmimport wasi_snapshot_preview1 random_get
func randomGet(buf unsafe.Pointer, size uint32) uint32

// readRandom fills b from the guest's random source and reports whether
// it could. A failure (a non-zero WASI errno, which no runtime returns for
// random_get) leaves b as it was and reports false.
func readRandom(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	return randomGet(unsafe.Pointer(&b[0]), uint32(len(b))) == 0
}
