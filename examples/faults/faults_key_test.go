//go:build linux && faults

package faults_test

// Faults 31a-31i: the instance key (docs/RELIABILITY.md, "What the instance
// key holds"). Two identical config entries alive at once under one host,
// the program, the working directory and the environment as launched,
// network namespaces, and a TCP socket on the server's stdio, all with the
// real example servers and real programs (ip netns, nsenter, socat). The
// helpers they share (servers held alive while others launch, network
// namespaces that reach the broker, an MCP client over TCP) are in
// faults_keyutil_test.go.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lineAmbiguous starts the plugin's line for two live instances of one
// default instance key under one host, lineAmbiguousDeclared its line for
// a declared key, and lineAmbiguousAny both (README.md, "Several instances
// under one host").
const (
	lineAmbiguous         = "Two server instances under this host were launched identically"
	lineAmbiguousDeclared = "Two server instances under this host declared the same instance key"
	lineAmbiguousAny      = "Two server instances under this host"
)

// defaultKey leaves MCP_RESUME_INSTANCE empty: the default instance key
// (newFx declares "-", no instance).
var defaultKey = []string{"MCP_RESUME_INSTANCE="}

// 31a, 31b. Two identical config entries (same program, arguments, working
// directory and environment) alive at once under one host.
func faultIdenticalEntries(t *testing.T, s *server) {
	t.Run("restart_all", func(t *testing.T) {
		f := newFx(t, s)
		a := f.start(s.cmd(), defaultKey, "entry A")
		b := f.start(s.cmd(), defaultKey, "")
		f.stop(a)
		f.stop(b)
		// "Restart all": the host relaunches B first, then A while B lives.
		b2 := f.start(s.cmd(), defaultKey, "")
		a2 := f.start(s.cmd(), defaultKey, "")
		rb2, ra2 := f.stop(b2), f.stop(a2)
		wrong := rb2.SessionID == a.info.SessionID || ra2.SessionID == b.info.SessionID
		if wrong || rb2.Resumed || ra2.Resumed {
			t.Errorf("restart all (B first): B %+v, A %+v; A's session was %s", rb2, ra2, a.info.SessionID)
		}
		// One warning where the marker was written (B's start); the stores
		// that met it later say "found" instead.
		if n := f.countLog(lineAmbiguous, "; wrote ambiguous-"); n != 1 {
			t.Errorf("%d lines %q saying the marker was written, want one", n, lineAmbiguous)
		}
		markers := markerNames(f.StateDir)
		if len(markers) != 1 {
			t.Errorf("ambiguity markers %v, want one", markers)
		}
		if n := tokenNames(f.StateDir); len(n) != 0 {
			t.Errorf("token files %v remain for an ambiguous key", n)
		}
		// The marker outlives both instances: each alone, then under a new
		// host process launching the same entry twice.
		a3 := f.launch(s.cmd(), defaultKey, "")
		b3 := f.launch(s.cmd(), defaultKey, "")
		h := startRemoteHost(t, f.Env, nil, sameEntry(s.cmd()), nil)
		n1 := h.launch()
		n2 := h.launch()
		h.close()
		f.record(n1)
		f.record(n2)
		if a3.Resumed || b3.Resumed || n1.Resumed || n2.Resumed {
			t.Errorf("resumed under an ambiguity marker: A %+v, B %+v, new host %+v then %+v", a3, b3, n1, n2)
		}
		wrong = wrong || a3.Resumed || b3.Resumed || n2.Resumed
		if n := tokenNames(f.StateDir); len(n) != 0 {
			t.Errorf("token files %v written for an ambiguous key", n)
		}
		// Told apart by MCP_RESUME_INSTANCE, each resumes its own.
		work, home := []string{"MCP_RESUME_INSTANCE=work"}, []string{"MCP_RESUME_INSTANCE=home"}
		wa, wb := f.start(s.cmd(), work, "work"), f.start(s.cmd(), home, "home")
		f.stop(wa)
		f.stop(wb)
		wb2, wa2 := f.start(s.cmd(), home, ""), f.start(s.cmd(), work, "")
		rwb2, rwa2 := f.stop(wb2), f.stop(wa2)
		crossed := rwa2.SessionID == wb.info.SessionID || rwb2.SessionID == wa.info.SessionID
		if crossed || !rwa2.Resumed || rwa2.SessionID != wa.info.SessionID || !rwb2.Resumed || rwb2.SessionID != wb.info.SessionID {
			t.Errorf("distinct instances: work %+v (was %s), home %+v (was %s)", rwa2, wa.info.SessionID, rwb2, wb.info.SessionID)
		}
		f.row("31a", "Two identical config entries alive at once under one host; \"restart all\" relaunches B first",
			"one host launches entry A (stores a session) and, while A lives, entry B: the same program, arguments, working directory and environment (default instance key); then both restarted, B first; then A alone, B alone, and a new host process launching the same entry twice; then the two entries with MCP_RESUME_INSTANCE=work and =home, both alive, restarted B first",
			"B found the key's lock held by a live instance and marked the key ambiguous (one `ambiguous-<hash>` file, no host part) with one warning: after the restart neither resumed A's session and A's token file was deleted; the marker held across restarts of both and under the new host (no resume, no token written); with distinct MCP_RESUME_INSTANCE values each resumed its own session",
			[]string{f.mustLog(lineAmbiguous, "MCP_RESUME_INSTANCE")}, wrongIf(wrong || crossed, "B resumed A's session"))
	})
	t.Run("crash_backoff", func(t *testing.T) {
		f := newFx(t, s)
		a := f.start(s.cmd(), defaultKey, "entry A")
		b := f.start(s.cmd(), defaultKey, "")
		f.crash(a)
		f.stop(b)
		// B restarts while A waits out its back-off, then A comes back.
		b2 := f.launch(s.cmd(), defaultKey, "")
		a2 := f.launch(s.cmd(), defaultKey, "")
		wrong := b2.SessionID == a.info.SessionID || a2.SessionID == b.info.SessionID
		if wrong || b2.Resumed || a2.Resumed {
			t.Errorf("after A's crash: B %+v, A %+v; A's session was %s", b2, a2, a.info.SessionID)
		}
		if len(markerNames(f.StateDir)) != 1 {
			t.Errorf("ambiguity markers %v, want one", markerNames(f.StateDir))
		}
		f.row("31b", "Two identical config entries alive at once; A crashes and B restarts during A's back-off",
			"as 31a: A stores a session, B starts while A lives; A is SIGKILLed, B restarts before A is relaunched, then A after its back-off",
			"the lock was free once A died, but B had marked the key ambiguous when it met A's lock: B's restart did not resume A's session, nor did A's",
			[]string{f.mustLog(lineAmbiguous, "MCP_RESUME_INSTANCE")}, wrongIf(wrong, "B resumed A's session"))
	})
}

// countLog counts the stderr lines that contain every part.
func (f *fx) countLog(parts ...string) int {
	n := 0
	for _, line := range strings.Split(f.Stderr.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// sameEntry is argv launched by a helper host (startRemoteHost) with the
// environment a launch of this test process gives (os.Environ, f.Vars and
// defaultKey): env drops the helper's own variables, so that the server's
// default instance key is the one this process's launches have.
func sameEntry(argv []string) []string {
	return append([]string{"env", "-u", "FAULTS_HELPER", "-u", "FAULTS_ARGV", "-u", "FAULTS_HOST_PID", "MCP_RESUME_INSTANCE="}, argv...)
}

// markerNames lists the ambiguity markers of dir.
func markerNames(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "ambiguous-*"))
	return m
}

// 31c. The program is in the key: the server copied to two paths.
func faultProgramInKey(t *testing.T, s *server) {
	f := newFx(t, s)
	ws := t.TempDir()
	work := copyServer(t, s, filepath.Join(ws, "work", "notes"))
	home := copyServer(t, s, filepath.Join(ws, "home", "notes"))
	wrong := apartThenOwn(t, f, entry{work, defaultKey, "the development checkout"}, entry{home, defaultKey, "the installed copy"})
	f.row("31c", "One host, the same server at two paths (a development checkout beside the installed copy)",
		"the example server copied to <ws>/work/notes and <ws>/home/notes (the Go binary; server.py and its modules; the TypeScript dist/ with package.json), launched one after the other by one host with the same arguments (none), working directory and environment; then the first again",
		"the program as exec'd (/proc/self/cmdline: the binary, or the interpreter and its script) is part of the default instance key: the second copy got its own file and a fresh session; the first resumed its own",
		[]string{f.mustLog(lineNotFound)}, wrongIf(wrong, "one copy resumed the other's session"))
}

// copyServer copies s's server to dir (created) and returns the command
// line that runs the copy: the Go binary; the Python server's modules; the
// TypeScript server's dist/ and package.json, with node_modules a symlink
// to the example's own.
func copyServer(t *testing.T, s *server, dir string) []string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cp := func(src, dst string, perm os.FileMode) {
		if err := os.WriteFile(dst, mustRead(t, src), perm); err != nil {
			t.Fatal(err)
		}
	}
	root := repoRoot(t)
	switch s.name {
	case "go":
		cp(s.argv[0], filepath.Join(dir, "server"), 0o755)
		return []string{filepath.Join(dir, "server")}
	case "python":
		src := filepath.Join(root, "examples", "python-server")
		mods, _ := filepath.Glob(filepath.Join(src, "*.py"))
		for _, m := range mods {
			cp(m, filepath.Join(dir, filepath.Base(m)), 0o644)
		}
		return []string{s.argv[0], filepath.Join(dir, "server.py")}
	case "typescript":
		src := filepath.Join(root, "examples", "typescript-server")
		os.Mkdir(filepath.Join(dir, "dist"), 0o755)
		js, _ := filepath.Glob(filepath.Join(src, "dist", "*.js"))
		for _, m := range js {
			cp(m, filepath.Join(dir, "dist", filepath.Base(m)), 0o644)
		}
		cp(filepath.Join(src, "package.json"), filepath.Join(dir, "package.json"), 0o644)
		if err := os.Symlink(filepath.Join(src, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
			t.Fatal(err)
		}
		return []string{s.argv[0], filepath.Join(dir, "dist", "server.js")}
	}
	t.Fatalf("unknown language %q", s.name)
	return nil
}

// 31d, 31e. The key is the launch's: a server that changes directory or
// drops a variable before its store opens.
func faultKeyAsLaunched(t *testing.T, s *server) {
	install := filepath.Dir(s.argv[len(s.argv)-1])
	t.Run("chdir", func(t *testing.T) {
		f := newFx(t, s)
		ws := t.TempDir()
		projA, projB := filepath.Join(ws, "A"), filepath.Join(ws, "B")
		os.Mkdir(projA, 0o755)
		os.Mkdir(projB, 0o755)
		env := append([]string{"EXAMPLE_CHDIR=" + install}, defaultKey...)
		wrong := apartThenOwn(t, f, entry{inDir(projA, s.cmd()), env, "project A"}, entry{inDir(projB, s.cmd()), env, "project B"})
		f.row("31d", "A server that changes to its install directory before its store opens",
			"one host launches the server from /ws/A (stores a session), then /ws/B, then /ws/A again; the server changes to its own directory at startup, before its store opens (`EXAMPLE_CHDIR`)",
			"the working directory in the key is the one the server was launched in (each binding records it when it is loaded: Go's package init, the Python and TypeScript modules' import): B got its own file and a fresh session; A resumed its own",
			[]string{f.mustLog(lineNotFound)}, wrongIf(wrong, "project B resumed project A's session"))
	})
	t.Run("unset", func(t *testing.T) {
		f := newFx(t, s)
		env := func(project string) []string {
			return append([]string{"NOTES_PROJECT=" + project, "EXAMPLE_UNSET=NOTES_PROJECT"}, defaultKey...)
		}
		wrong := apartThenOwn(t, f, entry{s.cmd(), env("A"), "NOTES_PROJECT=A"}, entry{s.cmd(), env("B"), "NOTES_PROJECT=B"})
		f.row("31e", "A server that removes a variable from its environment before its store opens",
			"one host launches the server with NOTES_PROJECT=A (stores a session), then NOTES_PROJECT=B, then A again; the server deletes NOTES_PROJECT at startup, before its store opens (`EXAMPLE_UNSET`), as a server that consumes a secret does",
			"the environment in the key is the one the server was exec'd with (/proc/self/environ): B got its own file and a fresh session; A resumed its own",
			[]string{f.mustLog(lineNotFound)}, wrongIf(wrong, "project B resumed project A's session"))
	})
}

// 31f-31h. Network namespaces.
func faultNetNS(t *testing.T, s *server) {
	requireRoot(t)
	requireTool(t, "ip")
	requireTool(t, "nsenter")
	requireTool(t, "socat")
	t.Run("ip_netns_exec", func(t *testing.T) {
		f := newFx(t, s)
		nsA, nsB := newNetNS(t, f, "a"), newNetNS(t, f, "b")
		a := f.launch(nsA.exec(s.cmd()), defaultKey, "in ns-a")
		b := f.launch(nsB.exec(s.cmd()), defaultKey, "")
		a2 := f.launch(nsA.exec(s.cmd()), defaultKey, "")
		wrong := b.SessionID == a.SessionID || b.Resumed || a2.Resumed && a2.SessionID != a.SessionID
		if wrong {
			t.Errorf("ns-b resumed ns-a's session: %+v", b)
		}
		outcome := "the namespaces (net, mnt, uts, ipc, user, cgroup) are part of the key: ns-b's server got its own file and a fresh session"
		switch {
		case a2.Resumed:
			outcome += "; ns-a's relaunch resumed its own"
		default:
			outcome += "; ns-a's relaunch did not resume either: `ip netns exec` gives every launch a new mount namespace, so no two launches through it share a key"
		}
		f.row("31f", "One host, one entry launched in two network namespaces (`ip netns exec`)",
			"`ip netns add` ns-a and ns-b (loopback up, the broker's port forwarded in by socat over a Unix socket, so the environment is the same); one host launches the same entry through `ip netns exec ns-a`, then `ip netns exec ns-b`, then ns-a again",
			outcome, []string{f.mustLog(lineNotFound)}, wrongIf(wrong, "ns-b resumed ns-a's session"))
	})
	t.Run("nsenter_net", func(t *testing.T) {
		f := newFx(t, s)
		nsA, nsB := newNetNS(t, f, "a"), newNetNS(t, f, "b")
		wrong := apartThenOwn(t, f, entry{nsA.enter(s.cmd()), defaultKey, "ns-a"}, entry{nsB.enter(s.cmd()), defaultKey, "ns-b"})
		f.row("31g", "One host, one entry launched in two network namespaces (`nsenter --net`)",
			"as 31f, entering only the network namespace (`nsenter --net=/run/netns/ns-a`, then ns-b, then ns-a again)",
			"the network namespace alone parts the keys: ns-b's server got its own file and a fresh session; ns-a's relaunch resumed its own",
			[]string{f.mustLog(lineNotFound)}, wrongIf(wrong, "ns-b resumed ns-a's session"))
	})
	t.Run("live_pair", func(t *testing.T) {
		node := s
		if s.name != "typescript" {
			node = findServer(t, allLangs[2])
		}
		f := newFx(t, s)
		f.App = sharedApp
		f.StateDir = filepath.Join(filepath.Dir(f.StateDir), sharedApp)
		nsA, nsB := newNetNS(t, f, "a"), newNetNS(t, f, "b")
		// One declared instance for both, so that only the namespaces can
		// tell them apart (without it the program would).
		env := []string{"EXAMPLE_APP=" + sharedApp, "MCP_RESUME_INSTANCE=notes"}
		wrong := false
		var order []string
		for _, pair := range [][2]*server{{s, node}, {node, s}} {
			first := f.start(nsA.enter(pair[0].cmd()), env, "first of "+pair[0].name+"/"+pair[1].name)
			second := f.start(nsB.enter(pair[1].cmd()), env, "")
			r1, r2 := f.stop(first), f.stop(second)
			if r2.SessionID == r1.SessionID {
				wrong = true
				t.Errorf("%s in ns-a %+v and %s in ns-b %+v shared a session", pair[0].name, r1, pair[1].name, r2)
			}
			order = append(order, fmt.Sprintf("%s then %s: resumed %v/%v", pair[0].name, pair[1].name, r1.Resumed, r2.Resumed))
		}
		t.Logf("pairs: %v", order)
		if f.logged(lineInstanceBusy) || f.logged(lineAmbiguousAny) || len(markerNames(f.StateDir)) > 0 {
			t.Errorf("servers in two network namespaces contended for one lock:\n%s", f.Stderr)
		}
		f.row("31h", "Two live servers in two network namespaces, this language's and Node's",
			"`EXAMPLE_APP=example-shared`, one MCP_RESUME_INSTANCE for both, one state directory; this language's server in ns-a (stores a session), then the TypeScript server in ns-b while it lives (`nsenter --net`); then the same with Node first",
			"each namespace's server has its own key, file and lock (Node locks through the abstract socket alone, which lives in one network namespace): the second server never resumed the first's session, and neither found a lock busy",
			[]string{"no `" + lineInstanceBusy + "`"}, wrongIf(wrong, "the two servers shared one session"))
	})
}

// 31i. A TCP socket on the server's stdio (socat).
func faultTCPStdio(t *testing.T, s *server) {
	requireTool(t, "socat")
	f := newFx(t, s)
	// A declared instance: the trust rule's opt-in, so that the stdio rule
	// alone decides.
	l := startSocat(t, f, s.cmd(), []string{"MCP_RESUME_INSTANCE=notes"})
	c1 := f.launchTCP(l, "first client")
	c2 := f.launchTCP(l, "")
	wrong := c2.SessionID == c1.SessionID || c2.Resumed
	if wrong || c1.Resumed {
		t.Errorf("network clients: %+v then %+v", c1, c2)
	}
	f.row("31i", "A TCP socket on the server's stdio (socat)",
		"`socat TCP-LISTEN:<port>,bind=127.0.0.1,fork EXEC:<server>,nofork` (the accepted connection is the server's stdin and stdout; socat's listener is its parent) with MCP_RESUME_INSTANCE set, so the trust rule's opt-in applies; two MCP clients connect one after the other",
		"the socket on stdio is found in /proc/self/net/tcp, not in /proc/self/net/unix: a network socket lets any client in, so resume is off for both (Node, which cannot ask the socket for its peer, included): fresh sessions",
		[]string{f.mustLog(lineIdentity, "network socket")}, wrongIf(wrong, "the second client resumed the first client's session"))
}
