//go:build wasip1

// Command testplugin is a stand-in for plugin.wasm used by the TypeScript
// binding's tests (sdk-bindings/typescript/test/store.test.ts). It is a
// go-pdk plugin that calls pdk.Log, so it imports extism:host/env
// get_log_level, which @extism/extism 1.0.3 does not provide; and its
// exports misbehave on purpose:
//
//	mcp_resume_abi_version  logs a warning with pdk.Log, writes a line to its WASI stdout (which must never
//	                        reach the process's stdout), outputs abiVersion (set with -ldflags -X main.abiVersion=N)
//	open                    succeeds, state directory /nonexistent
//	load                    traps (panics)
//	store                   fails with an error string that is not the contract's JSON
//	reject                  succeeds
//	list                    outputs text that is not JSON
//	inspect                 passes its input to the host function mcp_resume_inspect and outputs the answer, so a
//	                        test sees what the host answers the plugin from inside Extism (either mode)
//	(no names, prune, whoami) a host must cope with their absence
//
// The tests build it twice, with the host's ABI version and with the
// previous one:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -ldflags=-X=main.abiVersion=4 -o <tmp>.wasm ./sdk-bindings/typescript/test/testdata/testplugin
//
// It lives under testdata so `go build ./...` and `go vet ./...` skip it.
package main

import (
	"os"

	"github.com/extism/go-pdk"
)

var abiVersion = "0"

//go:wasmexport mcp_resume_abi_version
func abi() int32 {
	pdk.Log(pdk.LogWarn, "testplugin: ABI version asked")
	os.Stdout.WriteString("testplugin: guest stdout\n")
	pdk.OutputString(abiVersion)
	return 0
}

//go:wasmexport open
func open() int32 {
	pdk.OutputString(`{"state_dir":"/nonexistent","state_root":"/","resume":true}`)
	return 0
}

//go:wasmexport load
func load() int32 {
	panic("testplugin: load traps on purpose")
}

//go:wasmexport store
func store() int32 {
	pdk.SetErrorString("testplugin: store fails on purpose")
	return 1
}

//go:wasmexport reject
func reject() int32 {
	return 0
}

//go:wasmexport list
func list() int32 {
	pdk.OutputString("not json")
	return 0
}

//go:wasmimport extism:host/user mcp_resume_inspect
func hostInspect(uint64) uint64

//go:wasmexport inspect
func inspect() int32 {
	in := pdk.AllocateBytes(pdk.Input())
	defer in.Free()
	offset := hostInspect(in.Offset())
	if offset == 0 {
		pdk.SetErrorString("testplugin: mcp_resume_inspect returned no memory block")
		return 1
	}
	out := pdk.FindMemory(offset)
	defer out.Free()
	pdk.Output(out.ReadBytes())
	return 0
}

func main() {}
