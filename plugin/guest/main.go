//go:build wasip1

// Command guest is the mcp-resume plugin: the resume logic of package
// resume, compiled to one Wasm module that every host (Go, Python,
// TypeScript) loads through Extism. Build it with `make wasm`:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-buildid= -s -w" -o plugin/plugin.wasm ./plugin/guest
//
// Exports (hostfuncs/README.md, "Plugin exports"):
//
//	mcp_resume_abi_version  () -> "2"
//	load                    () -> token bytes, or empty output when there is none
//	store                   (token bytes) -> empty; error "invalid token: ..." for a malformed token
//	reject                  () -> empty
//	list                    () -> JSON {"files":[{"name","pid","start_time","instance"?}]}
//	prune                   () -> JSON {"removed":[names]}: token and lock files of hosts that are gone
//	names                   () -> JSON {"token","lock"}: this instance's file names (identity only, no file access)
//
// Each returns 0 on success and 1 on failure, with the message set as the
// Extism error. This file is thin glue; the logic lives in plugin/resume.
package main

import (
	"encoding/json"

	"github.com/extism/go-pdk"

	"github.com/mcp-resume/mcp-resume/internal/wire"
	"github.com/mcp-resume/mcp-resume/internal/resume"
)

// Host function imports; see wire.Fn* for the names and hostfuncs/README.md
// for the payloads. Each takes and returns an Extism memory offset.

//go:wasmimport extism:host/user mcp_resume_identity
func hostIdentity(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_prepare_dir
func hostPrepareDir(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_read
func hostRead(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_write
func hostWrite(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_remove
func hostRemove(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_list
func hostList(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_log
func hostLog(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_lock
func hostLock(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_probe
func hostProbe(uint64) uint64

var imports = map[string]func(uint64) uint64{
	wire.FnIdentity:   hostIdentity,
	wire.FnPrepareDir: hostPrepareDir,
	wire.FnRead:       hostRead,
	wire.FnWrite:      hostWrite,
	wire.FnRemove:     hostRemove,
	wire.FnList:       hostList,
	wire.FnLog:        hostLog,
	wire.FnLock:       hostLock,
	wire.FnProbe:      hostProbe,
}

// call moves req into Extism memory, invokes the host function and copies its
// response out, freeing both blocks so memory stays flat across calls.
func call(fn string, req []byte) []byte {
	in := pdk.AllocateBytes(req)
	defer in.Free()
	offset := imports[fn](in.Offset())
	if offset == 0 {
		return wire.ErrorResponse(wire.CodeIO, "host function "+fn+" returned no response")
	}
	out := pdk.FindMemory(offset)
	defer out.Free()
	return out.ReadBytes()
}

// store is the instance's single resume.Store; the plugin instance is the
// server instance's session with its token file.
var store = resume.New(call)

//go:wasmexport mcp_resume_abi_version
func abiVersion() int32 {
	pdk.OutputString(wire.ABIVersion)
	return 0
}

//go:wasmexport load
func load() int32 {
	if token, ok := store.Load(); ok {
		pdk.OutputString(token)
	}
	return 0
}

//go:wasmexport store
func storeToken() int32 {
	if err := store.Store(string(pdk.Input())); err != nil {
		pdk.SetError(err)
		return 1
	}
	return 0
}

//go:wasmexport reject
func reject() int32 {
	store.Reject()
	return 0
}

//go:wasmexport list
func list() int32 {
	out, err := store.List()
	if err != nil {
		pdk.SetError(err)
		return 1
	}
	b, _ := json.Marshal(out)
	pdk.Output(b)
	return 0
}

//go:wasmexport names
func names() int32 {
	b, _ := json.Marshal(store.Names())
	pdk.Output(b)
	return 0
}

//go:wasmexport prune
func prune() int32 {
	b, _ := json.Marshal(store.Prune())
	pdk.Output(b)
	return 0
}

func main() {}
