package handles

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/redishost"
	"github.com/mcp-resume/mcp-resume/plugin/internal/testhost"
)

// env is a handle store opened over a native test host (real files and
// flock locks under a temporary directory).
type env struct {
	t   *testing.T
	h   *testhost.Host
	s   *Store
	dir string // the handle store's directory
}

// openEnv opens a store of app "conformance" under <tmp>/state with the
// extra handles_open members of opts.
func openEnv(t *testing.T, opts map[string]any) *env {
	t.Helper()
	h := testhost.New(t)
	return openOn(t, h, opts)
}

// useRedis makes h answer mcp_resume_eval as the Go host does
// (redishost, on a real server), its clients closed when the test ends.
func useRedis(t *testing.T, h *testhost.Host) {
	clients := &redishost.Clients{}
	t.Cleanup(func() { _ = clients.Close() })
	h.Eval = func(r hostfuncs.EvalRequest) hostfuncs.EvalResponse { return clients.Eval(context.Background(), r) }
}

// openOn opens another store over host h (another plugin instance of the
// same process, or of another process with h.Sibling()).
func openOn(t *testing.T, h *testhost.Host, opts map[string]any) *env {
	t.Helper()
	in := map[string]any{"app": "conformance", "state_root": filepath.Join(h.Facts.Home, "state")}
	for k, v := range opts {
		in[k] = v
	}
	b, _ := json.Marshal(in)
	s := New(h.Call)
	out, werr := s.Open(b)
	if werr != nil {
		t.Fatalf("Open(%s): %v", b, werr)
	}
	h.Dir = out.StateDir
	return &env{t: t, h: h, s: s, dir: out.StateDir}
}

// input is the JSON of m.
func input(m map[string]any) []byte {
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// create makes a handle for principal holding value at now (0: the clock).
func (e *env) create(principal, value string, now int64) string {
	e.t.Helper()
	in := map[string]any{"principal": principal, "value": []byte(value)}
	if now != 0 {
		in["now_ms"] = now
	}
	out, werr := e.s.Create(input(in))
	if werr != nil {
		e.t.Fatalf("Create: %v", werr)
	}
	return out.Handle
}

// get reads handle for principal at now (0: the clock).
func (e *env) get(handle, principal string, now int64) (hostfuncs.HandleValue, *hostfuncs.Error) {
	in := map[string]any{"handle": handle, "principal": principal}
	if now != 0 {
		in["now_ms"] = now
	}
	return e.s.Get(input(in))
}

// files returns the names in the store's directory.
func (e *env) files() []string {
	entries, _ := os.ReadDir(e.dir)
	var out []string
	for _, d := range entries {
		out = append(out, d.Name())
	}
	return out
}

// count is the number of files whose name starts with prefix.
func (e *env) count(prefix string) int {
	n := 0
	for _, f := range e.files() {
		if strings.HasPrefix(f, prefix) {
			n++
		}
	}
	return n
}

// wantCode fails unless werr has code.
func wantCode(t *testing.T, werr *hostfuncs.Error, code string) {
	t.Helper()
	if werr == nil || werr.Code != code {
		t.Fatalf("error %v, want code %s", werr, code)
	}
}

func readFile(dir, name string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, name)) }

// modTime is the time days days ago.
func modTime(days float64) time.Time {
	return time.Now().Add(-time.Duration(days * 24 * float64(time.Hour)))
}

func writeFile(dir, name, data string) error {
	return os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600)
}

func removeFile(dir, name string) error { return os.Remove(filepath.Join(dir, name)) }
