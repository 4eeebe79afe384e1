package resume_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
	"github.com/mcp-resume/mcp-resume/plugin/internal/resume"
)

// TestNamesCoverEveryOption: every option the open inputs accept (but
// caller, which the bindings send themselves) has a name in each language,
// and every per-call option and every export a user reaches has one too:
// adding an option to hostfuncs without naming it here fails.
func TestNamesCoverEveryOption(t *testing.T) {
	check := func(table resume.Table, wire []string, what string) {
		for _, w := range wire {
			row, ok := table.Lookup(w)
			if !ok {
				t.Errorf("%s %q has no names (plugin/internal/resume/caller.go)", what, w)
				continue
			}
			for i, name := range row {
				if name == "" {
					t.Errorf("%s %q has no name in language %d", what, w, i)
				}
			}
		}
	}
	var open []string
	for _, m := range slices.Concat(hostfuncs.OpenMembers, hostfuncs.HandlesOpenMembers) {
		if m != "caller" && !slices.Contains(open, m) {
			open = append(open, m)
		}
	}
	check(resume.OptionNames, open, "open option")
	for _, r := range resume.OptionNames {
		if w := r.Wire; !slices.Contains(open, w) {
			t.Errorf("OptionNames names %q, which no open input accepts", w)
		}
	}
	check(resume.CallOptionNames, hostfuncs.HandleOptions, "per-call option")
	check(resume.OperationNames, []string{hostfuncs.ExportOpen, hostfuncs.ExportHandlesOpen, hostfuncs.ExportHandleCreate,
		hostfuncs.ExportHandleGet, hostfuncs.ExportHandlePut, hostfuncs.ExportHandleDelete, hostfuncs.ExportHandleTouch,
		hostfuncs.ExportHandleExists, hostfuncs.ExportHandleList, hostfuncs.ExportHandleGC}, "operation")
}

// TestNamesFollowAPI: each option's names are a row of docs/API.md's
// Options table (Go, Python, TypeScript), the page the three packages are
// checked against.
func TestNamesFollowAPI(t *testing.T) {
	b, err := os.ReadFile("../../../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	_, options, _ := strings.Cut(string(b), "\n## Options\n")
	options, _, _ = strings.Cut(options, "\n## ")
	row := regexp.MustCompile("(?m)^\\| [^|]+ \\| `([^`]+)` \\| `([^`]+)` \\| `([^`]+)` \\|$")
	var rows [][3]string
	for _, m := range row.FindAllStringSubmatch(options, -1) {
		rows = append(rows, [3]string{m[1], m[2], m[3]})
	}
	if len(rows) < 10 {
		t.Fatalf("found %d rows in docs/API.md's Options table", len(rows))
	}
	for _, r := range resume.OptionNames {
		if r.Wire != "app" && !slices.Contains(rows, r.Names) {
			t.Errorf("%s is named %v, not a row of docs/API.md's Options table %v", r.Wire, r.Names, rows)
		}
	}
}

// TestOpenCaller: open takes caller go, python or typescript and words its
// messages in that language's names; any other caller is invalid_option
// naming the three; without caller the wire names stay.
func TestOpenCaller(t *testing.T) {
	for caller, want := range map[string]string{"": "state_root", "go": "StateRoot", "python": "state_root", "typescript": "stateRoot"} {
		h, _ := newHost(t)
		h.Facts.Cwd = "" // a relative state root cannot be resolved
		in := map[string]any{"app": "conformance", "state_root": "relative/state"}
		if caller != "" {
			in["caller"] = caller
		}
		b, _ := json.Marshal(in)
		_, werr := resume.New(h.Call).Open(b)
		if werr == nil || werr.Code != hostfuncs.CodeInvalidOption || !strings.HasPrefix(werr.Message, want+` "relative/state" is a relative path`) {
			t.Errorf("caller %q: Open = %v, want invalid_option naming %s", caller, werr, want)
		}
		// A member of the wrong kind is named too, whether caller comes
		// before or after it.
		for _, doc := range []string{`{"caller":"` + caller + `","app":"conformance","launchers":"x"}`, `{"app":"conformance","launchers":"x","caller":"` + caller + `"}`} {
			if caller == "" {
				doc = `{"app":"conformance","launchers":"x"}`
			}
			_, werr := resume.New(h.Call).Open([]byte(doc))
			n, _ := resume.NamesFor(caller)
			if werr == nil || werr.Code != hostfuncs.CodeInvalidOption || !strings.HasPrefix(werr.Message, n.Option("launchers")+" must be a list of strings") {
				t.Errorf("caller %q: Open(%s) = %v", caller, doc, werr)
			}
		}
	}
	h, _ := newHost(t)
	_, werr := resume.New(h.Call).Open([]byte(`{"app":"conformance","caller":"rust"}`))
	if werr == nil || werr.Code != hostfuncs.CodeInvalidOption || werr.Message != `caller must be "go", "python" or "typescript", not "rust"` {
		t.Errorf("caller rust: %v", werr)
	}
	n, _ := resume.NamesFor("go")
	if n.Operation("handle_create") != "Create" || n.CallOption("generation") != "IfGeneration" || n.Duration(90000) != "1m30s" {
		t.Errorf("go names: %q %q %q", n.Operation("handle_create"), n.CallOption("generation"), n.Duration(90000))
	}
	n, _ = resume.NamesFor("typescript")
	if n.Option("timeout_ms") != "timeoutMs" || n.Duration(90000) != "90000" || n.CallOption("generation") != "expect" {
		t.Errorf("typescript names: %q %q", n.Option("timeout_ms"), n.Duration(90000))
	}
}
