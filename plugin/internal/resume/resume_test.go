package resume_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
	b, _ := json.Marshal(hostfuncs.OpenInput{App: "conformance", StateDir: filepath.Dir(dir)})
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
	// While this instance lives, a sibling launched the same way is locked
	// out; once it is gone (its locks released, as at exit), the next
	// server instance under the same host finds the token.
	sib := h.sibling()
	sibling := sib.open(openInput(dir))
	if tok, ok := mustLoad(t, sibling); ok {
		t.Fatalf("sibling Load = %q while the first instance holds the lock", tok)
	}
	if got := sib.events(); !slices.Equal(got, []string{resume.EventInstanceBusy}) {
		t.Errorf("sibling logged %v", got)
	}
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
	for _, l := range nh.logs {
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
func TestStore_StartCalls(t *testing.T) {
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	mustLoad(t, s)
	want := map[string]int{
		hostfuncs.FnFacts: 1, hostfuncs.FnInspect: 3, hostfuncs.FnPrepareDir: 6, hostfuncs.FnLock: 1,
		hostfuncs.FnList: 1, hostfuncs.FnRead: 1, hostfuncs.FnLog: 2, // host_identified (debug), token_not_found
	}
	if d := diffMap(want, h.calls); d != "" {
		t.Errorf("host calls %s\n%s", d, strings.Join(h.reqs, "\n"))
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
	s := resume.New(h.call)
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
	if len(h.reqs) != 0 {
		t.Errorf("host called before open: %v", h.reqs)
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
		{`{"app": "a", "state_dir": "relative"}`, hostfuncs.CodeInvalidOption, `state_dir "relative" is a relative path and the server's working directory is unknown (the host could not read it); give an absolute path`},
		{`{"app": "a", "state_dir": 1}`, hostfuncs.CodeInvalidOption, `state_dir must be a string, not a number: give an absolute path, or leave it out for the default`},
		{`not json`, hostfuncs.CodeInvalidOption, ""},
		{``, hostfuncs.CodeInvalidOption, ""},
		{`{"app": "a", "launchers": "sh"}`, hostfuncs.CodeInvalidOption, `launchers must be a list of strings, not a string: give a list of process names, e.g. ["my-wrapper"]`},
		{`{"app": "a", "instance": 1}`, hostfuncs.CodeInvalidOption, `instance must be a string, not a number`},
	} {
		h, _ := newHost(t)
		s := resume.New(h.call)
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
	s := resume.New(h.call)
	out, werr := s.Open([]byte(`{"app":"my-app"}`))
	if werr != nil {
		t.Fatal(werr)
	}
	root := filepath.Join(h.facts.Home, ".local", "state", "mcp-resume")
	want := hostfuncs.OpenOutput{StateDir: filepath.Join(root, "my-app"), StateRoot: root, Resume: true}
	if out != want {
		t.Errorf("Open = %+v, want %+v", out, want)
	}
	// open touches nothing: facts only.
	if d := diffMap(map[string]int{hostfuncs.FnFacts: 1}, h.calls); d != "" {
		t.Errorf("open calls %s", d)
	}
	_ = dir
}

// TestStore_Off: MCP_RESUME=off logs resume_off once, at open, and nothing
// is inspected, read or written; store still validates.
func TestStore_Off(t *testing.T) {
	h, dir := newHost(t)
	h.facts.Env["MCP_RESUME"] = "off"
	s := resume.New(h.call)
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
	if d := diffMap(map[string]int{hostfuncs.FnFacts: 1, hostfuncs.FnLog: 1}, h.calls); d != "" {
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
		"foreign /proc": func(h *testHost) { h.proc["readlink /proc/self"] = link("1") },
		"hidden host": func(h *testHost) {
			delete(h.proc, "read /proc/4242/stat")
			h.proc["kill0 4242"] = fail(hostfuncs.CodePermission)
		},
		"orphaned": func(h *testHost) {
			h.proc["read /proc/100/stat"] = data(strings.Replace(serverStat, " 4242 ", " 1 ", 1))
		},
		"unsupported OS":    func(h *testHost) { h.facts.OS = "win32" },
		"facts not json":    func(h *testHost) { h.broken[hostfuncs.FnFacts] = true },
		"inspect not json":  func(h *testHost) { h.broken[hostfuncs.FnInspect] = true },
		"facts without pid": func(h *testHost) { h.facts.PID = 0 },
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
				if h.calls[fn] != 0 {
					t.Errorf("%s called %d times", fn, h.calls[fn])
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
	h.proc["fstat 1"] = hostfuncs.InspectResult{Type: hostfuncs.FileTypeFIFO}
	h.proc["readlink /proc/self/fd/1"] = link("pipe:[11]")
	h.proc["fds self"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 1, Target: "pipe:[11]", Flags: 1}}}
	h.proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 3, Target: "pipe:[99]", Flags: 0}}}
	s := h.open(openInput(dir))
	mustLoad(t, s)
	if got := h.events(); !slices.Equal(got, []string{resume.EventIdentityUnavailable}) || !strings.Contains(h.logs[0].Detail, "does not hold the other end") {
		t.Errorf("logged %+v", h.logs)
	}
	// The same host holding the read end verifies.
	h2, dir2 := newHost(t)
	for k, v := range h.proc {
		h2.proc[k] = v
	}
	h2.proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 3, Target: "pipe:[11]", Flags: 0}}}
	s2 := h2.open(openInput(dir2))
	mustLoad(t, s2)
	w, _ := s2.Whoami(nil)
	if w.Stdio != "verified: stdout pipe:[11] is held by the host as fd 3" {
		t.Errorf("Stdio = %q", w.Stdio)
	}
	if h2.calls[hostfuncs.FnInspect] != 3 {
		t.Errorf("%d inspect calls, want 3", h2.calls[hostfuncs.FnInspect])
	}
}

func TestStore_Whoami(t *testing.T) {
	h, dir := newHost(t)
	h.facts.Args = []string{"--profile", "work"}
	h.proc["read /proc/100/stat"] = data(strings.Replace(serverStat, " 4242 ", " 200 ", 1))
	h.proc["read /proc/200/stat"] = data("200 (sh) S 4242 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 777 0 0\n")
	h.proc["read /proc/200/cmdline"] = data("sh\x00-c\x00server\x00")
	s := h.open(openInput(dir))
	w, werr := s.Whoami(nil)
	if werr != nil {
		t.Fatal(werr)
	}
	suffix := resume.InstanceSuffix(resume.DefaultInstanceKey(h.facts))
	want := hostfuncs.WhoamiOutput{
		PID: 4242, StartTime: hostStart, Stdio: "verified: stdin /dev/pts/3 is held by the host as fd 0",
		InstanceSuffix: suffix, TokenFile: tokenFile + "-" + suffix, LockFile: lockFile + "-" + suffix, StateDir: dir,
		Chain: []hostfuncs.Process{
			{PID: 200, PPID: 4242, Name: "sh", Args: []string{"sh", "-c", "server"}, StartTime: "777.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836", Role: "launcher"},
			{PID: 4242, PPID: 50, Name: "claude", Args: []string{"claude"}, StartTime: strings.TrimSuffix(hostStart, ".2049x1234567"), Role: "host"},
		},
	}
	gb, _ := json.Marshal(w)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("Whoami =\n%s\nwant\n%s", gb, wb)
	}
	n, _ := s.Names()
	if n.Token != want.TokenFile || n.Lock != want.LockFile {
		t.Errorf("Names = %+v", n)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("whoami/names created the state directory: %v", err)
	}
}

// TestStore_ListAndPrune covers list (hosts and ages, never contents) and
// prune's reasons: a gone host's token and lock go (host_gone); a token
// whose host cannot be checked goes once older than 30 days (aged), its
// lock stays; live hosts' files and this instance's own stay.
func TestStore_ListAndPrune(t *testing.T) {
	h, dir := newHost(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	other := "5151-12345.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026532000" // another PID namespace: unknown
	files := map[string]int{                                          // name -> age in days
		tokenFile:         0,
		"token-7777-2.cd": 1,  // pid 7777 absent: gone
		"lock-7777-2.cd":  40, // gone: goes too
		"token-" + other:  40, // unknown, old: aged
		"lock-" + other:   40, // unknown lock: kept
		"token-8888-3.ef": 29, // hidden (kill0 permission): unknown, young: kept
		"token-x-1.a":     50, // not a token name: ignored
		"notes.txt":       50,
	}
	for name, days := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("t"), 0o600); err != nil {
			t.Fatal(err)
		}
		mt := time.Now().Add(-time.Duration(days) * 24 * time.Hour)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	h.proc["kill0 8888"] = fail(hostfuncs.CodePermission)
	s := h.open(openInput(dir))
	l, werr := s.List()
	if werr != nil {
		t.Fatal(werr)
	}
	got := map[string]string{}
	for _, f := range l.Files {
		got[f.Name] = f.Host
		if f.Name == "token-"+other && (f.AgeSeconds < 40*86400-5 || f.PID != 5151) {
			t.Errorf("listed %+v", f)
		}
	}
	want := map[string]string{tokenFile: hostfuncs.HostAlive, "token-7777-2.cd": hostfuncs.HostGone, "token-" + other: hostfuncs.HostUnknown, "token-8888-3.ef": hostfuncs.HostUnknown}
	if d := diff(want, got); d != "" {
		t.Errorf("List %s", d)
	}
	p, werr := s.Prune()
	if werr != nil {
		t.Fatal(werr)
	}
	wantRemoved := []hostfuncs.PrunedFile{
		{Name: "token-" + other, Reason: hostfuncs.ReasonAged, Host: hostfuncs.HostUnknown},
		{Name: "token-7777-2.cd", Reason: hostfuncs.ReasonHostGone, Host: hostfuncs.HostGone},
		{Name: "lock-7777-2.cd", Reason: hostfuncs.ReasonHostGone, Host: hostfuncs.HostGone},
	}
	if d := diff(wantRemoved, p.Removed); d != "" {
		t.Errorf("Prune %s", d)
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	wantLeft := []string{"lock-" + other, "notes.txt", tokenFile, "token-8888-3.ef", "token-x-1.a"}
	slices.Sort(wantLeft)
	if !slices.Equal(left, wantLeft) {
		t.Errorf("left %v, want %v", left, wantLeft)
	}
	if n := len(h.events()); n != 3 {
		t.Errorf("logged %v", h.events())
	}
	// A live host's files are never pruned, whatever their age.
	old := time.Now().Add(-400 * 24 * time.Hour)
	os.Chtimes(filepath.Join(dir, tokenFile), old, old)
	if p, _ := s.Prune(); len(p.Removed) != 0 {
		t.Errorf("second Prune removed %+v", p.Removed)
	}
}

// TestStore_ListMissingDir: list and prune of a state directory that does
// not exist answer empty and create nothing (no mcp_resume_prepare_dir "mkdir").
func TestStore_ListMissingDir(t *testing.T) {
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	if l, werr := s.List(); werr != nil || len(l.Files) != 0 || l.Files == nil {
		t.Errorf("List = %+v, %v", l, werr)
	}
	if p, werr := s.Prune(); werr != nil || len(p.Removed) != 0 || p.Removed == nil {
		t.Errorf("Prune = %+v, %v", p, werr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("state directory exists: %v", err)
	}
	if slices.ContainsFunc(h.reqs, func(r string) bool { return strings.Contains(r, `"op":"mkdir"`) }) {
		t.Errorf("list or prune asked for a mkdir: %v", h.reqs)
	}
	// An unsafe directory is an io error for list.
	if err := os.MkdirAll(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o770)
	if _, werr := s.List(); werr == nil || werr.Code != hostfuncs.CodeIO {
		t.Errorf("List of a group-writable directory = %v", werr)
	}
}

// TestStore_CorruptAndReject: corrupt files are removed (spec 000, Token File
// Corrupted); reject keeps a newer token (the reconnection race).
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

func TestCheckToken(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // substring of the problem; "" = valid
	}{
		{"a", ""},
		{"!~", ""},
		{strings.Repeat("x", 4096), ""},
		{"", "empty"},
		{strings.Repeat("x", 4097), "longer than 4096"},
		{"a b", "0x20 at offset 1"},
		{"ab\n", "0x0a at offset 2"},
		{"\x7f", "0x7f"},
		{"é", "0xc3 at offset 0"},
	} {
		got := resume.CheckToken([]byte(tc.in))
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CheckToken(%.10q) = %q, want problem containing %q", tc.in, got, tc.want)
		}
		if got != "" && len(tc.in) > 1 && strings.Contains(got, tc.in) {
			t.Errorf("CheckToken quotes the token: %q", got)
		}
	}
}

func TestParseName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want resume.Name
		ok   bool
	}{
		{"token-4242-7.ab", resume.Name{PID: 4242, StartTime: "7.ab"}, true},
		{resume.FileName(99, "123.0f1e", ""), resume.Name{PID: 99, StartTime: "123.0f1e"}, true},
		{"token-4242-7.ab-0123456789abcdef", resume.Name{PID: 4242, StartTime: "7.ab", Instance: "0123456789abcdef"}, true},
		{"token-1-7.ab", resume.Name{}, false},   // pid 1 is never a host
		{"token-007-7.ab", resume.Name{}, false}, // not canonical
		{"token-x-7.ab", resume.Name{}, false},
		{"token-42-", resume.Name{}, false},
		{"token-42-AB", resume.Name{}, false},
		{"token-42-a-b", resume.Name{}, false},   // an instance is 16 hex digits
		{"token-42-7.ab-", resume.Name{}, false}, // empty instance after a dash
		{"token-42-7.ab-0123456789ABCDEF", resume.Name{}, false},
		{"tokens-42-a", resume.Name{}, false},
		{".token-42-a.tmp", resume.Name{}, false},
	} {
		got, ok := resume.ParseName(resume.FilePrefix, tc.name)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzParseFileName(f *testing.F) {
	for _, s := range []string{"token-4242-7.ab", "token--", "token-1-", "token-99999999999999999999-1.a", "token-5-..", ""} {
		f.Add(s)
	}
	f.Add("token-4242-7.ab-0123456789abcdef")
	f.Add("token-4242-7.ab-")
	f.Fuzz(func(t *testing.T, name string) {
		n, ok := resume.ParseName(resume.FilePrefix, name)
		if ok && resume.FileName(n.PID, n.StartTime, n.Instance) != name {
			t.Fatalf("ParseName(%q) = %+v does not round-trip", name, n)
		}
	})
}

func FuzzCheckToken(f *testing.F) {
	for _, s := range []string{"tok", "", "a b", "\x00\xff", strings.Repeat("a", 4097)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		valid := len(b) >= 1 && len(b) <= 4096
		for _, c := range b {
			valid = valid && c >= 0x21 && c <= 0x7e
		}
		if got := resume.CheckToken(b) == ""; got != valid {
			t.Fatalf("CheckToken(%q) valid = %v, want %v", b, got, valid)
		}
	})
}

// A host whose responses are not JSON (a broken binding, or the Python SDK
// swallowing an exception) must not crash the plugin: load offers nothing,
// store still succeeds, the failure is logged.
func TestStore_MalformedHostResponses(t *testing.T) {
	for _, broken := range []string{hostfuncs.FnFacts, hostfuncs.FnInspect, hostfuncs.FnPrepareDir, hostfuncs.FnLock, hostfuncs.FnRead, hostfuncs.FnWrite} {
		t.Run(broken, func(t *testing.T) {
			h, dir := newHost(t)
			h.broken[broken] = true
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

// Whoami for another running server (mcp-resume whoami --pid): its own
// chain and stdio, read from its fd list; a host that does not hold its
// pipes is refused as for the server itself, a socket cannot tell, and the
// store's own identity is untouched.
func TestStore_WhoamiPID(t *testing.T) {
	h, dir := newHost(t)
	h.proc["read /proc/300/stat"] = data("300 (other-server) S 310 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 6000 0 0\n")
	h.proc["read /proc/300/cmdline"] = data("other-server\x00")
	h.proc["read /proc/310/stat"] = data("310 (sh) S 4242 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5990 0 0\n")
	h.proc["read /proc/310/cmdline"] = data("sh\x00-c\x00other-server\x00")
	h.proc["fds 300"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 0, Target: "pipe:[21]", Flags: 0}, {FD: 1, Target: "pipe:[22]", Flags: 1}, {FD: 2, Target: "/dev/null", Flags: 1}}}
	h.proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 7, Target: "pipe:[22]", Flags: 0}}}
	s := h.open(`{"app": "a", "state_dir": ` + strconv.Quote(dir) + `, "instance": "-"}`)

	w, werr := s.Whoami([]byte(`{"pid": 300}`))
	if werr != nil || w.Error != "" || w.PID != 4242 || w.TokenFile != tokenFile || len(w.Chain) != 2 || w.Chain[0].Role != "launcher" || w.Chain[1].Role != "host" ||
		w.Stdio != "verified: stdout pipe:[22] is held by the host as fd 7" {
		t.Errorf("Whoami(pid 300) = %+v, %v", w, werr)
	}

	// The host holds neither pipe: refused, as the server would be.
	h.proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{}}
	if w, _ := s.Whoami([]byte(`{"pid": 300}`)); w.Error == "" || w.TokenFile != "" || !strings.Contains(w.Error, "does not hold the other end") {
		t.Errorf("Whoami(pid 300, host holds nothing) = %+v", w)
	}
	// A socket pair: only the server can ask for the peer, so it cannot tell.
	h.proc["fds 300"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 0, Target: "socket:[31]", Flags: 2}, {FD: 1, Target: "socket:[31]", Flags: 2}}}
	if w, _ := s.Whoami([]byte(`{"pid": 300}`)); w.Error != "" || !strings.HasPrefix(w.Stdio, "not checked: stdin socket:[31] is a socket, whose peer only the server itself can read") {
		t.Errorf("Whoami(pid 300, socket) = %+v", w)
	}
	// Its fds cannot be listed (another user's process): cannot tell.
	h.proc["fds 300"] = fail(hostfuncs.CodePermission)
	// Its fds cannot be listed (another user's process): nothing verifies the
	// host, so it is refused, as the server itself would refuse it.
	if w, _ := s.Whoami([]byte(`{"pid": 300}`)); w.TokenFile != "" || !strings.Contains(w.Error, "nothing shows that the host") {
		t.Errorf("Whoami(pid 300, fds hidden) = %+v", w)
	}
	for _, bad := range []string{`{"pid": -4}`, `{"pid": 1}`, `{"pid": "300"}`, `[1]`} {
		if _, werr := s.Whoami([]byte(bad)); werr == nil || werr.Code != hostfuncs.CodeInvalidOption {
			t.Errorf("Whoami(%s) = %v; want invalid_option", bad, werr)
		}
	}
	// This store's own identity is still its own, and resolved once: its
	// stdio is the terminal, which the host holds.
	h.proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 0, Target: "/dev/pts/3", Flags: 0o2}}}
	if w, _ := s.Whoami(nil); w.PID != 4242 || w.Chain[0].PID != 4242 {
		t.Errorf("Whoami(self) after others = %+v", w)
	}
}

// The host_identified debug line carries the chain walked.
func TestStore_HostIdentifiedChain(t *testing.T) {
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	s.Load()
	for _, l := range h.logs {
		if l.Event == resume.EventHostIdentified {
			if !strings.HasSuffix(l.Detail, "; chain: 4242 claude (host)") || l.Level != hostfuncs.LevelDebug {
				t.Errorf("host_identified = %+v", l)
			}
			return
		}
	}
	t.Errorf("no host_identified line in %+v", h.logs)
}
