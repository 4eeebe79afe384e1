package host_test

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/internal/hostfuncs"
	"github.com/mcp-resume/mcp-resume/internal/wire"
)

// The shared cases of hostfuncs/conformance, run against the real plugin in
// the Go host. The Python and TypeScript suites run the same files.

type content struct {
	Text    *string `json:"text"`
	Base64  *string `json:"base64"`
	Repeat  string  `json:"repeat"`
	Count   int     `json:"count"`
	Dir     bool    `json:"dir"`
	Symlink string  `json:"symlink"`
	FIFO    bool    `json:"fifo"`
	Mode    string  `json:"mode"`
	AgeDays int     `json:"age_days"`
}

func (c *content) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		c.Text = &s
		return nil
	}
	type plain content
	return json.Unmarshal(b, (*plain)(c))
}

func (c content) bytes() []byte {
	switch {
	case c.Text != nil:
		return []byte(*c.Text)
	case c.Base64 != nil:
		b, _ := base64.StdEncoding.DecodeString(*c.Base64)
		return b
	case c.Count > 0:
		return []byte(strings.Repeat(c.Repeat, c.Count))
	}
	return nil
}

type want struct {
	Output      *content        `json:"output"`
	OutputJSON  json.RawMessage `json:"output_json"`
	ErrorPrefix string          `json:"error_prefix"`
}

type call struct {
	Export  string   `json:"export"`
	Action  string   `json:"action"`
	Name    string   `json:"name"`
	Content *content `json:"content"`
	Input   *content `json:"input"`
	Want    want     `json:"want"`
}

type logLine struct {
	Level         string `json:"level"`
	Event         string `json:"event"`
	Message       string `json:"message,omitempty"`
	MessagePrefix string `json:"message_prefix,omitempty"`
}

type conformanceCase struct {
	Name     string `json:"name"`
	Identity struct {
		PID       int    `json:"pid"`
		StartTime string `json:"start_time"`
		Instance  string `json:"instance"`
		Error     string `json:"error"`
	} `json:"identity"`
	HostsAlive []struct {
		PID       int    `json:"pid"`
		StartTime string `json:"start_time"`
	} `json:"hosts_alive"`
	LivenessUnknown bool `json:"liveness_unknown"`
	StateDir        struct {
		Create *bool  `json:"create"`
		Mode   string `json:"mode"`
	} `json:"state_dir"`
	StateDirAfter *struct {
		Exists bool   `json:"exists"`
		Mode   string `json:"mode"`
	} `json:"state_dir_after"`
	FilesBefore   map[string]content `json:"files_before"`
	FilesAfter    map[string]content `json:"files_after"`
	OutsideBefore map[string]content `json:"outside_before"`
	OutsideAfter  map[string]content `json:"outside_after"`
	Calls         []call             `json:"calls"`
	Logs          []logLine          `json:"logs"`
}

func TestConformance(t *testing.T) {
	paths, err := filepath.Glob("../hostfuncs/conformance/cases/*.json")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no conformance cases found: %v", err)
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var c conformanceCase
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		t.Run(c.Name, func(t *testing.T) { runCase(t, c) })
	}
}

func runCase(t *testing.T, c conformanceCase) {
	ctx := context.Background()
	root := t.TempDir()
	dir := filepath.Join(root, "state")
	if c.StateDir.Create == nil || *c.StateDir.Create {
		mode := parseMode(t, c.StateDir.Mode, 0o700)
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
	}
	makeFiles(t, root, c.OutsideBefore)
	makeFiles(t, dir, c.FilesBefore)

	logs := &captureHandler{}
	store, err := host.Open(ctx, "conformance", &host.Options{
		StateDir: dir,
		Logger:   slog.New(logs),
		CacheDir: sharedCacheDir,
		Instance: cmp.Or(c.Identity.Instance, host.NoInstance),
		Alive: func(pid int, start string) (bool, error) {
			if c.LivenessUnknown {
				return false, errors.New("liveness pinned unknown")
			}
			for _, h := range c.HostsAlive {
				if h.PID == pid && h.StartTime == start {
					return true, nil
				}
			}
			return false, nil
		},
		Identity: func() (int, string, error) {
			if c.Identity.Error != "" {
				return 0, "", errors.New(c.Identity.Error)
			}
			return c.Identity.PID, c.Identity.StartTime, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(ctx)

	for i, cl := range c.Calls {
		switch cl.Action {
		case "put_file":
			if err := os.WriteFile(filepath.Join(dir, cl.Name), cl.Content.bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		case "hold_lock":
			// A second, independent set of host functions: another instance.
			other := hostfuncs.New(hostfuncs.Config{Dir: dir})
			defer other.Close()
			if out := other.Call(wire.FnLock, []byte(`{"name":"`+cl.Name+`"}`)); strings.Contains(string(out), "error") {
				t.Fatalf("hold_lock: %s", out)
			}
			continue
		}
		var out []byte
		var callErr error
		switch cl.Export {
		case "load":
			tok, _ := store.Load(ctx)
			out = []byte(tok)
		case "store":
			var in []byte
			if cl.Input != nil {
				in = cl.Input.bytes()
			}
			callErr = store.Store(ctx, string(in))
		case "reject":
			store.Reject(ctx)
		case "list":
			files, err := store.List(ctx)
			callErr = err
			out, _ = json.Marshal(map[string]any{"files": files})
		case "prune":
			removed, err := store.Prune(ctx)
			callErr = err
			out, _ = json.Marshal(map[string]any{"removed": removed})
		default:
			t.Fatalf("call %d: unknown export %q", i, cl.Export)
		}
		checkCall(t, i, cl, out, callErr)
	}

	checkFiles(t, dir, c.FilesAfter, true)
	checkFiles(t, root, c.OutsideAfter, false)
	if a := c.StateDirAfter; a != nil {
		info, err := os.Stat(dir)
		if exists := err == nil; exists != a.Exists {
			t.Errorf("state directory exists = %v, want %v", exists, a.Exists)
		}
		if err == nil && a.Mode != "" && info.Mode().Perm() != parseMode(t, a.Mode, 0) {
			t.Errorf("state directory mode = %04o, want %s", info.Mode().Perm(), a.Mode)
		}
	}
	got := logs.lines()
	if len(got) != len(c.Logs) {
		t.Fatalf("logs:\n got %d lines %+v\nwant %d lines %+v", len(got), got, len(c.Logs), c.Logs)
	}
	for i, w := range c.Logs {
		g := got[i]
		ok := g.Level == w.Level && g.Event == w.Event &&
			(w.MessagePrefix != "" && strings.HasPrefix(g.Message, w.MessagePrefix) || w.MessagePrefix == "" && g.Message == w.Message)
		if !ok {
			t.Errorf("log line %d = %+v, want %+v", i, g, w)
		}
	}
}

func checkCall(t *testing.T, i int, cl call, out []byte, err error) {
	t.Helper()
	switch w := cl.Want; {
	case w.ErrorPrefix != "":
		if err == nil || !strings.HasPrefix(err.Error(), w.ErrorPrefix) {
			t.Errorf("call %d %s: error = %v, want prefix %q", i, cl.Export, err, w.ErrorPrefix)
		}
	case err != nil:
		t.Errorf("call %d %s: unexpected error %v", i, cl.Export, err)
	case w.OutputJSON != nil:
		var g, e any
		_ = json.Unmarshal(out, &g)
		_ = json.Unmarshal(w.OutputJSON, &e)
		gb, _ := json.Marshal(g)
		eb, _ := json.Marshal(e)
		if string(gb) != string(eb) {
			t.Errorf("call %d %s: output %s, want %s", i, cl.Export, gb, eb)
		}
	case w.Output == nil:
		if len(out) != 0 {
			t.Errorf("call %d %s: output %d bytes, want none", i, cl.Export, len(out))
		}
	default:
		if string(out) != string(w.Output.bytes()) {
			t.Errorf("call %d %s: output %q, want %q", i, cl.Export, truncate(out), truncate(w.Output.bytes()))
		}
	}
}

func makeFiles(t *testing.T, dir string, files map[string]content) {
	t.Helper()
	for name, c := range files {
		p := filepath.Join(dir, name)
		var err error
		switch {
		case c.Dir:
			err = os.Mkdir(p, 0o700)
		case c.Symlink != "":
			err = os.Symlink(c.Symlink, p)
		case c.FIFO:
			err = syscall.Mkfifo(p, 0o600)
		default:
			err = os.WriteFile(p, c.bytes(), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.AgeDays > 0 {
			old := time.Now().Add(-time.Duration(c.AgeDays) * 24 * time.Hour)
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkFiles compares dir with want; exact also demands no other entries.
func checkFiles(t *testing.T, dir string, want map[string]content, exact bool) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	var got []string
	for _, e := range entries {
		if exact || want[e.Name()] != (content{}) {
			got = append(got, e.Name())
		}
	}
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	sort.Strings(got)
	if exact && strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("files in %s = %v, want %v", filepath.Base(dir), got, names)
	}
	for _, n := range names {
		c := want[n]
		p := filepath.Join(dir, n)
		info, err := os.Lstat(p)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		switch {
		case c.Dir:
			if !info.IsDir() {
				t.Errorf("%s is not a directory", n)
			}
		case c.Symlink != "":
			if target, _ := os.Readlink(p); target != c.Symlink {
				t.Errorf("%s: symlink to %q, want %q", n, target, c.Symlink)
			}
		default:
			b, _ := os.ReadFile(p)
			if string(b) != string(c.bytes()) {
				t.Errorf("%s holds %q, want %q", n, truncate(b), truncate(c.bytes()))
			}
			if c.Mode != "" && info.Mode().Perm() != parseMode(t, c.Mode, 0) {
				t.Errorf("%s mode = %04o, want %s", n, info.Mode().Perm(), c.Mode)
			}
		}
	}
}

func parseMode(t *testing.T, s string, def os.FileMode) os.FileMode {
	if s == "" {
		return def
	}
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		t.Fatalf("bad mode %q", s)
	}
	return os.FileMode(m)
}

func truncate(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%s...(%d bytes)", b[:40], len(b))
	}
	return string(b)
}

// captureHandler records every log record, all levels, as conformance lines.
type captureHandler struct {
	mu  sync.Mutex
	got []logLine
}

func (h *captureHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *captureHandler) WithGroup(string) slog.Handler            { return h }
func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	line := logLine{Level: strings.ToLower(r.Level.String()), Message: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "event" {
			line.Event = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	h.got = append(h.got, line)
	h.mu.Unlock()
	return nil
}

func (h *captureHandler) lines() []logLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]logLine(nil), h.got...)
}
