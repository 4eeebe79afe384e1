package plugin_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin"
)

// TestModule checks the committed plugin.wasm against the contract
// (hostfuncs/README.md, at hostfuncs.ABIVersion): it imports exactly the
// host functions hostfuncs.Functions() lists, in hostfuncs.Namespace, each
// (i64) -> i64, and exports every plugin export, the handle store's
// included, as () -> i32.
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
		if mod != hostfuncs.Namespace {
			continue
		}
		imported = append(imported, name)
		if p, res := f.ParamTypes(), f.ResultTypes(); len(p) != 1 || p[0] != api.ValueTypeI64 || len(res) != 1 || res[0] != api.ValueTypeI64 {
			t.Errorf("import %s has type %v -> %v, want (i64) -> i64", name, p, res)
		}
	}
	want := hostfuncs.Functions()
	slices.Sort(imported)
	slices.Sort(want)
	if !slices.Equal(imported, want) {
		t.Errorf("plugin.wasm imports %v from %s, want %v", imported, hostfuncs.Namespace, want)
	}
	exports := m.ExportedFunctions()
	for _, name := range append([]string{hostfuncs.ExportABIVersion, hostfuncs.ExportOpen, hostfuncs.ExportLoad, hostfuncs.ExportStore, hostfuncs.ExportReject,
		hostfuncs.ExportNames, hostfuncs.ExportList, hostfuncs.ExportPrune, hostfuncs.ExportWhoami, hostfuncs.ExportRender}, hostfuncs.HandleExports()...) {
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

// Size budget of plugin.wasm (a lean guest starts fast). Every host compiles
// the whole module on a cold start and keeps its machine code in memory, so
// its size is startup time and RSS.
const (
	// targetWasmBytes is the startup target, 2.6 MiB, identity logic
	// included. Not met yet: TestWasmSize reports the gap.
	targetWasmBytes = 2_726_297
	// maxWasmBytes is the budget the test enforces: the size reached when
	// encoding/json and fmt left the guest (3,212,643 bytes), plus 2%,
	// plus what the render export and whoami for another pid added
	// (3,220,231 -> 3,318,462 bytes: plugin/internal/render's JSON tree, indenting
	// encoder and tables, about 80 KB of Go-on-Wasm code, so that the
	// Python and TypeScript command lines print exactly what the Go one
	// prints without a copy of its formatting in each language; policy's
	// ResolveFor and the option errors, about 15 KB), plus what the rules
	// against wrong resumes added (3,318,462 -> 3,446,374 bytes: each shell's
	// option table and the shared-server list, the stdio verdicts for
	// terminals and FIFOs and the time-namespace check, the default instance
	// key with its volatile-variable list and the program image in the start
	// time, and the state-directory walk that words one message per error;
	// about 128 KB of Go-on-Wasm code together), and then what the plugin took
	// over from the hosts at ABI 5 (3,446,375 -> 3,458,239 bytes: filtering
	// and sorting the host's full listing, the temporary-file names from
	// WASI random_get and their sweep, resolving a relative state root,
	// typed inspect operations; about 12 KB), and then what the handle store
	// added at ABI 6 (3,458,239 -> 3,816,778 bytes, +350 KiB where its
	// design allowed 300: plugin/internal/handles and its export codecs in
	// hostfuncs with AES-GCM from crypto/aes and crypto/cipher, about
	// 200 KB; crypto/hkdf and crypto/hmac, about 35 KB, which link the
	// FIPS 140 module's checks: kept, because key derivation is no place
	// for code of our own; time.ParseDuration for the TTL variables;
	// render's state_list and state_gc for `mcp-resume state`, about 21 KB.
	// The store's host-call helpers are not inlined, which saves about 15 KB),
	// and then the handle store's Redis backend at ABI 7 (3,818,992 ->
	// 3,948,941 bytes, +126.9 KiB of its 150 KiB budget: the Lua scripts
	// embedded, crypto/sha1 for EVALSHA, the eval payload codecs and the
	// reply decoder, the state_url check; written here rather than with
	// net/url, which links fmt and alone added 480 KiB), then the trust
	// rule and the stdio socket rule (3,949,491 -> 4,041,139 bytes,
	// +89.5 KiB, measured function by function against the build before
	// them: procid's trustLinux 13.5 KB, checkUnixSockets 8 KB,
	// parseNetTable 6.4 KB, the gateway and known-host name matching
	// (programNames, knownHost, interpreterScript, listed) 12 KB, the
	// macOS terminal and environment (trustDarwin, decodeProcArgsEnv)
	// 6.3 KB, address formatting for messages 3.7 KB, about 72 KB of code
	// in all, the rest their messages; no new package is linked), and the
	// complete instance key (+61 KiB on its own: reading the launch from
	// /proc/self and kern.procargs2 or ps, the namespaces and their
	// comparison with the host's, the v2 key and key material encodings,
	// the ambiguity marker with its list rows, prune rule and render lines;
	// each unreadable input worded as its own message; one procargs2 decoder
	// serves the walk, the trust rule and the key): 4,095,244 bytes
	// together; then +28 KB for messages in the caller's names (the
	// caller member and its table, each option-naming message built from
	// it: about 20 KB of code), the state root's write check (judgeParents,
	// 2.7 KB) and state_url errors that never quote a password; then the
	// CLI's errors (+10 KiB: render's check that the state root holds the
	// app a command names, with its messages, and whoami's check by kill0
	// that a pid names a process): 4,134,824; then refusing a rolled-back
	// record (+8 KiB: on files the index's generation against the record's,
	// logged through the corrupt path; on Redis the value sealed with its
	// generation, the first format still opened, an unconditional put
	// sealing again when the generation moved, and the scripts' text;
	// +2.2 KiB more for a 256-slot table of the generations last seen, so
	// that an unconditional put after a get is one round trip, not two;
	// retrying until the deadline rather than a count), and the
	// per-principal quota (+19 KB: the owner id in the index and on Redis,
	// eviction by owner in the shard and in the create script, tombstones
	// trimmed from the owner holding the most, max_handles_per_principal):
	// 4,165,435; the import of mcp_resume_crypto: 4,166,065; then the
	// binary form of handle_create, handle_get and handle_put (+10.7 KB:
	// hostfuncs' DecodeBinary 2.7 KB with its malformed-input messages,
	// the three EncodeBinary outputs and the exports' choice of form,
	// about 7 KB of code; no new package): 4,176,722. The binary data path (values and crypto out of the guest)
	// is what will bring it down: the handle store's AES-GCM, HKDF and HMAC
	// done by the host (mcp_resume_crypto), with its lock-free get and up
	// to 4096 shards: 4,116,613; then its indexes sealed through the host
	// too (read_open, seal_write) instead of a SHA-256 checksum, which took
	// the last hash code and with it the FIPS 140 module out of the guest:
	// 3,974,863; the Lua file's comment on the refresh resolution (the
	// embedded scripts are the plugin's bytes): 3,974,931; a Redis create
	// reads the layout before its quota argument (and the script floors a
	// quota at 1): 3,975,188; scripts through mcp_resume_eval's binary
	// form and values stored as raw bytes: 3,974,530; the cold packages
	// (procid, the token store, render) compiled without inlining
	// (Makefile, COLD_PKGS): 3,941,111, under the handle store's target
	// of 3,948,941; the cache of handle keys (a conversation's get makes
	// one host call, not three): 3,946,690; a hot get's value left in the
	// host's memory (+4.4 KB) and the Lua scripts embedded without their
	// comments (-7.1 KB): 3,944,045. Lower it as the guest shrinks; never
	// raise it without a review of what grew.
	maxWasmBytes = 3_944_045
)

// TestWasmSize fails when plugin.wasm outgrows its budget.
func TestWasmSize(t *testing.T) {
	n := len(plugin.Wasm)
	if n > maxWasmBytes {
		t.Errorf("plugin.wasm is %d bytes, over its budget of %d (the startup target: %d). Something made the guest heavier: "+
			"look for reflection or fmt reaching it (TestGuestImports), a new dependency, or a large table; measure which "+
			"package grew with a non-stripped build (GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o /tmp/p.wasm ./plugin/guest) "+
			"and the function sizes of its code section, then shrink it or justify a new budget in review", n, maxWasmBytes, targetWasmBytes)
	}
	if n > targetWasmBytes {
		t.Logf("plugin.wasm is %d bytes: %d over the startup target of %d (2.6 MiB)", n, n-targetWasmBytes, targetWasmBytes)
	}
}

// forbidden are prefixes of the Wasm function names (Go's, with '/' and
// '*' spelled '_') of code that must not be linked into the plugin (a lean
// guest): fmt, and encoding/json's reflection-based encoder and decoder. go-pdk
// imports encoding/json, so its init and a few methods stay; they cost
// little as long as nothing marshals.
var forbidden = []string{
	"fmt.", "internal_fmtsort.",
	"encoding_json.Marshal", "encoding_json.Unmarshal", "encoding_json.__decodeState_.", "encoding_json.__encodeState_.reflectValue",
	"encoding_json.typeFields", "encoding_json.newTypeEncoder",
}

// TestGuestLinks builds the guest with its symbols (as `make wasm` does, but
// without -s -w) and fails if a function of forbidden was linked in.
func TestGuestLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the guest")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out := filepath.Join(t.TempDir(), "plugin.wasm")
	cmd := exec.Command(goTool, "build", "-buildmode=c-shared", "-trimpath", "-o", out, "./guest")
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	names := functionNames(t, wasm)
	if len(names) < 100 {
		t.Fatalf("found %d function names in the guest's name section, want many", len(names))
	}
	for _, name := range names {
		for _, p := range forbidden {
			if strings.HasPrefix(name, p) {
				t.Errorf("the plugin links %s (a lean guest: no fmt and no reflection-based JSON; use hostfuncs's codecs and strconv)", name)
			}
		}
	}
}

// functionNames returns the function names of the "name" custom section of
// a Wasm module (subsection 1, the function name map).
func functionNames(t *testing.T, wasm []byte) []string {
	t.Helper()
	i := 8 // magic and version
	uleb := func() int {
		n, shift := 0, 0
		for {
			if i >= len(wasm) {
				t.Fatal("truncated module")
			}
			c := wasm[i]
			i++
			n |= int(c&0x7f) << shift
			if c&0x80 == 0 {
				return n
			}
			shift += 7
		}
	}
	var names []string
	for i < len(wasm) {
		id := wasm[i]
		i++
		size := uleb()
		end := i + size
		if id == 0 {
			n := uleb()
			if string(wasm[i:i+n]) == "name" {
				i += n
				for i < end {
					sub := wasm[i]
					i++
					subSize := uleb()
					subEnd := i + subSize
					if sub == 1 {
						for count := uleb(); count > 0; count-- {
							uleb() // function index
							n := uleb()
							names = append(names, string(wasm[i:i+n]))
							i += n
						}
					}
					i = subEnd
				}
			}
		}
		i = end
	}
	return names
}
