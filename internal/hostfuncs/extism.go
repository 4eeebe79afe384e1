package hostfuncs

import (
	"context"

	extism "github.com/extism/go-sdk"

	"github.com/mcp-resume/mcp-resume/internal/wire"
)

// Extism returns the host functions as Extism host functions in namespace
// wire.Namespace, ready for extism.NewCompiledPlugin. Each reads its JSON
// request from plugin memory, serves it with Call and writes the JSON
// response back; a failure to touch plugin memory returns offset 0, which
// the plugin treats as an io error.
func (f *Funcs) Extism() []extism.HostFunction {
	fns := make([]extism.HostFunction, 0, len(wire.Functions))
	for _, name := range wire.Functions {
		hf := extism.NewHostFunctionWithStack(name, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
			req, err := p.ReadBytes(stack[0])
			stack[0] = 0
			if err != nil {
				return
			}
			out, err := p.WriteBytes(f.Call(name, req))
			if err != nil {
				return
			}
			stack[0] = out
		}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
		hf.SetNamespace(wire.Namespace)
		fns = append(fns, hf)
	}
	return fns
}
