//go:build linux && faults

package faults_test

// The suite's helper processes (this test binary in a FAULTS_HELPER mode,
// dispatched by init in faults_util_test.go): an MCP host in another
// process, a subreaper, and the Go stress helpers with their
// self-checking tokens.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/internal/servertest"
	"github.com/mcp-resume/mcp-resume/host"
)

// ---------------------------------------------------------------------------
// Helper: an MCP host in another process (in a namespace, under a
// subreaper). It prints {"self": ...} with its own pid and start time as its
// /proc shows them, then launches FAULTS_ARGV once per "launch" line on stdin
// (through a socket pair with FAULTS_STDIO=socketpair, else pipes)
// and prints {"result": ...}; it exits at EOF.

type selfID struct {
	PID   int    `json:"pid"`
	Start string `json:"start"`
	Err   string `json:"err,omitempty"`
}

type hostMsg struct {
	Self   *selfID       `json:"self,omitempty"`
	Result *launchResult `json:"result,omitempty"`
}

func helperMCPHost() int {
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv("FAULTS_ARGV")), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "FAULTS_ARGV: want a JSON array of strings")
		return 2
	}
	out := json.NewEncoder(os.Stdout)
	self := selfID{PID: os.Getpid()}
	if start, err := linuxStartTime(os.Getpid()); err != nil {
		self.Err = err.Error()
	} else {
		self.Start = start
	}
	out.Encode(hostMsg{Self: &self})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if path, ok := strings.CutPrefix(sc.Text(), "exec "); ok {
			// Become another program in place: same pid, same start time,
			// same stdio (fault 16). On success this never returns.
			err := syscall.Exec(path, []string{path}, os.Environ())
			fmt.Fprintln(os.Stderr, "exec:", err)
			return 1
		}
		if sc.Text() == "launch" {
			r := launchOnce(context.Background(), argv, []string{"FAULTS_HOST_PID=" + strconv.Itoa(os.Getpid())}, os.Stderr, os.Getenv("FAULTS_NOTE"), os.Getenv("FAULTS_STDIO") == "socketpair")
			out.Encode(hostMsg{Result: &r})
		}
	}
	return 0
}

// remoteHost drives a helperMCPHost process.
type remoteHost struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	Self  selfID
}

// startRemoteHost runs wrapper (which must end with a shell script that
// runs "$0") followed by the helper binary, as an MCP host that launches
// server, and waits for its self line. env is added to this process's
// environment; stderr goes to e.Stderr.
func startRemoteHost(t *testing.T, e *servertest.Env, wrapper, server, env []string) *remoteHost {
	t.Helper()
	h := startRemoteHostAsync(t, e, wrapper, server, env)
	h.readSelf()
	return h
}

// startRemoteHostAsync starts a helper host without waiting for its self
// line (so two can start in the same clock tick); call readSelf next.
func startRemoteHostAsync(t *testing.T, e *servertest.Env, wrapper, server, env []string) *remoteHost {
	t.Helper()
	return startRemoteHostBin(t, e, wrapper, helperBin(t), server, env)
}

// startRemoteHostBin is startRemoteHostAsync with the helper binary at bin
// (a copy another user can run).
func startRemoteHostBin(t *testing.T, e *servertest.Env, wrapper []string, bin string, server, env []string) *remoteHost {
	t.Helper()
	args := append(append([]string{}, wrapper...), bin)
	cmd := exec.Command(args[0], args[1:]...)
	argv, _ := json.Marshal(server)
	cmd.Env = append(append(append(os.Environ(), e.Vars()...), env...), "FAULTS_HELPER=host", "FAULTS_ARGV="+string(argv))
	cmd.Stderr = e.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &remoteHost{t: t, cmd: cmd, in: in, lines: make(chan string, 4)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(h.close)
	return h
}

func (h *remoteHost) readSelf() {
	h.t.Helper()
	var msg hostMsg
	h.read(&msg)
	if msg.Self == nil {
		h.t.Fatal("helper host sent no self line")
	}
	h.Self = *msg.Self
}

func (h *remoteHost) read(msg *hostMsg) {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		if !ok {
			h.t.Fatalf("helper host exited early")
		}
		if err := json.Unmarshal([]byte(line), msg); err != nil {
			h.t.Fatalf("helper host printed %q: %v", line, err)
		}
	case <-time.After(90 * time.Second):
		h.t.Fatal("helper host did not answer within 90s")
	}
}

// exec makes the helper host execve path (another program file, which must
// be a copy of the helper) and waits for the new program's self line.
func (h *remoteHost) exec(path string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, "exec "+path+"\n"); err != nil {
		h.t.Fatal(err)
	}
	h.readSelf()
}

func (h *remoteHost) launch() launchResult {
	h.t.Helper()
	if _, err := io.WriteString(h.in, "launch\n"); err != nil {
		h.t.Fatal(err)
	}
	var msg hostMsg
	h.read(&msg)
	if msg.Result == nil {
		h.t.Fatal("helper host sent no result")
	}
	return *msg.Result
}

// close ends the helper host: EOF first, then SIGKILL to its process group.
func (h *remoteHost) close() {
	if h.cmd.ProcessState != nil {
		return
	}
	h.in.Close()
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// ---------------------------------------------------------------------------
// Helper: a subreaper (PR_SET_CHILD_SUBREAPER) that runs two MCP hosts one
// after the other. Each host launches the server through a shell that exits
// at once, so the server is orphaned and re-parented to the subreaper.

type subreaperReport struct {
	Self  selfID         `json:"self"`
	Hosts []int          `json:"hosts"`
	Runs  []launchResult `json:"runs"`
}

func helperSubreaper() int {
	const prSetChildSubreaper = 36
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		fmt.Fprintln(os.Stderr, "prctl(PR_SET_CHILD_SUBREAPER):", errno)
		return 1
	}
	// FAULTS_NODUMP=1 (fault 22): not dumpable, as sshd, ssh-agent and
	// setuid programs are, so its children cannot list its fds.
	const prSetDumpable = 4
	if os.Getenv("FAULTS_NODUMP") == "1" {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); errno != 0 {
			fmt.Fprintln(os.Stderr, "prctl(PR_SET_DUMPABLE, 0):", errno)
			return 1
		}
	}
	self, _ := os.Executable()
	rep := subreaperReport{Self: selfID{PID: os.Getpid()}}
	if start, err := linuxStartTime(os.Getpid()); err == nil {
		rep.Self.Start = start
	}
	for i := 0; i < 2; i++ {
		cmd := exec.Command(self)
		cmd.Env = append(withoutEnv(os.Environ(), "FAULTS_HELPER"), "FAULTS_HELPER=host")
		cmd.Stderr = os.Stderr
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		rep.Hosts = append(rep.Hosts, cmd.Process.Pid)
		io.WriteString(in, "launch\n")
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var msg hostMsg
			if json.Unmarshal(sc.Bytes(), &msg) == nil && msg.Result != nil {
				rep.Runs = append(rep.Runs, *msg.Result)
				break
			}
		}
		in.Close()
		cmd.Wait()
		// Reap the adopted orphans (the server), so the next host starts
		// only once the first server, and its lock, are gone.
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				break
			}
			if pid == 0 {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// ---------------------------------------------------------------------------
// Stress tokens: self-checking, so a partial or garbled one is detected.
// s<seed>.i<iter>.<filler>.<crc32 of the rest>, 40 to ~4070 bytes.

func stressToken(seed, iter int) string {
	head := fmt.Sprintf("s%d.i%d.", seed, iter)
	n := 24 + (seed*131+iter*977)%4000
	body := make([]byte, n)
	for j := range body {
		body[j] = byte('A' + (seed+iter+j)%26)
	}
	s := head + string(body)
	return s + fmt.Sprintf(".%08x", crc32.ChecksumIEEE([]byte(s)))
}

// parseStressToken returns the seed and iteration of a complete stress
// token; ok is false for anything else (a prefix, garbage).
func parseStressToken(tok string) (seed, iter int, ok bool) {
	var a, b int
	if _, err := fmt.Sscanf(tok, "s%d.i%d.", &a, &b); err != nil || a < 0 || b < 0 {
		return 0, 0, false
	}
	return a, b, stressToken(a, b) == tok
}

func stressEnv(dir string) []string {
	// "-": no instance suffix, whatever the helper's arguments, so every
	// helper and the loader name the same file.
	// dir is the app's state directory: the helpers get its root.
	return []string{"MCP_RESUME_STATE_DIR=" + filepath.Dir(dir), "MCP_RESUME_INSTANCE=-"}
}

// helperStoreLoop opens a store with the real identity (its parent, the
// test process, is the host), stores stress token s<FAULTS_SEED>.i0, says
// "ready", and stores .i1, .i2, ... until it is killed. The Python and
// TypeScript twins are testdata/faults_stress.py and .mjs.
func helperStoreLoop() int {
	ctx := context.Background()
	seed, _ := strconv.Atoi(os.Getenv("FAULTS_SEED"))
	store, err := host.Open(ctx, "example-go", &host.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	store.Store(ctx, stressToken(seed, 0))
	fmt.Println("ready")
	for i := 1; ; i++ {
		store.Store(ctx, stressToken(seed, i))
	}
}

// loaderAnswer is what helperLoader found in one state directory.
type loaderAnswer struct {
	Found   bool           `json:"found"`
	Valid   bool           `json:"valid"`
	Seed    int            `json:"seed"`
	Iter    int            `json:"iter"`
	Len     int            `json:"len"`
	Events  map[string]int `json:"events"`
	OpenErr string         `json:"open_err,omitempty"`
}

// helperLoader answers one line per state directory read on stdin: a fresh
// store (host.Open, with the real identity: its parent, the test process,
// is the host) loads once and is closed.
func helperLoader() int {
	ctx := context.Background()
	out := json.NewEncoder(os.Stdout)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var ans loaderAnswer
		events := &eventCounter{counts: map[string]int{}}
		store, err := host.Open(ctx, "example-go", &host.Options{
			StateRoot: sc.Text(),
			Logger:    slog.New(events),
		})
		if err != nil {
			ans.OpenErr = err.Error()
		} else {
			tok, ok := store.Load(ctx)
			store.Close(ctx)
			ans.Found, ans.Len = ok, len(tok)
			ans.Seed, ans.Iter, ans.Valid = parseStressToken(tok)
		}
		ans.Events = events.snapshot()
		out.Encode(ans)
	}
	return 0
}

// hammerReport is what one helperHammer instance did.
type hammerReport struct {
	Instance int            `json:"instance"`
	Stored   int            `json:"stored"`    // tokens s<instance>.i0 .. i<Stored-1> were passed to Store
	Loads    [][2]int       `json:"loads"`     // (seed, iter) of every token Load returned
	Invalid  int            `json:"invalid"`   // loads that were not a complete stress token
	Rejects  int            `json:"rejects"`   // Reject calls
	Events   map[string]int `json:"events"`    // log lines by event
	OpenErrs int            `json:"open_errs"` // host.Open failures
}

// helperHammer waits for "go" on stdin, then runs FAULTS_ROUNDS rounds of:
// open a store (real identity: the test process), FAULTS_OPS times
// load / maybe reject / store, close. It prints a hammerReport.
func helperHammer() int {
	ctx := context.Background()
	inst, _ := strconv.Atoi(os.Getenv("FAULTS_INSTANCE"))
	rounds, _ := strconv.Atoi(os.Getenv("FAULTS_ROUNDS"))
	ops, _ := strconv.Atoi(os.Getenv("FAULTS_OPS"))
	fmt.Println("ready")
	bufio.NewReader(os.Stdin).ReadString('\n')
	rep := hammerReport{Instance: inst, Loads: [][2]int{}}
	events := &eventCounter{counts: map[string]int{}, tee: slog.NewTextHandler(os.Stderr, nil)}
	rng := rand.New(rand.NewPCG(uint64(inst), 42))
	for r := 0; r < rounds; r++ {
		store, err := host.Open(ctx, "example-go", &host.Options{Logger: slog.New(events)})
		if err != nil {
			rep.OpenErrs++
			continue
		}
		for j := 0; j < ops; j++ {
			if tok, ok := store.Load(ctx); ok {
				seed, iter, valid := parseStressToken(tok)
				if !valid {
					rep.Invalid++
				} else {
					rep.Loads = append(rep.Loads, [2]int{seed, iter})
				}
				if rng.IntN(4) == 0 {
					store.Reject(ctx)
					rep.Rejects++
				}
			}
			store.Store(ctx, stressToken(inst, rep.Stored))
			rep.Stored++
		}
		store.Close(ctx)
	}
	rep.Events = events.snapshot()
	json.NewEncoder(os.Stdout).Encode(rep)
	return 0
}

// eventCounter is a slog.Handler that counts records by their "event"
// attribute (or message), optionally passing them on.
type eventCounter struct {
	mu     sync.Mutex
	counts map[string]int
	tee    slog.Handler
}

func (c *eventCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *eventCounter) Handle(ctx context.Context, r slog.Record) error {
	ev := r.Message
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "event" {
			ev = a.Value.String()
			return false
		}
		return true
	})
	c.mu.Lock()
	c.counts[ev]++
	c.mu.Unlock()
	if c.tee != nil && r.Level >= slog.LevelWarn {
		return c.tee.Handle(ctx, r)
	}
	return nil
}
func (c *eventCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *eventCounter) WithGroup(string) slog.Handler      { return c }
func (c *eventCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		m[k] = v
	}
	return m
}

// ---------------------------------------------------------------------------
// The three example servers.
