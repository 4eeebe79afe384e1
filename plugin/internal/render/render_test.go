package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// tabwriterTable is table as text/tabwriter writes it (the Go CLI's former
// formatting), the reference the plugin's own aligner must match.
func tabwriterTable(rows [][]string) []byte {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	return b.Bytes()
}

func stdIndent(t *testing.T, v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// renderApp and renderInput state the render input with encoding/json, as
// the Go CLI builds it (and the Python and TypeScript CLIs, from the
// plugin's own answers).
type renderApp struct {
	App      string                 `json:"app"`
	StateDir string                 `json:"state_dir"`
	Files    []hostfuncs.TokenFile  `json:"files,omitempty"`
	Removed  []hostfuncs.PrunedFile `json:"removed,omitempty"`
}

type renderInput struct {
	Command      string                 `json:"command"`
	JSON         bool                   `json:"json,omitempty"`
	ShowStateDir bool                   `json:"show_state_dir,omitempty"`
	Whoami       hostfuncs.WhoamiOutput `json:"whoami"`
	Apps         []renderApp            `json:"apps"`
}

// listRow and pruneRow are the Go CLI's former JSON rows.
type listRow struct {
	App      string `json:"app"`
	StateDir string `json:"state_dir"`
	hostfuncs.TokenFile
}

type pruneRow struct {
	App      string `json:"app"`
	StateDir string `json:"state_dir"`
	hostfuncs.PrunedFile
}

func render(t *testing.T, in renderInput) []byte {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Render(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

var apps = []renderApp{
	{App: "zeta", StateDir: "/r/zeta", Files: []hostfuncs.TokenFile{{Name: "token-9-1.ab.4", PID: 9, StartTime: "1.ab.4", Host: "gone", AgeSeconds: 7200}},
		Removed: []hostfuncs.PrunedFile{{Name: "lock-9-1.ab.4", Reason: hostfuncs.ReasonHostGone, Host: "gone"}}},
	{App: "alpha", StateDir: "/r/alpha", Files: []hostfuncs.TokenFile{
		{Name: "token-4242-98765.0f.1-0123456789abcdef", PID: 4242, StartTime: "98765.0f.1", Instance: "0123456789abcdef", Host: "alive", AgeSeconds: 5},
		{Name: "token-77-é<&>", PID: 77, StartTime: "é<&>", Host: "unknown", AgeSeconds: 40 * 86400}},
		Removed: []hostfuncs.PrunedFile{{Name: "token-77-1", Reason: hostfuncs.ReasonAged, Host: "unknown"}}},
}

func TestRenderList(t *testing.T) {
	got := render(t, renderInput{Command: "list", Apps: apps})
	want := tabwriterTable([][]string{
		{"APP", "PID", "START TIME", "INSTANCE", "HOST", "AGE", "FILE"},
		{"alpha", "4242", "98765.0f.1", "0123456789abcdef", "alive", "5s", "/r/alpha/token-4242-98765.0f.1-0123456789abcdef"},
		{"alpha", "77", "é<&>", "-", "unknown", "40d", "/r/alpha/token-77-é<&>"},
		{"zeta", "9", "1.ab.4", "-", "gone", "2h", "/r/zeta/token-9-1.ab.4"},
	})
	if !bytes.Equal(got, want) {
		t.Errorf("list text:\n%s\nwant\n%s", got, want)
	}
	gotJSON := render(t, renderInput{Command: "list", JSON: true, Apps: apps})
	wantJSON := stdIndent(t, []listRow{{App: "alpha", StateDir: "/r/alpha", TokenFile: apps[1].Files[0]},
		{App: "alpha", StateDir: "/r/alpha", TokenFile: apps[1].Files[1]}, {App: "zeta", StateDir: "/r/zeta", TokenFile: apps[0].Files[0]}})
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("list JSON:\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	if got := render(t, renderInput{Command: "list"}); string(got) != "no token files\n" {
		t.Errorf("empty list: %q", got)
	}
	if got := render(t, renderInput{Command: "list", JSON: true}); string(got) != "[]\n" {
		t.Errorf("empty list JSON: %q", got)
	}
}

func TestRenderPrune(t *testing.T) {
	got := render(t, renderInput{Command: "prune", Apps: apps})
	want := tabwriterTable([][]string{
		{"APP", "REMOVED BECAUSE", "FILE"},
		{"alpha", "aged: older than 30 days, host unknown", "/r/alpha/token-77-1"},
		{"zeta", "host gone", "/r/zeta/lock-9-1.ab.4"},
	})
	if !bytes.Equal(got, want) {
		t.Errorf("prune text:\n%s\nwant\n%s", got, want)
	}
	gotJSON := render(t, renderInput{Command: "prune", JSON: true, Apps: apps})
	wantJSON := stdIndent(t, []pruneRow{{App: "alpha", StateDir: "/r/alpha", PrunedFile: apps[1].Removed[0]}, {App: "zeta", StateDir: "/r/zeta", PrunedFile: apps[0].Removed[0]}})
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Errorf("prune JSON:\n%s\nwant\n%s", gotJSON, wantJSON)
	}
	if got := render(t, renderInput{Command: "prune"}); string(got) != "nothing to prune\n" {
		t.Errorf("empty prune: %q", got)
	}
}

func TestRenderWhoami(t *testing.T) {
	id := hostfuncs.WhoamiOutput{PID: 4242, StartTime: "98765.0f.1", Stdio: "verified: stdout pipe:[22] is held by the host as fd 7",
		TokenFile: "token-4242-98765.0f.1", LockFile: "lock-4242-98765.0f.1", StateDir: "/r/app",
		Chain: []hostfuncs.Process{{PID: 300, PPID: 4242, Name: "sh", Args: []string{"sh", "-c", "x"}, StartTime: "5.0f.1", Role: "launcher"},
			{PID: 4242, PPID: 1000, Name: "claude", Args: []string{"claude"}, StartTime: "98765.0f.1", Role: "host"}}}
	got := string(render(t, renderInput{Command: "whoami", Whoami: id, ShowStateDir: true}))
	want := string(tabwriterTable([][]string{{"ROLE", "PID", "NAME", "START TIME"}, {"launcher", "300", "sh", "5.0f.1"}, {"host", "4242", "claude", "98765.0f.1"}})) +
		"\nhost: pid 4242, start time 98765.0f.1\nstdio: verified: stdout pipe:[22] is held by the host as fd 7\ninstance suffix: (none)\n" +
		"token file: token-4242-98765.0f.1\nlock file: lock-4242-98765.0f.1\nstate directory: /r/app\n"
	if got != want {
		t.Errorf("whoami text:\n%s\nwant\n%s", got, want)
	}
	trusted := id
	trusted.Trust = `single user: pid 4242 ("claude") is a known single-user MCP host`
	if got := string(render(t, renderInput{Command: "whoami", Whoami: trusted, ShowStateDir: true})); !strings.Contains(got, "\nstdio: verified: stdout pipe:[22] is held by the host as fd 7\ntrust: single user: pid 4242 (\"claude\") is a known single-user MCP host\ninstance suffix: (none)\n") {
		t.Errorf("whoami text with a trust verdict:\n%s", got)
	}
	noDir := id
	noDir.StateDir = ""
	if got, want := render(t, renderInput{Command: "whoami", Whoami: id, JSON: true}), stdIndent(t, noDir); !bytes.Equal(got, want) {
		t.Errorf("whoami JSON:\n%s\nwant\n%s", got, want)
	}
	off := hostfuncs.WhoamiOutput{Error: "the host would be pid 1 (\"systemd\")", Chain: []hostfuncs.Process{{PID: 1, Name: "systemd", Role: "launcher", StartTime: "1"}}}
	if got := string(render(t, renderInput{Command: "whoami", Whoami: off})); !strings.HasSuffix(got, "\nresume would be OFF: the host would be pid 1 (\"systemd\")\n") || strings.Contains(got, "token file") {
		t.Errorf("whoami off:\n%s", got)
	}
}

func TestRenderUsage(t *testing.T) {
	if out, err := Render([]byte(`{"command": "usage"}`)); err != nil || string(out) != Usage {
		t.Errorf("usage = %q, %v", out, err)
	}
}

func TestRenderErrors(t *testing.T) {
	for _, in := range []string{``, `[]`, `{"command": "rm"}`, `{"command": "list"} x`, strings.Repeat("[", 40) + strings.Repeat("]", 40)} {
		if _, err := Render([]byte(in)); err == nil {
			t.Errorf("Render(%q) did not fail", in)
		}
	}
}
