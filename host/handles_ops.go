package host

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// The operations of the handle store (handles.go), one plugin export each
// (plugin/README.md, the handle store's exports). Every handle and
// principal argument goes to the plugin as given: a malformed handle
// answers ErrInvalidHandle before any file is touched, a principal over
// 1024 bytes or not UTF-8 ErrInvalidPrincipal. Any method may also fail
// with ErrStoreUnavailable (the directory), ErrPlugin (the plugin), the
// ctx's error (done while waiting for an instance), or fs.ErrClosed (after
// Close).

// Created is a new handle, as Create returns it.
type Created struct {
	// Handle is the bearer secret naming the value: "mrh1_" and 32
	// base64url characters (192 random bits). Give it to the client; never
	// log it.
	Handle string
	// Generation is 1.
	Generation int64
	// IdleTTL and MaxAge are the handle's lifetimes.
	IdleTTL, MaxAge time.Duration
	// Created is when it was created (millisecond precision).
	Created time.Time
}

// Value is a handle's value, as Get returns it.
type Value struct {
	// Data is the value's bytes.
	Data []byte
	// Generation is 1 at Create, +1 for every Put.
	Generation int64
	// Created is when the handle was created (millisecond precision).
	Created time.Time
	// IdleTTL and MaxAge are the handle's lifetimes.
	IdleTTL, MaxAge time.Duration
}

// CreateOption sets a lifetime of one handle at Create (WithIdleTTL,
// WithMaxAge).
type CreateOption func(*createOptions)

// createOptions are the lifetimes CreateOptions set, for the create
// export's input.
type createOptions struct{ in *hostfuncs.HandleInput }

// WithIdleTTL gives the handle an idle TTL shorter than the store's (1 ms
// up to HandlePolicy.IdleTTL; longer, zero or negative fails with
// ErrInvalidOption).
func WithIdleTTL(d time.Duration) CreateOption {
	return func(o *createOptions) { o.in.IdleTTLMS, o.in.IdleTTLSet = optionMS(d), true }
}

// WithMaxAge gives the handle a maximum age shorter than the store's (1 ms
// up to HandlePolicy.MaxAge; longer, zero or negative fails with
// ErrInvalidOption).
func WithMaxAge(d time.Duration) CreateOption {
	return func(o *createOptions) { o.in.MaxAgeMS, o.in.MaxAgeSet = optionMS(d), true }
}

// optionMS is d in whole milliseconds, a positive d under 1 ms as 1 (zero
// and negative go as they are, for the plugin to refuse).
func optionMS(d time.Duration) int64 {
	if d > 0 && d < time.Millisecond {
		return 1
	}
	return d.Milliseconds()
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms) }

// valueBytes is value as the export's "value": never null (a nil value is
// the empty value).
func valueBytes(value []byte) []byte {
	if value == nil {
		return []byte{}
	}
	return value
}

// input is the input of a handle_* export on handle for principal.
func input(handle, principal string) hostfuncs.HandleInput {
	return hostfuncs.HandleInput{Handle: handle, HandleSet: true, Principal: principal, PrincipalSet: true}
}

// Create stores value (at most MaxValueBytes, else ErrValueTooLarge and
// nothing is written) under a new handle bound to principal (the
// authenticated subject or client id; "" for anonymous, e.g. stdio), with
// generation 1. At the cap, the least recently used handle of the shard is
// evicted (it then answers ErrHandleEvicted). A lifetime option longer
// than the store's fails with ErrInvalidOption.
func (h *Handles) Create(ctx context.Context, principal string, value []byte, opts ...CreateOption) (Created, error) {
	in := hostfuncs.HandleInput{Principal: principal, PrincipalSet: true, Value: valueBytes(value), ValueSet: true}
	for _, o := range opts {
		o(&createOptions{&in})
	}
	var out hostfuncs.HandleCreated
	if err := h.callBinary(ctx, hostfuncs.ExportHandleCreate, in, &out); err != nil {
		return Created{}, err
	}
	return Created{Handle: out.Handle, Generation: out.Generation, IdleTTL: msDuration(out.IdleTTLMS), MaxAge: msDuration(out.MaxAgeMS), Created: msTime(out.CreatedMS)}, nil
}

// Get returns the value of handle for principal and refreshes its idle
// TTL. It fails with ErrHandleNotFound (unknown, deleted, another
// principal's, or corrupt), ErrHandleExpired (Error.Reason "idle"
// or "max_age") or ErrHandleEvicted.
func (h *Handles) Get(ctx context.Context, handle, principal string) (Value, error) {
	var out hostfuncs.HandleValue
	if err := h.callBinary(ctx, hostfuncs.ExportHandleGet, input(handle, principal), &out); err != nil {
		return Value{}, err
	}
	return Value{Data: valueBytes(out.Value), Generation: out.Generation, Created: msTime(out.CreatedMS), IdleTTL: msDuration(out.IdleTTLMS), MaxAge: msDuration(out.MaxAgeMS)}, nil
}

// WriteOption makes a Put or Delete conditional (IfGeneration).
type WriteOption func(*writeOptions)

type writeOptions struct {
	generation int64
	set        bool
}

// IfGeneration makes a Put or Delete a compare-and-set: it acts only when
// the handle's current generation is g, else fails with ErrConflict
// (Error.Generation is the current one) and changes nothing. g must be at
// least 1 (generations start at 1 at Create); a smaller g fails with
// ErrInvalidOption before the store is touched.
func IfGeneration(g int64) WriteOption {
	return func(o *writeOptions) { o.generation, o.set = g, true }
}

// writeInput is the input of a put or delete on handle for principal with
// opts applied.
func writeInput(handle, principal string, opts []WriteOption) (hostfuncs.HandleInput, error) {
	var o writeOptions
	for _, f := range opts {
		f(&o)
	}
	in := input(handle, principal)
	if o.set && o.generation < 1 {
		return in, &Error{Code: hostfuncs.CodeInvalidOption, Message: fmt.Sprintf("IfGeneration must be at least 1 (generations start at 1), not %d", o.generation)}
	}
	in.Generation, in.GenerationSet = o.generation, o.set
	return in, nil
}

// Put replaces the value of handle and returns its new generation; it
// refreshes the idle TTL, never the maximum age. Without options the last
// writer wins; with IfGeneration(g) it is a compare-and-set: when the
// current generation is not g it fails with ErrConflict (Error.Generation
// is the current one) and changes nothing. Errors as Get, ErrValueTooLarge,
// and ErrInvalidOption for an IfGeneration below 1.
func (h *Handles) Put(ctx context.Context, handle, principal string, value []byte, opts ...WriteOption) (int64, error) {
	in, err := writeInput(handle, principal, opts)
	if err != nil {
		return 0, err
	}
	in.Value, in.ValueSet = valueBytes(value), true
	var out hostfuncs.HandleGeneration
	if err := h.callBinary(ctx, hostfuncs.ExportHandlePut, in, &out); err != nil {
		return 0, err
	}
	return out.Generation, nil
}

// Delete removes handle and its value; afterwards it answers
// ErrHandleNotFound (no tombstone). Without options it deletes whatever
// the generation; with IfGeneration(g) it deletes only at generation g,
// else fails with ErrConflict and deletes nothing: a delayed cleanup then
// cannot delete a handle that was written meanwhile. Errors as Get, and
// ErrInvalidOption for an IfGeneration below 1.
func (h *Handles) Delete(ctx context.Context, handle, principal string, opts ...WriteOption) error {
	in, err := writeInput(handle, principal, opts)
	if err != nil {
		return err
	}
	var out struct{}
	return h.call(ctx, hostfuncs.ExportHandleDelete, in, &out)
}

// Touch refreshes handle's idle TTL without reading or writing its value
// and returns its current generation. Errors as Get.
func (h *Handles) Touch(ctx context.Context, handle, principal string) (int64, error) {
	var out hostfuncs.HandleTouched
	if err := h.call(ctx, hostfuncs.ExportHandleTouch, input(handle, principal), &out); err != nil {
		return 0, err
	}
	return out.Generation, nil
}

// Exists reports whether handle is live for principal: false, with a nil
// error, for an unknown, deleted, expired or evicted handle or another
// principal's. It never refreshes the idle TTL. A malformed handle still
// fails with ErrInvalidHandle.
func (h *Handles) Exists(ctx context.Context, handle, principal string) (bool, error) {
	var out hostfuncs.HandleExists
	if err := h.call(ctx, hostfuncs.ExportHandleExists, input(handle, principal), &out); err != nil {
		return false, err
	}
	return out.Exists, nil
}

// List reports the handles and tombstones of the store (key-hash prefixes,
// states, generations, sizes, ages), never a value, handle or principal.
func (h *Handles) List(ctx context.Context) (HandleList, error) {
	var out hostfuncs.HandleListOutput
	err := h.call(ctx, hostfuncs.ExportHandleList, hostfuncs.HandleInput{}, &out)
	return handleListFrom(out), err
}

// GC sweeps the whole store: expires handles past their idle TTL or
// maximum age, drops tombstones past the tombstone period, removes orphan
// records and stale temporary files. Expiry is also checked on every
// access and at OpenHandles, so GC is housekeeping, never needed for
// correctness.
func (h *Handles) GC(ctx context.Context) (GCResult, error) {
	var out hostfuncs.HandleGCOutput
	err := h.call(ctx, hostfuncs.ExportHandleGC, hostfuncs.HandleInput{}, &out)
	return gcResultFrom(out), err
}
