// Package loader turns a Wasm module into running Extism plugin instances
// for package host, with the mcp-resume host functions, WASI and wazero's
// compilation cache; the startup benchmark's floor (host/internal/startbench)
// opens its minimal module through the same code, so both pay the same.
//
// A module is compiled once per process and cache directory. The first start
// on a machine never waits for wazero's compiler (1.5–2 s for the plugin):
//
//   - Warm: the cache directory holds a finished entry for this module
//     (a directory plugin-<digest>, see below). The module is loaded from it
//     with wazero's compiler runtime.
//   - Cold: no finished entry. The first calls run on wazero's interpreter,
//     which only translates the module (~0.1–0.2 s), while a background
//     goroutine compiles it into the cache. Nothing waits for that goroutine:
//     not the calls, not Plugin.Close, not process exit. Later instances in
//     the same process use the compiled module once the entry is finished;
//     an instance keeps the engine it started on.
//
// Crash safety. wazero's file cache already writes each entry to a temporary
// file, fsyncs it and renames it into place, and checks a CRC of the code it
// reads back; but a cache entry wazero cannot read fails the whole compile,
// and a half-filled directory would be taken for a finished one. So the
// background compile fills a fresh directory tmp-* with wazero's cache and
// renames it to plugin-<digest> only when the compile has succeeded (a
// rename is atomic): a process killed mid-compile leaves at most a
// tmp-<pid>-* directory (a few KiB: the Extism kernel's entry), which is
// never read and which a later background compile removes once that process
// is gone (or after an hour). A plugin-<digest> entry that fails to load
// anyway (disk corruption) is removed and the start goes the cold way.
//
// Cache directories. Code read from the cache is executed, so the cache
// gets the state directory's rules (hostfuncs/README.md,
// mcp_resume_prepare_dir). The cache directory (and, for the default,
// <user cache dir>/mcp-resume) is created with mode 0700, and never inside a
// directory another user other than root owns (root running with a user's
// HOME must not leave root-owned directories there). It must be a real
// directory, not a symbolic link, owned by the effective user, with no group
// or other permission bits; a finished entry must be one too, and nothing in
// it may be a symbolic link or another user's. wazero creates its files with
// O_EXCL (os.CreateTemp) and its directories 0700. Otherwise the process
// does not touch the cache: it compiles in memory as with NoCache, and one
// warning per process (event cache_unusable) says why and how to fix it.
// Another user who could write the cache directory could otherwise have
// replaced the compiled code that this process, root's included, runs:
// wazero's CRC-32C only catches accidents.
//
// Housekeeping, in the background compile: entries not used for 30 days
// (a warm start refreshes its entry's time once a day) and the wazero-*
// directories of the earlier layout, untouched for 30 days, are removed.
//
// <digest> covers the module's bytes (CRC-32C and length), the wazero version and GOARCH/GOOS.
package loader

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"

	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
)

// wasiOutputEnv is the variable with which go-sdk connects a guest's WASI
// stdout and stderr to the process's own.
const wasiOutputEnv = "EXTISM_ENABLE_WASI_OUTPUT"

// NoCache, as a cache directory, disables the on-disk compilation cache:
// every process starts on the interpreter and compiles in the background
// for its own later instances.
const NoCache = "-"

// Engine names the wazero engine a plugin instance runs on.
type Engine string

// Engines.
const (
	// Compiled: wazero's compiler (from the cache, or compiled in this process).
	Compiled Engine = "compiled"
	// Interpreted: wazero's interpreter, while the compiler works in the background.
	Interpreted Engine = "interpreted"
)

// staleTemp is the age after which a tmp-* directory is taken for the
// leftover of a killed process and removed, even if its pid is in use.
const staleTemp = time.Hour

// unusedEntry is the age after which an entry nobody used is removed.
const unusedEntry = 30 * 24 * time.Hour

// module is one Wasm module's compiled forms in this process, for one cache
// directory.
type module struct {
	mu       sync.Mutex
	compiled *extism.CompiledPlugin // compiler engine; nil until loaded or compiled
	interp   *extism.CompiledPlugin // interpreter engine; nil until needed
	bg       bool                   // a background compile has been started
	bgDone   chan struct{}          // closed when it ends
	checked  bool                   // the cache directory has been prepared and checked
	problem  string                 // why the cache directory is unusable ("" if it is not)
}

type key struct {
	cacheDir string
	wasm     *byte // the module's first byte: tests load other modules
}

var modules struct {
	sync.Mutex
	m map[key]*module
}

// Instance returns a new plugin instance of wasm, its engine and an error.
// cacheDir is wazero's compilation cache directory ("" for DefaultCacheDir,
// NoCache for none; a directory that cannot be created or fails the checks
// of "Cache directories" in the package documentation works as NoCache, and
// logger, nil for none, gets one warning per process saying why, event
// cache_unusable).
// The instance has the ten mcp-resume host functions of primitives.Shared
// (each call must carry its Funcs in the context, primitives.NewContext),
// WASI with the real clocks and a real random source (wazero's defaults
// are fixed, and Go seeds its maps and rand from them), stdout discarded
// whatever the environment asks (stdout belongs to the MCP protocol) and
// stderr passed through. The error
// is wazero's or Extism's: a module that does not decode, validate, compile
// or instantiate.
func Instance(ctx context.Context, wasm []byte, cacheDir string, logger *slog.Logger) (*extism.Plugin, Engine, error) {
	if len(wasm) == 0 {
		return nil, "", errors.New("empty module")
	}
	ctx = context.WithoutCancel(ctx)
	c, engine, err := compile(ctx, wasm, cacheDir, logger)
	if err != nil {
		return nil, "", err
	}
	mc := wazero.NewModuleConfig().
		WithSysWalltime().WithSysNanotime().WithRandSource(rand.Reader).
		WithStdout(io.Discard).WithStderr(os.Stderr)
	var p *extism.Plugin
	// go-sdk replaces the module's stdout with os.Stdout whenever
	// EXTISM_ENABLE_WASI_OUTPUT is set (plugin.go, Instance): hidden here.
	primitives.WithoutEnv(wasiOutputEnv, func() {
		p, err = c.Instance(ctx, extism.PluginInstanceConfig{ModuleConfig: mc})
	})
	if err != nil {
		return nil, "", err
	}
	return p, engine, nil
}

// WaitBackground waits until the background compile of wasm for cacheDir,
// if one was started, has ended, or ctx is done. For tests and benchmarks:
// production code never waits for it.
func WaitBackground(ctx context.Context, wasm []byte, cacheDir string) error {
	m := moduleFor(wasm, cacheDir)
	m.mu.Lock()
	done := m.bgDone
	m.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitAllBackground waits until every background compile this process
// started has ended, or ctx is done. For tests: production code never waits.
func WaitAllBackground(ctx context.Context) error {
	modules.Lock()
	var done []chan struct{}
	for _, m := range modules.m {
		m.mu.Lock()
		if m.bgDone != nil {
			done = append(done, m.bgDone)
		}
		m.mu.Unlock()
	}
	modules.Unlock()
	for _, d := range done {
		select {
		case <-d:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// DefaultCacheDir is the cache directory used when none is given:
// <user cache dir>/mcp-resume/wazero ($XDG_CACHE_HOME or ~/.cache on Linux),
// or "" when the user cache directory is unknown.
func DefaultCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(base, "mcp-resume", "wazero")
}

// EntryDir returns the directory that holds wasm's finished cache entry
// under cacheDir ("" for DefaultCacheDir), or "" for NoCache.
func EntryDir(wasm []byte, cacheDir string) string {
	dir := resolveDir(cacheDir)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "plugin-"+digest(wasm))
}

// prepareCache creates the cache directory for cacheDir with mode 0700 (and,
// for the default, <user cache dir>/mcp-resume, shared with the Python
// binding's cache) and checks it and entry, the module's finished entry if
// there is one: see "Cache directories" in the package documentation. It
// returns why the cache must not be used, or "".
func prepareCache(cacheDir, entry string) string {
	dir := resolveDir(cacheDir)
	if cacheDir == "" {
		if p := ensureDir(filepath.Dir(dir)); p != "" {
			return p
		}
	}
	if p := ensureDir(dir); p != "" {
		return p
	}
	if _, err := os.Lstat(entry); err != nil {
		return "" // not compiled yet (or unreadable: the compile will say)
	}
	if p := dirProblem(entry); p != "" {
		return p
	}
	return treeProblem(entry)
}

func resolveDir(cacheDir string) string {
	switch cacheDir {
	case NoCache:
		return ""
	case "":
		return DefaultCacheDir()
	}
	if abs, err := filepath.Abs(cacheDir); err == nil {
		return abs
	}
	return cacheDir
}

func moduleFor(wasm []byte, cacheDir string) *module {
	modules.Lock()
	defer modules.Unlock()
	k := key{cacheDir, &wasm[0]}
	if m := modules.m[k]; m != nil {
		return m
	}
	if modules.m == nil {
		modules.m = map[key]*module{}
	}
	m := &module{}
	modules.m[k] = m
	return m
}

// compile returns the process's compiled form of wasm for cacheDir, as
// described in the package documentation.
func compile(ctx context.Context, wasm []byte, cacheDir string, logger *slog.Logger) (*extism.CompiledPlugin, Engine, error) {
	m := moduleFor(wasm, cacheDir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.compiled != nil {
		return m.compiled, Compiled, nil
	}
	entry := EntryDir(wasm, cacheDir)
	if entry != "" && !m.checked {
		m.checked = true
		m.problem = prepareCache(cacheDir, entry)
		if m.problem != "" && logger != nil {
			logger.Warn("mcp-resume compilation cache unusable, compiling the plugin in memory",
				"event", "cache_unusable", "detail", m.problem)
		}
	}
	if m.problem != "" {
		entry = ""
	}
	if entry != "" {
		if st, err := os.Lstat(entry); err == nil && st.IsDir() {
			if now := time.Now(); now.Sub(st.ModTime()) > 24*time.Hour {
				_ = os.Chtimes(entry, now, now) // in use: keep it from housekeeping
			}
			if cache, err := wazero.NewCompilationCacheWithDir(entry); err == nil {
				c, err := build(ctx, wasm, wazero.NewRuntimeConfig().WithCompilationCache(cache))
				if err == nil {
					m.compiled = c
					return c, Compiled, nil
				}
				cache.Close(ctx)
			}
			// A finished entry wazero cannot use: drop it, start cold.
			_ = os.RemoveAll(entry)
		}
	}
	if m.interp == nil {
		c, err := build(ctx, wasm, wazero.NewRuntimeConfigInterpreter())
		if err != nil {
			return nil, "", err
		}
		m.interp = c
	}
	if !m.bg {
		m.bg = true
		m.bgDone = make(chan struct{})
		go m.background(wasm, entry)
	}
	return m.interp, Interpreted, nil
}

// background compiles wasm with wazero's compiler: into a new entry
// directory when entry is set (then the compiled module is released: later
// instances load it from there), else in memory for this process.
func (m *module) background(wasm []byte, entry string) {
	defer close(m.bgDone)
	ctx := context.Background()
	if entry == "" {
		if c, err := build(ctx, wasm, wazero.NewRuntimeConfig()); err == nil {
			m.mu.Lock()
			m.compiled = c
			m.mu.Unlock()
		}
		return
	}
	parent := filepath.Dir(entry) // created and checked by prepareCache
	housekeep(parent)
	tmp, err := os.MkdirTemp(parent, fmt.Sprintf("tmp-%d-", os.Getpid()))
	if err != nil {
		return
	}
	cache, err := wazero.NewCompilationCacheWithDir(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return
	}
	c, err := build(ctx, wasm, wazero.NewRuntimeConfig().WithCompilationCache(cache))
	if err == nil {
		err = c.Close(ctx)
	}
	cache.Close(ctx)
	if err == nil {
		err = os.Rename(tmp, entry) // fails if another process finished first
	}
	if err != nil {
		os.RemoveAll(tmp)
	}
}

// housekeep removes from dir the tmp-<pid>-* directories of processes that
// are gone (killed mid-compile) or older than staleTemp, and plugin-* and
// wazero-* (the earlier layout) directories unused for unusedEntry.
func housekeep(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		info, err := e.Info()
		if !e.IsDir() || err != nil {
			continue
		}
		age := time.Since(info.ModTime())
		remove := false
		switch {
		case strings.HasPrefix(name, "tmp-"):
			pid, _, _ := strings.Cut(strings.TrimPrefix(name, "tmp-"), "-")
			n, err := strconv.Atoi(pid)
			remove = age > staleTemp || (err == nil && n != os.Getpid() && processGone(n))
		case strings.HasPrefix(name, "plugin-"), strings.HasPrefix(name, "wazero-"):
			remove = age > unusedEntry
		}
		if remove {
			os.RemoveAll(filepath.Join(dir, name))
		}
	}
}

// build compiles wasm under rc the way the host always does: WASI, the
// host functions of primitives.Shared.
func build(ctx context.Context, wasm []byte, rc wazero.RuntimeConfig) (*extism.CompiledPlugin, error) {
	return extism.NewCompiledPlugin(ctx,
		extism.Manifest{Wasm: []extism.Wasm{extism.WasmData{Data: wasm}}},
		extism.PluginConfig{RuntimeConfig: rc, EnableWasi: true},
		primitives.Shared())
}

// digest names a finished cache entry: a CRC-32C of the module's bytes
// (hardware-assisted, ~0.3 ms for the plugin where SHA-256 costs several),
// its length, the wazero version (whose cache format may change) and the
// platform. A collision costs only time, never correctness: inside the entry
// wazero keys its code by the module's SHA-256, so a wrong entry is a cache
// miss, compiled then and there.
func digest(wasm []byte) string {
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	h.Write(wasm)
	v := fmt.Sprintf("%08x-%x-", h.Sum32(), len(wasm))
	h.Reset()
	h.Write([]byte(wazeroVersion() + " " + runtime.GOARCH + "/" + runtime.GOOS))
	return v + fmt.Sprintf("%08x", h.Sum32())
}

// wazeroVersion is the wazero module version this binary was built with,
// as wazero itself finds it, or "dev".
func wazeroVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/tetratelabs/wazero" {
				if dep.Replace != nil && dep.Replace.Version != "" {
					return dep.Replace.Version
				}
				return dep.Version
			}
		}
	}
	return "dev"
}
