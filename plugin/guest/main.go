//go:build wasip1

// Command guest is the mcp-resume plugin: the resume store of
// plugin/internal/resume and the policy of procid, compiled to one Wasm
// module that every host (Go, Python, TypeScript) loads through Extism.
// Build it with `make wasm`:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-buildid= -s -w" -o plugin/plugin.wasm ./plugin/guest
//
// Exports (hostfuncs/README.md, "Plugin exports"; ABI version 5):
//
//	mcp_resume_abi_version  () -> "5"
//	open                    (JSON {"app","state_root"?,"instance"?,"launchers"?}) -> JSON {"state_dir","state_root","resume"}
//	load                    () -> token bytes, or empty output when there is none
//	store                   (token bytes) -> empty
//	reject                  () -> empty
//	names                   () -> JSON {"token","lock"}: this instance's file names ({} when resume is off)
//	list                    () -> JSON {"files":[{"name","pid","start_time","instance"?,"host","age_seconds"}]}
//	prune                   () -> JSON {"removed":[{"name","reason","host"}]}
//	render                  (JSON {"command","json"?,"whoami"?,"show_state_dir"?,"apps"?}) -> the bytes the mcp-resume CLI prints
//	whoami                  (empty, or JSON {"pid"?}) -> JSON {"pid","start_time","stdio","instance_suffix","token_file","lock_file","state_dir","chain","error"?}
//
// Each returns 0 on success and 1 on failure, with the Extism error string
// set to the JSON {"code","message"} (codes in hostfuncs). This file is
// thin glue; the logic lives in plugin/internal/resume and internal/procid. JSON
// goes through the codecs of hostfuncs (no encoding/json, no fmt: a lean
// guest; plugin_test.go holds the size budget).
package main

import (
	"github.com/extism/go-pdk"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/render"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// Host function imports; see hostfuncs.Fn* for the names and hostfuncs/README.md
// for the payloads. Each takes and returns an Extism memory offset.

//go:wasmimport extism:host/user mcp_resume_facts
func hostFacts(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_inspect
func hostInspect(uint64) uint64

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

//go:wasmimport extism:host/user mcp_resume_lock
func hostLock(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_log
func hostLog(uint64) uint64

var imports = map[string]func(uint64) uint64{
	hostfuncs.FnFacts:      hostFacts,
	hostfuncs.FnInspect:    hostInspect,
	hostfuncs.FnPrepareDir: hostPrepareDir,
	hostfuncs.FnRead:       hostRead,
	hostfuncs.FnWrite:      hostWrite,
	hostfuncs.FnRemove:     hostRemove,
	hostfuncs.FnList:       hostList,
	hostfuncs.FnLock:       hostLock,
	hostfuncs.FnLog:        hostLog,
}

// noResponse stands for the response of a host function that returned no
// memory block: not JSON, so the store reads it as "cannot tell".
var noResponse = []byte("no response")

// call moves req into Extism memory, invokes the host function and copies its
// response out, freeing both blocks so memory stays flat across calls.
func call(fn string, req []byte) []byte {
	in := pdk.AllocateBytes(req)
	defer in.Free()
	offset := imports[fn](in.Offset())
	if offset == 0 {
		return noResponse
	}
	out := pdk.FindMemory(offset)
	defer out.Free()
	return out.ReadBytes()
}

// store is the instance's single resume.Store; the plugin instance is the
// server instance's session with its token file.
var store = resume.New(call)

// fail sets the Extism error string to the JSON of werr and returns 1.
func fail(werr *hostfuncs.Error) int32 {
	b, _ := werr.EncodeJSON()
	pdk.SetErrorString(string(b))
	return 1
}

// encodable is an export's output document of host/internal/primitives.
type encodable interface{ EncodeJSON() ([]byte, error) }

// outputJSON writes v as the export's output, or fails with werr.
func outputJSON(v encodable, werr *hostfuncs.Error) int32 {
	if werr != nil {
		return fail(werr)
	}
	b, err := v.EncodeJSON()
	if err != nil {
		return fail(&hostfuncs.Error{Code: hostfuncs.CodeIO, Message: err.Error()})
	}
	pdk.Output(b)
	return 0
}

//go:wasmexport mcp_resume_abi_version
func abiVersion() int32 {
	pdk.OutputString(hostfuncs.ABIVersion)
	return 0
}

//go:wasmexport open
func open() int32 {
	out, werr := store.Open(pdk.Input())
	return outputJSON(out, werr)
}

//go:wasmexport load
func load() int32 {
	token, ok, werr := store.Load()
	if werr != nil {
		return fail(werr)
	}
	if ok {
		pdk.OutputString(token)
	}
	return 0
}

//go:wasmexport store
func storeToken() int32 {
	if werr := store.Store(string(pdk.Input())); werr != nil {
		return fail(werr)
	}
	return 0
}

//go:wasmexport reject
func reject() int32 {
	if werr := store.Reject(); werr != nil {
		return fail(werr)
	}
	return 0
}

//go:wasmexport names
func names() int32 {
	out, werr := store.Names()
	return outputJSON(out, werr)
}

//go:wasmexport list
func list() int32 {
	out, werr := store.List()
	return outputJSON(out, werr)
}

//go:wasmexport prune
func prune() int32 {
	out, werr := store.Prune()
	return outputJSON(out, werr)
}

//go:wasmexport whoami
func whoami() int32 {
	out, werr := store.Whoami(pdk.Input())
	return outputJSON(out, werr)
}

//go:wasmexport render
func renderExport() int32 {
	out, err := render.Render(pdk.Input())
	if err != nil {
		return fail(&hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: err.Error()})
	}
	pdk.Output(out)
	return 0
}

func main() {}
