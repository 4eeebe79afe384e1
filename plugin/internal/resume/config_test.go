package resume

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
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
	linux := hostfuncs.Facts{OS: "linux", PID: 100, Home: "/home/ada", Args: []string{"--profile", "work"}, Env: map[string]string{}}
	with := func(f hostfuncs.Facts, change func(f *hostfuncs.Facts)) hostfuncs.Facts {
		f.Env = map[string]string{}
		change(&f)
		return f
	}
	argsKey := DefaultInstanceKey(linux)
	const home = "/home/ada/.local/state/mcp-resume"
	tests := []struct {
		name     string
		in       hostfuncs.OpenInput
		facts    hostfuncs.Facts
		factsBad bool
		want     Config // Launchers is not compared
		wantCode string
	}{
		{
			name:  "linux defaults: instance from args",
			in:    hostfuncs.OpenInput{App: "app"},
			facts: linux,
			want:  Config{App: "app", StateDir: home + "/app", StateRoot: home, InstanceKey: argsKey},
		},
		{
			name:  "absolute XDG_STATE_HOME",
			in:    hostfuncs.OpenInput{App: "app"},
			facts: with(linux, func(f *hostfuncs.Facts) { f.XDGStateHome = "/x/state/" }),
			want:  Config{App: "app", StateDir: "/x/state/mcp-resume/app", StateRoot: "/x/state/mcp-resume", InstanceKey: argsKey},
		},
		{
			// A relative XDG_STATE_HOME is ignored: it would move with the
			// working directory.
			name:  "relative XDG_STATE_HOME",
			in:    hostfuncs.OpenInput{App: "app"},
			facts: with(linux, func(f *hostfuncs.Facts) { f.XDGStateHome = "~/x" }),
			want:  Config{App: "app", StateDir: home + "/app", StateRoot: home, InstanceKey: argsKey},
		},
		{
			name:  "macOS ignores XDG",
			in:    hostfuncs.OpenInput{App: "app"},
			facts: with(linux, func(f *hostfuncs.Facts) { f.OS = "darwin"; f.Home = "/Users/ada"; f.XDGStateHome = "/x" }),
			want:  Config{App: "app", StateDir: "/Users/ada/Library/Application Support/mcp-resume/app", StateRoot: "/Users/ada/Library/Application Support/mcp-resume", InstanceKey: argsKey},
		},
		{
			name:  "declared state dir is a cleaned root; env instance",
			in:    hostfuncs.OpenInput{App: "app", StateRoot: "/srv//state/./x/"},
			facts: with(linux, func(f *hostfuncs.Facts) { f.Env["MCP_RESUME_INSTANCE"] = "work" }),
			want:  Config{App: "app", StateDir: "/srv/state/x/app", StateRoot: "/srv/state/x", InstanceKey: "work", Vouch: "MCP_RESUME_INSTANCE"},
		},
		{
			name: "env state dir is a root; declared instance wins over env",
			in:   hostfuncs.OpenInput{App: "app", Instance: strp("mine")},
			facts: with(linux, func(f *hostfuncs.Facts) {
				f.Env["MCP_RESUME_STATE_DIR"] = "/e/dir"
				f.Env["MCP_RESUME_INSTANCE"] = "work"
			}),
			want: Config{App: "app", StateDir: "/e/dir/app", StateRoot: "/e/dir", InstanceKey: "mine", Vouch: "MCP_RESUME_INSTANCE"},
		},
		{
			name:  "root state dir",
			in:    hostfuncs.OpenInput{App: "MyApp", StateRoot: "/", Instance: strp("-")},
			facts: linux,
			want:  Config{App: "MyApp", StateDir: "/+my+app", StateRoot: "/"},
		},
		{
			name:  "declared no instance",
			in:    hostfuncs.OpenInput{App: "app", Instance: strp("-")},
			facts: linux,
			want:  Config{App: "app", StateDir: home + "/app", StateRoot: home},
		},
		{
			name:  "declared empty instance",
			in:    hostfuncs.OpenInput{App: "app", Instance: strp("")},
			facts: with(linux, func(f *hostfuncs.Facts) { f.Env["MCP_RESUME_INSTANCE"] = "work" }),
			want:  Config{App: "app", StateDir: home + "/app", StateRoot: home, Vouch: "MCP_RESUME_INSTANCE"},
		},
		{
			name:  "env no instance",
			in:    hostfuncs.OpenInput{App: "app"},
			facts: with(linux, func(f *hostfuncs.Facts) { f.Env["MCP_RESUME_INSTANCE"] = "-" }),
			want:  Config{App: "app", StateDir: home + "/app", StateRoot: home},
		},
		{
			name:  "no args, no cwd, no env: no instance",
			in:    hostfuncs.OpenInput{App: "app"},
			facts: with(linux, func(f *hostfuncs.Facts) { f.Args = nil }),
			want:  Config{App: "app", StateDir: home + "/app", StateRoot: home},
		},
		{
			name:  "only volatile env: no instance",
			in:    hostfuncs.OpenInput{App: "app"},
			facts: with(linux, func(f *hostfuncs.Facts) { f.Args = nil; f.Env["SHLVL"] = "2"; f.Env["_"] = "/usr/bin/x" }),
			want:  Config{App: "app", StateDir: home + "/app", StateRoot: home},
		},
		{
			name:  "MCP_RESUME=on vouches for the host",
			in:    hostfuncs.OpenInput{App: "app", Instance: strp("-")},
			facts: with(linux, func(f *hostfuncs.Facts) { f.Env["MCP_RESUME"] = "on"; f.Env["MCP_RESUME_INSTANCE"] = "work" }),
			want:  Config{App: "app", StateDir: home + "/app", StateRoot: home, Vouch: "MCP_RESUME=on"},
		},
		{
			name:  "a declared instance does not vouch",
			in:    hostfuncs.OpenInput{App: "app", Instance: strp("tenant")},
			facts: linux,
			want:  Config{App: "app", StateDir: home + "/app", StateRoot: home, InstanceKey: "tenant"},
		},
		{
			name:  "MCP_RESUME=off",
			in:    hostfuncs.OpenInput{App: "app"},
			facts: with(linux, func(f *hostfuncs.Facts) { f.Args = nil; f.Env["MCP_RESUME"] = "off" }),
			want:  Config{App: "app", StateDir: home + "/app", StateRoot: home, InstanceKey: DefaultInstanceKey(hostfuncs.Facts{Env: map[string]string{"MCP_RESUME": "off"}}), Off: true},
		},
		{
			name:  "no home",
			in:    hostfuncs.OpenInput{App: "app"},
			facts: with(linux, func(f *hostfuncs.Facts) { f.Args = nil; f.Home = "" }),
			want:  Config{App: "app", Problem: "no home directory to put the default state directory in: set MCP_RESUME_STATE_DIR"},
		},
		{
			name:  "unsupported system",
			in:    hostfuncs.OpenInput{App: "app", StateRoot: "/s"},
			facts: with(linux, func(f *hostfuncs.Facts) { f.Args = nil; f.OS = "win32" }),
			want:  Config{App: "app", StateDir: "/s/app", StateRoot: "/s", Problem: `process identity is not supported on "win32" (spec 000, Platform Support)`},
		},
		{
			name:     "facts unusable",
			in:       hostfuncs.OpenInput{App: "app", StateRoot: "/s"},
			facts:    linux,
			factsBad: true,
			want:     Config{App: "app", StateDir: "/s/app", StateRoot: "/s", Problem: "mcp_resume_facts gave no usable answer"},
		},
		{name: "bad app", in: hostfuncs.OpenInput{App: "../x"}, facts: linux, wantCode: hostfuncs.CodeInvalidApp},
		{name: "no app", in: hostfuncs.OpenInput{}, facts: linux, wantCode: hostfuncs.CodeInvalidApp},
		{name: "relative state root", in: hostfuncs.OpenInput{App: "a", StateRoot: "state"}, facts: linux, wantCode: hostfuncs.CodeInvalidOption},
		{name: "relative env state dir", in: hostfuncs.OpenInput{App: "a"}, facts: with(linux, func(f *hostfuncs.Facts) { f.Env["MCP_RESUME_STATE_DIR"] = "rel" }), wantCode: hostfuncs.CodeInvalidOption},
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
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Configure() = %+v, want %+v", got, tt.want)
			}
			if got.Resume() != (!tt.want.Off && tt.want.Problem == "" && tt.want.KeyProblem == "") {
				t.Errorf("Resume() = %v", got.Resume())
			}
		})
	}
}

// TestAppDirName: two different app names never name one directory, even
// on a case-insensitive file system (the attacker case: "MyApp" and
// "myapp" on macOS's default APFS), and the mapping inverts.
func TestAppDirName(t *testing.T) {
	apps := []string{"myapp", "MyApp", "MYAPP", "myApp", "m", "M", "a.B_c-D9", "x" + strings.Repeat("Y", 63), "9lives", "my-app", "my.app"}
	seen := map[string]string{}
	for _, app := range apps {
		d := AppDirName(app)
		if strings.ToLower(d) != d {
			t.Errorf("AppDirName(%q) = %q holds uppercase", app, d)
		}
		if other, dup := seen[strings.ToLower(d)]; dup {
			t.Errorf("apps %q and %q share directory %q ignoring case", other, app, d)
		}
		seen[strings.ToLower(d)] = app
		if back, ok := AppFromDirName(d); !ok || back != app {
			t.Errorf("AppFromDirName(%q) = %q, %v, want %q", d, back, ok, app)
		}
	}
	if AppDirName("MyApp") != "+my+app" || AppDirName("my-app") != "my-app" {
		t.Errorf("AppDirName: %q, %q", AppDirName("MyApp"), AppDirName("my-app"))
	}
	for _, bad := range []string{"MyApp", "+", "a+", "a+1", "++a", ".x", "", "a/b"} {
		if app, ok := AppFromDirName(bad); ok {
			t.Errorf("AppFromDirName(%q) = %q, true; want false", bad, app)
		}
	}
}

// TestDefaultInstanceKey: launches of one command that differ in working
// directory, environment or the split of their arguments get different
// keys; launches that differ only in the variables that change on every
// launch get the same key.
func TestDefaultInstanceKey(t *testing.T) {
	base := hostfuncs.Facts{Args: []string{"serve"}, Cwd: "/ws/A", Env: map[string]string{"PATH": "/usr/bin", "ACCOUNT": "work"}}
	with := func(change func(f *hostfuncs.Facts)) hostfuncs.Facts {
		f := base
		f.Args = append([]string(nil), base.Args...)
		f.Env = map[string]string{}
		for k, v := range base.Env {
			f.Env[k] = v
		}
		change(&f)
		return f
	}
	differ := map[string]hostfuncs.Facts{
		"another project (cwd /ws/B)":        with(func(f *hostfuncs.Facts) { f.Cwd = "/ws/B" }),
		"another account (ACCOUNT=personal)": with(func(f *hostfuncs.Facts) { f.Env["ACCOUNT"] = "personal" }),
		"a variable more":                    with(func(f *hostfuncs.Facts) { f.Env["DEBUG"] = "" }),
		"no cwd":                             with(func(f *hostfuncs.Facts) { f.Cwd = "" }),
		"arguments split differently":        with(func(f *hostfuncs.Facts) { f.Args = []string{"ser", "ve"} }),
		"an argument more":                   with(func(f *hostfuncs.Facts) { f.Args = append(f.Args, "") }),
		"argument moved into the cwd":        with(func(f *hostfuncs.Facts) { f.Args = nil; f.Cwd = "serve" }),
		"value moved into the name":          with(func(f *hostfuncs.Facts) { delete(f.Env, "ACCOUNT"); f.Env["ACCOUNT=work"] = "" }),
		"name/value boundary":                with(func(f *hostfuncs.Facts) { delete(f.Env, "ACCOUNT"); f.Env["ACCOUN"] = "Twork" }),
		"MCP_RESUME_LAUNCHERS set":           with(func(f *hostfuncs.Facts) { f.Env["MCP_RESUME_LAUNCHERS"] = "x" }),
	}
	k := DefaultInstanceKey(base)
	seen := map[string]string{k: "base"}
	for name, f := range differ {
		got := DefaultInstanceKey(f)
		if other, dup := seen[got]; dup {
			t.Errorf("%s: same key as %s", name, other)
		}
		seen[got] = name
	}
	same := with(func(f *hostfuncs.Facts) {
		for i, n := range VolatileEnv {
			f.Env[n] = "launch-" + strconv.Itoa(i)
		}
	})
	if DefaultInstanceKey(same) != k {
		t.Errorf("the variables of VolatileEnv changed the key")
	}
	if DefaultInstanceKey(hostfuncs.Facts{Env: map[string]string{"PWD": "/x"}}) != "" {
		t.Errorf("only volatile variables: want no instance")
	}
}

// TestConfigure_Undecodable: two launches whose arguments (or working
// directory, environment, declared instance) differ only in bytes that
// are not UTF-8 reach the plugin equal (U+FFFD in place of each), so
// resume is off for both, with a problem that names the input but never
// quotes its value. The instance key of the other inputs does not matter.
func TestConfigure_Undecodable(t *testing.T) {
	linux := hostfuncs.Facts{OS: "linux", PID: 100, Home: "/home/ada", Args: []string{"--x=ok"}, Cwd: "/ws", Env: map[string]string{"TOKEN": "s3cret"}}
	bad := "--x=\ufffd" // what every host sends for "--x=\xff" and "--x=\xfe" alike
	tests := []struct {
		name   string
		in     hostfuncs.OpenInput
		change func(f *hostfuncs.Facts)
		want   string // a part of KeyProblem; "" for none
	}{
		{name: "argument", change: func(f *hostfuncs.Facts) { f.Args = []string{"a", bad} }, want: "argument 2"},
		{name: "cwd", change: func(f *hostfuncs.Facts) { f.Cwd = "/ws/" + bad }, want: "working directory"},
		{name: "env value", change: func(f *hostfuncs.Facts) { f.Env["TOKEN"] = bad }, want: `environment variable "TOKEN"`},
		{name: "env name", change: func(f *hostfuncs.Facts) { f.Env[bad] = "1" }, want: "environment variable"},
		{name: "volatile env value is not a key input", change: func(f *hostfuncs.Facts) { f.Env["OLDPWD"] = bad }, want: ""},
		{name: "env instance", change: func(f *hostfuncs.Facts) { f.Env["MCP_RESUME_INSTANCE"] = bad }, want: "MCP_RESUME_INSTANCE"},
		{name: "declared instance", in: hostfuncs.OpenInput{Instance: strp(bad)}, change: func(f *hostfuncs.Facts) {}, want: "instance option"},
		{name: "declared ASCII instance covers a bad argument", in: hostfuncs.OpenInput{Instance: strp("work")}, change: func(f *hostfuncs.Facts) { f.Args = []string{bad} }, want: ""},
		{name: "env ASCII instance covers a bad env value", change: func(f *hostfuncs.Facts) { f.Env["MCP_RESUME_INSTANCE"] = "work"; f.Env["X"] = bad }, want: ""},
		{name: "no instance declared covers a bad argument", in: hostfuncs.OpenInput{Instance: strp("-")}, change: func(f *hostfuncs.Facts) { f.Args = []string{bad} }, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := linux
			f.Env = map[string]string{"TOKEN": "s3cret"}
			tt.change(&f)
			in := tt.in
			in.App = "app"
			c, werr := Configure(in, f, true)
			if werr != nil {
				t.Fatal(werr)
			}
			switch {
			case tt.want == "" && c.KeyProblem != "":
				t.Errorf("KeyProblem = %q, want none", c.KeyProblem)
			case tt.want != "" && !strings.Contains(c.KeyProblem, tt.want):
				t.Errorf("KeyProblem = %q, want it to name %q", c.KeyProblem, tt.want)
			case tt.want != "" && (c.Resume() || strings.Contains(c.KeyProblem, "s3cret") || !strings.Contains(c.KeyProblem, "MCP_RESUME_INSTANCE")):
				t.Errorf("KeyProblem = %q, Resume() = %v: want resume off, the fix named, no value quoted", c.KeyProblem, c.Resume())
			}
		})
	}
	// Invalid UTF-8 that reached the plugin raw counts too.
	f := linux
	f.Args = []string{"--x=\xff"}
	if c, _ := Configure(hostfuncs.OpenInput{App: "app"}, f, true); c.KeyProblem == "" {
		t.Errorf("a raw invalid byte in an argument left the key trusted")
	}
}

func TestConfigure_Launchers(t *testing.T) {
	f := hostfuncs.Facts{OS: "linux", PID: 1, Home: "/h", Env: map[string]string{"MCP_RESUME_LAUNCHERS": "direnv, foo"}}
	c, werr := Configure(hostfuncs.OpenInput{App: "a", Launchers: []string{"my-wrapper"}}, f, true)
	if werr != nil {
		t.Fatal(werr)
	}
	for _, n := range []string{"sh", "npx", "direnv", "foo", "my-wrapper"} {
		if !c.Launchers[n] {
			t.Errorf("launcher set lacks %q", n)
		}
	}
}

// TestConfigure_AppDirNameAlias: an app's directory name opens that app (a
// CLI listing a state root opens each directory it finds), and a '+' that is
// not such a name is still refused.
func TestConfigure_AppDirNameAlias(t *testing.T) {
	f := hostfuncs.Facts{OS: "linux", PID: 100, Home: "/home/u"}
	c, werr := Configure(hostfuncs.OpenInput{App: "+my+app", StateRoot: "/r"}, f, true)
	if werr != nil || c.App != "MyApp" || c.StateDir != "/r/+my+app" {
		t.Errorf("Configure(+my+app) = %+v, %v; want app MyApp in /r/+my+app", c, werr)
	}
	for _, bad := range []string{"+", "+My", "a+", "++a", "+1"} {
		if _, werr := Configure(hostfuncs.OpenInput{App: bad, StateRoot: "/r"}, f, true); werr == nil || werr.Code != hostfuncs.CodeInvalidApp {
			t.Errorf("Configure(%q) = %v, want invalid_app", bad, werr)
		}
	}
}
