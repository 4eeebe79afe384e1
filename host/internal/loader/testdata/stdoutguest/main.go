//go:build wasip1

// Command stdoutguest is a go-pdk module whose export "run" writes a line
// to its WASI stdout and to its WASI stderr: the loader's test checks that
// the line never reaches the host process's stdout, whatever
// EXTISM_ENABLE_WASI_OUTPUT says. Under testdata, so `go build ./...` and
// `go vet ./...` skip it.
package main

import "os"

//go:wasmexport run
func run() int32 {
	os.Stdout.WriteString("stdoutguest: guest stdout\n")
	os.Stderr.WriteString("stdoutguest: guest stderr\n")
	return 0
}

func main() {}
