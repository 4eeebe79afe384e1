package host

import (
	"context"
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

// The answers of List and GC are the plugin's export outputs as hostfuncs
// states them (hostfuncs/README.md, "Plugin exports"), as for Store.List:
// the same JSON in every host language, which `mcp-resume state` hands to
// the plugin's render export unchanged.
type (
	// HandleList is what List reports: the entries (Handles), the count
	// of live handles and of tombstones, the shard count in effect and
	// the bytes of the live values; never a value, a handle or a
	// principal.
	HandleList = hostfuncs.HandleListOutput
	// HandleInfo is one entry of a HandleList: Key, the first 12 hex
	// digits of the handle's key hash (the name log lines use); State
	// (hostfuncs.HandleLive, HandleExpiredIdle, HandleExpiredMaxAge,
	// HandleEvicted); Generation and Size (bytes of the value) for a live
	// handle; AgeMS since creation and IdleMS since the last use (for a
	// tombstone: since it died), in milliseconds.
	HandleInfo = hostfuncs.HandleEntry
	// GCResult is what GC removed, in counts, and the live handles left.
	GCResult = hostfuncs.HandleGCOutput
)

// CreateOption sets a lifetime of one handle at Create.
type CreateOption func(*hostfuncs.HandleInput)

// WithIdleTTL gives the handle an idle TTL shorter than the store's (1 ms
// up to HandlePolicy.IdleTTL; longer fails with ErrInvalidOption).
func WithIdleTTL(d time.Duration) CreateOption {
	return func(in *hostfuncs.HandleInput) { in.IdleTTLMS, in.IdleTTLSet = optionMS(d), true }
}

// WithMaxAge gives the handle a maximum age shorter than the store's (1 ms
// up to HandlePolicy.MaxAge; longer fails with ErrInvalidOption).
func WithMaxAge(d time.Duration) CreateOption {
	return func(in *hostfuncs.HandleInput) { in.MaxAgeMS, in.MaxAgeSet = optionMS(d), true }
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
		o(&in)
	}
	var out hostfuncs.HandleCreated
	if err := h.call(ctx, hostfuncs.ExportHandleCreate, in, &out); err != nil {
		return Created{}, err
	}
	return Created{Handle: out.Handle, Generation: out.Generation, IdleTTL: msDuration(out.IdleTTLMS), MaxAge: msDuration(out.MaxAgeMS), Created: msTime(out.CreatedMS)}, nil
}

// Get returns the value of handle for principal and refreshes its idle
// TTL. It fails with ErrHandleNotFound (unknown, deleted, another
// principal's, or corrupt), ErrHandleExpired (HandleError.Reason "idle"
// or "max_age") or ErrHandleEvicted.
func (h *Handles) Get(ctx context.Context, handle, principal string) (Value, error) {
	var out hostfuncs.HandleValue
	if err := h.call(ctx, hostfuncs.ExportHandleGet, input(handle, principal), &out); err != nil {
		return Value{}, err
	}
	return Value{Data: valueBytes(out.Value), Generation: out.Generation, Created: msTime(out.CreatedMS), IdleTTL: msDuration(out.IdleTTLMS), MaxAge: msDuration(out.MaxAgeMS)}, nil
}

// Put replaces the value of handle and returns its new generation; it
// refreshes the idle TTL, never the maximum age. With expect > 0 it is a
// compare-and-set: when the current generation is not expect it fails
// with ErrConflict (HandleError.Generation is the current one) and changes
// nothing. With expect 0 the last writer wins (generations start at 1, so
// 0 never names one). Errors as Get, and ErrValueTooLarge.
func (h *Handles) Put(ctx context.Context, handle, principal string, value []byte, expect int64) (int64, error) {
	in := input(handle, principal)
	in.Value, in.ValueSet = valueBytes(value), true
	in.Generation, in.GenerationSet = expect, expect != 0
	var out hostfuncs.HandleGeneration
	if err := h.call(ctx, hostfuncs.ExportHandlePut, in, &out); err != nil {
		return 0, err
	}
	return out.Generation, nil
}

// Delete removes handle and its value; afterwards it answers
// ErrHandleNotFound (no tombstone). With expect > 0 it deletes only at that
// generation, else fails with ErrConflict and deletes nothing: a delayed
// cleanup then cannot delete a handle that was written meanwhile. Errors
// as Get.
func (h *Handles) Delete(ctx context.Context, handle, principal string, expect int64) error {
	in := input(handle, principal)
	in.Generation, in.GenerationSet = expect, expect != 0
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
	var out HandleList
	err := h.call(ctx, hostfuncs.ExportHandleList, hostfuncs.HandleInput{}, &out)
	return out, err
}

// GC sweeps the whole store: expires handles past their idle TTL or
// maximum age, drops tombstones past the tombstone period, removes orphan
// records and stale temporary files. Expiry is also checked on every
// access and at OpenHandles, so GC is housekeeping, never needed for
// correctness.
func (h *Handles) GC(ctx context.Context) (GCResult, error) {
	var out GCResult
	err := h.call(ctx, hostfuncs.ExportHandleGC, hostfuncs.HandleInput{}, &out)
	return out, err
}
