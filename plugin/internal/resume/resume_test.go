package resume_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// The store runs natively here against testHost (host_test.go): real files
// in a temporary state directory, fixture answers for facts and processes.
// The conformance suites run the same behaviour through the Wasm build in
// every host.

// openInput opens app "conformance" with the state root whose
// "conformance" directory is dir.
func openInput(dir string) string {
	b, _ := json.Marshal(hostfuncs.OpenInput{App: "conformance", StateRoot: filepath.Dir(dir)})
	return string(b)
}

func mustLoad(t *testing.T, s *resume.Store) (string, bool) {
	t.Helper()
	tok, ok, werr := s.Load()
	if werr != nil {
		t.Fatalf("Load: %v", werr)
	}
	return tok, ok
}

func mustStore(t *testing.T, s *resume.Store, tok string) {
	t.Helper()
	if werr := s.Store(tok); werr != nil {
		t.Fatalf("Store(%q): %v", tok, werr)
	}
}

func TestStore_RoundTrip(t *testing.T) {
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	if tok, ok := mustLoad(t, s); ok {
		t.Fatalf("Load on empty dir = %q, true", tok)
	}
	mustStore(t, s, "tok-1")
	b, err := os.ReadFile(filepath.Join(dir, tokenFile))
	if err != nil || string(b) != "tok-1" {
		t.Fatalf("file = %q, %v", b, err)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v, %v", info, err)
	}
	// Once this instance is gone (its locks released, as at exit), the
	// next server instance under the same host, launched the same way,
	// finds the token. (Two such instances alive at once: ambiguous_test.go.)
	h.release()
	nh := h.sibling()
	next := nh.open(openInput(dir))
	if tok, ok := mustLoad(t, next); !ok || tok != "tok-1" {
		t.Fatalf("next instance Load = %q, %v; want tok-1", tok, ok)
	}
	mustStore(t, next, "tok-2")
	mustStore(t, next, "tok-3")
	if werr := next.Reject(); werr != nil {
		t.Fatal(werr)
	}
	if _, err := os.Stat(filepath.Join(dir, tokenFile)); !os.IsNotExist(err) {
		t.Errorf("token file after reject: %v", err)
	}
	want := []string{resume.EventResumed, resume.EventRejected}
	if got := nh.events(); !slices.Equal(got, want) {
		t.Errorf("next instance logged %v, want %v", got, want)
	}
	// The identity was logged at debug level, with the stdio verdict.
	var dbg []string
	for _, l := range nh.Logs {
		if l.Level == hostfuncs.LevelDebug {
			dbg = append(dbg, l.Event+": "+l.Detail)
		}
	}
	if len(dbg) != 1 || !strings.Contains(dbg[0], "pid 4242, start time "+hostStart+", stdio: verified: stdin /dev/pts/3 is held by the host as fd 0") {
		t.Errorf("debug lines %q", dbg)
	}
}

// TestStore_StartCalls pins what a start costs: the host calls of open and
// the first load for a server launched directly by its host, with a
// terminal for stdio (no stdio call) and no state directory yet: creating
// it and its parent costs six mcp_resume_prepare_dir calls (stat it, stat
// its parent and grandparent, two mkdirs, stat it again); an existing one
// costs one (stat). One mcp_resume_list serves the sweep and the prune.
// Five inspect calls: the server and its stdio, its parent, the stdio
// check, the trust rule (the host's fds and stat; the host, claude, holds
// no socket, so no socket table is read), and the instance key (cmdline,
// environ and namespaces of the server, in one request). Two
// mcp_resume_crypto sha256 calls: the instance key's digest, then the lock
// socket's (it names the lock file, which the first digest names).
func TestStore_StartCalls(t *testing.T) {
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	mustLoad(t, s)
	want := map[string]int{
		hostfuncs.FnFacts: 1, hostfuncs.FnInspect: 5, hostfuncs.FnPrepareDir: 7, hostfuncs.FnLock: 1, // prepare_dir: 5 to create, stat, the root's stat
		hostfuncs.FnList: 1, hostfuncs.FnRead: 1, hostfuncs.FnLog: 2, // host_identified (debug), token_not_found
		hostfuncs.FnCrypto: 2,
	}
	if d := diffMap(want, h.Calls); d != "" {
		t.Errorf("host calls %s\n%s", d, strings.Join(h.Reqs, "\n"))
	}
}

func diffMap(want, got map[string]int) string {
	var out []string
	for k := range want {
		if want[k] != got[k] {
			out = append(out, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		return ""
	}
	b1, _ := json.Marshal(want)
	b2, _ := json.Marshal(got)
	return "want " + string(b1) + ", got " + string(b2)
}

func TestStore_NotOpen(t *testing.T) {
	h, _ := newHost(t)
	s := resume.New(h.Call)
	check := func(name string, werr *hostfuncs.Error) {
		if werr == nil || werr.Code != hostfuncs.CodeNotOpen {
			t.Errorf("%s before open: %v, want %s", name, werr, hostfuncs.CodeNotOpen)
		}
	}
	_, _, werr := s.Load()
	check("load", werr)
	check("store", s.Store("tok"))
	check("reject", s.Reject())
	_, werr = s.Names()
	check("names", werr)
	_, werr = s.List()
	check("list", werr)
	_, werr = s.Prune()
	check("prune", werr)
	_, werr = s.Whoami(nil)
	check("whoami", werr)
	if len(h.Reqs) != 0 {
		t.Errorf("host called before open: %v", h.Reqs)
	}
}

func TestStore_OpenErrors(t *testing.T) {
	// Each message says the thing once, names the option, the kind given and
	// the kind expected, and never the codec's internals.
	for _, tc := range []struct{ input, code, message string }{
		{`{"app": "../x"}`, hostfuncs.CodeInvalidApp, `invalid app name "../x": use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`},
		{`{"app": ""}`, hostfuncs.CodeInvalidApp, `invalid app name "": use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`},
		{`{}`, hostfuncs.CodeInvalidApp, `app name missing: give the server's application name, 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`},
		{`{"app": null}`, hostfuncs.CodeInvalidApp, `app name missing: give the server's application name, 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit`},
		{`{"app": 5}`, hostfuncs.CodeInvalidApp, `app must be a string, not a number`},
		{`{"app": "a", "state_root": "relative"}`, hostfuncs.CodeInvalidOption, `state_root "relative" is a relative path and the server's working directory is unknown (the host could not read it); give an absolute path`},
		{`{"app": "a", "state_root": 1}`, hostfuncs.CodeInvalidOption, `state_root must be a string, not a number: give an absolute path, or leave it out for the default`},
		{`not json`, hostfuncs.CodeInvalidOption, ""},
		{``, hostfuncs.CodeInvalidOption, ""},
		{`{"app": "a", "launchers": "sh"}`, hostfuncs.CodeInvalidOption, `launchers must be a list of strings, not a string: give a list of process names, e.g. ["my-wrapper"]`},
		{`{"app": "a", "instance": 1}`, hostfuncs.CodeInvalidOption, `instance must be a string, not a number`},
	} {
		h, _ := newHost(t)
		s := resume.New(h.Call)
		if _, werr := s.Open([]byte(tc.input)); werr == nil || werr.Code != tc.code || tc.message != "" && werr.Message != tc.message || strings.Contains(werr.Message, "wire:") && tc.message != "" {
			t.Errorf("Open(%s) = %v, want code %s message %q", tc.input, werr, tc.code, tc.message)
		}
		// A failed open leaves the store unopened.
		if _, _, werr := s.Load(); werr == nil || werr.Code != hostfuncs.CodeNotOpen {
			t.Errorf("Load after failed Open(%s) = %v", tc.input, werr)
		}
	}
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	if _, werr := s.Open([]byte(openInput(dir))); werr == nil || werr.Code != hostfuncs.CodeInvalidOption {
		t.Errorf("second Open = %v, want %s", werr, hostfuncs.CodeInvalidOption)
	}
}

func TestStore_OpenOutput(t *testing.T) {
	h, dir := newHost(t)
	s := resume.New(h.Call)
	out, werr := s.Open([]byte(`{"app":"my-app"}`))
	if werr != nil {
		t.Fatal(werr)
	}
	root := filepath.Join(h.Facts.Home, ".local", "state", "mcp-resume")
	want := hostfuncs.OpenOutput{StateDir: filepath.Join(root, "my-app"), StateRoot: root, Resume: true}
	if out != want {
		t.Errorf("Open = %+v, want %+v", out, want)
	}
	// open touches nothing: facts only.
	if d := diffMap(map[string]int{hostfuncs.FnFacts: 1}, h.Calls); d != "" {
		t.Errorf("open calls %s", d)
	}
	_ = dir
}

// TestStore_Off: MCP_RESUME=off logs resume_off once, at open, and nothing
// is inspected, read or written; store still validates.
func TestStore_Off(t *testing.T) {
	h, dir := newHost(t)
	h.Facts.Env["MCP_RESUME"] = "off"
	s := resume.New(h.Call)
	out, werr := s.Open([]byte(openInput(dir)))
	if werr != nil || out.Resume {
		t.Fatalf("Open = %+v, %v", out, werr)
	}
	mustLoad(t, s)
	mustStore(t, s, "tok")
	if werr := s.Store("bad tok"); werr == nil || werr.Code != hostfuncs.CodeInvalidToken {
		t.Errorf("Store(bad) = %v", werr)
	}
	s.Reject()
	if n, _ := s.Names(); n != (hostfuncs.NamesOutput{}) {
		t.Errorf("Names = %+v", n)
	}
	if l, _ := s.List(); len(l.Files) != 0 {
		t.Errorf("List = %+v", l)
	}
	if p, _ := s.Prune(); len(p.Removed) != 0 {
		t.Errorf("Prune = %+v", p)
	}
	if w, _ := s.Whoami(nil); w.Error != resume.MsgResumeOff || w.TokenFile != "" {
		t.Errorf("Whoami = %+v", w)
	}
	if d := diffMap(map[string]int{hostfuncs.FnFacts: 1, hostfuncs.FnLog: 1}, h.Calls); d != "" {
		t.Errorf("host calls %s", d)
	}
	if got := h.events(); !slices.Equal(got, []string{resume.EventResumeOff}) {
		t.Errorf("logged %v", got)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state directory exists: %v", err)
	}
}

// TestStore_IdentityUnavailable: a /proc of another PID namespace (faults
// 10b/11d), a hidden host (fault 12), an unsupported system, or facts the
// host cannot give: resume off, one identity_unavailable line, no file
// touched, not even the state directory created.
func TestStore_IdentityUnavailable(t *testing.T) {
	for name, change := range map[string]func(h *testHost){
		"foreign /proc": func(h *testHost) { h.Proc["readlink /proc/self"] = link("1") },
		"hidden host": func(h *testHost) {
			delete(h.Proc, "read /proc/4242/stat")
			h.Proc["kill0 4242"] = fail(hostfuncs.CodePermission)
		},
		"orphaned": func(h *testHost) {
			h.Proc["read /proc/100/stat"] = data(strings.Replace(serverStat, " 4242 ", " 1 ", 1))
		},
		"unsupported OS":    func(h *testHost) { h.Facts.OS = "win32" },
		"facts not json":    func(h *testHost) { h.Broken[hostfuncs.FnFacts] = true },
		"inspect not json":  func(h *testHost) { h.Broken[hostfuncs.FnInspect] = true },
		"facts without pid": func(h *testHost) { h.Facts.PID = 0 },
	} {
		t.Run(name, func(t *testing.T) {
			h, dir := newHost(t)
			change(h)
			s := h.open(openInput(dir))
			if tok, ok := mustLoad(t, s); ok {
				t.Errorf("Load = %q", tok)
			}
			mustStore(t, s, "tok-B")
			s.Reject()
			if werr := s.Store("bad token"); werr == nil || werr.Code != hostfuncs.CodeInvalidToken || !strings.HasPrefix(werr.Message, "invalid token: ") {
				t.Errorf("Store(bad) = %v", werr)
			}
			if got := h.events(); !slices.Equal(got, []string{resume.EventIdentityUnavailable}) {
				t.Errorf("logged %v", got)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("state directory exists: %v", err)
			}
			for _, fn := range []string{hostfuncs.FnPrepareDir, hostfuncs.FnRead, hostfuncs.FnWrite, hostfuncs.FnRemove, hostfuncs.FnLock, hostfuncs.FnList} {
				if h.Calls[fn] != 0 {
					t.Errorf("%s called %d times", fn, h.Calls[fn])
				}
			}
			w, werr := s.Whoami(nil)
			if werr != nil || w.Error == "" || w.TokenFile != "" || w.Chain == nil {
				t.Errorf("Whoami = %+v, %v", w, werr)
			}
			if n, _ := s.Names(); n != (hostfuncs.NamesOutput{}) {
				t.Errorf("Names = %+v", n)
			}
		})
	}
}

// TestStore_Adopted: fault 11c. The server's stdout is a pipe the resolved
// host does not hold (a subreaper adopted the server): resume off.
func TestStore_Adopted(t *testing.T) {
	h, dir := newHost(t)
	h.Proc["fstat 1"] = hostfuncs.InspectResult{Type: hostfuncs.FileTypeFIFO}
	h.Proc["readlink /proc/self/fd/1"] = link("pipe:[11]")
	h.Proc["fds self"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 1, Target: "pipe:[11]", Flags: 1}}}
	h.Proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 3, Target: "pipe:[99]", Flags: 0}}}
	s := h.open(openInput(dir))
	mustLoad(t, s)
	if got := h.events(); !slices.Equal(got, []string{resume.EventIdentityUnavailable}) || !strings.Contains(h.Logs[0].Detail, "does not hold the other end") {
		t.Errorf("logged %+v", h.Logs)
	}
	// The same host holding the read end verifies.
	h2, dir2 := newHost(t)
	for k, v := range h.Proc {
		h2.Proc[k] = v
	}
	h2.Proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 3, Target: "pipe:[11]", Flags: 0}}}
	s2 := h2.open(openInput(dir2))
	mustLoad(t, s2)
	w, _ := s2.Whoami(nil)
	if w.Stdio != "verified: stdout pipe:[11] is held by the host as fd 3" {
		t.Errorf("Stdio = %q", w.Stdio)
	}
	if h2.Calls[hostfuncs.FnInspect] != 5 {
		t.Errorf("%d inspect calls, want 5 (3 for the host, 1 for the trust rule, 1 for the key)", h2.Calls[hostfuncs.FnInspect])
	}
}

// TestStore_CorruptAndReject: corrupt files are removed (spec 000, Token File
// Corrupted); reject keeps a newer token (the reconnection race: a
// delayed rejection must not delete the session stored after it).
func TestStore_CorruptAndReject(t *testing.T) {
	for name, content := range map[string]string{"empty": "", "space": "a b", "newline": "tok\n", "huge": strings.Repeat("x", 4097)} {
		h, dir := newHost(t)
		os.MkdirAll(dir, 0o700)
		os.WriteFile(filepath.Join(dir, tokenFile), []byte(content), 0o600)
		s := h.open(openInput(dir))
		if tok, ok := mustLoad(t, s); ok {
			t.Errorf("%s: Load = %q", name, tok)
		}
		if _, err := os.Stat(filepath.Join(dir, tokenFile)); !os.IsNotExist(err) {
			t.Errorf("%s: corrupt file kept", name)
		}
		if got := h.events(); !slices.Equal(got, []string{resume.EventCorrupted}) {
			t.Errorf("%s: logged %v", name, got)
		}
	}
	h, dir := newHost(t)
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, tokenFile), []byte("old"), 0o600)
	s := h.open(openInput(dir))
	if tok, _ := mustLoad(t, s); tok != "old" {
		t.Fatalf("Load = %q", tok)
	}
	os.WriteFile(filepath.Join(dir, tokenFile), []byte("newer"), 0o600)
	s.Reject()
	if b, _ := os.ReadFile(filepath.Join(dir, tokenFile)); string(b) != "newer" {
		t.Errorf("file = %q after reject", b)
	}
	if got := h.events(); !slices.Equal(got, []string{resume.EventRejected, resume.EventRejectKeptNewer}) {
		t.Errorf("logged %v", got)
	}
}

func diff(want, got any) string {
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if string(wb) == string(gb) {
		return ""
	}
	return "want " + string(wb) + "\ngot  " + string(gb)
}

// A host whose responses are not JSON (a broken binding, or the Python SDK
// swallowing an exception) must not crash the plugin: load offers nothing,
// store still succeeds, the failure is logged.
func TestStore_MalformedHostResponses(t *testing.T) {
	for _, broken := range []string{hostfuncs.FnFacts, hostfuncs.FnInspect, hostfuncs.FnPrepareDir, hostfuncs.FnLock, hostfuncs.FnRead, hostfuncs.FnWrite} {
		t.Run(broken, func(t *testing.T) {
			h, dir := newHost(t)
			h.Broken[broken] = true
			s := h.open(openInput(dir))
			if tok, ok := mustLoad(t, s); ok {
				t.Errorf("Load = %q with a broken %s", tok, broken)
			}
			mustStore(t, s, "tok-1")
			s.Reject()
			if len(h.events()) == 0 {
				t.Errorf("nothing logged with a broken %s", broken)
			}
		})
	}
}

func TestStore_InvalidTokenError(t *testing.T) {
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	werr := s.Store("has space")
	if werr == nil || werr.Code != hostfuncs.CodeInvalidToken || !strings.HasPrefix(werr.Message, "invalid token: ") || strings.Contains(werr.Message, "has space") {
		t.Fatalf("Store(bad) = %v", werr)
	}
}
