package resume_test

// The instance key as the system shows it (key.go): the launch as exec'd,
// the working directory, the namespaces.

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// startNames returns the token and lock names of a store over h, opened with
// input, and the events it logged at the first load.
func startNames(t *testing.T, h *testHost, input string) (string, string, []string) {
	t.Helper()
	s := h.open(input)
	mustLoad(t, s)
	n, _ := s.Names()
	return n.Token, n.Lock, h.events()
}

func withInstance(dir, instance string) string {
	return `{"app":"conformance","state_root":` + strconv.Quote(filepath.Dir(dir)) + `,"instance":` + strconv.Quote(instance) + `}`
}

// The program is in the key: two launches that differ only in the script
// an interpreter runs, or the package version npx runs, get different
// files; the same launch gets the same file.
func TestKey_ProgramInKey(t *testing.T) {
	seen := map[string]string{}
	for _, cmdline := range []string{
		"python\x00/home/u/work/notes/server.py\x00",
		"python\x00/home/u/home/notes/server.py\x00",
		"npx\x00pkg@1\x00",
		"npx\x00pkg@2\x00",
	} {
		h, dir := newHost(t)
		h.Proc["read /proc/100/cmdline"] = data(cmdline)
		tok, _, ev := startNames(t, h, openInput(dir))
		if len(ev) != 1 || ev[0] != resume.EventNotFound {
			t.Errorf("%q: events %v", cmdline, ev)
		}
		if other, dup := seen[tok]; dup || tok == "" {
			t.Errorf("%q: token %q, as for %q", cmdline, tok, other)
		}
		seen[tok] = cmdline
		h2, dir2 := newHost(t)
		h2.Proc["read /proc/100/cmdline"] = data(cmdline)
		if tok2, _, _ := startNames(t, h2, openInput(dir2)); tok2 != tok {
			t.Errorf("%q: relaunch named %q, first %q", cmdline, tok2, tok)
		}
	}
	// The key is the launch's: arguments split at every NUL, empty ones kept.
	h, dir := newHost(t)
	h.Proc["read /proc/100/cmdline"] = data("python\x00/home/u/work/notes/server.py\x00")
	tok, _, _ := startNames(t, h, openInput(dir))
	want := tokenFileFor(resume.Launch{Args: []string{"python", "/home/u/work/notes/server.py"}, Env: []string{"HOME=/home/u", "PATH=/usr/bin:/bin"}})
	if tok != want {
		t.Errorf("token %q, want %q", tok, want)
	}
}

func tokenFileFor(l resume.Launch) string { return plainTokenFile + "-" + launchSuffix(l) }

// The environment is the one at exec: a server that deletes or changes a
// variable before it opens the store (facts.env) keeps its key, while
// launches whose environment at exec differs get different files.
func TestKey_EnvAtExec(t *testing.T) {
	h, dir := newHost(t)
	base, _, _ := startNames(t, h, openInput(dir))
	h2, dir2 := newHost(t)
	h2.Facts.Env = map[string]string{"ACCOUNT": "changed-after-exec", "HOME": "/elsewhere"}
	h2.Facts.Args = []string{"--changed"}
	if tok, _, _ := startNames(t, h2, openInput(dir2)); tok != base {
		t.Errorf("facts.env/args changed the key: %q, want %q", tok, base)
	}
	h3, dir3 := newHost(t)
	h3.Proc["read /proc/100/environ"] = data("HOME=/home/u\x00PATH=/usr/bin:/bin\x00ACCOUNT=work\x00")
	if tok, _, _ := startNames(t, h3, openInput(dir3)); tok == base {
		t.Errorf("another environment at exec kept the key")
	}
	// Volatile variables and the order of the environment do not count.
	h4, dir4 := newHost(t)
	h4.Proc["read /proc/100/environ"] = data("SHLVL=4\x00PATH=/usr/bin:/bin\x00_=/bin/sh\x00HOME=/home/u\x00")
	if tok, _, _ := startNames(t, h4, openInput(dir4)); tok != base {
		t.Errorf("volatile variables or order changed the key: %q, want %q", tok, base)
	}
}

// The working directory (facts.cwd, captured at import) is in the key.
func TestKey_Cwd(t *testing.T) {
	h, dir := newHost(t)
	h.Facts.Cwd = "/ws/A"
	a, _, _ := startNames(t, h, openInput(dir))
	h2, dir2 := newHost(t)
	h2.Facts.Cwd = "/ws/B"
	b, _, _ := startNames(t, h2, openInput(dir2))
	if a == b || a != tokenFileFor(resume.Launch{Args: []string{"server"}, Env: []string{"HOME=/home/u", "PATH=/usr/bin:/bin"}, Cwd: "/ws/A"}) {
		t.Errorf("cwd /ws/A: %q, /ws/B: %q", a, b)
	}
}

// Launches that differ only in a namespace (ip netns exec a / b) get
// different files and locks, with the default key, a declared key, and no
// instance (where the plain name is kept only in the host's namespaces).
func TestKey_Namespaces(t *testing.T) {
	for _, instance := range []string{"", "work", "-"} {
		input := func(dir string) string {
			if instance == "" {
				return openInput(dir)
			}
			return withInstance(dir, instance)
		}
		h, dir := newHost(t)
		tokA, lockA, _ := startNames(t, h, input(dir))
		h2, dir2 := newHost(t)
		h2.SetNS("100", "net", "net:[4026532999]")
		tokB, lockB, ev := startNames(t, h2, input(dir2))
		if tokA == tokB || lockA == lockB || !slices.Equal(ev, []string{resume.EventNotFound}) {
			t.Errorf("instance %q: netns a %q %q, netns b %q %q (%v)", instance, tokA, lockA, tokB, lockB, ev)
		}
		switch instance {
		case "-":
			if tokA != plainTokenFile || tokB == plainTokenFile || !strings.HasPrefix(tokB, plainTokenFile+"-") {
				t.Errorf("no instance: %q, %q; want plain, then suffixed", tokA, tokB)
			}
		case "work":
			if tokA != plainTokenFile+"-"+keySuffix("work") {
				t.Errorf("declared: %q", tokA)
			}
		}
	}
	// No instance, the server in the host's namespaces but the host in
	// another mount namespace: not the host's namespaces, so suffixed.
	h, dir := newHost(t)
	h.SetNS("4242", "mnt", "mnt:[4026532777]")
	if tok, _, _ := startNames(t, h, withInstance(dir, "-")); tok == plainTokenFile {
		t.Errorf("namespaces unlike the host's kept the plain name")
	}
}

// Anything the key needs that cannot be read turns resume off, with a
// message that says what and what to do; a declared key replaces the
// launch, never the namespaces.
func TestKey_Unreadable(t *testing.T) {
	tests := []struct {
		name     string
		change   func(h *testHost)
		instance string
		want     string // part of the detail; "" for resume on
	}{
		{"environ", func(h *testHost) { h.Proc["read /proc/100/environ"] = fail(hostfuncs.CodePermission) }, "", "cannot read /proc/self/environ (the server's environment as exec'd): permission"},
		{"environ covered by a declared key", func(h *testHost) { h.Proc["read /proc/100/environ"] = fail(hostfuncs.CodePermission) }, "work", ""},
		{"environ at the read limit", func(h *testHost) {
			h.Proc["read /proc/100/environ"] = data(strings.Repeat("A", hostfuncs.MaxProcTableRead))
		}, "", "1048576 bytes or longer"},
		{"cmdline", func(h *testHost) { h.Proc["read /proc/self/cmdline"] = fail(hostfuncs.CodePermission) }, "", "cannot read /proc/self/cmdline"},
		{"cmdline empty", func(h *testHost) { h.Proc["read /proc/self/cmdline"] = data("") }, "", "it is empty"},
		{"namespace", func(h *testHost) { delete(h.Proc, "readlink /proc/100/ns/user") }, "", "cannot read /proc/self/ns/user"},
		{"namespace with a declared key", func(h *testHost) { delete(h.Proc, "readlink /proc/100/ns/cgroup") }, "work", "does not help"},
		{"namespace with no instance", func(h *testHost) { delete(h.Proc, "readlink /proc/100/ns/net") }, "-", "cannot read /proc/self/ns/net"},
		{"host namespace with no instance", func(h *testHost) { delete(h.Proc, "readlink /proc/4242/ns/ipc") }, "-", "cannot read /proc/4242/ns/ipc (the ipc namespace of the MCP host, pid 4242)"},
		{"host namespace unread with a key", func(h *testHost) { delete(h.Proc, "readlink /proc/4242/ns/ipc") }, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, dir := newHost(t)
			tt.change(h)
			input := openInput(dir)
			if tt.instance != "" {
				input = withInstance(dir, tt.instance)
			}
			s := h.open(input)
			mustLoad(t, s)
			mustStore(t, s, "tok")
			if tt.want == "" {
				if !slices.Equal(h.events(), []string{resume.EventNotFound}) {
					t.Errorf("events %v, want resume on", h.events())
				}
				return
			}
			if len(h.Logs) != 1 || h.Logs[0].Event != resume.EventKeyUnreadable || h.Logs[0].Message != resume.MsgKeyUnreadable ||
				!strings.Contains(h.Logs[0].Detail, tt.want) || !strings.Contains(h.Logs[0].Detail, "MCP_RESUME_INSTANCE") {
				t.Errorf("logs %+v, want %s naming %q", h.Logs, resume.EventKeyUnreadable, tt.want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("state directory made with the key unreadable: %v", err)
			}
			if w, _ := s.Whoami(nil); !strings.HasPrefix(w.Error, resume.MsgKeyUnreadable) || w.TokenFile != "" {
				t.Errorf("whoami %+v", w)
			}
		})
	}
}

// macOS: the launch from kern.procargs2 (Go and Python hosts), or ps and
// facts.env where the host cannot call sysctl (Node).
func TestKey_Darwin(t *testing.T) {
	const (
		psServer = "  100  4242 S    Tue Nov 14 22:13:55 2023     conformance-serv\n"
		psHost   = " 4242    77 Ss   Tue Nov 14 22:13:20 2023     claude\n"
		start    = "1700000000.c636c61756465"
	)
	darwin := func(t *testing.T) (*testHost, string) {
		h, dir := newHost(t)
		h.Facts.OS = "darwin"
		h.Facts.Env = map[string]string{"HOME": "/Users/u"}
		h.Proc["ps 100"] = hostfuncs.InspectResult{Data: []byte(psServer), Args: []byte("/usr/local/bin/server --x\n")}
		h.Proc["ps 4242"] = hostfuncs.InspectResult{Data: []byte(psHost), Args: []byte("claude\n")}
		return h, dir
	}
	h, dir := darwin(t)
	tok, _, ev := startNames(t, h, openInput(dir))
	want := "token-4242-" + start + "-" + suffixOf(resume.KeyMaterial(nil, resume.DefaultInstanceKey(resume.Launch{PSArgs: "/usr/local/bin/server --x", Env: []string{"HOME=/Users/u"}})))
	if tok != want || !slices.Equal(ev, []string{resume.EventNotFound}) {
		t.Errorf("ps: %q (%v), want %q", tok, ev, want)
	}
	// procargs2 answered for the server: its argv and environment at exec.
	h, dir = darwin(t)
	rec := binary.LittleEndian.AppendUint32(nil, 2)
	rec = append(rec, "/usr/local/bin/server\x00\x00\x00server\x00--x\x00HOME=/Users/u\x00LANG=C\x00\x00apple=1\x00"...)
	h.Proc["procargs 100"] = hostfuncs.InspectResult{Data: rec}
	tok, _, _ = startNames(t, h, openInput(dir))
	want = "token-4242-" + start + "-" + suffixOf(resume.KeyMaterial(nil, resume.DefaultInstanceKey(resume.Launch{Args: []string{"server", "--x"}, Env: []string{"HOME=/Users/u", "LANG=C"}})))
	if tok != want {
		t.Errorf("procargs: %q, want %q", tok, want)
	}
	// No instance: no namespaces on macOS, the plain name.
	h, dir = darwin(t)
	if tok, _, _ := startNames(t, h, withInstance(dir, "-")); tok != "token-4242-"+start {
		t.Errorf("no instance: %q", tok)
	}
	// procargs refused, or ps without the arguments: resume off.
	h, dir = darwin(t)
	h.Proc["procargs 100"] = fail(hostfuncs.CodePermission)
	if _, _, ev := startNames(t, h, openInput(dir)); !slices.Equal(ev, []string{resume.EventKeyUnreadable}) {
		t.Errorf("procargs refused: %v", ev)
	}
	h, dir = darwin(t)
	h.Proc["ps 100"] = hostfuncs.InspectResult{Data: []byte(psServer)}
	if _, _, ev := startNames(t, h, openInput(dir)); !slices.Equal(ev, []string{resume.EventKeyUnreadable}) {
		t.Errorf("ps without args: %v", ev)
	}
	// facts.env stands in for the environment (Node): it must be exact.
	h, dir = darwin(t)
	h.Facts.Env["X"] = "\ufffd"
	if _, _, ev := startNames(t, h, openInput(dir)); !slices.Equal(ev, []string{resume.EventKeyInexact}) {
		t.Errorf("inexact facts.env on ps: %v", ev)
	}
}

// TestStore_DigestFails: a host whose mcp_resume_crypto cannot answer
// (here garbage) leaves the instance key without its digest, so the token
// file cannot be named: resume is off with key_unreadable, never a name
// made without the key.
func TestStore_DigestFails(t *testing.T) {
	h, dir := newHost(t)
	h.Broken[hostfuncs.FnCrypto] = true
	s := h.open(openInput(dir))
	if _, ok, werr := s.Load(); ok || werr != nil {
		t.Fatalf("Load = %v, %v; want resume off without an error", ok, werr)
	}
	if !slices.Contains(h.Events(), resume.EventKeyUnreadable) {
		t.Errorf("events %v, want %s", h.Events(), resume.EventKeyUnreadable)
	}
	if slices.ContainsFunc(h.Reqs, func(r string) bool { return strings.HasPrefix(r, hostfuncs.FnLock+" ") }) {
		t.Error("a lock was taken without the instance key's digest")
	}
}
