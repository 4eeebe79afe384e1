package host

import (
	"context"
	"log/slog"

	"github.com/mcp-resume/mcp-resume/host/internal/loader"
	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// Test-only hooks for the conformance runner (conformance_test.go), which
// calls the plugin's exports directly (hostfuncs/conformance/README.md,
// step 6) over host functions pinned to a fixture system.

// LoadForTest loads the plugin over funcs and checks its ABI version, as
// Open does, without calling open. When calls is not nil, it serves the
// plugin's host function calls in place of funcs (the conformance runner's
// pinned system wraps funcs); Close still closes funcs.
func LoadForTest(ctx context.Context, cacheDir string, funcs *primitives.Funcs, calls primitives.Handler, logger *slog.Logger) (*Store, error) {
	s, err := load(ctx, cacheDir, funcs, logger)
	if err == nil && calls != nil {
		s.calls = calls
	}
	return s, err
}

// CallForTest calls export with input: its output, or the error it
// answered, or a trap.
func (s *Store) CallForTest(ctx context.Context, export string, input []byte) ([]byte, *hostfuncs.Error, error) {
	return s.call(ctx, export, input)
}

// SetWasmForTest makes Open and LoadForTest run module until the returned
// function restores the plugin.
func SetWasmForTest(module []byte) (restore func()) {
	saved := wasmModule
	wasmModule = module
	return func() { wasmModule = saved }
}

// OpenWithFuncsForTest is Open over funcs (benchmarks trace them).
func OpenWithFuncsForTest(ctx context.Context, app string, opts *Options, funcs *primitives.Funcs) (*Store, error) {
	return openWith(ctx, app, opts, funcs)
}

// EngineForTest is the wazero engine the Store's plugin instance runs on:
// "compiled" or "interpreted".
func (s *Store) EngineForTest() string { return string(s.engine) }

// WaitCompileForTest waits for the background compile of the plugin for
// cacheDir, if one was started, to end.
func WaitCompileForTest(ctx context.Context, cacheDir string) error {
	return loader.WaitBackground(ctx, wasmModule, cacheDir)
}

// WaitAllCompilesForTest waits for every background compile of this
// process (other modules and cache directories included) to end.
func WaitAllCompilesForTest(ctx context.Context) error { return loader.WaitAllBackground(ctx) }

// CacheEntryForTest is the directory of the plugin's finished cache entry
// under cacheDir.
func CacheEntryForTest(cacheDir string) string { return loader.EntryDir(wasmModule, cacheDir) }

// KernelMemoryForTest is the size in bytes of the Extism kernel's memory,
// where every call's input and output are allocated.
func (s *Store) KernelMemoryForTest() uint32 { return s.plugin.Memory().Size() }

// HoldForTest takes the Store's call lock, as a long call would, until the
// returned function releases it.
func (s *Store) HoldForTest() (release func()) {
	s.sem <- struct{}{}
	return func() { <-s.sem }
}

// CallRawForTest is CallForTest that also returns an answered failure's
// whole error string (its JSON object, with members beyond code and
// message).
func (s *Store) CallRawForTest(ctx context.Context, export string, input []byte) ([]byte, []byte, *hostfuncs.Error, error) {
	return s.callRaw(ctx, export, input)
}

// SetHandlesCacheDirForTest makes OpenHandles use the compilation cache
// dir (the test binary's shared one).
func SetHandlesCacheDirForTest(dir string) { handlesCacheDir = dir }

// PayPerCallForTest makes every instance h has now pay what each call paid
// before the per-instance caches (BenchmarkHandles's "before" side): its
// host functions reach plugin memory through go-sdk's CurrentPlugin, which
// looks the kernel's length and alloc up on every call.
func (h *Handles) PayPerCallForTest() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.all {
		s.kernel = nil
	}
}

// DropLockFilesForTest closes the lock files every instance of h keeps
// open between locks (none is held between calls), so that the next lock
// opens its file again, as every lock did before they were kept.
func (h *Handles) DropLockFilesForTest() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.all {
		s.funcs.Close()
	}
}

// CallJSONForTest runs a handle export with input in the JSON form and
// decodes its JSON output into v: the path Create, Get and Put took before
// the binary form (BenchmarkHandlesBinaryForm's "json" side).
func (h *Handles) CallJSONForTest(ctx context.Context, export string, input hostfuncs.HandleInput, v any) error {
	return h.call(ctx, export, input, v)
}
