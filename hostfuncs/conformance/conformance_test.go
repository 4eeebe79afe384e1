package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

func TestReplaceVars(t *testing.T) {
	vars := map[string]any{"h1": "mrh1_a", "h10": "mrh1_b", "gen": float64(3)}
	in := DecodeJSON([]byte(`{"handle": "$h10", "expect": "$gen", "list": ["$h1", "x $h10 $gen"], "keep": "$nope"}`))
	got := ReplaceVars(in, vars)
	want := DecodeJSON([]byte(`{"handle": "mrh1_b", "expect": 3, "list": ["mrh1_a", "x mrh1_b 3"], "keep": "$nope"}`))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ReplaceVars = %v, want %v", got, want)
	}
}

func TestSubset(t *testing.T) {
	got := DecodeJSON([]byte(`{"a": 1, "b": {"c": [1, 2], "d": "x"}}`))
	for want, ok := range map[string]bool{
		`{}`: true, `{"a": 1}`: true, `{"b": {"d": "x"}}`: true, `{"b": {"c": [1, 2]}}`: true,
		`{"b": {"c": [1]}}`: false, `{"a": 2}`: false, `{"e": null}`: false, `[1]`: false,
	} {
		if Subset(DecodeJSON([]byte(want)), got) != ok {
			t.Errorf("Subset(%s) = %v, want %v", want, !ok, ok)
		}
	}
}

func TestCorruptFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "state")
	os.Mkdir(dir, 0o700)
	write := func(name, s string) { os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600) }
	write("h-a", "abcdef")
	write("h-b", "xy")
	write("other", "keep")
	if err := CorruptFiles(dir, root, "h-", "truncate"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"h-a": "abc", "h-b": "x", "other": "keep"} {
		if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("after truncate %s = %q, want %q", name, b, want)
		}
	}
	if err := CorruptFiles(dir, root, "h-a", "flip"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "h-a")); string(b) != "ab\x9c" {
		t.Errorf("after flip h-a = %q", b)
	}
	if err := CorruptFiles(dir, root, "other", "symlink"); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "other")); err != nil || target != filepath.Join(root, "outside-other") {
		t.Errorf("after symlink: %q, %v", target, err)
	}
	if err := CorruptFiles(dir, root, "h-b", "restore"); err == nil {
		t.Error("restore without a saved copy: no error")
	}
	if err := CorruptFiles(dir, root, "h-b", "save"); err != nil {
		t.Fatal(err)
	}
	write("h-b", "newer")
	if b, _ := os.ReadFile(filepath.Join(root, "saved-h-b")); string(b) != "x" {
		t.Errorf("saved copy = %q, want %q", b, "x")
	}
	if err := CorruptFiles(dir, root, "h-b", "restore"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "h-b")); string(b) != "x" {
		t.Errorf("after restore h-b = %q, want the saved %q", b, "x")
	}
	if err := CorruptFiles(dir, root, "none", "flip"); err == nil {
		t.Error("no matching file: no error")
	}
	if err := CorruptFiles(dir, root, "h-", "bogus"); err == nil {
		t.Error("unknown mode: no error")
	}
}

// TestRedisCasesPlantNoFiles: a case that runs on Redis has no files_before
// (README.md, "files_before and age_days are file-backend fields"): its
// Redis run would plant nothing and pin something else than its file run.
func TestRedisCasesPlantNoFiles(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("cases", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var c struct {
			FilesBefore map[string]any `json:"files_before"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(c.FilesBefore) > 0 && slices.Contains(Backends(raw), hostfuncs.BackendRedis) {
			t.Errorf("%s: runs on Redis (backends %v) but has files_before: make it \"backends\": [\"file\"]", p, Backends(raw))
		}
	}
}

func TestHexInputAndOutput(t *testing.T) {
	vars := map[string]any{"h": "ab", "h1": "c", "n": float64(2)}
	b, err := HexInput("01$h1$h$n", vars)
	if err != nil || string(b) != "\x01cab2" {
		t.Errorf("HexInput = %q, %v", b, err)
	}
	if _, err := HexInput("0g", nil); err == nil {
		t.Error("HexInput of non-hex: no error")
	}
	s := func(x string) *string { return &x }
	for _, c := range []struct {
		out           string
		exact, prefix *string
		ok            bool
	}{
		{"\x01\x02", s("0102"), nil, true},
		{"\x01\x02", s("01"), nil, false},
		{"\x01\x02", nil, s("01"), true},
		{"\x01\x02", nil, s("0102"), true},
		{"\x01\x02", nil, s("010203"), false},
		{"\x01\x02", nil, s("02"), false},
	} {
		msg, err := HexOutput([]byte(c.out), c.exact, c.prefix)
		if err != nil || (msg == "") != c.ok {
			t.Errorf("HexOutput(%x, %v, %v) = %q, %v; want ok %v", c.out, c.exact, c.prefix, msg, err, c.ok)
		}
	}
	if _, err := HexOutput(nil, s("zz"), nil); err == nil {
		t.Error("HexOutput with a bad want: no error")
	}
}
