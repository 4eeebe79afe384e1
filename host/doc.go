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
package host
