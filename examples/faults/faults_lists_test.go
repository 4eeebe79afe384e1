//go:build linux && faults

package faults_test

// Faults 18 to 20: processes the walk must never take for the host, shells
// that are hosts although their arguments name a file, and npm's retitled
// script runners, which are launchers (procid: launcher.go,
// shell.go; docs/RELIABILITY.md).

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shQuote quotes s for a POSIX shell.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// loopbackSSHD is a real OpenSSH server on 127.0.0.1 that lets root in with
// a key of its own, and the ssh options that share one connection
// (ControlMaster=auto, ControlPersist) among every client that uses them.
type loopbackSSHD struct {
	dir  string
	port int
	cmd  *exec.Cmd
}

// startLoopbackSSHD starts sshd -D with a temporary host key, client key and
// configuration, and waits until it accepts connections. It skips the fault
// when sshd, ssh or ssh-keygen is missing (CI installs openssh-server).
func startLoopbackSSHD(t *testing.T) *loopbackSSHD {
	t.Helper()
	requireRoot(t)
	sshd, err := exec.LookPath("sshd")
	if err != nil {
		if _, err2 := os.Stat("/usr/sbin/sshd"); err2 != nil {
			skipFault(t, "needs sshd (Debian: apt-get install openssh-server openssh-client)")
		}
		sshd = "/usr/sbin/sshd"
	}
	requireTool(t, "ssh")
	requireTool(t, "ssh-keygen")
	dir, err := os.MkdirTemp("", "mcp-resume-faults-sshd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, k := range []string{"hostkey", "clientkey"} {
		if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", filepath.Join(dir, k)).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
	}
	pub := mustRead(t, filepath.Join(dir, "clientkey.pub"))
	if err := os.WriteFile(filepath.Join(dir, "authorized_keys"), pub, 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conf := strings.Join([]string{
		"Port " + strconv.Itoa(port), "ListenAddress 127.0.0.1",
		"HostKey " + filepath.Join(dir, "hostkey"), "AuthorizedKeysFile " + filepath.Join(dir, "authorized_keys"),
		"PermitRootLogin prohibit-password", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
		"UsePAM no", "StrictModes no", "PidFile " + filepath.Join(dir, "sshd.pid"), "LogLevel ERROR",
	}, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "sshd_config"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll("/run/sshd", 0o755) // privilege separation directory
	d := &loopbackSSHD{dir: dir, port: port}
	d.cmd = exec.Command(sshd, "-D", "-f", filepath.Join(dir, "sshd_config"), "-E", filepath.Join(dir, "sshd.log"))
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.stop)
	for deadline := time.Now().Add(20 * time.Second); ; {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen on port %d: %v\n%s", port, err, mustRead(t, filepath.Join(dir, "sshd.log")))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return d
}

// opts are the ssh client options: no terminal, this key, no host key
// prompt, and one shared connection (the master stays 120 s after the
// first client).
func (d *loopbackSSHD) opts() []string {
	return []string{"-T", "-p", strconv.Itoa(d.port), "-i", filepath.Join(d.dir, "clientkey"),
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
		"-o", "ControlMaster=auto", "-o", "ControlPath=" + filepath.Join(d.dir, "cm"), "-o", "ControlPersist=120"}
}

// argv is what an MCP host runs to start server on the "remote" side:
// ssh <opts> root@127.0.0.1 'exec env K=V ... server'. sshd gives the remote
// command a fresh environment, so the variables the server needs (env) and
// PATH are passed on the command line.
func (d *loopbackSSHD) argv(server, env []string) []string {
	remote := []string{"exec", "env", shQuote("PATH=" + os.Getenv("PATH"))}
	for _, kv := range env {
		remote = append(remote, shQuote(kv))
	}
	for _, a := range server {
		remote = append(remote, shQuote(a))
	}
	return append(append([]string{"ssh"}, d.opts()...), "root@127.0.0.1", strings.Join(remote, " "))
}

// stop ends the shared connection's master and sshd.
func (d *loopbackSSHD) stop() {
	exec.Command("ssh", "-o", "ControlPath="+filepath.Join(d.dir, "cm"), "-O", "exit", "root@127.0.0.1").Run()
	if d.cmd.Process != nil {
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		d.cmd.Wait()
	}
}

// 18. ssh connection sharing: two MCP hosts run "ssh host server" over one
// shared connection, so both servers are children of one sshd.
func faultSSHSharing(t *testing.T, s *server) {
	d := startLoopbackSSHD(t)
	f := newFx(t, s)
	argv := d.argv(s.cmd(), f.Vars())
	// Host A (this process) opens the shared connection; its first client
	// becomes the master and stays in the background.
	a1 := f.launch(argv, nil, "")
	// Host B, another process, uses the same connection.
	b := startRemoteHost(t, f.Env, nil, argv, nil)
	b1 := b.launch()
	f.record(b1)
	a2 := f.launch(argv, nil, "")
	wrong := b1.SessionID == a1.SessionID || a2.SessionID == b1.SessionID
	if wrong || a1.Resumed || b1.Resumed || a2.Resumed {
		t.Errorf("a server under the shared sshd resumed: A %+v, B %+v, A again %+v", a1, b1, a2)
	}
	id := f.mustLog(lineIdentity, "a remote-login server")
	f.row("18", "ssh connection sharing",
		"a real sshd on 127.0.0.1; MCP host A, then MCP host B (another process), then A again run `ssh -o ControlMaster=auto -o ControlPersist=120 root@127.0.0.1 server` over one shared connection, so every server is a child of the same `sshd: root@notty`, which holds its pipes",
		"the walk reaches the `sshd` session process, which is on the plugin's shared-server list: resume off for every launch, fresh sessions, host B never gets host A's session",
		[]string{id}, wrongIf(wrong, "host B resumed host A's session"))
}

// 19. Interactive shells started with an init file under one terminal
// owner, as VS Code starts every integrated terminal: bash --init-file
// <script>.
func faultInitFileShells(t *testing.T, s *server) {
	requireTool(t, "bash")
	f := newFx(t, s)
	init := filepath.Join(t.TempDir(), "init.sh")
	// The init file runs the server in the foreground, as a user would type
	// it, and then leaves the shell.
	if err := os.WriteFile(init, []byte("$FAULTS_SERVER\nexit $?\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The owner leads a session of its own, without a controlling
	// terminal: an interactive bash takes over the terminal of its session
	// (tcsetpgrp), and in a background process group of the test's
	// terminal (make test has one) it would stop on SIGTTOU. The stdio
	// check refuses the shell before the trust rule would look at it.
	owner := startRemoteHost(t, f.Env, []string{"setsid", "-w"}, []string{"bash", "--init-file", init, "-i"}, []string{"FAULTS_SERVER=" + s.shell()})
	t1 := owner.launch() // terminal 1
	f.record(t1)
	t2 := owner.launch() // terminal 2, another interactive shell of the same owner
	f.record(t2)
	wrong := t2.SessionID == t1.SessionID
	if wrong || t2.Resumed {
		t.Errorf("terminal 2 %+v resumed terminal 1's session %s", t2, t1.SessionID)
	}
	id := f.mustLog(lineIdentity, "does not hold the other end of the server's stdio")
	f.row("19", "Interactive `bash --init-file` shells under one terminal owner",
		"a terminal owner (a helper process) starts terminal 1, then terminal 2: each an interactive `bash --init-file <script> -i` whose init file runs the server in the foreground over the owner's pipes",
		"`--init-file` takes the script as its argument, so the interactive shell is the host, not a launcher, and the walk never reaches the owner; the shell passes its pipes through rather than holding the other end, so the stdio check refuses it: resume off, terminal 2 gets a fresh session",
		[]string{id}, wrongIf(wrong, "terminal 2 resumed terminal 1's session"))
}

// 20. npm start / npm run: npm retitles itself "npm start", "npm run
// serve", and runs the server through sh -c.
func faultNPMRun(t *testing.T, s *server) {
	requireTool(t, "npm")
	f := newFx(t, s)
	dir := t.TempDir()
	pkg, _ := json.Marshal(map[string]any{
		"name": "mcp-resume-faults-npm", "version": "1.0.0", "private": true,
		"scripts": map[string]string{"start": s.shell(), "serve": s.shell()},
	})
	if err := os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644); err != nil {
		t.Fatal(err)
	}
	quiet := []string{"npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false"}
	start := []string{"npm", "--prefix", dir, "--silent", "start"}
	run := []string{"npm", "--prefix", dir, "--silent", "run", "serve"}
	a1 := f.launch(start, quiet, "")
	a2 := f.launch(start, quiet, "")
	a3 := f.launch(run, quiet, "")
	if !a2.Resumed || a2.SessionID != a1.SessionID || !a3.Resumed || a3.SessionID != a1.SessionID {
		t.Errorf("npm start then npm start then npm run serve: %+v, %+v, %+v; want the first session resumed twice\nstderr:\n%s", a1, a2, a3, f.Stderr)
	}
	wrong := a1.Resumed
	res := f.mustLog(lineResumed)
	f.row("20", "`npm start` / `npm run` launching the server",
		"the MCP host runs `npm --prefix <dir> --silent start` twice, then `npm … run serve`; package.json's scripts run the server (npm retitles itself `npm start`, `npm run serve` and runs `sh -c <script>`)",
		"npm's titles are launchers like `npm exec`: the walk passes npm and `sh -c` and reaches the MCP host, which holds the pipes: the second and third launches resumed the first session",
		[]string{res}, wrongIf(wrong, "the first launch resumed"))
}
