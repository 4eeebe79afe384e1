// Package conformance holds the parts of the shared conformance cases'
// format (README.md beside this file; the cases are cases/*.json) that
// every Go runner of them needs alike: the Go host's runner
// (host/conformance_test.go) and the plugin's native runner of the handle
// store's cases (plugin/internal/handles/conformance_test.go). Each runner
// keeps its own case types and steps; only these helpers live here.
package conformance

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
)

// Content is a file, an input or an expected output (README.md, "Content"):
// a JSON string (its text) or an object with one of text, base64 or
// repeat × count, or dir, symlink (the link's target) or fifo, and the
// entry's mode (octal, as a string) and age_days (its modification time,
// days ago).
type Content struct {
	Text    *string `json:"text"`
	Base64  *string `json:"base64"`
	Repeat  string  `json:"repeat"`
	Count   int     `json:"count"`
	Dir     bool    `json:"dir"`
	Symlink string  `json:"symlink"`
	FIFO    bool    `json:"fifo"`
	Mode    string  `json:"mode"`
	AgeDays float64 `json:"age_days"`
}

// UnmarshalJSON accepts a JSON string as {"text": string}, else the object.
func (c *Content) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		c.Text = &s
		return nil
	}
	type plain Content
	return json.Unmarshal(b, (*plain)(c))
}

// Bytes returns the content's bytes: text, base64 decoded (nil when it is
// not base64), or repeat count times; nil for a directory, a symbolic
// link, a FIFO or no content.
func (c Content) Bytes() []byte {
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

// ReplaceVars returns v (a decoded JSON value; maps and slices are changed
// in place) with every string exactly "$<var>" of a saved variable (a
// call's "save", README.md) replaced by its value, its JSON type kept, and
// "$<var>" inside a longer string by the value's text (a string itself, a
// number in JSON). Longer names are replaced first, so that $h10 is not
// read as $h1 followed by 0.
func ReplaceVars(v any, vars map[string]any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = ReplaceVars(e, vars)
		}
	case []any:
		for i, e := range x {
			x[i] = ReplaceVars(e, vars)
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

// DecodeJSON decodes raw into a generic JSON value (nil when raw is not
// JSON), for Subset and comparisons.
func DecodeJSON(raw json.RawMessage) any {
	var v any
	_ = json.Unmarshal(raw, &v)
	return v
}

// Subset reports whether got holds want, as output_json_subset,
// error_json_subset and response_subset mean it (README.md): every key of
// a want object is in got with an equal value, recursively for objects;
// arrays and other values must be equal.
func Subset(want, got any) bool {
	w, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(want, got)
	}
	g, ok := got.(map[string]any)
	if !ok {
		return false
	}
	for k, wv := range w {
		gv, present := g[k]
		if !present || !Subset(wv, gv) {
			return false
		}
	}
	return true
}

// CorruptFiles is the corrupt_files action (README.md): it corrupts every
// regular file of dir whose name starts with prefix, by mode "truncate"
// (to half its size), "flip" (its last byte) or "symlink" (replaced by a
// symbolic link to a file "outside-<name>" in root, outside the state
// directory, holding the same bytes); mode "save" copies it to
// "saved-<name>" in root, unchanged, and "restore" writes that copy back
// over it (an older record put back). It returns an error for another
// mode, a file system error (restore without a saved copy), or when no
// file matched (the case is wrong).
func CorruptFiles(dir, root, prefix, mode string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("corrupt_files: %v", err)
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
			return fmt.Errorf("corrupt_files %s: %v", e.Name(), err)
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
		case "save":
			err = os.WriteFile(filepath.Join(root, "saved-"+e.Name()), b, 0o600)
		case "restore":
			if b, err = os.ReadFile(filepath.Join(root, "saved-"+e.Name())); err == nil {
				err = os.WriteFile(p, b, 0o600)
			}
		default:
			return fmt.Errorf("corrupt_files: unknown mode %q (truncate, flip, symlink, save or restore)", mode)
		}
		if err != nil {
			return fmt.Errorf("corrupt_files %s: %v", e.Name(), err)
		}
	}
	if n == 0 {
		return fmt.Errorf("corrupt_files: no file starting with %q in the state directory", prefix)
	}
	return nil
}
