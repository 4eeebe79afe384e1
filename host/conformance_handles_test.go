package host_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// The conformance format's additions for the handle store
// (hostfuncs/conformance/README.md): "store": "handles", export inputs
// given as JSON values with saved variables ("save", "$<var>"),
// error_json_subset, corrupt_files, files_after_count and files_exclude.

// exportHandlesOpen opens a handle store in a plugin instance.
const exportHandlesOpen = hostfuncs.ExportHandlesOpen

// isHandleExport reports whether export belongs to the handle store, whose
// inputs are JSON objects.
func isHandleExport(export string) bool {
	return slices.Contains(hostfuncs.HandleExports(), export) || strings.HasPrefix(export, "handle_")
}

// callInput returns the input bytes of an export call: for a handle
// store's export, a JSON value the runner encodes after replacing saved
// variables (a plain JSON string is still a content: its text, so a case
// can send bytes that are not an object); for any other, a content.
func callInput(t *testing.T, cl call, vars map[string]any) []byte {
	t.Helper()
	raw := bytes.TrimSpace(cl.Input)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if isHandleExport(cl.Export) && raw[0] != '"' {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s input: %v", cl.Export, err)
		}
		b, err := json.Marshal(replaceVars(v, vars))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var c content
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s input: %v", cl.Export, err)
	}
	return c.bytes()
}

// replaceVars returns v with every string exactly "$<var>" of a saved
// variable replaced by its value (its JSON type kept), and "$<var>" inside
// a longer string by the value's text. Longer names are replaced first, so
// $h10 is not read as $h1 followed by 0.
func replaceVars(v any, vars map[string]any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = replaceVars(e, vars)
		}
	case []any:
		for i, e := range x {
			x[i] = replaceVars(e, vars)
		}
	case string:
		if strings.HasPrefix(x, "$") {
			if val, ok := vars[x[1:]]; ok {
				return val
			}
		}
		names := make([]string, 0, len(vars))
		for n := range vars {
			names = append(names, n)
		}
		sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
		for _, n := range names {
			x = strings.ReplaceAll(x, "$"+n, textOf(vars[n]))
		}
		return x
	}
	return v
}

// textOf is a saved value as text: a string itself, a number in JSON.
func textOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// saveVars keeps the members save names of a successful call's JSON output
// (a string or a number).
func saveVars(t *testing.T, what string, save map[string]string, out []byte, vars map[string]any) {
	t.Helper()
	if len(save) == 0 {
		return
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s: save: output %q is not a JSON object", what, truncate(out))
	}
	for name, member := range save {
		v, ok := got[member]
		switch v.(type) {
		case string, float64:
		default:
			ok = false
		}
		if !ok {
			t.Fatalf("%s: save %s: output has no string or number %q", what, name, member)
		}
		vars[name] = v
	}
}

// corruptFiles corrupts every regular file of dir whose name starts with
// prefix: "truncate" to half its size, "flip" its last byte, or "symlink":
// replace it by a symbolic link to a file outside the state directory (in
// root) holding the same bytes. A case that finds no such file is wrong.
func corruptFiles(t *testing.T, dir, root, prefix, mode string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("corrupt_files: %v", err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() {
			continue
		}
		n++
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		switch mode {
		case "truncate":
			err = os.Truncate(p, int64(len(b)/2))
		case "flip":
			if len(b) > 0 {
				b[len(b)-1] ^= 0xff
			}
			err = os.WriteFile(p, b, 0o600)
		case "symlink":
			outside := filepath.Join(root, "outside-"+e.Name())
			if err = os.WriteFile(outside, b, 0o600); err == nil {
				if err = os.Remove(p); err == nil {
					err = os.Symlink(outside, p)
				}
			}
		default:
			t.Fatalf("corrupt_files: unknown mode %q (truncate, flip or symlink)", mode)
		}
		if err != nil {
			t.Fatalf("corrupt_files %s: %v", e.Name(), err)
		}
	}
	if n == 0 {
		t.Fatalf("corrupt_files: no file starting with %q in the state directory", prefix)
	}
}

// checkFileCounts checks files_after_count (the number of regular files
// per name prefix) and files_exclude (no file of dir holds those bytes).
func checkFileCounts(t *testing.T, dir string, counts map[string]int, exclude *string) {
	t.Helper()
	if counts == nil && exclude == nil {
		return
	}
	entries, _ := os.ReadDir(dir)
	got := map[string]int{}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		for prefix := range counts {
			if strings.HasPrefix(e.Name(), prefix) {
				got[prefix]++
			}
		}
		if exclude != nil {
			if b, _ := os.ReadFile(filepath.Join(dir, e.Name())); bytes.Contains(b, []byte(*exclude)) {
				t.Errorf("%s holds %q: the value must be sealed", e.Name(), *exclude)
			}
		}
	}
	for prefix, want := range counts {
		if got[prefix] != want {
			t.Errorf("files starting with %q: %d, want %d", prefix, got[prefix], want)
		}
	}
}
