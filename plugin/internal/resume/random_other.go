//go:build !wasip1

package resume

import "crypto/rand"

// readRandom fills b from the system's random source (native tests; the
// plugin reads WASI's random_get, random_wasip1.go) and reports whether it
// could.
func readRandom(b []byte) bool { _, err := rand.Read(b); return err == nil }
