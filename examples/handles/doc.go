// Package handles holds the end-to-end tests of the handle store (durable
// state handles for sessionless MCP servers) across the three hosts: the
// real Go, Python and TypeScript example servers driven over stdio by the
// official Go MCP SDK client, and stress helpers written against each
// language's public API (host.OpenHandles in Go, mcp_resume.HandleStore in
// Python, HandleStore.open in TypeScript), all on real files in one shared
// state directory.
//
// The package has no code of its own; its tests are behind the build tag
// "handles" so that the plain `go test ./...` of `make test-go` does not run
// them twice; `make test-handles` (part of `make test`) does:
//
//	go test -tags handles -count=1 ./examples/handles/ -args -handles.require
//
// What runs (docs/HANDLES.md is the user guide, docs/RELIABILITY.md the
// table of faults the suite writes):
//   - cross-language: a notebook created by the Python server, added to by
//     the Go and the TypeScript server, read back by the Python server;
//   - concurrency: 2 processes × 8 threads of compare-and-set increments on
//     one handle (Go + Go, Go + Python, Go + TypeScript);
//   - crash: put loops SIGKILLed at random instants, then every read is
//     whole and its generation matches its value;
//   - bad input over MCP: malformed, oversized and non-ASCII handles, an
//     oversized note, truncated, foreign-owned and symlinked records, a full
//     disk; after each the server still serves and another handle is intact;
//   - expiry: a 2 s idle TTL from MCP_RESUME_STATE_IDLE_TTL.
package handles
