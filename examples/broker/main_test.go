package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/examples/broker/brokerclient"
)

// listenLine is the one line the broker prints to stdout.
var listenLine = regexp.MustCompile(`^broker listening on (http://127\.0\.0\.1:[0-9]+)\n$`)

func TestCheckLoopback(t *testing.T) {
	tests := []struct {
		addr    string
		wantErr error // nil: accepted
	}{
		{"127.0.0.1:0", nil},
		{"127.0.0.1:8080", nil},
		{"127.1.2.3:0", nil},
		{"[::1]:0", nil},
		{"localhost:0", nil},
		{":0", errNotLoopback},
		{"0.0.0.0:0", errNotLoopback},
		{"[::]:0", errNotLoopback},
		{"192.168.1.10:0", errNotLoopback},
		{"example.com:80", errNotLoopback},
		{"localhost.example.com:0", errNotLoopback},
		{"127.0.0.1", errUsage},
		{"", errUsage},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := checkLoopback(tt.addr)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("checkLoopback(%q) = %v, want %v", tt.addr, err, tt.wantErr)
			}
		})
	}
}

func TestRun_Refuses(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr error
	}{
		{"all interfaces", []string{"-addr", ":0"}, errNotLoopback},
		{"public address", []string{"-addr", "0.0.0.0:0"}, errNotLoopback},
		{"zero TTL", []string{"-token-ttl", "0s"}, errUsage},
		{"negative TTL", []string{"-token-ttl", "-1h"}, errUsage},
		{"bad TTL", []string{"-token-ttl", "a day"}, errUsage},
		{"unknown flag", []string{"-port", "80"}, errUsage},
		{"argument", []string{"serve"}, errUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), tt.args, &stdout, &stderr)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("run(%q) = %v, want %v", tt.args, err, tt.wantErr)
			}
			if stdout.Len() > 0 {
				t.Errorf("run(%q) wrote to stdout: %q", tt.args, stdout.String())
			}
		})
	}
}

func TestBaseURL(t *testing.T) {
	tests := []struct {
		addr *net.TCPAddr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 1}, "http://[::1]:1"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 2}, "http://127.0.0.1:2"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 3}, "http://127.0.0.1:3"},
		{&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 4}, "http://10.1.2.3:4"},
	}
	for _, tt := range tests {
		if got := baseURL(tt.addr); got != tt.want {
			t.Errorf("baseURL(%v) mismatch (-want +got):\n- %s\n+ %s", tt.addr, tt.want, got)
		}
	}
}

// TestRun serves in-process, so the race detector sees the whole server.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	stdout, done := startRun(t, ctx, "-token-ttl", "1h")
	url := readURL(t, stdout)

	c := brokerclient.New(url, nil)
	s, err := c.Start(ctx)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if err := c.AddNote(ctx, s.Token, "kept"); err != nil {
		t.Fatalf("AddNote: %v", err)
	}
	r, err := c.Resume(ctx, s.Token)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if notes, err := c.Notes(ctx, r.Token); err != nil || len(notes) != 1 || notes[0] != "kept" {
		t.Errorf("Notes after resume = %q, %v; want [kept]", notes, err)
	}
	if _, err := c.Resume(ctx, s.Token); !errors.Is(err, brokerclient.ErrRejected) {
		t.Errorf("Resume(old token) = %v, want ErrRejected", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	if rest, _ := io.ReadAll(stdout); len(rest) > 0 {
		t.Errorf("run wrote more than one line to stdout: %q", rest)
	}
}

// startRun calls run with args in a goroutine. It returns the read end of
// run's stdout and a channel that receives run's result.
func startRun(t *testing.T, ctx context.Context, args ...string) (*bufio.Reader, <-chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, pw, io.Discard)
		pw.Close()
		done <- err
	}()
	t.Cleanup(func() { pr.Close() })
	return bufio.NewReader(pr), done
}

// readURL reads the listening line from stdout and returns the base URL.
func readURL(t *testing.T, stdout *bufio.Reader) string {
	t.Helper()
	line, err := stdout.ReadString('\n')
	m := listenLine.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first stdout line %q (%v) does not match %s", line, err, listenLine)
	}
	return m[1]
}

// lockedBuffer is a bytes.Buffer safe for a writer goroutine and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestBinary builds the command, runs it as a child process, and stops it
// with SIGTERM, as the end-to-end tests and example servers will.
func TestBinary(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("SIGTERM cannot be sent on windows")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool to build the broker: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "broker")
	if out, err := exec.CommandContext(ctx, goTool, "build", "-buildvcs=false", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	cmd := exec.CommandContext(ctx, bin, "-token-ttl", "2h")
	stdoutPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start broker: %v", err)
	}
	defer cmd.Process.Kill() // no-op once it has exited

	stdout := bufio.NewReader(stdoutPipe)
	url := readURL(t, stdout)

	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz: status %d, want 200; body %s", resp.StatusCode, body)
	}

	// A session round trip, to check below that no token reaches the log.
	c := brokerclient.New(url, nil)
	s, err := c.Start(ctx)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	r, err := c.Resume(ctx, s.Token)
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("send SIGTERM: %v", err)
	}
	rest, _ := io.ReadAll(stdout)
	if err := cmd.Wait(); err != nil {
		t.Errorf("broker exit after SIGTERM: %v, want status 0; stderr:\n%s", err, stderr.String())
	}
	if len(rest) > 0 {
		t.Errorf("broker wrote more than one line to stdout: %q", rest)
	}
	logs := stderr.String()
	for _, want := range []string{"broker started", "path=/v1/sessions/resume status=200", "broker stopped"} {
		if !strings.Contains(logs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, logs)
		}
	}
	for _, token := range []string{s.Token, r.Token} {
		if strings.Contains(logs, token) {
			t.Errorf("stderr contains a token:\n%s", logs)
		}
	}
}
