package host_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-resume/mcp-resume/host"
	"github.com/mcp-resume/mcp-resume/host/internal/primitives"
	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance/redistest"
)

// The shared cases of hostfuncs/conformance, run against the real plugin in
// the Go host with its real host functions on real files; only the system
// (facts, a fixture /proc tree, the answers of kill0/fstat/peer/sysctl/
// procargs/ps/exe) is pinned, by the test's wrapper of the host functions
// (pinnedSystem, conformance_system_test.go). The Python and TypeScript
// suites run the same files. Handle cases run on both backends, the second
// time on a redis-server this run starts once (hostfuncs/conformance,
// Redis), like the host_eval_* cases of the host function itself.
// hostfuncs/conformance/README.md is the format
// and the procedure followed step by step below (one file, over 500 lines,
// so that it reads in the README's order; the host_call and hold_socket
// forms and the pinned system live in conformance_system_test.go).

const conformanceDir = "../hostfuncs/conformance"

// content is a file, an input or an expected output
// (hostfuncs/conformance/README.md, "Content").
type content = conformance.Content

// want is what a call (or open) must answer. Output is kept raw so that an
// explicit null ("success with empty output") differs from absent.
type want struct {
	Output           json.RawMessage `json:"output"`
	OutputJSON       json.RawMessage `json:"output_json"`
	OutputJSONSubset json.RawMessage `json:"output_json_subset"`
	// OutputHex and OutputPrefixHex: success, and the (binary) output is
	// exactly / starts with these bytes, in hex.
	OutputHex       *string `json:"output_hex"`
	OutputPrefixHex *string `json:"output_prefix_hex"`
	ErrorCode       string  `json:"error_code"`
	// ErrorJSONSubset: the export failed and its error string is a JSON
	// object holding these members (a handle store's reason, generation).
	ErrorJSONSubset json.RawMessage `json:"error_json_subset"`
	// The wants of a host_call (checkHostCall): ok, response_subset,
	// result_codes (inspect), besides error_code.
	OK             *bool           `json:"ok"`
	ResponseSubset json.RawMessage `json:"response_subset"`
	ResultCodes    json.RawMessage `json:"result_codes"`
	// MinMS and MaxMS bound how long a host_call took, in milliseconds
	// (mcp_resume_lock's wait_ms): 0 is no bound.
	MinMS int64 `json:"min_ms"`
	MaxMS int64 `json:"max_ms"`
	// MessageExcludes: an error's message (the whole error string) does
	// not hold this text (a URL's password).
	MessageExcludes string `json:"message_excludes"`
	// ResponseHex and ResponsePrefixHex: a binary host_call's response is
	// exactly, or starts with, these bytes (hex).
	ResponseHex       *string `json:"response_hex"`
	ResponsePrefixHex *string `json:"response_prefix_hex"`
}

// call is one entry of a case's calls: an export, an action or a
// host_call (step 6).
type call struct {
	Export   string          `json:"export"`
	Action   string          `json:"action"`
	HostCall string          `json:"host_call"` // a host function of the store, called directly
	Request  json.RawMessage `json:"request"`   // host_call's request
	// RequestHex is a binary host_call's request (mcp_resume_crypto), hex.
	RequestHex string   `json:"request_hex"`
	Socket     string   `json:"socket"` // hold_socket's abstract socket name
	Name       string   `json:"name"`
	Content    *content `json:"content"`
	// Input is a content, or for a handle store's export a JSON value the
	// runner encodes (handleInput).
	Input json.RawMessage `json:"input"`
	// InputHex is the binary input of handle_create, handle_get or
	// handle_put in hex, instead of Input ("$<var>" as the hex of its text).
	InputHex *string `json:"input_hex"`
	// Save keeps members of a successful export's JSON output as variables
	// for later inputs ("$<var>").
	Save map[string]string `json:"save"`
	// Prefix and Mode are corrupt_files' arguments.
	Prefix string `json:"prefix"`
	Mode   string `json:"mode"`
	// Command and EachKey are the redis action's.
	Command []string `json:"command"`
	EachKey string   `json:"each_key"`
	Want    want     `json:"want"`
}

type logLine struct {
	Level         string `json:"level"`
	Event         string `json:"event"`
	Message       string `json:"message,omitempty"`
	MessagePrefix string `json:"message_prefix,omitempty"`
	// Detail, when the case gives it, must equal the line's detail exactly
	// (the state directory's verdicts, worded by the plugin alone).
	Detail *string `json:"detail,omitempty"`
}

type system struct {
	Facts    json.RawMessage            `json:"facts"`
	Proc     map[string]content         `json:"proc"`
	Answers  map[string]json.RawMessage `json:"answers"`
	NoAnswer []string                   `json:"no_answer"`
}

type conformanceCase struct {
	Name     string          `json:"name"`
	System   json.RawMessage `json:"system"`
	StateDir struct {
		Create *bool  `json:"create"`
		Mode   string `json:"mode"`
	} `json:"state_dir"`
	StateDirAfter *struct {
		Exists *bool  `json:"exists"`
		Mode   string `json:"mode"`
	} `json:"state_dir_after"`
	FilesBefore   map[string]content `json:"files_before"`
	FilesAfter    map[string]content `json:"files_after"`
	OutsideBefore map[string]content `json:"outside_before"`
	OutsideAfter  map[string]content `json:"outside_after"`
	Open          json.RawMessage    `json:"open"`
	OpenWant      *want              `json:"open_want"`
	Calls         []call             `json:"calls"`
	Logs          []logLine          `json:"logs"`
	// Store "handles" opens a handle store (handles_open) instead of a
	// resume store; its state directory is the app's handles/ directory.
	Store string `json:"store"`
	// FilesAfterCount counts the regular files of the state directory per
	// name prefix (a handle store's files have names a case cannot know).
	FilesAfterCount map[string]int `json:"files_after_count"`
	// FilesExclude: no file of the state directory holds these bytes.
	FilesExclude *string `json:"files_exclude"`
	// Backends the case runs on (conformance.Backends reads it).
	Backends []string `json:"backends"`
	// LogsExclude: no log line, debug included, holds this text in its
	// message or detail.
	LogsExclude string `json:"logs_exclude"`
}

func TestConformance(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(conformanceDir, "cases", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no conformance cases found: %v", err)
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		backends := conformance.Backends(raw)
		if len(backends) == 0 {
			t.Fatalf("%s: not a JSON case", name)
		}
		// One subtest per backend (README.md, "Redis: the same cases on
		// the second backend"): TestConformance/<case>/file and /redis.
		t.Run(name, func(t *testing.T) {
			for _, b := range backends {
				t.Run(b, func(t *testing.T) { runCase(t, raw, b) })
			}
		})
	}
}

// substitute replaces $ROOT in every string with root, the string "$EUID"
// with this process's effective uid as a number, and $EUID inside any other
// string with its digits (step 1). All are plain text replacements on the
// JSON: root is a temporary directory path with no character JSON escapes.
func substitute(raw []byte, root string) []byte {
	euid := []byte(strconv.Itoa(os.Geteuid()))
	raw = bytes.ReplaceAll(raw, []byte(`"$EUID"`), euid)
	raw = bytes.ReplaceAll(raw, []byte("$EUID"), euid)
	return bytes.ReplaceAll(raw, []byte("$ROOT"), []byte(root))
}

func runCase(t *testing.T, raw []byte, backend string) {
	ctx := context.Background()
	// Step 1; on Redis, the run's server, emptied, as $REDIS_URL and
	// $REDIS_ADDR.
	root := t.TempDir()
	var rd *redistest.Server
	namesRedis := bytes.Contains(raw, []byte("$REDIS_URL")) // the case names the server itself
	switch backend {
	case hostfuncs.BackendRedis:
		rd = conformance.Redis(t)
		raw = bytes.ReplaceAll(raw, []byte("$REDIS_URL"), []byte(rd.URL+"/0"))
		raw = bytes.ReplaceAll(raw, []byte("$REDIS_ADDR"), []byte(rd.Addr))
	case hostfuncs.BackendFile:
	default:
		t.Fatalf("unknown backend %q (file or redis)", backend)
	}
	var c conformanceCase
	if err := json.Unmarshal(substitute(raw, root), &c); err != nil {
		t.Fatalf("case: %v", err)
	}
	// A handle case on Redis: the store is named by state_url (added unless
	// open has one or the case names $REDIS_URL elsewhere, as in its
	// environment), and nothing on disk is planted or checked.
	redisHandles := rd != nil && c.Store == "handles"
	if redisHandles {
		c.FilesBefore, c.FilesAfter, c.FilesAfterCount, c.FilesExclude, c.StateDirAfter = nil, nil, nil, nil, nil
	}
	if redisHandles && !namesRedis {
		var err error
		def := map[string]any{"app": "conformance", "state_root": filepath.Join(root, "state")}
		if c.Open, err = conformance.WithStateURL(c.Open, def, rd.URL+"/0"); err != nil {
			t.Fatal(err)
		}
	}
	if runtime.GOOS != "linux" && slices.ContainsFunc(c.Calls, func(cl call) bool { return cl.Action == "hold_socket" }) {
		t.Skip("hold_socket is a Linux rule (abstract sockets)")
	}
	// Step 2: the system.
	sys := loadSystem(t, c.System, root)
	procRoot := filepath.Join(root, "proc")
	if err := os.Mkdir(procRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	makeFiles(t, procRoot, sys.Proc, true)
	// Logs are captured from the start: open logs too.
	logs := &captureHandler{}
	funcs := primitives.New(primitives.Config{Logger: slog.New(logs)})
	pinned := newPinnedSystem(funcs, sys, procRoot)
	// Step 3: the state directory of app "conformance" under the state
	// root root/state; for a handle store its handles/ directory, made
	// (0700) only when the case plants files there.
	appDir := filepath.Join(root, "state", "conformance")
	dir, openExport := appDir, hostfuncs.ExportOpen
	if c.Store == "handles" {
		dir, openExport = filepath.Join(appDir, "handles"), exportHandlesOpen
	} else if c.Store != "" {
		t.Fatalf("unknown store %q (want absent or \"handles\")", c.Store)
	}
	if c.StateDir.Create == nil || *c.StateDir.Create {
		mode := parseMode(t, c.StateDir.Mode, 0o700)
		if err := os.Mkdir(filepath.Dir(appDir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(appDir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(appDir, mode); err != nil {
			t.Fatal(err)
		}
		if dir != appDir && len(c.FilesBefore) > 0 {
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Step 4.
	makeFiles(t, root, c.OutsideBefore, false)
	makeFiles(t, dir, c.FilesBefore, false)

	// Step 5: load, check the ABI version, open.
	store, err := host.LoadForTest(ctx, sharedCacheDir, funcs, pinned, slog.New(logs))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(ctx)
	open := c.Open
	if open == nil {
		open = json.RawMessage(`{"app":"conformance","state_root":"` + filepath.Dir(appDir) + `"}`)
	}
	out, errJSON, callErr, err := store.CallRawForTest(ctx, openExport, open)
	if err != nil {
		t.Fatalf("open trapped: %v", err)
	}
	opened := true
	if c.OpenWant != nil {
		check(t, "open", *c.OpenWant, out, errJSON, callErr)
		opened = c.OpenWant.ErrorCode == ""
	} else if callErr != nil {
		t.Fatalf("open failed: %v", callErr)
	}
	if callErr == nil {
		// As every host does: open's (or handles_open's) state_dir is the
		// state directory of the file functions, for good (the
		// confinement rule).
		var o hostfuncs.OpenOutput
		if err := json.Unmarshal(out, &o); err != nil {
			t.Fatalf("open output %q: %v", out, err)
		}
		funcs.SetStateDir(o.StateDir)
	}

	// Step 6: the calls.
	vars := map[string]any{}
	for i := 0; opened && i < len(c.Calls); i++ {
		cl := c.Calls[i]
		if cl.HostCall != "" {
			// The store's own host function, through the same handler the
			// plugin calls (the pinned system answers facts and inspect).
			what := fmt.Sprintf("call %d %s", i, cl.HostCall)
			req := []byte(cl.Request)
			if cl.RequestHex != "" {
				// A binary eval request ends in the URL: $REDIS_URL, already
				// replaced by the URL's text, goes as its bytes.
				h, url, _ := strings.Cut(cl.RequestHex, "redis://")
				if url != "" {
					h += hex.EncodeToString([]byte("redis://" + url))
				}
				var err error
				if req, err = hex.DecodeString(h); err != nil {
					t.Fatalf("%s: request_hex: %v", what, err)
				}
			}
			start := time.Now()
			resp := pinned.Call(cl.HostCall, req)
			checkTook(t, what, cl.Want, time.Since(start))
			if cl.RequestHex != "" {
				checkBinaryHostCall(t, what, cl.Want, resp)
			} else {
				checkHostCall(t, what, cl.Want, resp)
			}
			continue
		}
		switch cl.Action {
		case "put_file":
			var b []byte
			if cl.Content != nil {
				b = cl.Content.Bytes()
			}
			if err := os.WriteFile(filepath.Join(dir, cl.Name), b, 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		case "hold_lock":
			// A second, independent instance of the host functions whose
			// state directory is set directly (no prepare_dir), taking the
			// lock with the socket the plugin names for it.
			other := primitives.New(primitives.Config{})
			defer other.Close()
			if !other.SetStateDir(dir) {
				t.Fatalf("hold_lock: SetStateDir(%s) refused", dir)
			}
			lock, _ := json.Marshal(hostfuncs.LockRequest{Name: cl.Name, Socket: lockSocket(t, ctx, store, cl.Name)})
			var resp hostfuncs.Empty
			if out := other.Call(hostfuncs.FnLock, lock); json.Unmarshal(out, &resp) != nil || resp.Error != nil {
				t.Fatalf("hold_lock: %s", out)
			}
			continue
		case "hold_socket":
			holdSocket(t, cl.Socket)
			continue
		case "corrupt_files":
			if err := conformance.CorruptFiles(dir, root, cl.Prefix, cl.Mode); err != nil {
				t.Fatal(err)
			}
			continue
		case "redis":
			if rd == nil {
				t.Fatalf("call %d: a redis action in a run on the file backend", i)
			}
			if err := conformance.RedisAction(rd, cl.EachKey, cl.Command); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			continue
		case "":
			if cl.Export == "" {
				t.Fatalf("call %d: unknown call form (no export, action or host_call)", i)
			}
		default:
			t.Fatalf("call %d: unknown action %q", i, cl.Action)
		}
		in := callInput(t, cl, vars)
		out, errJSON, callErr, err := store.CallRawForTest(ctx, cl.Export, in)
		if err != nil {
			t.Fatalf("call %d %s trapped: %v", i, cl.Export, err)
		}
		what := fmt.Sprintf("call %d %s", i, cl.Export)
		check(t, what, cl.Want, out, errJSON, callErr)
		if callErr == nil {
			saveVars(t, what, cl.Save, out, vars)
		}
	}

	// Step 7: the files.
	// files_after, when given, exactly; absent, "no file" unless a handle
	// case checks its directory by counts or by state_dir_after instead.
	if !redisHandles && (c.FilesAfter != nil || c.Store != "handles" || c.FilesAfterCount == nil && c.StateDirAfter == nil) {
		checkFiles(t, dir, c.FilesAfter, true)
	}
	checkFileCounts(t, dir, c.FilesAfterCount, c.FilesExclude)
	checkFiles(t, root, c.OutsideAfter, false)
	if a := c.StateDirAfter; a != nil {
		info, err := os.Lstat(dir)
		if a.Exists != nil && (err == nil) != *a.Exists {
			t.Errorf("state directory exists = %v, want %v", err == nil, *a.Exists)
		}
		if err == nil && a.Mode != "" && info.Mode().Perm() != parseMode(t, a.Mode, 0) {
			t.Errorf("state directory mode = %04o, want %s", info.Mode().Perm(), a.Mode)
		}
	}
	// Step 8: the log lines; logs_exclude over every line, debug included.
	for _, l := range logs.all() {
		detail := ""
		if l.Detail != nil {
			detail = *l.Detail
		}
		if msg := conformance.Excludes(c.LogsExclude, l.Message, detail); msg != "" {
			t.Errorf("logs_exclude: %s line %s: %s", l.Level, l.Event, msg)
		}
	}
	got := logs.lines()
	if len(got) != len(c.Logs) {
		t.Fatalf("logs:\n got %d lines %+v\nwant %d lines %+v", len(got), got, len(c.Logs), c.Logs)
	}
	for i, w := range c.Logs {
		g := got[i]
		ok := g.Level == w.Level && g.Event == w.Event &&
			(w.MessagePrefix != "" && strings.HasPrefix(g.Message, w.MessagePrefix) || w.MessagePrefix == "" && g.Message == w.Message) &&
			(w.Detail == nil || g.Detail != nil && *g.Detail == *w.Detail)
		if !ok {
			t.Errorf("log line %d = %+v (detail %s), want %+v (detail %s)", i, g, strp(g.Detail), w, strp(w.Detail))
		}
	}
}

// loadSystem returns the case's system: a name (systems/<name>.json), an
// object, or "default" when absent.
func loadSystem(t *testing.T, raw json.RawMessage, root string) system {
	t.Helper()
	name := "default"
	if len(raw) > 0 && raw[0] == '{' {
		var s system
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("system: %v", err)
		}
		return s
	}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &name); err != nil {
			t.Fatalf("system: %v", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(conformanceDir, "systems", name+".json"))
	if err != nil {
		t.Fatalf("system %q: %v", name, err)
	}
	var s system
	if err := json.Unmarshal(substitute(b, root), &s); err != nil {
		t.Fatalf("system %q: %v", name, err)
	}
	return s
}

// check compares an export's answer with w (step 6); errJSON is the error
// string of an answered failure.
func check(t *testing.T, what string, w want, out, errJSON []byte, callErr *hostfuncs.Error) {
	t.Helper()
	if msg := conformance.Excludes(w.MessageExcludes, string(errJSON)); callErr != nil && msg != "" {
		t.Errorf("%s: message_excludes: %s", what, msg)
	}
	if w.ErrorJSONSubset != nil {
		if callErr == nil || !conformance.Subset(conformance.DecodeJSON(w.ErrorJSONSubset), conformance.DecodeJSON(errJSON)) {
			t.Errorf("%s: answered %q / error %s, want an error holding %s", what, truncate(out), errJSON, w.ErrorJSONSubset)
		}
		return
	}
	if w.ErrorCode != "" {
		if callErr == nil || callErr.Code != w.ErrorCode {
			t.Errorf("%s: answered %q / %v, want error code %q", what, truncate(out), callErr, w.ErrorCode)
		}
		return
	}
	if callErr != nil {
		t.Errorf("%s: failed with %v", what, callErr)
		return
	}
	switch {
	case checkHex(t, what, w, out):
	case w.OutputJSON != nil || w.OutputJSONSubset != nil:
		var g, e any
		if err := json.Unmarshal(out, &g); err != nil {
			t.Errorf("%s: output %q is not JSON: %v", what, truncate(out), err)
			return
		}
		e = conformance.DecodeJSON(w.OutputJSON)
		if w.OutputJSON == nil {
			e = conformance.DecodeJSON(w.OutputJSONSubset)
		}
		if strings.HasSuffix(what, " list") {
			dropAges(g)
			dropAges(e)
		}
		ok := reflect.DeepEqual(g, e)
		if w.OutputJSON == nil {
			ok = conformance.Subset(e, g)
		}
		if !ok {
			gb, _ := json.Marshal(g)
			eb, _ := json.Marshal(e)
			t.Errorf("%s: output %s, want %s%s", what, gb, eb, map[bool]string{true: " (subset)"}[w.OutputJSON == nil])
		}
	case w.Output == nil:
		// No expectation on the output beyond success.
	case string(w.Output) == "null":
		if len(out) != 0 {
			t.Errorf("%s: output %q, want none", what, truncate(out))
		}
	default:
		var c content
		if err := json.Unmarshal(w.Output, &c); err != nil {
			t.Fatalf("%s: bad want.output: %v", what, err)
		}
		if !bytes.Equal(out, c.Bytes()) {
			t.Errorf("%s: output %q, want %q", what, truncate(out), truncate(c.Bytes()))
		}
	}
}

// dropAges removes every "age_seconds" key (list output is compared without them).
func dropAges(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "age_seconds")
		for _, e := range x {
			dropAges(e)
		}
	case []any:
		for _, e := range x {
			dropAges(e)
		}
	}
}

// makeFiles creates entries in dir; parents makes missing parent
// directories (the /proc tree).
func makeFiles(t *testing.T, dir string, files map[string]content, parents bool) {
	t.Helper()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names) // parents before children
	for _, name := range names {
		c := files[name]
		p := filepath.Join(dir, name)
		if parents {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		var err error
		switch {
		case c.Dir:
			err = os.Mkdir(p, 0o700)
		case c.Symlink != "":
			err = os.Symlink(c.Symlink, p)
		case c.FIFO:
			err = syscall.Mkfifo(p, 0o600)
		default:
			err = os.WriteFile(p, c.Bytes(), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
		if c.Mode != "" && c.Symlink == "" {
			if err := os.Chmod(p, parseMode(t, c.Mode, 0)); err != nil {
				t.Fatal(err)
			}
		}
		if c.AgeDays > 0 {
			// The entry's own times, a symlink's included (never its target's).
			old := time.Now().Add(-time.Duration(c.AgeDays * float64(24*time.Hour)))
			tv := []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())}
			if err := unix.Lutimes(p, tv); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkFiles compares dir with want; exact also demands no other entries
// (step 7: temporary files count like any other name).
func checkFiles(t *testing.T, dir string, want map[string]content, exact bool) {
	t.Helper()
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	if exact {
		entries, _ := os.ReadDir(dir)
		got := []string{}
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("files in %s = %v, want %v", filepath.Base(dir), got, names)
		}
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
		case c.FIFO:
			if info.Mode()&os.ModeNamedPipe == 0 {
				t.Errorf("%s is not a FIFO", n)
			}
		default:
			if !info.Mode().IsRegular() {
				t.Errorf("%s is not a regular file (%s)", n, info.Mode())
				continue
			}
			b, _ := os.ReadFile(p)
			if !bytes.Equal(b, c.Bytes()) {
				t.Errorf("%s holds %q, want %q", n, truncate(b), truncate(c.Bytes()))
			}
		}
		if c.Mode != "" && c.Symlink == "" && info.Mode().Perm() != parseMode(t, c.Mode, 0) {
			t.Errorf("%s mode = %04o, want %s", n, info.Mode().Perm(), c.Mode)
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
	if len(b) > 60 {
		return fmt.Sprintf("%s...(%d bytes)", b[:60], len(b))
	}
	return string(b)
}

// lockSocket returns the lock_socket of the store's names export when its
// lock is name (hostfuncs/conformance/README.md, hold_lock), else "".
func lockSocket(t *testing.T, ctx context.Context, store *host.Store, name string) string {
	t.Helper()
	out, callErr, err := store.CallForTest(ctx, hostfuncs.ExportNames, nil)
	if err != nil || callErr != nil {
		t.Fatalf("names: %v %v", err, callErr)
	}
	var names hostfuncs.NamesOutput
	if json.Unmarshal(out, &names) != nil || names.Lock != name {
		return ""
	}
	return names.LockSocket
}

func strp(p *string) string {
	if p == nil {
		return "-"
	}
	return strconv.Quote(*p)
}

// captureHandler records every log record as a conformance line; lines
// leaves the debug ones out (step 8), all keeps them (logs_exclude).
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
		switch a.Key {
		case "event":
			line.Event = a.Value.String()
		case "detail":
			d := a.Value.String()
			line.Detail = &d
		}
		return true
	})
	h.mu.Lock()
	h.got = append(h.got, line)
	h.mu.Unlock()
	return nil
}

func (h *captureHandler) lines() []logLine {
	var out []logLine
	for _, l := range h.all() {
		if l.Level != "debug" {
			out = append(out, l)
		}
	}
	return out
}

func (h *captureHandler) all() []logLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]logLine(nil), h.got...)
}
