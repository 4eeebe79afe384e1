package plugin_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/mcp-resume/mcp-resume/internal/wire"
	"github.com/mcp-resume/mcp-resume/plugin"
)

// TestModule checks the committed plugin.wasm against the contract
// (hostfuncs/README.md, ABI version 3): it imports exactly the nine host
// functions in wire.Namespace, each (i64) -> i64, and exports every plugin
// export as () -> i32.
func TestModule(t *testing.T) {
	ctx := context.Background()
	// The interpreter only validates and decodes: no machine code is needed to
	// read the imports and exports.
	r := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	defer r.Close(ctx)
	m, err := r.CompileModule(ctx, plugin.Wasm)
	if err != nil {
		t.Fatal(err)
	}
	var imported []string
	for _, f := range m.ImportedFunctions() {
		mod, name, _ := f.Import()
		if mod != wire.Namespace {
			continue
		}
		imported = append(imported, name)
		if p, res := f.ParamTypes(), f.ResultTypes(); len(p) != 1 || p[0] != api.ValueTypeI64 || len(res) != 1 || res[0] != api.ValueTypeI64 {
			t.Errorf("import %s has type %v -> %v, want (i64) -> i64", name, p, res)
		}
	}
	want := wire.Functions()
	slices.Sort(imported)
	slices.Sort(want)
	if !slices.Equal(imported, want) {
		t.Errorf("plugin.wasm imports %v from %s, want %v", imported, wire.Namespace, want)
	}
	exports := m.ExportedFunctions()
	for _, name := range []string{wire.ExportABIVersion, wire.ExportOpen, wire.ExportLoad, wire.ExportStore, wire.ExportReject,
		wire.ExportNames, wire.ExportList, wire.ExportPrune, wire.ExportWhoami} {
		f, ok := exports[name]
		if !ok {
			t.Errorf("plugin.wasm does not export %s", name)
			continue
		}
		if p, res := f.ParamTypes(), f.ResultTypes(); len(p) != 0 || len(res) != 1 || res[0] != api.ValueTypeI32 {
			t.Errorf("export %s has type %v -> %v, want () -> i32", name, p, res)
		}
	}
}
