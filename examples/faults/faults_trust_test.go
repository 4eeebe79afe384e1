//go:build linux && faults

package faults_test

// Rows 30a-30k: who the MCP host acts for (the trust rule, procid/trust.go;
// docs/RELIABILITY.md, "30: hosts that serve several people"). Real
// programs play the hosts that serve several people: supergateway (npm),
// which exposes the example server over Streamable HTTP, and an agent
// service built on langchain-mcp-adapters (PyPI), which starts a server per
// tool call; users alice, bob and carol are MCP clients of them (the
// official Go SDK client over Streamable HTTP) or requests to them. The
// single-user hosts that must keep resuming are this test binary's helper
// host run as a terminal program, a desktop app, the VS Code Remote-SSH
// server, and a Node CLI named claude; a daemon that is none of these must
// not resume. `make faults-setup` installs the two real programs
// (examples/faults/testdata/gateway and testdata/agent).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-resume/mcp-resume/examples/mcphost"
)

// lineShared starts every host_shared warning (procid.CheckTrust): "The MCP
// host pid N (name) <why>; session resume disabled for this instance (set
// MCP_RESUME=on if it acts for one person)".
const lineShared = "The MCP host pid "

// Opt-in lines (plugin/internal/resume: MsgVouchedSwitch, MsgVouchedInstance).
const (
	lineVouchedSwitch   = "MCP_RESUME=on: the MCP host is trusted to act for one person without checks"
	lineVouchedInstance = "MCP_RESUME_INSTANCE is set: the MCP host is trusted to act for one person per instance key without checks"
)

// noDesktop removes the desktop-session variables from the environment of
// the command it prefixes (env -u), so that a host started with it has
// neither terminal (setsid) nor desktop session.
var noDesktop = []string{"env", "-u", "DISPLAY", "-u", "WAYLAND_DISPLAY"}

// daemonWrapper starts a helper host (startRemoteHostBin: "$0" is the
// helper) as a daemon: a new session without controlling terminal (setsid
// -w waits for it, so the helper's pipes and exit stay the test's), no
// DISPLAY or WAYLAND_DISPLAY, plus the variables in env.
func daemonWrapper(env ...string) []string {
	w := append([]string{"setsid", "-w"}, noDesktop...)
	w = append(w, env...)
	return append(w, "sh", "-c", `exec "$0" "$@"`)
}

// ---------------------------------------------------------------------------
// supergateway

// gatewayBin is supergateway as `make faults-setup` installs it (npm ci in
// examples/faults/testdata/gateway): the package's bin script, which runs
// as `node .../node_modules/.bin/supergateway`, as `npx supergateway` does.
// It skips the fault when it is missing.
func gatewayBin(t *testing.T) string {
	t.Helper()
	requireTool(t, "node")
	p := filepath.Join(repoRoot(t), "examples", "faults", "testdata", "gateway", "node_modules", ".bin", "supergateway")
	if _, err := os.Stat(p); err != nil {
		skipFault(t, "supergateway is not installed ("+p+"): run `make faults-setup`")
	}
	return p
}

// freePort returns a TCP port that was free on all addresses a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// gateway is a running supergateway exposing the example server over
// Streamable HTTP; its log (which quotes every server's stderr as "Child
// stderr: ...") goes to the fixture's stderr.
type gateway struct {
	cmd *exec.Cmd
	url string
	log *bytes.Buffer
}

// startGateway runs supergateway --stdio <server> --outputTransport
// streamableHttp on a free port of every address (supergateway has no
// option to listen elsewhere), stateful or stateless, with env added to
// the fixture's variables (which the servers inherit), and waits until it
// accepts connections.
func startGateway(t *testing.T, f *fx, stateful bool, env ...string) *gateway {
	t.Helper()
	port := freePort(t)
	args := []string{gatewayBin(t), "--stdio", f.srv.shell(), "--outputTransport", "streamableHttp", "--port", strconv.Itoa(port), "--logLevel", "info"}
	if stateful {
		args = append(args, "--stateful")
	}
	g := &gateway{url: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), log: &bytes.Buffer{}}
	g.cmd = exec.Command(args[0], args[1:]...)
	g.cmd.Env = append(append(os.Environ(), f.Vars()...), env...)
	g.cmd.Stdout, g.cmd.Stderr = f.Stderr, f.Stderr
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	g.cmd.WaitDelay = 2 * time.Second
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		g.cmd.Wait()
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("supergateway did not listen on port %d: %v\nlog:\n%s", port, err, f.Stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// user connects to the gateway as one remote user with the official MCP Go
// SDK client (Streamable HTTP; its own HTTP client, whose connections are
// closed afterwards, so that this test process, the host of other faults,
// keeps no socket), asks session_info, keeps note (if any), recalls, asks
// session_info again and disconnects. In a stateful gateway the MCP session
// is one server process, which must answer the same session twice
// (sameServer): the client then speaks protocol version 2025-11-25, whose
// Streamable HTTP sessions supergateway maps to a server each; from
// 2026-07-28 on (the SDK's default) the protocol is stateless and
// supergateway starts a server per request, --stateful or not.
func (g *gateway) user(t *testing.T, note string, sameServer bool) launchResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-resume-faults-user", Version: "0.1.0"}, nil)
	var res launchResult
	var opts *mcp.ClientSessionOptions
	if sameServer {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.url, HTTPClient: &http.Client{Transport: tr}, DisableStandaloneSSE: true, MaxRetries: -1}, opts)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer session.Close()
	var info, again mcphost.SessionInfo
	var notes struct {
		Notes []string `json:"notes"`
	}
	call := func(tool string, args map[string]any, v any) error {
		text, err := mcphost.CallText(ctx, session, tool, args)
		if err != nil || v == nil {
			return err
		}
		return json.Unmarshal([]byte(text), v)
	}
	err = call("session_info", map[string]any{}, &info)
	if err == nil && note != "" {
		err = call("remember", map[string]any{"note": note}, nil)
	}
	if err == nil {
		err = call("recall", map[string]any{}, &notes)
	}
	if err == nil {
		err = call("session_info", map[string]any{}, &again)
	}
	res.SessionID, res.Resumed, res.Notes = info.SessionID, info.Resumed, notes.Notes
	res.Alive = err == nil && info.SessionID != "" && again.SessionID != "" && (!sameServer || again == info)
	if err != nil {
		res.Err = err.Error()
	}
	return res
}

// gatewayNonJSON returns the lines supergateway logged as a server's
// non-JSON stdout ("Child non-JSON: ..."): what it read from the servers'
// stdout that was not a JSON-RPC message.
func gatewayNonJSON(f *fx) []string {
	var bad []string
	for _, l := range strings.Split(f.Stderr.String(), "\n") {
		if strings.Contains(l, "Child non-JSON") {
			bad = append(bad, l)
		}
	}
	return bad
}

// sawNote reports whether r recalled a note of another user.
func sawNote(r launchResult, note string) bool {
	for _, n := range r.Notes {
		if n == note {
			return true
		}
	}
	return false
}

// 30a-30c: supergateway.
func faultGateway(t *testing.T, s *server) {
	// users runs alice (keeps a note and leaves), bob (keeps his own) and
	// carol, one after the other, against g, and records them.
	users := func(t *testing.T, f *fx, g *gateway, stateful bool) (a, b, c launchResult) {
		a = g.user(t, "alice's note", stateful)
		time.Sleep(500 * time.Millisecond) // the gateway ends alice's server when her session ends
		b = g.user(t, "bob's note", stateful)
		time.Sleep(500 * time.Millisecond)
		c = g.user(t, "", stateful)
		for _, r := range []launchResult{a, b, c} {
			r.NonJSON = gatewayNonJSON(f)
			f.record(r)
		}
		return a, b, c
	}
	// crossed says which user got another's session or saw another's note.
	crossed := func(a, b, c launchResult) string {
		var w []string
		if b.SessionID == a.SessionID || sawNote(b, "alice's note") {
			w = append(w, "bob got alice's session")
		}
		if c.SessionID == a.SessionID || c.SessionID == b.SessionID || sawNote(c, "alice's note") || sawNote(c, "bob's note") {
			w = append(w, "carol got another user's session")
		}
		return strings.Join(w, "; ")
	}
	for _, mode := range []struct {
		id, name string
		stateful bool
		how      string
	}{
		{"30a", "stateful", true, "`--stateful`, the users' client speaking protocol 2025-11-25: one server process per MCP session"},
		{"30b", "stateless", false, "stateless (the default), the users' client speaking the SDK's latest protocol (2026-07-28, stateless): one server process per request"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			f := newFx(t, s)
			g := startGateway(t, f, mode.stateful)
			a, b, c := users(t, f, g, mode.stateful)
			wrong := crossed(a, b, c)
			if wrong != "" || a.Resumed || b.Resumed || c.Resumed {
				t.Errorf("a user of the gateway resumed a session: alice %+v, bob %+v, carol %+v\nlog:\n%s", a, b, c, f.Stderr)
			}
			own := "alice's own notes came back within her session"
			if !sawNote(a, "alice's note") {
				own = "every request started a fresh session, so a note is gone by the next request (recall is a request of its own): the cost of resume off behind a stateless gateway"
				if mode.stateful {
					t.Errorf("alice did not recall her own note within her session: %+v", a)
				}
			}
			id := f.mustLog(lineShared, "is an MCP gateway or proxy that exposes stdio servers to remote clients, so it may serve several people", "set MCP_RESUME=on if it acts for one person")
			f.row(mode.id, "supergateway exposes the server to several users, "+mode.name,
				"real supergateway 4.0.0 (npm) `--stdio SERVER --outputTransport streamableHttp`, "+mode.how+", listening on every address; alice connects (official MCP Go SDK client, Streamable HTTP), keeps a note and leaves, then bob, then carol; each calls session_info, remember, recall",
				"the servers' host is the gateway (node running `node_modules/.bin/supergateway`), on the plugin's gateway list: resume off for every server it starts, fresh sessions, nobody got another user's session or notes; "+own,
				[]string{id}, wrongIf(wrong != "", wrong))
		})
	}
	t.Run("vouched", func(t *testing.T) {
		f := newFx(t, s)
		g := startGateway(t, f, true, "MCP_RESUME=on")
		a, b, c := users(t, f, g, true)
		if !b.Resumed || b.SessionID != a.SessionID || !sawNote(b, "alice's note") || !c.Resumed || c.SessionID != a.SessionID {
			t.Errorf("MCP_RESUME=on under the gateway: want every later user to resume the first session (the deployer vouched): alice %+v, bob %+v, carol %+v\nlog:\n%s", a, b, c, f.Stderr)
		}
		v := f.mustLog(lineVouchedSwitch)
		res := f.mustLog(lineResumed)
		f.row("30c", "supergateway with MCP_RESUME=on (the deployer vouches)",
			"as 30a, with `MCP_RESUME=on` in the gateway's environment (so in every server's)",
			"the trust rule is skipped and logged once per server with its risk: resume works, and so bob and carol resumed alice's session and read her note, as the log line warns: MCP_RESUME=on is for a gateway that acts for one person",
			[]string{v, res}, "no")
	})
}

// ---------------------------------------------------------------------------
// The agent service (langchain-mcp-adapters)

// agentPython is the interpreter of the agent service's virtual
// environment (`make faults-setup`: bin/faults-agent), which has
// langchain-mcp-adapters; it skips the fault when it is missing.
func agentPython(t *testing.T) string {
	t.Helper()
	py := filepath.Join(repoRoot(t), "bin", "faults-agent", "bin", "python")
	if out, err := exec.Command(py, "-c", "import langchain_mcp_adapters.client").CombinedOutput(); err != nil {
		skipFault(t, fmt.Sprintf("the agent service's environment is not installed (%s: %v %s): run `make faults-setup`", py, err, bytes.TrimSpace(out)))
	}
	return py
}

// agent is a running agent service (testdata/agent/agent_service.py).
type agent struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	port int // the HTTP endpoint's port, when it listens
}

// startAgent starts the agent service for the fixture's server behind
// wrapper (nil, or a command that ends by running "$0": the interpreter and
// the script follow), listening on listen ("" for none), with the
// fixture's variables as the servers' environment.
func startAgent(t *testing.T, f *fx, wrapper []string, listen string) *agent {
	t.Helper()
	py := agentPython(t)
	script := filepath.Join(repoRoot(t), "examples", "faults", "testdata", "agent", "agent_service.py")
	argv, _ := json.Marshal(f.srv.cmd())
	senv := map[string]string{}
	for _, kv := range f.Vars() {
		k, v, _ := strings.Cut(kv, "=")
		senv[k] = v
	}
	senvJSON, _ := json.Marshal(senv)
	var args []string
	if wrapper == nil {
		args = []string{py, script}
	} else {
		args = append(append(append([]string{}, wrapper...), py), script)
	}
	a := &agent{t: t}
	a.cmd = exec.Command(args[0], args[1:]...)
	a.cmd.Env = append(os.Environ(), "FAULTS_ARGV="+string(argv), "FAULTS_SERVER_ENV="+string(senvJSON), "FAULTS_LISTEN="+listen)
	a.cmd.Stderr = f.Stderr
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	a.cmd.WaitDelay = 2 * time.Second
	var err error
	if a.in, err = a.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.in.Close()
		syscall.Kill(-a.cmd.Process.Pid, syscall.SIGKILL)
		a.cmd.Wait()
	})
	a.out = bufio.NewScanner(out)
	a.out.Buffer(nil, 1<<20)
	if listen != "" {
		var hello struct {
			Port int `json:"port"`
		}
		if !a.out.Scan() || json.Unmarshal(a.out.Bytes(), &hello) != nil || hello.Port == 0 {
			t.Fatalf("the agent service did not announce its port (%q)\nstderr:\n%s", a.out.Text(), f.Stderr)
		}
		a.port = hello.Port
	}
	return a
}

// agentAnswer is the service's answer to one request.
type agentAnswer struct {
	Results []string `json:"results"`
	Error   string   `json:"error"`
}

// request asks the service, for user, session_info, remember note (if
// any), recall and session_info again, over HTTP when the service listens
// (connecting to 127.0.0.1, the address every user's request reaches it on
// here) or else over its stdin, with MCP_RESUME_INSTANCE=<user> for the
// servers when tenantKey. Every call is a server process of its own.
func (a *agent) request(user, note string, tenantKey bool) launchResult {
	a.t.Helper()
	calls := [][]any{{"session_info", map[string]any{}}}
	if note != "" {
		calls = append(calls, []any{"remember", map[string]any{"note": note}})
	}
	calls = append(calls, []any{"recall", map[string]any{}}, []any{"session_info", map[string]any{}})
	body, _ := json.Marshal(map[string]any{"user": user, "calls": calls, "tenant_key": tenantKey})
	var ans agentAnswer
	if a.port != 0 {
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		c := &http.Client{Transport: tr, Timeout: 120 * time.Second}
		resp, err := c.Post(fmt.Sprintf("http://127.0.0.1:%d/", a.port), "application/json", bytes.NewReader(body))
		if err != nil {
			return launchResult{Err: err.Error()}
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
			return launchResult{Err: err.Error()}
		}
	} else {
		if _, err := a.in.Write(append(body, '\n')); err != nil {
			a.t.Fatal(err)
		}
		line := make(chan []byte, 1)
		go func() {
			if a.out.Scan() {
				line <- append([]byte{}, a.out.Bytes()...)
			}
			close(line)
		}()
		select {
		case b, ok := <-line:
			if !ok || json.Unmarshal(b, &ans) != nil {
				return launchResult{Err: fmt.Sprintf("the agent service answered %q", b)}
			}
		case <-time.After(120 * time.Second):
			a.t.Fatal("the agent service did not answer within 120s")
		}
	}
	var res launchResult
	if ans.Error != "" || len(ans.Results) != len(calls) {
		res.Err = fmt.Sprintf("error %q, %d results for %d calls", ans.Error, len(ans.Results), len(calls))
		return res
	}
	var info, again mcphost.SessionInfo
	var notes struct {
		Notes []string `json:"notes"`
	}
	last := len(ans.Results) - 1
	errs := []error{json.Unmarshal([]byte(ans.Results[0]), &info), json.Unmarshal([]byte(ans.Results[last-1]), &notes), json.Unmarshal([]byte(ans.Results[last]), &again)}
	for _, err := range errs {
		if err != nil && res.Err == "" {
			res.Err = err.Error()
		}
	}
	res.SessionID, res.Resumed, res.Notes = info.SessionID, info.Resumed, notes.Notes
	res.Alive = res.Err == "" && info.SessionID != "" && again.SessionID != ""
	return res
}

// 30d-30f: an agent service on langchain-mcp-adapters.
func faultAgentService(t *testing.T, s *server) {
	// aliceThenBob sends alice's request (she keeps a note), then bob's,
	// and records both.
	aliceThenBob := func(f *fx, a *agent, tenantKey bool) (al, bo launchResult) {
		al = a.request("alice", "alice's note", tenantKey)
		bo = a.request("bob", "", tenantKey)
		f.record(al)
		f.record(bo)
		return al, bo
	}
	const how = "a Python service on real langchain-mcp-adapters 0.3.2 (PyPI) whose MultiServerMCPClient has the server as a stdio connection and takes its tools from get_tools(), so every tool call starts a server process of its own, a child of the service; alice's request (session_info, remember, recall, session_info), then bob's"
	for _, v := range []struct {
		id, name, fault, how, outcome, why string
		wrapper                            []string
		listen                             string
	}{
		{"30d", "daemon", "An agent service serving several users, run as a daemon",
			how + "; the service runs as a daemon: `setsid` (no controlling terminal), no DISPLAY or WAYLAND_DISPLAY, requests on a pipe",
			"the servers' host is the service, which has no terminal and no desktop session and is not a known single-user MCP host: resume off for every call, fresh sessions, bob never got alice's session or note",
			"has no controlling terminal and no desktop session",
			daemonWrapper(), ""},
		{"30e", "listens", "An agent service serving several users over the network",
			how + "; the service runs from the terminal and serves HTTP on 0.0.0.0 (a port the kernel picks), where the requests come in",
			"the servers' host is the service, which listens on 0.0.0.0: resume off for every call, fresh sessions, bob never got alice's session or note",
			"listens on 0.0.0.0:",
			nil, "0.0.0.0"},
	} {
		t.Run(v.name, func(t *testing.T) {
			f := newFx(t, s)
			a := startAgent(t, f, v.wrapper, v.listen)
			al, bo := aliceThenBob(f, a, false)
			wrong := bo.SessionID == al.SessionID || sawNote(bo, "alice's note")
			if wrong || al.Resumed || bo.Resumed {
				t.Errorf("a tool call of the agent service resumed a session: alice %+v, bob %+v\nstderr:\n%s", al, bo, f.Stderr)
			}
			id := f.mustLog(lineShared, v.why, "set MCP_RESUME=on if it acts for one person")
			f.row(v.id, v.fault, v.how, v.outcome+"; a tool call does not see the note of the call before it, even alice's own (the cost of resume off for a server started per call)",
				[]string{id}, wrongIf(wrong, "bob got alice's session"))
		})
	}
	t.Run("tenant_key", func(t *testing.T) {
		f := newFx(t, s)
		a := startAgent(t, f, daemonWrapper(), "")
		al, bo := aliceThenBob(f, a, true)
		al2 := a.request("alice", "", true)
		f.record(al2)
		wrong := bo.SessionID == al.SessionID || sawNote(bo, "alice's note")
		if wrong || bo.Resumed && bo.SessionID == al.SessionID {
			t.Errorf("bob got alice's session under per-tenant keys: alice %+v, bob %+v", al, bo)
		}
		if !sawNote(al, "alice's note") || !al2.Resumed || al2.SessionID != al.SessionID || !sawNote(al2, "alice's note") {
			t.Errorf("alice did not resume her own session under her key: %+v, then %+v\nstderr:\n%s", al, al2, f.Stderr)
		}
		v := f.mustLog(lineVouchedInstance)
		f.row("30f", "An agent service that sets a per-tenant MCP_RESUME_INSTANCE",
			"as 30d (a daemon), but the service gives each user's servers `MCP_RESUME_INSTANCE=<user>`; alice's request, bob's, then alice's again",
			"the key vouches for the host (the trust rule is skipped, logged with its risk) and names each tenant's own token file: alice's calls resumed her session and read her note, her next request too; bob's calls resumed only his own session and never saw her note",
			[]string{v}, wrongIf(wrong, "bob got alice's session"))
	})
}

// ---------------------------------------------------------------------------
// Single-user hosts, and a daemon

// hostTwice starts a helper host behind wrapper (helper binary bin), has it
// launch the server twice, and records both launches.
func hostTwice(t *testing.T, f *fx, wrapper []string, bin string) (a, b launchResult) {
	t.Helper()
	h := startRemoteHostBin(t, f.Env, wrapper, bin, f.srv.cmd(), nil)
	h.readSelf()
	a = h.launch()
	b = h.launch()
	h.close()
	f.record(a)
	f.record(b)
	return a, b
}

// claudeHost writes testdata/claude_host.cjs to <dir>/claude and returns
// its path, and the NODE_PATH=... setting under which it finds the official
// MCP TypeScript SDK (the example TypeScript server's node_modules, `make
// typescript-setup`).
func claudeHost(t *testing.T) (script, nodePath string) {
	t.Helper()
	requireTool(t, "node")
	p := filepath.Join(t.TempDir(), "claude")
	if err := os.WriteFile(p, mustRead(t, filepath.Join(repoRoot(t), "examples", "faults", "testdata", "claude_host.cjs")), 0o755); err != nil {
		t.Fatal(err)
	}
	return p, "NODE_PATH=" + filepath.Join(repoRoot(t), "examples", "typescript-server", "node_modules")
}

// 30g-30k: hosts that act for one person keep resuming; a daemon does not.
func faultSingleUserHosts(t *testing.T, s *server) {
	requireTool(t, "setsid")
	resumedOwn := func(t *testing.T, f *fx, a, b launchResult) {
		t.Helper()
		if !b.Resumed || b.SessionID != a.SessionID {
			t.Errorf("the relaunch did not resume its host's session: %+v, then %+v\nstderr:\n%s", a, b, f.Stderr)
		}
	}
	t.Run("terminal", func(t *testing.T) {
		if f, err := os.Open("/dev/tty"); err != nil {
			skipFault(t, "this test process has no controlling terminal (run it under bin/withtty, as make test does): "+err.Error())
		} else {
			f.Close()
		}
		f := newFx(t, s)
		a, b := hostTwice(t, f, nil, helperBin(t))
		resumedOwn(t, f, a, b)
		f.row("30g", "A host run from a terminal", "a helper MCP host (another process) started from the test's controlling terminal (make test gives the run one), launching the server twice",
			"the host has a controlling terminal: one person at it; the relaunch resumed the host's own session",
			[]string{f.mustLog(lineResumed)}, wrongIf(a.Resumed, "the first launch resumed"))
	})
	t.Run("desktop", func(t *testing.T) {
		f := newFx(t, s)
		a, b := hostTwice(t, f, daemonWrapper("DISPLAY=:0"), helperBin(t))
		resumedOwn(t, f, a, b)
		f.row("30h", "A desktop app as host (Electron-like)", "a helper MCP host started with `setsid` (no controlling terminal) and `DISPLAY=:0` in its environment at exec, as a session manager starts a desktop app, launching the server twice",
			"the host has no terminal but runs in a desktop session: one person at it; the relaunch resumed the host's own session",
			[]string{f.mustLog(lineResumed)}, wrongIf(a.Resumed, "the first launch resumed"))
	})
	t.Run("vscode_server", func(t *testing.T) {
		f := newFx(t, s)
		dir := filepath.Join(t.TempDir(), ".vscode-server", "bin", "0123456789abcdef0123456789abcdef01234567")
		os.MkdirAll(dir, 0o755)
		node := filepath.Join(dir, "node")
		if err := os.WriteFile(node, mustRead(t, helperBin(t)), 0o755); err != nil {
			t.Fatal(err)
		}
		a, b := hostTwice(t, f, daemonWrapper(), node)
		resumedOwn(t, f, a, b)
		f.row("30i", "The VS Code Remote-SSH server as host", "a helper MCP host copied to `~/.vscode-server/bin/<commit>/node` (where the Remote-SSH server runs its extension host) and started with `setsid`, without DISPLAY or WAYLAND_DISPLAY, launching the server twice",
			"no terminal and no desktop, but a `.vscode-server` path component makes it a known single-user MCP host (a person's editor on another machine): the relaunch resumed the host's own session",
			[]string{f.mustLog(lineResumed)}, wrongIf(a.Resumed, "the first launch resumed"))
	})
	t.Run("claude", func(t *testing.T) {
		f := newFx(t, s)
		script, nodePath := claudeHost(t)
		w := append(append(append([]string{"setsid", "-w"}, noDesktop...), nodePath), "sh", "-c", `exec node "$0"`)
		a, b := hostTwice(t, f, w, script)
		resumedOwn(t, f, a, b)
		f.row("30j", "A Node CLI host named claude", "`node <dir>/claude` (testdata/claude_host.cjs: an MCP host on the official TypeScript SDK's StdioClientTransport that titles itself `claude` as Claude Code does), started with `setsid`, without DISPLAY or WAYLAND_DISPLAY, launching the server twice",
			"no terminal and no desktop, but named claude, a known single-user MCP host (Claude Code): the relaunch resumed the host's own session",
			[]string{f.mustLog(lineResumed)}, wrongIf(a.Resumed, "the first launch resumed"))
	})
	t.Run("daemon", func(t *testing.T) {
		f := newFx(t, s)
		a, b := hostTwice(t, f, daemonWrapper(), helperBin(t))
		wrong := b.SessionID == a.SessionID
		if wrong || a.Resumed || b.Resumed {
			t.Errorf("a server under a daemon host resumed: %+v, then %+v", a, b)
		}
		id := f.mustLog(lineShared, "has no controlling terminal and no desktop session (DISPLAY, WAYLAND_DISPLAY) and is not a known single-user MCP host")
		f.row("30k", "A daemon as host", "a helper MCP host (not a known host) started with `setsid`, without DISPLAY or WAYLAND_DISPLAY, launching the server twice",
			"a daemon, service or job runner may act for several people: resume off, both launches fresh sessions",
			[]string{id}, wrongIf(wrong, "the relaunch resumed the daemon's session"))
	})
}
