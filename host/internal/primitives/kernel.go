package primitives

import (
	"context"
	"errors"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero/api"
)

// Kernel holds, for one plugin instance, the Extism kernel functions the
// host functions of Shared call on every request: length (to read the
// request's block) and alloc (to allocate the response's), and the
// kernel's memory, where Extism blocks live.
//
// Why this exists: go-sdk v1.7.1's CurrentPlugin.ReadBytes and WriteBytes
// look the kernel function up by name on each call
// (api.Module.ExportedFunction), and on wazero's compiler every lookup
// builds a new call engine with a fresh stack, about as costly as the call
// itself. A Kernel resolves them once per instance and calls the same
// api.Function from then on. It is our side's cache, not a patch of
// go-sdk: a replace directive in go.mod would only apply when this module
// is the main module, so programs importing package host would still run
// the unpatched SDK, and a vendored copy of go-sdk is ours to keep up to
// date. What a wrapper cannot reach stays as go-sdk does it: the lookups
// in Plugin.CallWithContext (reset, alloc, input_set, the export,
// error_get, output_offset, output_length) and in the extism:host/env
// trampolines the guest's PDK calls through (alloc, length, input_length,
// output_set, free, ...), which take the kernel module from the call's
// context and look the function up there.
//
// A Kernel is used by one plugin instance, whose calls never overlap (the
// host serialises them), as a wazero api.Function requires; it must not be
// shared between instances. The zero value is ready: it resolves the
// functions at the first host call, from the kernel module go-sdk puts in
// the call's context, and again if that module ever changes.
type Kernel struct {
	mod    api.Module // the kernel module the functions below belong to
	length api.Function
	alloc  api.Function
	mem    api.Memory
	stack  [1]uint64 // CallWithStack's parameters and results
}

type kernelKey struct{}

// WithKernel returns ctx carrying k, for the calls of the one plugin
// instance k belongs to; the host functions of Shared then read and write
// plugin memory through k. Without it they use go-sdk's CurrentPlugin
// (same results, a function lookup per access).
func WithKernel(ctx context.Context, k *Kernel) context.Context {
	return context.WithValue(ctx, kernelKey{}, k)
}

// errNoKernel is resolve's failure: no usable kernel module in the context.
var errNoKernel = errors.New("mcp-resume: no Extism kernel in the call's context")

// resolve points k at the kernel module of the current call (go-sdk's
// context value PluginCtxKey("extism")), resolving its functions when the
// module is new to k. It fails when the context has no kernel module or
// the module lacks one of them.
func (k *Kernel) resolve(ctx context.Context) error {
	mod, _ := ctx.Value(extism.PluginCtxKey("extism")).(api.Module)
	if mod == nil {
		return errNoKernel
	}
	if mod == k.mod {
		return nil
	}
	length, alloc, mem := mod.ExportedFunction("length"), mod.ExportedFunction("alloc"), mod.ExportedMemory("memory")
	if length == nil || alloc == nil || mem == nil {
		k.mod = nil
		return errNoKernel
	}
	k.mod, k.length, k.alloc, k.mem = mod, length, alloc, mem
	return nil
}

// read returns a copy of the Extism block at offset (its length from the
// kernel's length), as CurrentPlugin.ReadBytes does.
func (k *Kernel) read(ctx context.Context, offset uint64) ([]byte, error) {
	if err := k.resolve(ctx); err != nil {
		return nil, err
	}
	k.stack[0] = offset
	if err := k.length.CallWithStack(ctx, k.stack[:]); err != nil {
		return nil, err
	}
	buf, ok := k.mem.Read(uint32(offset), uint32(k.stack[0]))
	if !ok {
		return nil, errors.New("mcp-resume: invalid memory block")
	}
	return append([]byte(nil), buf...), nil
}

// write allocates a block of len(b) bytes with the kernel's alloc, copies
// b into it and returns its offset, as CurrentPlugin.WriteBytes does.
func (k *Kernel) write(ctx context.Context, b []byte) (uint64, error) {
	if err := k.resolve(ctx); err != nil {
		return 0, err
	}
	k.stack[0] = uint64(len(b))
	if err := k.alloc.CallWithStack(ctx, k.stack[:]); err != nil {
		return 0, err
	}
	ptr := k.stack[0]
	if !k.mem.Write(uint32(ptr), b) {
		return 0, errors.New("mcp-resume: failed to write to memory")
	}
	return ptr, nil
}
