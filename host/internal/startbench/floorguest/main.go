//go:build wasip1

// Command floorguest is the floor of the startup benchmark
// (host/internal/startbench): a minimal go-pdk module with one export, built
// exactly as the plugin is (`make wasm`'s flags), so the benchmark can time
// what any standard-Go Extism plugin costs a Go host to open.
//
// Export: run (input bytes) -> the lowercase hex SHA-256 of the input.
package main

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/extism/go-pdk"
)

//go:wasmexport run
func run() int32 {
	sum := sha256.Sum256(pdk.Input())
	pdk.Output([]byte(hex.EncodeToString(sum[:])))
	return 0
}

func main() {}
