package primitives

import (
	"context"

	extism "github.com/extism/go-sdk"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// Extism returns the nine host functions, serving f, as Extism host
// functions in namespace hostfuncs.Namespace, ready for extism.NewCompiledPlugin.
func (f *Funcs) Extism() []extism.HostFunction {
	return extismFuncs(func(context.Context) *Funcs { return f })
}

type ctxKey struct{}

// NewContext returns ctx carrying f, for plugin calls through the host
// functions of Shared.
func NewContext(ctx context.Context, f *Funcs) context.Context {
	return context.WithValue(ctx, ctxKey{}, f)
}

// Shared returns the nine host functions for a module compiled once and
// instantiated by many stores (hostfuncs/README.md, "Loading the plugin":
// compile the module once per process). Each call serves the Funcs that
// NewContext put in the context of the plugin call (Extism passes that
// context to host functions); a call without one answers offset 0, which the
// plugin reads as "cannot tell".
func Shared() []extism.HostFunction {
	return extismFuncs(func(ctx context.Context) *Funcs {
		f, _ := ctx.Value(ctxKey{}).(*Funcs)
		return f
	})
}

// extismFuncs wraps Call as Extism host functions. Each reads its JSON
// request from plugin memory, serves it with Call and writes the JSON
// response back. A failure to touch plugin memory returns offset 0, which the
// plugin reads as "cannot tell" (hostfuncs/README.md, "Calling convention").
func extismFuncs(of func(context.Context) *Funcs) []extism.HostFunction {
	names := hostfuncs.Functions()
	fns := make([]extism.HostFunction, 0, len(names))
	for _, name := range names {
		hf := extism.NewHostFunctionWithStack(name, func(ctx context.Context, p *extism.CurrentPlugin, stack []uint64) {
			req, err := p.ReadBytes(stack[0])
			stack[0] = 0
			f := of(ctx)
			if err != nil || f == nil {
				return
			}
			out, err := p.WriteBytes(f.Call(name, req))
			if err != nil {
				return
			}
			stack[0] = out
		}, []extism.ValueType{extism.ValueTypePTR}, []extism.ValueType{extism.ValueTypePTR})
		hf.SetNamespace(hostfuncs.Namespace)
		fns = append(fns, hf)
	}
	return fns
}
