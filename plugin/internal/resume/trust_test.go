package resume_test

// The trust rule in the store (procid.CheckTrust, resolveNames): a host
// that may act for several people turns resume off with a host_shared
// warning; MCP_RESUME=on or MCP_RESUME_INSTANCE vouch for it; a TCP socket
// on stdio is refused.

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// daemonHost makes the host pid 4242 an unknown program without terminal
// (tty_nr 0) and without desktop session: a daemon.
func daemonHost(h *testHost) {
	h.Proc["read /proc/4242/stat"] = data(strings.Replace(testHostStat, "(claude)", "(agentd)", 1))
	h.Proc["read /proc/4242/cmdline"] = data("/usr/bin/agentd\x00")
	h.Proc["read /proc/4242/environ"] = data("HOME=/var/lib/agentd\x00PATH=/usr/bin\x00")
}

const testHostStat = "4242 (claude) S 50 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 98765 0 0\n"

const daemonMsg = `The MCP host pid 4242 ("agentd") has no controlling terminal and no desktop session (DISPLAY, WAYLAND_DISPLAY) and is not a known single-user MCP host: a daemon, service or job runner may act for several people; session resume disabled for this instance (set MCP_RESUME=on if it acts for one person)`

func TestStore_HostShared(t *testing.T) {
	h, dir := newHost(t)
	daemonHost(h)
	s := h.open(openInput(dir))
	if tok, ok := mustLoad(t, s); ok || tok != "" {
		t.Errorf("Load = %q, %v under a daemon host", tok, ok)
	}
	if err := s.Store("tok-1"); err != nil {
		t.Fatal(err)
	}
	if got := h.events(); !slices.Equal(got, []string{resume.EventHostShared}) {
		t.Fatalf("events %v", got)
	}
	if l := h.Logs[len(h.Logs)-1]; l.Level != hostfuncs.LevelWarn || l.Message != daemonMsg {
		t.Errorf("logged %+v", l)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the state directory was created: %v", err)
	}
	w, _ := s.Whoami(nil)
	if w.Error != daemonMsg || w.TokenFile != "" || w.Trust != "" || len(w.Chain) != 1 || w.Chain[0].Role != "host" {
		t.Errorf("Whoami = %+v", w)
	}
	n, _ := s.Names()
	if n.Token != "" {
		t.Errorf("Names = %+v", n)
	}
}

func TestStore_HostDesktopSession(t *testing.T) {
	h, dir := newHost(t)
	daemonHost(h)
	h.Proc["read /proc/4242/environ"] = data("HOME=/home/u\x00WAYLAND_DISPLAY=wayland-0\x00")
	s := h.open(openInput(dir))
	mustLoad(t, s)
	if got := h.events(); !slices.Equal(got, []string{resume.EventNotFound}) {
		t.Fatalf("events %v", got)
	}
	w, _ := s.Whoami(nil)
	if w.Trust != `single user: pid 4242 ("agentd") runs in a desktop session (WAYLAND_DISPLAY is set)` {
		t.Errorf("Trust = %q", w.Trust)
	}
}

func TestStore_HostVouched(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		msg  string
		hint string
	}{
		{map[string]string{"MCP_RESUME": "on"}, resume.MsgVouchedSwitch, "vouched: MCP_RESUME=on (the host was not checked)"},
		{map[string]string{"MCP_RESUME_INSTANCE": "tenant-7"}, resume.MsgVouchedInstance, "vouched: MCP_RESUME_INSTANCE (the host was not checked)"},
	} {
		h, dir := newHost(t)
		daemonHost(h)
		// A listener on every address too: the opt-in skips every rule.
		h.Proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 0, Target: "/dev/pts/3", Flags: 2}, {FD: 5, Target: "socket:[77]", Flags: 2}}}
		h.Facts.Env = tc.env
		s := h.open(openInput(dir))
		mustLoad(t, s)
		if err := s.Store("tok-1"); err != nil {
			t.Fatal(err)
		}
		if got := h.events(); !slices.Equal(got, []string{resume.EventHostTrustVouched, resume.EventNotFound}) {
			t.Fatalf("%v: events %v", tc.env, got)
		}
		if l := h.Logs[1]; l.Level != hostfuncs.LevelInfo || l.Message != tc.msg {
			t.Errorf("logged %+v", l)
		}
		w, _ := s.Whoami(nil)
		if w.Trust != tc.hint || w.TokenFile == "" {
			t.Errorf("Whoami = %+v", w)
		}
		if b, err := os.ReadFile(dir + "/" + w.TokenFile); err != nil || string(b) != "tok-1" {
			t.Errorf("token file: %q, %v", b, err)
		}
		for _, r := range h.Reqs {
			if strings.Contains(r, `"op":"environ"`) || strings.Contains(r, `"op":"net"`) {
				t.Errorf("vouched, yet asked %s", r)
			}
		}
	}
}

func TestStore_HostListensPublic(t *testing.T) {
	h, dir := newHost(t)
	h.Proc["fds 4242"] = hostfuncs.InspectResult{FDs: []hostfuncs.FD{{FD: 0, Target: "/dev/pts/3", Flags: 2}, {FD: 5, Target: "socket:[77]", Flags: 2}}}
	h.Proc["read /proc/4242/net/tcp"] = data("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 77 1 0000000000000000 100 0 0 10 0\n")
	h.Proc["read /proc/4242/net/tcp6"] = data("  sl  local_address remote_address st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
	s := h.open(openInput(dir))
	mustLoad(t, s)
	want := `The MCP host pid 4242 ("claude") listens on 0.0.0.0:8000, so it may serve several people; session resume disabled for this instance (set MCP_RESUME=on if it acts for one person)`
	if got := h.events(); !slices.Equal(got, []string{resume.EventHostShared}) || h.Logs[len(h.Logs)-1].Message != want {
		t.Errorf("logged %+v", h.Logs)
	}
}

// A TCP socket on stdio (socat TCP-LISTEN:... EXEC:server): refused by the
// stdio socket rule, even when the host answers no peer (Node).
func TestStore_StdioTCPSocket(t *testing.T) {
	h, dir := newHost(t)
	sock := hostfuncs.InspectResult{Type: hostfuncs.FileTypeSocket}
	h.Proc["fstat 0"], h.Proc["fstat 1"] = sock, sock
	h.Proc["readlink /proc/self/fd/0"], h.Proc["readlink /proc/self/fd/1"] = link("socket:[31337]"), link("socket:[31337]")
	h.Proc["read /proc/self/net/unix"] = data("Num       RefCount Protocol Flags    Type St Inode Path\n0000000000000000: 00000002 00000000 00000000 0001 03 42\n")
	h.Proc["read /proc/self/net/tcp"] = data("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0100007F:1388 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 31337 1 0000000000000000 100 0 0 10 0\n")
	s := h.open(openInput(dir))
	mustLoad(t, s)
	if got := h.events(); !slices.Equal(got, []string{resume.EventIdentityUnavailable}) ||
		!strings.Contains(h.Logs[0].Detail, "stdin socket:[31337] is a TCP socket (local address 127.0.0.1:5000)") {
		t.Errorf("logged %+v", h.Logs)
	}
}
