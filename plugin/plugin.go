// Package plugin carries the compiled mcp-resume plugin, so Go hosts need no
// build step and no file on disk.
//
// The module is built from ./guest (go-pdk glue), plugin/internal/resume (the
// token store), plugin/internal/handles (the handle store),
// plugin/internal/render (the command line's output) and procid (every
// rule about processes, liveness and defaults) with standard Go,
// reproducibly, by `make wasm`:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath \
//		-gcflags=github.com/mcp-resume/mcp-resume/procid=-l \
//		-gcflags=github.com/mcp-resume/mcp-resume/plugin/internal/resume=-l \
//		-gcflags=github.com/mcp-resume/mcp-resume/plugin/internal/render=-l \
//		-ldflags="-buildid= -s -w" -o plugin/plugin.wasm ./plugin/guest
//
// The three packages named by -gcflags run once per start or per command
// and are compiled without inlining, which only grows them there (the
// Makefile's COLD_PKGS).
//
// CI rebuilds it and fails if the committed file differs. The Python and
// TypeScript packages copy this same file at build time; it is the only copy
// in the repository.
package plugin

import _ "embed"

// Wasm is the plugin module (plugin.wasm), ABI version 11 (hostfuncs.ABIVersion): it imports the
// twelve host functions (hostfuncs.Functions) and exports mcp_resume_abi_version, open, load,
// store, reject, names, list, prune, whoami and render (the resume store),
// handles_open and handle_create, get, put, delete, touch, exists, list
// and gc (the handle store), as described in hostfuncs/README.md.
//
//go:embed plugin.wasm
var Wasm []byte
