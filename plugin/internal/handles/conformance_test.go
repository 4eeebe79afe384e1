package handles

// A native runner for the handle store's conformance cases
// (hostfuncs/conformance/cases/handles_*.json, format in
// hostfuncs/conformance/README.md): the policy against the native test host,
// so that a case's mistakes show before any host runs it through the real
// plugin.wasm. It knows the parts of the format those cases use.

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
	"github.com/mcp-resume/mcp-resume/plugin/internal/testhost"
)

const casesDir = "../../../hostfuncs/conformance"

// confContent is a file of files_before, files_after or put_file.
type confContent = conformance.Content

type confWant struct {
	OutputJSON       json.RawMessage `json:"output_json"`
	OutputJSONSubset json.RawMessage `json:"output_json_subset"`
	ErrorCode        string          `json:"error_code"`
	ErrorJSONSubset  json.RawMessage `json:"error_json_subset"`
	MessageExcludes  string          `json:"message_excludes"`
	OutputHex        *string         `json:"output_hex"`
	OutputPrefixHex  *string         `json:"output_prefix_hex"`
}

type confCall struct {
	Export   string            `json:"export"`
	Input    json.RawMessage   `json:"input"`
	InputHex *string           `json:"input_hex"`
	Want     confWant          `json:"want"`
	Save     map[string]string `json:"save"`
	Action   string            `json:"action"`
	Name     string            `json:"name"`
	Content  confContent       `json:"content"`
	Prefix   string            `json:"prefix"`
	Mode     string            `json:"mode"`
	Command  []string          `json:"command"`
	EachKey  string            `json:"each_key"`
}

type confCase struct {
	Name        string          `json:"name"`
	Spec        string          `json:"spec"`
	Description string          `json:"description"`
	Store       string          `json:"store"`
	Backends    []string        `json:"backends"`
	LogsExclude string          `json:"logs_exclude"`
	System      json.RawMessage `json:"system"`
	Open        json.RawMessage `json:"open"`
	// OpenWant is checked like a call's want.
	OpenWant        *confWant              `json:"open_want"`
	FilesBefore     map[string]confContent `json:"files_before"`
	Calls           []confCall             `json:"calls"`
	FilesAfter      map[string]confContent `json:"files_after"`
	FilesAfterCount map[string]int         `json:"files_after_count"`
	FilesExclude    string                 `json:"files_exclude"`
	StateDirAfter   *struct {
		Exists *bool `json:"exists"`
	} `json:"state_dir_after"`
	Logs []struct {
		Level, Event, Message string
		MessagePrefix         string  `json:"message_prefix"`
		Detail                *string `json:"detail"`
	} `json:"logs"`
}

func TestConformanceCasesNative(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join(casesDir, "cases", "handles_*.json"))
	if len(paths) < 10 {
		t.Fatalf("found %d handle store cases, want at least 10", len(paths))
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		for _, backend := range conformance.Backends(raw) {
			t.Run(name+"/"+backend, func(t *testing.T) { runConfCase(t, name, raw, backend) })
		}
	}
}

func runConfCase(t *testing.T, name string, raw []byte, backend string) {
	h := testhost.New(t)
	root := h.Facts.Home
	euid := strconv.Itoa(os.Geteuid())
	raw = bytes.ReplaceAll(raw, []byte(`"$EUID"`), []byte(euid))
	raw = bytes.ReplaceAll(raw, []byte("$ROOT"), []byte(root))
	var rd *redistest.Server
	redis := backend == hostfuncs.BackendRedis
	if redis {
		rd = conformance.Redis(t)
		raw = bytes.ReplaceAll(raw, []byte("$REDIS_URL"), []byte(rd.URL))
		raw = bytes.ReplaceAll(raw, []byte("$REDIS_ADDR"), []byte(rd.Addr))
		useRedis(t, h)
	}
	var c confCase
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("case: %v", err)
	}
	if redis {
		// The same case on Redis: the store is named by state_url, and
		// nothing on disk is checked.
		c.FilesAfter, c.FilesAfterCount, c.FilesExclude, c.StateDirAfter = nil, nil, "", nil
		if !bytes.Contains(raw, []byte(rd.URL)) { // the case may name the server itself (its environment)
			var err error
			if c.Open, err = conformance.WithStateURL(c.Open, map[string]any{"app": "conformance", "state_root": root + "/state"}, rd.URL); err != nil {
				t.Fatal(err)
			}
		}
	}
	if c.Name != name || c.Spec == "" || c.Store != "handles" {
		t.Fatalf("case name %q, spec %q, store %q: want name %q, a spec, store handles", c.Name, c.Spec, c.Store, name)
	}
	if len(c.System) > 0 {
		var sys struct {
			Facts hostfuncs.Facts `json:"facts"`
		}
		if err := json.Unmarshal(c.System, &sys); err != nil {
			t.Fatalf("system: %v", err)
		}
		h.Facts = sys.Facts
	} else {
		h.Facts.Home = root + "/home"
	}
	for _, d := range []string{"state", "state/conformance"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(root, "state", "conformance", "handles")
	if c.FilesBefore != nil {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		for n, f := range c.FilesBefore {
			plant(t, dir, n, f)
		}
	}
	open := []byte(`{"app": "conformance", "state_root": "` + root + `/state"}`)
	if len(c.Open) > 0 {
		open = c.Open
	}
	s := New(h.Call)
	out, werr := s.Open(open)
	if werr == nil {
		h.Dir = out.StateDir
		if out.Backend == hostfuncs.BackendRedis {
			dir = filepath.Join(root, "no-directory")
		} else if out.StateDir != dir {
			t.Errorf("state_dir %s, want %s", out.StateDir, dir)
		}
	}
	if c.OpenWant != nil {
		ob, _ := out.EncodeJSON()
		checkWant(t, "handles_open", *c.OpenWant, ob, werr, nil)
		if werr != nil {
			return
		}
	} else if werr != nil {
		t.Fatalf("handles_open: %v", werr)
	}
	vars := map[string]any{}
	for i, cl := range c.Calls {
		what := "call " + strconv.Itoa(i) + " " + cl.Export + cl.Action
		switch cl.Action {
		case "put_file":
			plant(t, dir, cl.Name, cl.Content)
			continue
		case "corrupt_files":
			if err := conformance.CorruptFiles(dir, root, cl.Prefix, cl.Mode); err != nil {
				t.Fatal(err)
			}
			continue
		case "redis":
			if rd == nil {
				t.Fatalf("%s: a redis action outside the redis backend", what)
			}
			if err := conformance.RedisAction(rd, cl.EachKey, cl.Command); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			continue
		case "":
		default:
			t.Fatalf("%s: unknown action", what)
		}
		if !strings.HasPrefix(cl.Export, "handle_") {
			t.Fatalf("%s: not a handle export", what)
		}
		var ib, ob []byte
		var werr *hostfuncs.Error
		if cl.InputHex != nil {
			var err error
			if ib, err = conformance.HexInput(*cl.InputHex, vars); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			ob, werr = exportBinary(t, s, cl.Export, ib)
		} else {
			var in any
			if err := json.Unmarshal(cl.Input, &in); err != nil {
				t.Fatalf("%s: input: %v", what, err)
			}
			ib, _ = json.Marshal(conformance.ReplaceVars(in, vars))
			ob, werr = s.Export(cl.Export, ib)
		}
		checkWant(t, what, cl.Want, ob, werr, ib)
		if werr == nil && cl.Save != nil {
			var o map[string]any
			_ = json.Unmarshal(ob, &o)
			for v, m := range cl.Save {
				vars[v] = o[m]
			}
		}
	}
	if a := c.StateDirAfter; a != nil && a.Exists != nil {
		if _, err := os.Lstat(dir); (err == nil) != *a.Exists {
			t.Errorf("handles directory exists = %v, want %v", err == nil, *a.Exists)
		}
	}
	if c.FilesAfter != nil {
		var names []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			names = append(names, e.Name())
			if _, ok := c.FilesAfter[e.Name()]; !ok {
				t.Errorf("unexpected file %s", e.Name())
			}
		}
		for n, f := range c.FilesAfter {
			b, err := os.ReadFile(filepath.Join(dir, n))
			if err != nil || (f.Text != nil || f.Base64 != nil) && !bytes.Equal(b, f.Bytes()) {
				t.Errorf("file %s = %q (%v), want %q", n, b, err, f.Bytes())
			}
		}
	}
	for prefix, n := range c.FilesAfterCount {
		got := 0
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasPrefix(e.Name(), prefix) {
				got++
			}
		}
		if got != n {
			t.Errorf("%d files named %s*, want %d", got, prefix, n)
		}
	}
	if c.FilesExclude != "" {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			if bytes.Contains(b, []byte(c.FilesExclude)) {
				t.Errorf("file %s holds %q", e.Name(), c.FilesExclude)
			}
		}
	}
	for _, l := range h.Logs {
		if msg := conformance.Excludes(c.LogsExclude, l.Message, l.Detail); msg != "" {
			t.Errorf("log line: %s", msg)
		}
	}
	var got []hostfuncs.LogRequest
	for _, l := range h.Logs {
		if l.Level != hostfuncs.LevelDebug {
			got = append(got, l)
		}
	}
	if len(got) != len(c.Logs) {
		t.Fatalf("logs: got %d lines %+v, want %d %+v", len(got), got, len(c.Logs), c.Logs)
	}
	for i, w := range c.Logs {
		g := got[i]
		if g.Level != w.Level || g.Event != w.Event || w.Message != "" && g.Message != w.Message ||
			w.MessagePrefix != "" && !strings.HasPrefix(g.Message, w.MessagePrefix) || w.Detail != nil && *w.Detail != g.Detail {
			t.Errorf("log %d = %+v, want %+v", i, g, w)
		}
	}
}

func checkWant(t *testing.T, what string, w confWant, out []byte, werr *hostfuncs.Error, in []byte) {
	t.Helper()
	if w.ErrorCode != "" || w.ErrorJSONSubset != nil {
		if werr == nil {
			t.Errorf("%s (%s): answered %s, want an error", what, in, out)
			return
		}
		eb, _ := werr.EncodeJSON()
		if msg := conformance.Excludes(w.MessageExcludes, string(eb)); msg != "" {
			t.Errorf("%s: error %s", what, msg)
		}
		var g any
		_ = json.Unmarshal(eb, &g)
		if w.ErrorCode != "" && werr.Code != w.ErrorCode || w.ErrorJSONSubset != nil && !conformance.Subset(conformance.DecodeJSON(w.ErrorJSONSubset), g) {
			t.Errorf("%s (%s): error %s, want code %q / subset %s", what, in, eb, w.ErrorCode, w.ErrorJSONSubset)
		}
		return
	}
	if werr != nil {
		t.Errorf("%s (%s): failed with %v", what, in, werr)
		return
	}
	if w.OutputHex != nil || w.OutputPrefixHex != nil {
		msg, err := conformance.HexOutput(out, w.OutputHex, w.OutputPrefixHex)
		if err != nil || msg != "" {
			t.Errorf("%s: %s%v", what, msg, err)
		}
		return
	}
	var g any
	if err := json.Unmarshal(out, &g); err != nil {
		t.Errorf("%s: output %q is not JSON", what, out)
		return
	}
	if w.OutputJSON != nil && !reflect.DeepEqual(conformance.DecodeJSON(w.OutputJSON), g) || w.OutputJSONSubset != nil && !conformance.Subset(conformance.DecodeJSON(w.OutputJSONSubset), g) {
		t.Errorf("%s (%s): output %s, want %s%s", what, in, out, w.OutputJSON, w.OutputJSONSubset)
	}
}

// exportBinary runs handle_create, handle_get or handle_put on a binary
// input and returns the binary output, as the plugin's exports do.
func exportBinary(t *testing.T, s *Store, export string, in []byte) ([]byte, *hostfuncs.Error) {
	t.Helper()
	switch export {
	case hostfuncs.ExportHandleCreate:
		o, werr := s.Create(in)
		return o.EncodeBinary(), werr
	case hostfuncs.ExportHandleGet:
		o, werr := s.Get(in)
		return o.EncodeBinary(), werr
	case hostfuncs.ExportHandlePut:
		o, werr := s.Put(in)
		return o.EncodeBinary(), werr
	}
	// The plugin's glue refuses the binary form for the other exports.
	if werr := hostfuncs.JSONOnly(in); werr != nil {
		return nil, werr
	}
	t.Fatalf("input_hex for %s, which has no binary form", export)
	return nil, nil
}

// plant creates entry name in dir from f (a file, a directory or a
// symbolic link; mode and age_days as the format says).
func plant(t *testing.T, dir, name string, f confContent) {
	t.Helper()
	p := filepath.Join(dir, name)
	var err error
	switch {
	case f.FIFO:
		t.Fatalf("%s: a fifo is not planted by the native runner", name)
	case f.Dir:
		err = os.Mkdir(p, 0o700)
	case f.Symlink != "":
		err = os.Symlink(f.Symlink, p)
	default:
		err = os.WriteFile(p, f.Bytes(), 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
	if f.Mode != "" {
		m, _ := strconv.ParseUint(f.Mode, 8, 32)
		_ = os.Chmod(p, os.FileMode(m))
	}
	if f.AgeDays != 0 {
		old := modTime(f.AgeDays)
		_ = os.Chtimes(p, old, old)
	}
}

// TestMain stops the redis-mode cases' server after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	conformance.StopRedis()
	os.Exit(code)
}
