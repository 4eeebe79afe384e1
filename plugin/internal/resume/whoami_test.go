package resume_test

// The whoami export (whoami.go) and the host_identified debug line.

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
	"github.com/mcp-resume/mcp-resume/plugin/internal/testhost"
)

func TestStore_Whoami(t *testing.T) {
	h, dir := newHost(t)
	h.Facts.Args = []string{"--profile", "work"}
	h.Proc["read /proc/100/stat"] = data(strings.Replace(serverStat, " 4242 ", " 200 ", 1))
	h.Proc["read /proc/200/stat"] = data("200 (sh) S 4242 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 777 0 0\n")
	h.Proc["read /proc/200/cmdline"] = data("sh\x00-c\x00server\x00")
	s := h.open(openInput(dir))
	w, werr := s.Whoami(nil)
	if werr != nil {
		t.Fatal(werr)
	}
	suffix := defaultSuffix
	want := hostfuncs.WhoamiOutput{
		PID: 4242, StartTime: hostStart, Stdio: "verified: stdin /dev/pts/3 is held by the host as fd 0",
		Trust:          `single user: pid 4242 ("claude") is a known single-user MCP host (Claude Desktop or Claude Code, run by one person)`,
		InstanceSuffix: suffix, TokenFile: tokenFile, LockFile: lockFile, MarkerFile: markerFile, StateDir: dir,
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

// Whoami for another running server (mcp-resume whoami --pid): its own
// chain and stdio, read from its fd list; a host that does not hold its
// pipes is refused as for the server itself, a socket cannot tell, and the
// store's own identity is untouched.
func TestStore_WhoamiPID(t *testing.T) {
	h, dir := newHost(t)
	h.Proc["read /proc/300/stat"] = data("300 (other-server) S 310 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 6000 0 0\n")
	h.Proc["read /proc/300/cmdline"] = data("other-server\x00")
	h.Proc["read /proc/310/stat"] = data("310 (sh) S 4242 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 5990 0 0\n")
	h.Proc["read /proc/310/cmdline"] = data("sh\x00-c\x00other-server\x00")
	h.Proc["fds 300"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 0, Target: "pipe:[21]", Flags: 0}, {FD: 1, Target: "pipe:[22]", Flags: 1}, {FD: 2, Target: "/dev/null", Flags: 1}}}
	h.Proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 7, Target: "pipe:[22]", Flags: 0}}}
	for n, target := range testhost.Namespaces {
		h.SetNS("300", n, target)
	}
	s := h.open(`{"app": "a", "state_root": ` + strconv.Quote(dir) + `, "instance": "-"}`)

	w, werr := s.Whoami([]byte(`{"pid": 300}`))
	if werr != nil || w.Error != "" || w.PID != 4242 || w.TokenFile != plainTokenFile || len(w.Chain) != 2 || w.Chain[0].Role != "launcher" || w.Chain[1].Role != "host" ||
		w.Stdio != "verified: stdout pipe:[22] is held by the host as fd 7" {
		t.Errorf("Whoami(pid 300) = %+v, %v", w, werr)
	}

	// The host holds neither pipe: refused, as the server would be.
	h.Proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{}}
	if w, _ := s.Whoami([]byte(`{"pid": 300}`)); w.Error == "" || w.TokenFile != "" || !strings.Contains(w.Error, "does not hold the other end") {
		t.Errorf("Whoami(pid 300, host holds nothing) = %+v", w)
	}
	// A socket pair: only the server can ask for the peer, so it cannot tell.
	h.Proc["fds 300"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 0, Target: "socket:[31]", Flags: 2}, {FD: 1, Target: "socket:[31]", Flags: 2}}}
	if w, _ := s.Whoami([]byte(`{"pid": 300}`)); w.Error != "" || !strings.HasPrefix(w.Stdio, "not checked: stdin socket:[31] is a socket, whose peer only the server itself can read") {
		t.Errorf("Whoami(pid 300, socket) = %+v", w)
	}
	// Its fds cannot be listed (another user's process): cannot tell.
	h.Proc["fds 300"] = fail(hostfuncs.CodePermission)
	// Its fds cannot be listed (another user's process): nothing verifies the
	// host, so it is refused, as the server itself would refuse it.
	if w, _ := s.Whoami([]byte(`{"pid": 300}`)); w.TokenFile != "" || !strings.Contains(w.Error, "nothing shows that the host") {
		t.Errorf("Whoami(pid 300, fds hidden) = %+v", w)
	}
	// No process has pid 500 (its stat and kill0 answer not_found): the
	// caller's mistake, invalid_option, not an identity to show.
	if w, werr := s.Whoami([]byte(`{"pid": 500}`)); werr == nil || werr.Code != hostfuncs.CodeInvalidOption ||
		werr.Message != "no process has pid 500: give the pid of a running MCP server" || len(w.Chain) != 0 {
		t.Errorf("Whoami(pid 500, no such process) = %+v, %v", w, werr)
	}
	// Pid 600 exists (kill0 answers) but its parent is gone mid-walk: an
	// answer whose error says so.
	h.Proc["read /proc/600/stat"] = data("600 (orphan) S 610 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 6000 0 0\n")
	h.Proc["read /proc/600/cmdline"] = data("orphan\x00")
	h.Proc["kill0 600"] = hostfuncs.InspectResult{}
	h.Proc["fds 600"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{}}
	if w, werr := s.Whoami([]byte(`{"pid": 600}`)); werr != nil || !strings.Contains(w.Error, "exited during the walk") || w.TokenFile != "" {
		t.Errorf("Whoami(pid 600, parent gone) = %+v, %v", w, werr)
	}
	for _, bad := range []string{`{"pid": -4}`, `{"pid": 1}`, `{"pid": "300"}`, `[1]`} {
		if _, werr := s.Whoami([]byte(bad)); werr == nil || werr.Code != hostfuncs.CodeInvalidOption {
			t.Errorf("Whoami(%s) = %v; want invalid_option", bad, werr)
		}
	}
	// This store's own identity is still its own, and resolved once: its
	// stdio is the terminal, which the host holds.
	h.Proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 0, Target: "/dev/pts/3", Flags: 0o2}}}
	if w, _ := s.Whoami(nil); w.PID != 4242 || w.Chain[0].PID != 4242 {
		t.Errorf("Whoami(self) after others = %+v", w)
	}
}

// The host_identified debug line carries the chain walked.
func TestStore_HostIdentifiedChain(t *testing.T) {
	h, dir := newHost(t)
	s := h.open(openInput(dir))
	s.Load()
	for _, l := range h.Logs {
		if l.Event == resume.EventHostIdentified {
			if !strings.HasSuffix(l.Detail, "; chain: 4242 claude (host)") || l.Level != hostfuncs.LevelDebug {
				t.Errorf("host_identified = %+v", l)
			}
			return
		}
	}
	t.Errorf("no host_identified line in %+v", h.Logs)
}
