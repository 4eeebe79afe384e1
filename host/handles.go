package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/redishost"
)

// The handle store: durable state handles for sessionless MCP servers
// (plugin/README.md, the handle store; the package documentation, "The
// handle store"). This file opens it and runs its pool of plugin
// instances; handles_ops.go has the operations, handles_errors.go the
// errors.

// HandleOptions configures OpenHandles. A nil *HandleOptions, like the
// zero value, takes every default. Durations are sent to the plugin in whole milliseconds (a
// positive duration under 1 ms counts as 1 ms); a zero one takes the
// default, a negative one is refused (ErrInvalidOption).
type HandleOptions struct {
	// StateRoot is the state root, as Options.StateRoot: the store lives in
	// <StateRoot>/<app dir>/handles. Empty: $MCP_RESUME_STATE_DIR, else the
	// per-user default root. A relative root is taken against the working
	// directory. Not used by the Redis backend.
	StateRoot string
	// StateURL selects the Redis (or Valkey, Redis 6.2 or later) backend,
	// for handles shared by every replica of a server:
	// redis://[user:password@]host[:port][/db] or rediss://... (TLS, the
	// system's CA roots), with at most the query ?cluster=true (the URL
	// names one node of a Redis Cluster; db 0 or absent). Empty:
	// $MCP_RESUME_STATE_URL; empty again, the file backend in StateRoot.
	// Anything else is ErrInvalidOption, worded without the password. The
	// plugin decides all of this (hostfuncs/README.md, "The Redis
	// backend"); the store keeps one client per URL, closed by Close.
	StateURL string
	// Timeout is the Redis backend's deadline for each operation, connecting
	// included: a server that does not answer in time makes the operation
	// fail with ErrStoreUnavailable. Sent in whole milliseconds, 1 ms to
	// 60 s (more is ErrInvalidOption). Zero: $MCP_RESUME_STATE_TIMEOUT (Go
	// duration syntax), else 2 s. Not used by the file backend.
	Timeout time.Duration
	// IdleTTL is how long a handle lives without a Get, Put or Touch.
	// Zero: $MCP_RESUME_STATE_IDLE_TTL (Go duration syntax), else 24 h.
	IdleTTL time.Duration
	// MaxAge is how long a handle lives after Create at most, whatever its
	// use. Zero: $MCP_RESUME_STATE_MAX_AGE, else 30 days (720 h).
	MaxAge time.Duration
	// Tombstone is how long an expired or evicted handle still answers
	// ErrHandleExpired or ErrHandleEvicted before it answers
	// ErrHandleNotFound. Zero: 7 days.
	Tombstone time.Duration
	// MaxHandles is the number of live handles past which the least
	// recently used one is evicted. Zero: 10,000. The cap is exact per
	// shard (max_handles/128 shards, a power of two, 1..4096): at 10,000
	// (64 shards of 157) eviction can begin before 10,000 in all.
	MaxHandles int
	// MaxHandlesPerPrincipal is one principal's quota of live handles
	// (1..MaxHandles): a principal at it that creates evicts its own least
	// recently used handle, never another principal's. Zero: MaxHandles/4,
	// rounded up. Enforced per shard, like MaxHandles. The anonymous
	// principal "" (stdio) has the same quota.
	MaxHandlesPerPrincipal int
	// MaxValueBytes is the largest value in bytes. Zero: 1 MiB; at most
	// 4 MiB.
	MaxValueBytes int
	// LockWait is how long an operation waits for a shard another process
	// holds before it answers ErrStoreUnavailable. Zero: 2 s; at most 10 s.
	LockWait time.Duration
	// Pool is the most plugin instances the store runs at once, each
	// serving one call at a time. Zero: runtime.GOMAXPROCS(0). The first is
	// made by OpenHandles; the others when calls overlap.
	Pool int
	// Now, when set, is the clock of every operation (sent to the plugin
	// as now_ms): tests and simulations move time without sleeping. Nil:
	// the plugin's own clock (the system's wall clock).
	Now func() time.Time
	// Logger receives the store's log lines (events handle_created,
	// handle_expired, handle_evicted, handle_deleted, handle_conflict,
	// handle_corrupt, ...: plugin/README.md). Nil: slog.Default().
	Logger *slog.Logger
}

// HandlePolicy is what an open handle store runs with, as the plugin
// decided from the options, the environment and the defaults. A create
// tool's description states it (sessionless MCP asks a server to state the
// durability of its handles).
type HandlePolicy struct {
	// Backend is "file" (the handles live in StateDir) or "redis" (they
	// live on the server of StateURL).
	Backend string
	// StateDir is the store's directory, <StateRoot>/<app dir>/handles;
	// "" for the Redis backend.
	StateDir string
	// StateRoot is the state root it lies in; "" for the Redis backend.
	StateRoot string
	// StateURL is the Redis server's URL with its password shown as
	// "***" (safe to log or show in a tool description); "" for the file
	// backend.
	StateURL string
	// Timeout is the Redis backend's deadline per operation; 0 for the
	// file backend.
	Timeout time.Duration
	// IdleTTL, MaxAge and Tombstone are the store's lifetimes.
	IdleTTL, MaxAge, Tombstone time.Duration
	// MaxHandles is the live-handle cap; MaxValueBytes the largest value.
	MaxHandles, MaxValueBytes int
	// MaxHandlesPerPrincipal is one principal's quota of live handles.
	MaxHandlesPerPrincipal int
	// Shards is the number of shards a new directory gets for MaxHandles;
	// a directory made before keeps its own count (HandleList.Shards is
	// the count in effect).
	Shards int
}

// Handles is an open handle store of one app: values kept under opaque,
// unguessable handles, each bound to a principal, with an idle TTL, a
// maximum age, a generation for compare-and-set, sealed at rest
// (AES-256-GCM under a key derived from the handle), kept in a directory
// (the file backend) or on a Redis or Valkey server (the Redis backend,
// HandleOptions.StateURL: every replica of a server sees the same
// handles). It is independent of
// the resume Store (MCP_RESUME=off does not turn it off) and safe for
// many goroutines: the plugin is compiled once per process, and each call
// runs in one of a pool of plugin instances (a go-sdk instance is not
// safe for concurrent use). Operations on one handle are linearizable
// across goroutines, processes and languages sharing the directory or the
// Redis server (each operation is one atomic Lua script there).
//
// Every method honours ctx while it waits for a free instance; a call
// already in the plugin runs to its end (it waits at most LockWait for a
// shard lock, or Timeout for the Redis server), as for Store
// ("Cancellation").
type Handles struct {
	app    string
	input  []byte             // handles_open's input, for every instance of the pool
	redis  *redishost.Clients // the store's Redis clients, shared by its instances
	now    func() time.Time
	logger *slog.Logger
	policy HandlePolicy

	idle   chan *Store   // instances ready for a call
	closed chan struct{} // closed by Close: waiting calls give up
	mu     sync.Mutex
	size   int // instances alive (idle or in a call), at most max
	max    int
	done   bool
	all    map[*Store]bool // every instance alive, for Close
}

// OpenHandles opens the handle store of app (an MCP server application
// name, as for Open: 1-64 of [A-Za-z0-9._-] starting with a letter or
// digit). It settles the policy (options, then the environment, then the
// defaults) and touches no file: the first operation creates the
// directory (0700, owner checked) and sweeps stale temporary files and
// expired handles, and an unusable directory makes the operations answer
// ErrStoreUnavailable. With a Redis URL (StateURL or $MCP_RESUME_STATE_URL)
// it does not connect either: each operation runs one script on the
// server, and a server that cannot be reached, does not answer within
// Timeout or cannot run scripts makes it answer ErrStoreUnavailable
// (plugin/README.md, "Handle store on Redis"). It fails with an error
// matching ErrInvalidApp or
// ErrInvalidOption (the plugin's message names the option and what to
// give; a bad StateURL or Timeout too), ErrStoreUnavailable (no state
// root can be found) or ErrPlugin
// (the plugin cannot run), each an *Error but ErrPlugin; or ctx's error
// when ctx is done before the plugin is loaded. A nil options takes every
// default. A server whose store cannot open should keep serving and answer
// store_unavailable from the tools that need it.
func OpenHandles(ctx context.Context, app string, options *HandleOptions) (*Handles, error) {
	var opts HandleOptions
	if options != nil {
		opts = *options
	}
	ms := func(name string, d time.Duration) (int64, error) {
		switch {
		case d < 0:
			return 0, &Error{Code: hostfuncs.CodeInvalidOption, Message: fmt.Sprintf("%s must be a positive duration or zero for the default, not %v", name, d)}
		case d > 0 && d < time.Millisecond:
			return 1, nil
		}
		return d.Milliseconds(), nil
	}
	in := hostfuncs.HandlesOpenInput{Caller: hostfuncs.CallerGo, App: app, StateRoot: opts.StateRoot, StateURL: opts.StateURL, MaxHandles: int64(opts.MaxHandles), MaxValueBytes: int64(opts.MaxValueBytes), MaxHandlesPerPrincipal: int64(opts.MaxHandlesPerPrincipal)}
	var err error
	for _, o := range []struct {
		name string
		d    time.Duration
		ms   *int64
	}{{"IdleTTL", opts.IdleTTL, &in.IdleTTLMS}, {"MaxAge", opts.MaxAge, &in.MaxAgeMS}, {"Tombstone", opts.Tombstone, &in.TombstoneMS}, {"LockWait", opts.LockWait, &in.LockWaitMS}, {"Timeout", opts.Timeout, &in.TimeoutMS}} {
		if *o.ms, err = ms(o.name, o.d); err != nil {
			return nil, err
		}
	}
	if opts.MaxHandles < 0 || opts.MaxValueBytes < 0 || opts.Pool < 0 || opts.MaxHandlesPerPrincipal < 0 {
		return nil, &Error{Code: hostfuncs.CodeInvalidOption, Message: "MaxHandles, MaxHandlesPerPrincipal, MaxValueBytes and Pool must be positive, or zero for the default"}
	}
	h := &Handles{app: app, now: opts.Now, logger: opts.Logger, max: opts.Pool, all: map[*Store]bool{}, redis: &redishost.Clients{}}
	if h.logger == nil {
		h.logger = slog.Default()
	}
	if h.max == 0 {
		h.max = runtime.GOMAXPROCS(0)
	}
	h.idle, h.closed = make(chan *Store, h.max), make(chan struct{})
	if h.input, err = json.Marshal(in); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlugin, err)
	}
	first, out, err := h.instance(ctx)
	if err != nil {
		h.redis.Close()
		return nil, err
	}
	h.policy = HandlePolicy{
		Backend:  out.Backend,
		StateDir: out.StateDir, StateRoot: out.StateRoot, StateURL: out.StateURL, Timeout: msDuration(out.TimeoutMS),
		IdleTTL: msDuration(out.IdleTTLMS), MaxAge: msDuration(out.MaxAgeMS), Tombstone: msDuration(out.TombstoneMS),
		MaxHandles: int(out.MaxHandles), MaxValueBytes: int(out.MaxValueBytes), Shards: int(out.Shards),
		MaxHandlesPerPrincipal: int(out.MaxHandlesPerPrincipal),
	}
	h.size = 1
	h.all[first] = true
	h.idle <- first
	return h, nil
}

// handlesCacheDir is the compilation cache of the handle store's
// instances: "" is the default, as Options.CacheDir (tests share theirs).
var handlesCacheDir = ""

func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// instance loads a plugin instance with its own host functions (its own
// locks and state directory; the store's Redis clients) and opens the
// handle store in it.
func (h *Handles) instance(ctx context.Context) (*Store, hostfuncs.HandlesOpenOutput, error) {
	var out hostfuncs.HandlesOpenOutput
	funcs := primitives.New(primitives.Config{Logger: h.logger, Redis: h.redis})
	s, err := load(ctx, handlesCacheDir, funcs, h.logger)
	if err != nil {
		return nil, out, err
	}
	raw, errJSON, callErr, err := s.callRaw(ctx, hostfuncs.ExportHandlesOpen, h.input)
	switch {
	case err != nil:
		err = fmt.Errorf("%w: %s: %v", ErrPlugin, hostfuncs.ExportHandlesOpen, err)
	case callErr != nil:
		err = decodeError(hostfuncs.ExportHandlesOpen, errJSON)
	default:
		if jerr := json.Unmarshal(raw, &out); jerr != nil || (out.StateDir == "") != (out.Backend == hostfuncs.BackendRedis) {
			err = fmt.Errorf("%w: %s answered %q", ErrPlugin, hostfuncs.ExportHandlesOpen, raw)
		} else if out.Backend == hostfuncs.BackendRedis {
			// No directory: the file functions keep answering
			// invalid_request, and every operation goes through
			// mcp_resume_eval (hostfuncs/README.md, "The Redis backend").
		} else if !funcs.SetStateDir(out.StateDir) {
			// The confinement rule: the file functions act in
			// handles_open's state_dir, for good.
			err = fmt.Errorf("%w: %s answered a state_dir that is not an absolute, clean path: %q", ErrPlugin, hostfuncs.ExportHandlesOpen, out.StateDir)
		}
	}
	if err != nil {
		s.Close(ctx)
		return nil, out, err
	}
	return s, out, nil
}

// Policy returns what the store runs with (lifetimes, caps, directory).
func (h *Handles) Policy() HandlePolicy { return h.policy }

// acquire returns an instance for one call: an idle one, else a new one
// while the pool has room, else the first to come back. It fails when ctx
// is done first or the store is closed (fs.ErrClosed).
func (h *Handles) acquire(ctx context.Context) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case s := <-h.idle:
		return s, nil
	default:
	}
	h.mu.Lock()
	if h.done {
		h.mu.Unlock()
		return nil, fmt.Errorf("mcp-resume handle store: %w", fs.ErrClosed)
	}
	grow := h.size < h.max
	if grow {
		h.size++
	}
	h.mu.Unlock()
	if grow {
		s, _, err := h.instance(ctx)
		h.mu.Lock()
		defer h.mu.Unlock()
		if err == nil && !h.done {
			h.all[s] = true
			return s, nil
		}
		h.size--
		if err == nil { // closed meanwhile
			s.Close(ctx)
			h.closeRedisIfLast()
			return nil, fmt.Errorf("mcp-resume handle store: %w", fs.ErrClosed)
		}
		h.logger.Warn("mcp-resume handle store: could not add a plugin instance; calls wait for the running ones", "event", "handle_pool_grow_failed", "error", err)
		if h.size == 0 {
			return nil, err
		}
	}
	select {
	case s := <-h.idle:
		return s, nil
	case <-h.closed:
		return nil, fmt.Errorf("mcp-resume handle store: %w", fs.ErrClosed)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// release gives s back to the pool, or closes it when broken (a trap may
// leave an instance's state half-updated) or the store is closed.
func (h *Handles) release(s *Store, broken bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if broken || h.done {
		delete(h.all, s)
		h.size--
		s.Close(context.Background())
		h.closeRedisIfLast()
		return
	}
	h.idle <- s // never blocks: at most max instances exist
}

// call runs a handle_* export with input (now_ms set when the store has a
// clock) in its JSON form in a pooled instance and decodes its JSON output
// into v.
func (h *Handles) call(ctx context.Context, export string, input hostfuncs.HandleInput, v any) error {
	if !utf8.ValidString(input.Principal) {
		// JSON cannot carry the bytes to the plugin (they would arrive as
		// U+FFFD, another principal): refused here with its code.
		return &Error{Code: hostfuncs.CodeInvalidPrincipal, Message: "principal must be valid UTF-8"}
	}
	h.clock(&input)
	in, _ := input.EncodeJSON()
	return h.invoke(ctx, export, in, func(out []byte) error {
		if err := json.Unmarshal(out, v); err != nil {
			return fmt.Errorf("%w: %s returned malformed JSON: %v", ErrPlugin, export, err)
		}
		return nil
	})
}

// binaryOutput is the binary output of handle_create, handle_get or
// handle_put (hostfuncs HandleCreated, HandleValue, HandleGeneration).
type binaryOutput interface{ DecodeBinary([]byte) error }

// callBinary runs handle_create, handle_get or handle_put with input in
// the binary form (hostfuncs/README.md, "Binary form": the value crosses
// as raw bytes, without base64) and decodes the binary output into v. The
// plugin checks the principal's bytes itself (invalid_principal), as it
// does every other member.
func (h *Handles) callBinary(ctx context.Context, export string, input hostfuncs.HandleInput, v binaryOutput) error {
	h.clock(&input)
	return h.invoke(ctx, export, input.EncodeBinary(), func(out []byte) error {
		if err := v.DecodeBinary(out); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrPlugin, export, err)
		}
		return nil
	})
}

// clock sets input's now_ms from the store's clock, when it has one.
func (h *Handles) clock(input *hostfuncs.HandleInput) {
	if h.now != nil {
		input.NowMS, input.NowSet = h.now().UnixMilli(), true
	}
}

// invoke runs export with the encoded input in a pooled instance and
// hands its output to decode. Errors: the context's, fs.ErrClosed, an
// ErrPlugin (a trap, which also retires the instance), the export's
// *Error, or decode's.
func (h *Handles) invoke(ctx context.Context, export string, in []byte, decode func([]byte) error) error {
	s, err := h.acquire(ctx)
	if err != nil {
		return err
	}
	out, errJSON, callErr, err := s.callRaw(ctx, export, in)
	cancelled := err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) // before the plugin ran
	h.release(s, err != nil && !cancelled)
	switch {
	case cancelled:
		return err
	case err != nil:
		return fmt.Errorf("%w: %s: %v", ErrPlugin, export, err)
	case callErr != nil:
		return decodeError(export, errJSON)
	}
	return decode(out)
}

// Close closes the store: idle instances at once, busy ones when their
// call ends, releasing their plugin instances and locks (a shard lock is
// never held between calls). Later calls fail with an error matching
// fs.ErrClosed. It never waits (ctx is taken for symmetry with
// Store.Close) and returns nil. Safe to call more than once, from many
// goroutines, and on a nil *Handles.
func (h *Handles) Close(ctx context.Context) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.done {
		return nil
	}
	h.done = true
	close(h.closed)
	for {
		select {
		case s := <-h.idle:
			delete(h.all, s)
			h.size--
			s.Close(context.Background())
		default:
			h.closeRedisIfLast()
			return nil
		}
	}
}

// closeRedisIfLast closes the store's Redis clients once the store is
// closed and its last instance is gone (a busy one ends its call first).
// h.mu is held.
func (h *Handles) closeRedisIfLast() {
	if h.done && h.size == 0 {
		h.redis.Close()
	}
}
