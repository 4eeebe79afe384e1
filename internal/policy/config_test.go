package policy

import (
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/internal/wire"
)

func TestValidApp(t *testing.T) {
	for app, want := range map[string]bool{
		"a": true, "github-server": true, "A.b_c-9": true, "9lives": true, strings.Repeat("x", 64): true,
		"": false, strings.Repeat("x", 65): false, ".hidden": false, "-flag": false, "_x": false,
		"a/b": false, "a b": false, "..": false, "é": false, "a\x00": false,
	} {
		if got := ValidApp(app); got != want {
			t.Errorf("ValidApp(%q) = %v, want %v", app, got, want)
		}
	}
}

func strp(s string) *string { return &s }

func TestConfigure(t *testing.T) {
	linux := wire.Facts{OS: "linux", PID: 100, Home: "/home/ada", Args: []string{"--profile", "work"}, Env: map[string]string{}}
	with := func(f wire.Facts, change func(f *wire.Facts)) wire.Facts {
		f.Env = map[string]string{}
		change(&f)
		return f
	}
	tests := []struct {
		name     string
		in       wire.OpenInput
		facts    wire.Facts
		factsBad bool
		want     Config // Launchers is not compared
		wantCode string
	}{
		{
			name:  "linux defaults: instance from args",
			in:    wire.OpenInput{App: "app"},
			facts: linux,
			want:  Config{App: "app", StateDir: "/home/ada/.local/state/mcp-resume/app", StateRoot: "/home/ada/.local/state/mcp-resume", InstanceKey: "--profile\x00work"},
		},
		{
			name:  "absolute XDG_STATE_HOME",
			in:    wire.OpenInput{App: "app"},
			facts: with(linux, func(f *wire.Facts) { f.XDGStateHome = "/x/state/" }),
			want:  Config{App: "app", StateDir: "/x/state/mcp-resume/app", StateRoot: "/x/state/mcp-resume", InstanceKey: "--profile\x00work"},
		},
		{
			// The drift case of issue 9: a relative XDG_STATE_HOME is ignored.
			name:  "relative XDG_STATE_HOME",
			in:    wire.OpenInput{App: "app"},
			facts: with(linux, func(f *wire.Facts) { f.XDGStateHome = "~/x" }),
			want:  Config{App: "app", StateDir: "/home/ada/.local/state/mcp-resume/app", StateRoot: "/home/ada/.local/state/mcp-resume", InstanceKey: "--profile\x00work"},
		},
		{
			name:  "macOS ignores XDG",
			in:    wire.OpenInput{App: "app"},
			facts: with(linux, func(f *wire.Facts) { f.OS = "darwin"; f.Home = "/Users/ada"; f.XDGStateHome = "/x" }),
			want:  Config{App: "app", StateDir: "/Users/ada/Library/Application Support/mcp-resume/app", StateRoot: "/Users/ada/Library/Application Support/mcp-resume", InstanceKey: "--profile\x00work"},
		},
		{
			name:  "declared state dir is cleaned; env instance",
			in:    wire.OpenInput{App: "app", StateDir: "/srv//state/./x/"},
			facts: with(linux, func(f *wire.Facts) { f.Env["MCP_RESUME_INSTANCE"] = "work" }),
			want:  Config{App: "app", StateDir: "/srv/state/x", StateRoot: "/home/ada/.local/state/mcp-resume", InstanceKey: "work"},
		},
		{
			name:  "env state dir; declared instance wins over env",
			in:    wire.OpenInput{App: "app", Instance: strp("mine")},
			facts: with(linux, func(f *wire.Facts) { f.Env["MCP_RESUME_STATE_DIR"] = "/e/dir"; f.Env["MCP_RESUME_INSTANCE"] = "work" }),
			want:  Config{App: "app", StateDir: "/e/dir", StateRoot: "/home/ada/.local/state/mcp-resume", InstanceKey: "mine"},
		},
		{
			name:  "declared no instance",
			in:    wire.OpenInput{App: "app", Instance: strp("-")},
			facts: linux,
			want:  Config{App: "app", StateDir: "/home/ada/.local/state/mcp-resume/app", StateRoot: "/home/ada/.local/state/mcp-resume"},
		},
		{
			name:  "declared empty instance",
			in:    wire.OpenInput{App: "app", Instance: strp("")},
			facts: with(linux, func(f *wire.Facts) { f.Env["MCP_RESUME_INSTANCE"] = "work" }),
			want:  Config{App: "app", StateDir: "/home/ada/.local/state/mcp-resume/app", StateRoot: "/home/ada/.local/state/mcp-resume"},
		},
		{
			name:  "env no instance",
			in:    wire.OpenInput{App: "app"},
			facts: with(linux, func(f *wire.Facts) { f.Env["MCP_RESUME_INSTANCE"] = "-" }),
			want:  Config{App: "app", StateDir: "/home/ada/.local/state/mcp-resume/app", StateRoot: "/home/ada/.local/state/mcp-resume"},
		},
		{
			name:  "no args, no instance",
			in:    wire.OpenInput{App: "app"},
			facts: with(linux, func(f *wire.Facts) { f.Args = nil }),
			want:  Config{App: "app", StateDir: "/home/ada/.local/state/mcp-resume/app", StateRoot: "/home/ada/.local/state/mcp-resume"},
		},
		{
			name:  "MCP_RESUME=off",
			in:    wire.OpenInput{App: "app"},
			facts: with(linux, func(f *wire.Facts) { f.Args = nil; f.Env["MCP_RESUME"] = "off" }),
			want:  Config{App: "app", StateDir: "/home/ada/.local/state/mcp-resume/app", StateRoot: "/home/ada/.local/state/mcp-resume", Off: true},
		},
		{
			name:  "no home",
			in:    wire.OpenInput{App: "app"},
			facts: with(linux, func(f *wire.Facts) { f.Args = nil; f.Home = "" }),
			want:  Config{App: "app", Problem: "no home directory to put the default state directory in: set MCP_RESUME_STATE_DIR"},
		},
		{
			name:  "unsupported system",
			in:    wire.OpenInput{App: "app", StateDir: "/s"},
			facts: with(linux, func(f *wire.Facts) { f.Args = nil; f.OS = "win32" }),
			want:  Config{App: "app", StateDir: "/s", StateRoot: "/home/ada/.local/state/mcp-resume", Problem: `process identity is not supported on "win32" (spec 000, Platform Support)`},
		},
		{
			name:     "facts unusable",
			in:       wire.OpenInput{App: "app", StateDir: "/s"},
			facts:    linux,
			factsBad: true,
			want:     Config{App: "app", StateDir: "/s", Problem: "mcp_resume_facts gave no usable answer"},
		},
		{name: "bad app", in: wire.OpenInput{App: "../x"}, facts: linux, wantCode: wire.CodeInvalidApp},
		{name: "no app", in: wire.OpenInput{}, facts: linux, wantCode: wire.CodeInvalidApp},
		{name: "relative state dir", in: wire.OpenInput{App: "a", StateDir: "state"}, facts: linux, wantCode: wire.CodeInvalidOption},
		{name: "relative env state dir", in: wire.OpenInput{App: "a"}, facts: with(linux, func(f *wire.Facts) { f.Env["MCP_RESUME_STATE_DIR"] = "rel" }), wantCode: wire.CodeInvalidOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, werr := Configure(tt.in, tt.facts, !tt.factsBad)
			if tt.wantCode != "" {
				if werr == nil || werr.Code != tt.wantCode {
					t.Fatalf("Configure() error = %v, want code %s", werr, tt.wantCode)
				}
				return
			}
			if werr != nil {
				t.Fatalf("Configure() error = %v", werr)
			}
			got.Launchers = nil
			if d := diff(tt.want, got); d != "" {
				t.Errorf("Configure() %s", d)
			}
			if got.Resume() != (!tt.want.Off && tt.want.Problem == "") {
				t.Errorf("Resume() = %v", got.Resume())
			}
		})
	}
}

func TestConfigure_Launchers(t *testing.T) {
	f := wire.Facts{OS: "linux", PID: 1, Home: "/h", Env: map[string]string{"MCP_RESUME_LAUNCHERS": "direnv, foo"}}
	c, werr := Configure(wire.OpenInput{App: "a", Launchers: []string{"my-wrapper"}}, f, true)
	if werr != nil {
		t.Fatal(werr)
	}
	for _, n := range []string{"sh", "npx", "direnv", "foo", "my-wrapper"} {
		if !c.Launchers[n] {
			t.Errorf("launcher set lacks %q", n)
		}
	}
}
