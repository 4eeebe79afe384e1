package host

import (
	"context"
	"log/slog"

	"github.com/mcp-resume/mcp-resume/internal/hostfuncs"
	"github.com/mcp-resume/mcp-resume/internal/wire"
)

// Test-only hooks for the conformance runner (conformance_test.go), which
// calls the plugin's exports directly (hostfuncs/conformance/README.md,
// step 6) over host functions pinned to a fixture system.

// LoadForTest loads the plugin over funcs and checks its ABI version, as
// Open does, without calling open.
func LoadForTest(ctx context.Context, cacheDir string, funcs *hostfuncs.Funcs, logger *slog.Logger) (*Store, error) {
	return load(ctx, cacheDir, funcs, logger)
}

// CallForTest calls export with input: its output, or the error it
// answered, or a trap.
func (s *Store) CallForTest(ctx context.Context, export string, input []byte) ([]byte, *wire.Error, error) {
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
func OpenWithFuncsForTest(ctx context.Context, app string, opts *Options, funcs *hostfuncs.Funcs) (*Store, error) {
	return openWith(ctx, app, opts, funcs)
}
