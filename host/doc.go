// Package host embeds the mcp-resume plugin in a Go MCP server: open a Store
// for your server app, Load the token to offer the broker, Store the token
// the broker returns, Reject a token the broker refused.
//
//	store, err := host.Open(ctx, "my-server", nil)
//	if err != nil { ... } // a bad app name or a broken plugin: serve without resume
//	defer store.Close(ctx) // a nil *Store is "resume off": every method is safe
//	if token, ok := store.Load(ctx); ok {
//		sess, err := broker.Resume(ctx, token)
//		if err != nil { store.Reject(ctx) } // then start a fresh session
//	}
//	store.Store(ctx, sess.Token)
//
// The package also opens a handle store (OpenHandles), durable state for
// sessionless MCP servers, independent of resume: see "The handle store".
//
// # Which host
//
// Two different programs are called "host" around this package. This
// package is the Extism host: the side that loads and runs the plugin and
// answers its host functions, which is your MCP server process. The MCP
// host is the application that launched your server over stdio (Claude
// Desktop, an editor, an agent): the process the plugin identifies, and
// whose lifetime a token file is tied to. In this package's documentation a
// bare "host" (package host, host functions) is the Extism side and the
// other is always written "MCP host". The one place where a bare name means
// the MCP host is the contract's JSON, which this package passes through
// unchanged: the Host field of a TokenFile or PrunedFile ("alive", "gone",
// "unknown") and the PID and StartTime of an Identity describe the MCP
// host.
//
// # What runs where
//
// All of the resume policy is the plugin (plugin.wasm, built from
// procid and plugin/internal/resume), the same Wasm module the Python and
// TypeScript packages run: which process is the MCP host, the state
// directory, the instance key, the app-name and token rules. This package
// supplies the host functions of hostfuncs/README.md (OS primitives, no
// policy) and runs the plugin on Extism's Go SDK over wazero. It implements
// spec 000 ("MCP Server Session Resume Specification v1"): failures are
// logged through log/slog, never returned as a reason to stop the server, and
// nothing is ever written to stdout.
//
// # Switching resume off
//
// MCP_RESUME=off in the server's environment turns resume off: Open still
// succeeds, logs one line ("Session resume turned off by MCP_RESUME=off",
// event resume_off), and from then on Load finds nothing and Store and
// Reject do nothing; no process is inspected and no file or directory is
// read or written. The plugin reads the switch (it is policy, like every
// other MCP_RESUME_* variable), so every host language honours it the same
// way. The plugin is therefore still loaded: with MCP_RESUME=off a start
// saves the plugin's identity and file work (a few ms), not the loading of
// the module (docs/BENCHMARKS.md, `make bench-go`, mode "MCP_RESUME=off").
//
// # Startup
//
// The plugin is compiled once per process and cached on disk across
// processes (Options.CacheDir). The first start on a machine does not wait
// for wazero's compiler: it runs on wazero's interpreter while a background
// goroutine compiles the module into the cache, which the next start loads.
// Nothing waits for that goroutine (not Close, not process exit), and a
// process killed during it leaves nothing a later start would read.
//
// # The handle store
//
// Sessionless MCP asks a server to keep no state in its process and to give
// the client an opaque handle instead: a create tool returns one, later
// calls pass it, and the server checks it together with the caller on every
// call. OpenHandles opens such a store for an app, in the handles/ folder
// of the app's state directory (<state root>/<app dir>/handles; "state"
// names the XDG state directory, hence the folder's name):
//
//	hs, err := host.OpenHandles(ctx, "my-server", nil) // nil: every default
//	if err != nil { ... } // serve anyway; the tools that need it answer store_unavailable
//	defer hs.Close(ctx)
//	c, err := hs.Create(ctx, principal, []byte(`{"notes":[]}`))
//	v, err := hs.Get(ctx, c.Handle, principal)
//	gen, err := hs.Put(ctx, c.Handle, principal, newValue, host.IfGeneration(v.Generation)) // compare-and-set
//	if errors.Is(err, host.ErrConflict) { ... } // someone wrote first: read again
//
// Every failure either store answers is an *Error (Code, Message, Reason,
// Generation) matching one sentinel with errors.Is (ErrInvalidApp,
// ErrHandleNotFound, ErrConflict, ...), the same codes as in Python and
// TypeScript; only ErrPlugin (the plugin cannot run) is not an *Error.
// An MCP server built on the official Go SDK can let package
// host/mcpadapter open both stores and turn these errors into tool errors.
//
// Its policy is the plugin's, the same in Go, Python and TypeScript, which
// share one directory and lock it the same way:
//
//   - A handle is "mrh1_" and 32 base64url characters: 192 bits from the
//     OS CSPRNG (the guest's WASI random source, which the loader wires to
//     crypto/rand). It is a bearer secret: only a hash of it names a file,
//     and no log line or error holds it.
//   - A principal ("" for anonymous) is bound at Create; another principal
//     gets ErrHandleNotFound, exactly as for an unknown handle.
//   - Lifetime: an idle TTL (default 24 h; MCP_RESUME_STATE_IDLE_TTL) that
//     Get, Put and Touch refresh, and a maximum age from creation (default
//     30 days; MCP_RESUME_STATE_MAX_AGE) that nothing extends. Expired, a
//     handle answers ErrHandleExpired with the reason for the tombstone
//     period (7 days), then ErrHandleNotFound. The idle refresh is recorded
//     when it moves the last use by at least min(idle TTL/64, 1 s).
//   - Capacity: a principal past MaxHandlesPerPrincipal (MaxHandles/4)
//     evicts its own least recently used handle; past MaxHandles live
//     handles (10,000) the principal holding the most loses its least
//     recently used (ErrHandleEvicted), so one principal never evicts
//     another's; a value over MaxValueBytes (1 MiB) gets ErrValueTooLarge.
//   - Consistency: a generation, 1 at Create and +1 per Put; Put and Delete
//     with IfGeneration are compare-and-set (ErrConflict with the
//     current one); without one the last writer wins. Operations on one
//     handle are linearizable across goroutines, processes and languages.
//   - At rest the value is sealed (AES-256-GCM, a key derived from the
//     handle): a copy of the directory reveals nothing without the handle.
//
// MCP_RESUME=off turns resume off, not the handle store.
//
// # The handle store on Redis
//
// A server run as several replicas (behind a load balancer, stateless
// Streamable HTTP) needs every replica to see the same handles: give
// HandleOptions.StateURL (or set MCP_RESUME_STATE_URL) to a Redis or
// Valkey server, Redis 6.2 or later:
//
//	hs, err := host.OpenHandles(ctx, "my-server", &host.HandleOptions{
//		StateURL: "redis://:password@redis.internal:6379/0", // or rediss://...; ?cluster=true for a Redis Cluster
//		Timeout:  2 * time.Second,                            // per operation, connecting included
//	})
//	log.Printf("handles on %s", hs.Policy().StateURL) // the password shown as ***
//
// The methods, errors and policy are the file backend's; each operation
// is one atomic Lua script the plugin writes and this package's host
// function mcp_resume_eval runs through go-redis
// (github.com/redis/go-redis/v9), never resending a script after a timeout
// or a broken connection (hostfuncs/README.md, "mcp_resume_eval"). The
// store keeps one client per URL, shared by its pool and closed by Close.
// A server that cannot be reached, does not answer within Timeout or
// cannot run scripts gives ErrStoreUnavailable; after a timeout a write
// may or may not have been applied. What Redis must provide (persistence,
// noeviction) and the keys it holds: plugin/README.md, "Handle store on
// Redis".
//
// A StateStore interface (set, get, delete, exists, updateTTL,
// compareAndSet) maps onto it as: set → Create (a new handle) or Put
// (an existing one), get → Get, delete → Delete, exists → Exists, updateTTL
// → Touch, compareAndSet → Put or Delete with IfGeneration.
//
// A *Handles is safe for many goroutines: the plugin is compiled once per
// process, and calls run in a pool of plugin instances (HandleOptions.Pool,
// default GOMAXPROCS), each with its own host functions.
package host
