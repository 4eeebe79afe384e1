package host_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/hostfuncs/conformance"
)

// The conformance format's additions for the handle store
// (hostfuncs/conformance/README.md): "store": "handles", export inputs
// given as JSON values with saved variables ("save", "$<var>"),
// error_json_subset, corrupt_files, files_after_count and files_exclude;
// and the binary form of handle_create, handle_get and handle_put:
// input_hex, output_hex and output_prefix_hex.

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
//
// A call with input_hex sends those bytes (the binary form), after
// replacing each saved variable "$<var>" in the hex text by the lowercase
// hex of the variable's text.
func callInput(t *testing.T, cl call, vars map[string]any) []byte {
	t.Helper()
	if cl.InputHex != nil {
		if cl.Input != nil || !isHandleExport(cl.Export) {
			t.Fatalf("%s: input_hex is for a handle export, instead of input", cl.Export)
		}
		b, err := conformance.HexInput(*cl.InputHex, vars)
		if err != nil {
			t.Fatalf("%s: %v", cl.Export, err)
		}
		return b
	}
	raw := bytes.TrimSpace(cl.Input)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if isHandleExport(cl.Export) && raw[0] != '"' {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s input: %v", cl.Export, err)
		}
		b, err := json.Marshal(conformance.ReplaceVars(v, vars))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var c content
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatalf("%s input: %v", cl.Export, err)
	}
	return c.Bytes()
}

// checkHex checks a successful binary output against output_hex or
// output_prefix_hex (conformance.HexOutput); false when w has neither.
func checkHex(t *testing.T, what string, w want, out []byte) bool {
	t.Helper()
	if w.OutputHex == nil && w.OutputPrefixHex == nil {
		return false
	}
	msg, err := conformance.HexOutput(out, w.OutputHex, w.OutputPrefixHex)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if msg != "" {
		t.Errorf("%s: %s", what, msg)
	}
	return true
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
