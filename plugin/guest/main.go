//go:build wasip1

// Command guest is the mcp-resume plugin: the resume store of
// plugin/internal/resume and the policy of procid, compiled to one Wasm
// module that every host (Go, Python, TypeScript) loads through Extism.
// Build it with `make wasm`:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -trimpath -ldflags="-buildid= -s -w" -o plugin/plugin.wasm ./plugin/guest
//
// Exports (hostfuncs/README.md, "Plugin exports"; ABI version 7):
//
//	mcp_resume_abi_version  () -> "8"
//	open                    (JSON {"app","state_root"?,"instance"?,"launchers"?,"caller"?}) -> JSON {"state_dir","state_root","resume"}
//	load                    () -> token bytes, or empty output when there is none
//	store                   (token bytes) -> empty
//	reject                  () -> empty
//	names                   () -> JSON {"token","lock"}: this instance's file names ({} when resume is off)
//	list                    () -> JSON {"files":[{"name","pid","start_time","instance"?,"host","age_seconds"}]}
//	prune                   () -> JSON {"removed":[{"name","reason","host"}]}
//	render                  (JSON {"command","json"?,"whoami"?,"show_state_dir"?,"apps"?,"state_root"?,"root_dirs"?,"app"?}) -> the bytes the mcp-resume CLI prints
//	whoami                  (empty, or JSON {"pid"?}) -> JSON {"pid","start_time","stdio","instance_suffix","token_file","lock_file","state_dir","chain","error"?}
//
// and the handle store's (plugin/internal/handles; an instance opened with
// handles_open instead of open):
//
//	handles_open   (JSON {"app","state_root"?,"caller"?,"idle_ttl_ms"?,"max_age_ms"?,"tombstone_ms"?,"max_handles"?,"max_handles_per_principal"?,"max_value_bytes"?,"lock_wait_ms"?}) -> JSON {"state_dir","state_root","idle_ttl_ms","max_age_ms","tombstone_ms","max_handles","max_value_bytes","max_handles_per_principal","shards"}
//	handle_create  (JSON {"principal","value","idle_ttl_ms"?,"max_age_ms"?,"now_ms"?}) -> JSON {"handle","generation","idle_ttl_ms","max_age_ms","created_ms"}
//	handle_get     (JSON {"handle","principal","now_ms"?}) -> JSON {"value","generation","created_ms","idle_ttl_ms","max_age_ms"}
//	handle_put     (JSON {"handle","principal","value","generation"?,"now_ms"?}) -> JSON {"generation"}
//	handle_delete  (JSON {"handle","principal","generation"?,"now_ms"?}) -> JSON {}
//	handle_touch   (JSON {"handle","principal","now_ms"?}) -> JSON {"generation","idle_ttl_ms","max_age_ms"}
//	handle_exists  (JSON {"handle","principal","now_ms"?}) -> JSON {"exists"}
//	handle_list    (JSON {"now_ms"?}) -> JSON {"handles":[...],"live","tombstones","shards","bytes"}
//	handle_gc      (JSON {"now_ms"?}) -> JSON {"expired_idle","expired_max_age","tombstones_dropped","orphans_removed","temps_removed","live"}
//
// handle_create, handle_get and handle_put also take the binary form
// (first byte 0x01, hostfuncs.HandleInput.DecodeBinary) and then answer in
// binary (hostfuncs HandleCreated, HandleValue and HandleGeneration
// EncodeBinary); their errors stay the JSON error string.
//
// Each returns 0 on success and 1 on failure, with the Extism error string
// set to the JSON {"code","message","reason"?,"generation"?} (codes in hostfuncs). This file is
// thin glue; the logic lives in plugin/internal/resume and internal/procid. JSON
// goes through the codecs of hostfuncs (no encoding/json, no fmt: a lean
// guest; plugin_test.go holds the size budget).
package main

import (
	"github.com/extism/go-pdk"
	"math"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/handles"
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

//go:wasmimport extism:host/user mcp_resume_unlock
func hostUnlock(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_eval
func hostEval(uint64) uint64

//go:wasmimport extism:host/user mcp_resume_crypto
func hostCrypto(uint64) uint64

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
	hostfuncs.FnUnlock:     hostUnlock,
	hostfuncs.FnEval:       hostEval,
	hostfuncs.FnCrypto:     hostCrypto,
}

// noResponse stands for the response of a host function that returned no
// memory block: not JSON, so the store reads it as "cannot tell".
var noResponse = []byte("no response")

// call moves req into Extism memory, invokes the host function and copies its
// response out, freeing both blocks so memory stays flat across calls.
func call(fn string, req []byte) []byte {
	out, block := callKept(fn, req, math.MaxInt)
	if block == 0 {
		return noResponse
	}
	freeKept(block)
	return out
}

// callKept calls host function fn with req and loads the response's first
// n bytes (fewer when it is shorter), leaving the response in its Extism
// memory block, which it returns (0 and nothing when there is none):
// go-pdk copies 8 bytes per kernel call, so bytes the plugin only passes
// on are better left there (handles.Store.Keep).
func callKept(fn string, req []byte, n int) ([]byte, uint64) {
	in := pdk.AllocateBytes(req)
	offset := imports[fn](in.Offset())
	in.Free()
	if offset == 0 {
		return nil, 0
	}
	out := pdk.FindMemory(offset)
	head := make([]byte, min(uint64(n), out.Length()))
	out.Load(head)
	return head, offset
}

// freeKept frees a response block of callKept (0: none).
func freeKept(block uint64) {
	if block != 0 {
		m := pdk.FindMemory(block)
		m.Free()
	}
}

// store is the instance's single resume.Store; the plugin instance is the
// server instance's session with its token file.
var store = resume.New(call)

// handleStore is the instance's handle store, used instead of store when
// the host opens the instance with handles_open (a separate instance).
var handleStore = newHandleStore()

func newHandleStore() *handles.Store {
	s := handles.New(call)
	s.Keep(callKept, freeKept)
	return s
}

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
	if werr, ok := err.(*hostfuncs.Error); ok {
		return fail(werr) // not_found: nothing under the state root to answer for
	}
	if err != nil {
		return fail(&hostfuncs.Error{Code: hostfuncs.CodeInvalidOption, Message: err.Error()})
	}
	pdk.Output(out)
	return 0
}

//go:wasmexport handles_open
func handlesOpen() int32 {
	out, werr := handleStore.Open(pdk.Input())
	return outputJSON(out, werr)
}

// The binary form: when the input of handle_create, handle_get or
// handle_put starts with hostfuncs.HandleBinaryForm, the output is binary
// (EncodeBinary); errors are the JSON error string in both forms.

//go:wasmexport handle_create
func handleCreate() int32 {
	in := pdk.Input()
	out, werr := handleStore.Create(in)
	if werr == nil && hostfuncs.IsHandleBinary(in) {
		pdk.Output(out.EncodeBinary())
		return 0
	}
	return outputJSON(out, werr)
}

//go:wasmexport handle_get
func handleGet() int32 {
	in := pdk.Input()
	if !hostfuncs.IsHandleBinary(in) {
		out, werr := handleStore.Get(in)
		return outputJSON(out, werr)
	}
	out, block, werr := handleStore.GetKept(in)
	switch {
	case werr != nil:
		return fail(werr)
	case block != 0:
		// The value stays in the host's block: the output's head goes over
		// the block's start, and the block is the output.
		m := pdk.FindMemory(block)
		m.Store(out.EncodeBinaryHead())
		pdk.OutputMemory(m)
	default:
		pdk.Output(out.EncodeBinary())
	}
	return 0
}

//go:wasmexport handle_put
func handlePut() int32 {
	in := pdk.Input()
	out, werr := handleStore.Put(in)
	if werr == nil && hostfuncs.IsHandleBinary(in) {
		pdk.Output(out.EncodeBinary())
		return 0
	}
	return outputJSON(out, werr)
}

//go:wasmexport handle_delete
func handleDelete() int32 {
	in := pdk.Input()
	if werr := hostfuncs.JSONOnly(in); werr != nil {
		return fail(werr)
	}
	if werr := handleStore.Delete(in); werr != nil {
		return fail(werr)
	}
	pdk.OutputString("{}")
	return 0
}

//go:wasmexport handle_touch
func handleTouch() int32 {
	in := pdk.Input()
	if werr := hostfuncs.JSONOnly(in); werr != nil {
		return fail(werr)
	}
	out, werr := handleStore.Touch(in)
	return outputJSON(out, werr)
}

//go:wasmexport handle_exists
func handleExists() int32 {
	in := pdk.Input()
	if werr := hostfuncs.JSONOnly(in); werr != nil {
		return fail(werr)
	}
	out, werr := handleStore.Exists(in)
	return outputJSON(out, werr)
}

//go:wasmexport handle_list
func handleList() int32 {
	in := pdk.Input()
	if werr := hostfuncs.JSONOnly(in); werr != nil {
		return fail(werr)
	}
	out, werr := handleStore.List(in)
	return outputJSON(out, werr)
}

//go:wasmexport handle_gc
func handleGC() int32 {
	in := pdk.Input()
	if werr := hostfuncs.JSONOnly(in); werr != nil {
		return fail(werr)
	}
	out, werr := handleStore.GC(in)
	return outputJSON(out, werr)
}

func main() {}
