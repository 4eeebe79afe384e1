//go:build !wasip1

package resume

import "crypto/rand"

// readRandom fills b from the system's random source (native tests; the
// plugin reads WASI's random_get, random_wasip1.go).
func readRandom(b []byte) { _, _ = rand.Read(b) }
