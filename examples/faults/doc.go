// Package faults is the cross-language fault-injection suite of mcp-resume:
// the same faults (a full disk, a read-only or unusable state directory,
// corrupt and planted token files, a server killed mid-store, concurrent
// instances, PID reuse, orphaned servers, hidden /proc, hosts that exec or
// share a state root, ...) injected into the three example servers
// (examples/go-server, examples/python-server, examples/typescript-server)
// driven by the official Go MCP SDK client as their MCP host, with the real
// broker (examples/broker). Its results are the fault table of
// docs/RELIABILITY.md.
//
// The suite is tests only, behind the build tags linux and faults, so that
// the plain `go test ./...` does not run it (it takes minutes of both cores
// and root); `make test-faults` runs it:
//
//	go test -tags faults -count=1 -run '^TestFaults$' ./examples/faults/ -args -faults.require
//
// testdata/faults_stress.py and testdata/faults_stress.mjs are the Python
// and TypeScript stress helpers of the concurrency faults.
package faults
