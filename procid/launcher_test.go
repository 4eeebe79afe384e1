package procid

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLauncherSet_IsLauncher(t *testing.T) {
	tests := []struct {
		name string
		p    Process
		want bool
	}{
		{name: "sh -c", p: Process{Name: "sh", Args: []string{"sh", "-c", "server"}}, want: true},
		{name: "bash -lc", p: Process{Name: "bash", Args: []string{"/bin/bash", "-lc", "server"}}, want: true},
		{name: "fish --command=", p: Process{Name: "fish", Args: []string{"fish", "--command=server"}}, want: true},
		{name: "bash script after --", p: Process{Name: "run.sh", Args: []string{"/bin/bash", "--", "run.sh"}}, want: true},
		{name: "dash script", p: Process{Name: "run.sh", Args: []string{"/bin/dash", "/opt/run.sh"}}, want: true},
		{name: "login shell", p: Process{Name: "bash", Args: []string{"-bash"}}},
		{name: "interactive shell", p: Process{Name: "zsh", Args: []string{"zsh", "-i"}}},
		{name: "shell reading stdin", p: Process{Name: "sh", Args: []string{"sh", "-s", "-"}}},
		{name: "shell without args", p: Process{Name: "sh"}},
		{name: "env without args", p: Process{Name: "env"}, want: true},
		{name: "uv run", p: Process{Name: "uv", Args: []string{"uv", "run", "server"}}, want: true},
		{name: "uvx by args only", p: Process{Name: "python3", Args: []string{"/usr/bin/uvx", "server"}}, want: true},
		{name: "npm exec title in comm", p: Process{Name: "npm exec ./tiny"}, want: true},
		{name: "npm x title in args", p: Process{Name: "node", Args: []string{"npm x ./tinypkg"}}, want: true},
		{name: "npm exec without package", p: Process{Name: "npm exec"}, want: true},
		// npm's own titles, as observed with npm 11.19.1 (comm, then cmdline).
		{name: "npm start title", p: Process{Name: "npm start", Args: []string{"npm start"}}, want: true},
		{name: "npm run title with script args", p: Process{Name: "npm run who --a", Args: []string{"npm run who --a b"}}, want: true},
		{name: "npm run-script title truncated in comm", p: Process{Name: "npm run-script "}, want: true},
		{name: "npm rum alias title", p: Process{Name: "npm rum who", Args: []string{"npm rum who"}}, want: true},
		{name: "npm test title", p: Process{Name: "npm test", Args: []string{"npm test"}}, want: true},
		{name: "npm t alias title", p: Process{Name: "npm t", Args: []string{"npm t"}}, want: true},
		{name: "npm restart title", p: Process{Name: "npm restart", Args: []string{"npm restart"}}, want: true},
		{name: "npm before its title is set", p: Process{Name: "npm", Args: []string{"npm"}}, want: true},
		{name: "npm title needs a command", p: Process{Name: "npm ", Args: []string{"npm "}}},
		{name: "npmx is not npm", p: Process{Name: "npmx", Args: []string{"npmx", "run"}}},
		// Other runners, in the shapes observed (pnpm 12.21.0, yarn 1.22.22,
		// bun 1.4.5, deno 2.9.6, uv, pdm, hatch; poetry run and pipx run exec
		// the command and leave no process of their own).
		{name: "pnpm start", p: Process{Name: "pnpm", Args: []string{"/usr/lib/node_modules/.bin/pnpm", "start"}}, want: true},
		{name: "pnpm exec", p: Process{Name: "pnpm", Args: []string{"/usr/lib/node_modules/.bin/pnpm", "exec", "server"}}, want: true},
		{name: "pnx alias", p: Process{Name: "pnx", Args: []string{"/usr/lib/node_modules/.bin/pnx", "server"}}, want: true},
		{name: "yarn classic run", p: Process{Name: "node", Args: []string{"node", "/usr/lib/node_modules/.bin/yarn", "run", "who"}}, want: true},
		{name: "yarn classic script", p: Process{Name: "node", Args: []string{"node", "/usr/local/bin/yarn", "who"}}, want: true},
		{name: "yarn berry release", p: Process{Name: "node", Args: []string{"node", "/ws/.yarn/releases/yarn-4.5.0.cjs", "run", "who"}}, want: true},
		{name: "yarn-like script is not yarn", p: Process{Name: "node", Args: []string{"node", "/ws/yarn-helper.js"}}},
		{name: "bun run script", p: Process{Name: "bun", Args: []string{"/usr/local/bin/bun", "run", "who"}}, want: true},
		{name: "bun script shorthand", p: Process{Name: "bun", Args: []string{"/usr/local/bin/bun", "who"}}, want: true},
		{name: "bun run with a flag first", p: Process{Name: "bun", Args: []string{"bun", "--bun", "run", "who"}}, want: true},
		{name: "bun flag with a value cannot tell", p: Process{Name: "bun", Args: []string{"bun", "--cwd", "app", "host.ts"}}},
		{name: "bun run, then a flag with a value", p: Process{Name: "bun", Args: []string{"bun", "run", "--cwd", "app", "host.ts"}}},
		{name: "bun run --silent script", p: Process{Name: "bun", Args: []string{"bun", "run", "--silent", "who"}}, want: true},
		{name: "bun flag with its value after =", p: Process{Name: "bun", Args: []string{"bun", "--cwd=app", "run", "who"}}, want: true},
		{name: "bun runs a file in its own process", p: Process{Name: "bun", Args: []string{"bun", "host.ts"}}},
		{name: "bun run a path", p: Process{Name: "bun", Args: []string{"bun", "run", "./dist/host"}}},
		{name: "bun install", p: Process{Name: "bun", Args: []string{"bun", "install"}}},
		{name: "bun alone", p: Process{Name: "bun", Args: []string{"bun"}}},
		{name: "deno task", p: Process{Name: "deno", Args: []string{"/usr/local/bin/deno", "task", "who"}}, want: true},
		{name: "deno task with a flag first", p: Process{Name: "deno", Args: []string{"deno", "-q", "task", "who"}}, want: true},
		{name: "deno run is a program", p: Process{Name: "deno", Args: []string{"deno", "run", "-A", "host.ts"}}},
		{name: "uv run", p: Process{Name: "uv", Args: []string{"uv", "run", "--no-project", "server"}}, want: true},
		{name: "uvx after its exec into uv", p: Process{Name: "uv", Args: []string{"/usr/bin/uv", "tool", "uvx", "server"}}, want: true},
		{name: "pdm run", p: Process{Name: "pdm", Args: []string{"/venv/bin/python3", "/venv/bin/pdm", "run", "who"}}, want: true},
		{name: "hatch run", p: Process{Name: "hatch", Args: []string{"/venv/bin/python3", "/venv/bin/hatch", "run", "who"}}, want: true},
		{name: "node npm-cli.js exec", p: Process{Name: "node", Args: []string{"node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "exec", "x"}}, want: true},
		{name: "nodejs npx", p: Process{Name: "nodejs", Args: []string{"/usr/bin/nodejs", "/usr/bin/npx", "x"}}, want: true},
		{name: "node yarn.mjs", p: Process{Name: "node", Args: []string{"node", "/opt/yarn/yarn.mjs", "dlx", "x"}}, want: true},
		{name: "node script", p: Process{Name: "node", Args: []string{"node", "/opt/host/cli.js"}}},
		{name: "node alone", p: Process{Name: "node", Args: []string{"node"}}},
		{name: "bun x", p: Process{Name: "bun", Args: []string{"bun", "x", "server"}}, want: true},
		{name: "bun run a file", p: Process{Name: "bun", Args: []string{"bun", "run", "host.ts"}}},
		{name: "sudo is not a launcher", p: Process{Name: "sudo", Args: []string{"sudo", "server"}}},
		{name: "host", p: Process{Name: "claude", Args: []string{"claude"}}},
		{name: "short name is not a prefix match", p: Process{Name: "s", Args: []string{"s"}}},
	}
	set := NewLauncherSet(nil, "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := set.isLauncher(tt.p); got != tt.want {
				t.Errorf("isLauncher(%+v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestNewLauncherSet(t *testing.T) {
	set := NewLauncherSet([]string{"baz", " ", " qux "}, " foo, ,bar,")
	for _, n := range append(append([]string(nil), defaultLaunchers...), "foo", "bar", "baz", "qux") {
		if !set[n] {
			t.Errorf("NewLauncherSet lacks %q", n)
		}
	}
	if want := len(defaultLaunchers) + 4; len(set) != want {
		t.Errorf("NewLauncherSet has %d names, want %d: %v", len(set), want, set)
	}
	for _, n := range []string{"", "sudo", "doas", "su"} {
		if set[n] {
			t.Errorf("NewLauncherSet holds %q", n)
		}
	}
}

func TestIsReaper(t *testing.T) {
	tests := []struct {
		name string
		p    Process
		want bool
	}{
		{name: "pid 1", p: Process{PID: 1, Name: "process_api"}, want: true},
		{name: "pid 0", p: Process{PID: 0, Name: "kernel_task"}, want: true},
		{name: "systemd --user", p: Process{PID: 900, Name: "systemd", Args: []string{"/lib/systemd/systemd", "--user"}}, want: true},
		{name: "launchd", p: Process{PID: 900, Name: "launchd"}, want: true},
		{name: "tini by args", p: Process{PID: 7, Name: "x", Args: []string{"/sbin/tini", "--"}}, want: true},
		{name: "shim truncated", p: Process{PID: 7, Name: "containerd-shim"}, want: true},
		{name: "host", p: Process{PID: 100, Name: "claude"}},
		{name: "init-like prefix", p: Process{PID: 100, Name: "initrd-helper"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isReaper(tt.p); got != tt.want {
				t.Errorf("isReaper(%+v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

// TestSharedServerKind: the never-host list, on the comm and argv shapes
// these processes really have (observed: tmux 3.3a "tmux: server" with the
// first client's argv; OpenSSH's retitled "sshd: user@notty" and, from 9.8,
// comm "sshd-session"; screen's server argv[0] "SCREEN"; comm truncated to
// 15 bytes for gnome-terminal-server and wezterm-mux-server).
func TestSharedServerKind(t *testing.T) {
	tests := []struct {
		name string
		p    Process
		want string // a word of the kind, "" for none
	}{
		{"sshd-session per connection", Process{Name: "sshd-session", Args: []string{"sshd-session: alice@notty"}}, "remote-login"},
		{"sshd before 9.8", Process{Name: "sshd", Args: []string{"sshd: alice@notty"}}, "remote-login"},
		{"sshd title with a path", Process{Name: "sshd", Args: []string{"sshd: /usr/sbin/sshd -D [listener] 0 of 10-100 startups"}}, "remote-login"},
		{"sshd by title only, comm unreadable", Process{Args: []string{"sshd: alice@pts/0"}}, "remote-login"},
		{"dropbear", Process{Name: "dropbear", Args: []string{"/usr/sbin/dropbear", "-F"}}, "remote-login"},
		{"mosh-server", Process{Name: "mosh-server", Args: []string{"mosh-server", "new", "-s"}}, "remote-login"},
		{"tmux server", Process{Name: "tmux: server", Args: []string{"tmux", "-L", "x", "new-session", "-d"}}, "multiplexer"},
		{"tmux server, args unknown", Process{Name: "tmux: server"}, "multiplexer"},
		{"screen server", Process{Name: "screen", Args: []string{"SCREEN", "-dmS", "s"}}, "multiplexer"},
		{"zellij server", Process{Name: "zellij", Args: []string{"/usr/bin/zellij", "--server", "/run/user/1000/zellij/0.40.0/s"}}, "multiplexer"},
		{"gnome-terminal-server truncated", Process{Name: "gnome-terminal-", Args: []string{"/usr/libexec/gnome-terminal-server"}}, "terminal"},
		{"wezterm-mux-server truncated", Process{Name: "wezterm-mux-ser"}, "terminal"},
		{"kitty", Process{Name: "kitty", Args: []string{"/usr/bin/kitty"}}, "terminal"},
		{"terminator is a python script", Process{Name: "terminator", Args: []string{"/usr/bin/python3", "/usr/bin/terminator"}}, "terminal"},
		{"xfce4-terminal", Process{Name: "xfce4-terminal"}, "terminal"},
		{"foot server", Process{Name: "foot", Args: []string{"foot", "--server"}}, "terminal"},
		{"macOS Terminal", Process{Name: "Terminal", Args: []string{"/System/Applications/Utilities/Terminal.app/Contents/MacOS/Terminal"}}, "terminal"},
		{"ssh client is not sshd", Process{Name: "ssh", Args: []string{"ssh", "-o", "ControlMaster=auto", "host", "server"}}, ""},
		{"VS Code is an MCP host", Process{Name: "code", Args: []string{"/usr/share/code/code"}}, ""},
		{"Warp is an MCP host", Process{Name: "warp", Args: []string{"/opt/warpdotdev/warp-terminal/warp"}}, ""},
		{"claude", Process{Name: "claude", Args: []string{"claude"}}, ""},
		{"a name with a colon that is no title", Process{Name: "node", Args: []string{"node:sshd"}}, ""},
		{"sshd as a word of another title", Process{Name: "npm exec sshd", Args: []string{"npm exec sshd"}}, ""},
		{"st is exact", Process{Name: "stunnel"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sharedServerKind(tt.p)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("sharedServerKind(%+v) = %q, want a kind with %q", tt.p, got, tt.want)
			}
		})
	}
	for _, s := range sharedServers {
		for _, n := range strings.Fields(s.names) {
			if NewLauncherSet(nil, "")[n] {
				t.Errorf("%s is both a launcher and a shared server", n)
			}
		}
	}
}

// TestLauncherSet_RealNPM runs the real npm (skipped where it is not
// installed) with package.json scripts that record the comm and cmdline of
// their parent, the npm process, while it runs them, and checks that every
// shape npm gives itself is a launcher: the titles npm sets differ by
// version, and this is where a new one would show.
func TestLauncherSet_RealNPM(t *testing.T) {
	if testing.Short() {
		t.Skip("runs npm")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed")
	}
	dir := t.TempDir()
	// Arguments after "--" are appended to the script: true takes them.
	record := `cat /proc/$PPID/comm > "$REC.comm"; cat /proc/$PPID/cmdline > "$REC.cmdline"; true`
	pkg := `{"name": "launcher-shapes", "version": "1.0.0", "private": true, "scripts": {` +
		`"start": "REC=start; ` + strings.ReplaceAll(record, `"`, `\"`) + `", ` +
		`"test": "REC=test; ` + strings.ReplaceAll(record, `"`, `\"`) + `", ` +
		`"serve": "REC=serve; ` + strings.ReplaceAll(record, `"`, `\"`) + `"}}`
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(pkg), 0o644); err != nil {
		t.Fatal(err)
	}
	set := NewLauncherSet(nil, "")
	for _, tc := range []struct {
		rec  string
		args []string
	}{
		{"start", []string{"start"}},
		{"start", []string{"--silent", "start"}},
		{"test", []string{"test"}},
		{"test", []string{"t"}},
		{"serve", []string{"run", "serve", "--", "--port", "3000"}},
		{"serve", []string{"run-script", "serve"}},
		{"serve", []string{"rum", "serve"}},
		{"exec", []string{"exec", "-c", "REC=exec; " + record}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			rec := filepath.Join(dir, tc.rec)
			os.Remove(rec + ".comm")
			cmd := exec.Command(npm, tc.args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("npm %q: %v\n%s", tc.args, err, out)
			}
			comm, err := os.ReadFile(rec + ".comm")
			if err != nil {
				t.Fatalf("the script did not record its parent: %v", err)
			}
			cmdline, _ := os.ReadFile(rec + ".cmdline")
			p := Process{Name: strings.TrimSuffix(string(comm), "\n"), Args: splitCmdline(cmdline)}
			if !set.isLauncher(p) {
				t.Errorf("npm %q ran its script as %+v, which is not a launcher", tc.args, p)
			}
			t.Logf("npm %q: comm %q, args %q", tc.args, p.Name, p.Args)
		})
	}
}

// TestLauncherSet_RealRunners runs each script runner that is installed
// (pnpm, yarn, bun, deno, uv, pdm, hatch; each is skipped when it is not on
// PATH) with a script that records its ancestors while it runs, and checks
// that the runner, the first ancestor that is not a shell, is a launcher in
// the shape it really has (a native binary, node running a script, python
// running an entry point).
func TestLauncherSet_RealRunners(t *testing.T) {
	if testing.Short() {
		t.Skip("runs script runners")
	}
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.sh")
	// Four ancestors: comm and cmdline of each, nearest first. The ppid is
	// the field after the last ')' and the state.
	recorder := `p=$$; i=0
while [ $i -lt 4 ]; do
	p=$(sed 's/.*) . \([0-9]*\) .*/\1/' /proc/$p/stat)
	cat /proc/$p/comm > "$REC_DIR/$1.$i.comm"; cat /proc/$p/cmdline > "$REC_DIR/$1.$i.cmdline"
	i=$((i+1))
done
`
	files := map[string]string{
		"rec.sh":       recorder,
		"package.json": `{"name": "runner-shapes", "version": "1.0.0", "private": true, "scripts": {"who": "sh ` + rec + ` who", "start": "sh ` + rec + ` start"}}`,
		"deno.json":    `{"tasks": {"who": "sh ` + rec + ` who"}}`,
		"pyproject.toml": "[project]\nname = \"runner-shapes\"\nversion = \"0.1.0\"\nrequires-python = \">=3.8\"\ndependencies = []\n" +
			"[tool.hatch.envs.default]\nskip-install = true\n[tool.hatch.envs.default.scripts]\nwho = \"sh " + rec + " who\"\n" +
			"[tool.pdm.scripts]\nwho = \"sh " + rec + " who\"\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set := NewLauncherSet(nil, "")
	for _, tc := range []struct {
		tool string
		args []string
		rec  string
	}{
		{"pnpm", []string{"run", "who"}, "who"},
		{"pnpm", []string{"start"}, "start"},
		{"pnpm", []string{"exec", "sh", rec, "exec"}, "exec"},
		{"yarn", []string{"run", "who"}, "who"},
		{"yarn", []string{"who"}, "who"},
		{"bun", []string{"run", "who"}, "who"},
		{"bun", []string{"who"}, "who"},
		{"deno", []string{"task", "who"}, "who"},
		{"uv", []string{"run", "--no-project", "sh", rec, "uv"}, "uv"},
		{"pdm", []string{"run", "who"}, "who"},
		{"hatch", []string{"run", "who"}, "who"},
	} {
		t.Run(tc.tool+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			bin, err := exec.LookPath(tc.tool)
			if err != nil {
				t.Skipf("%s is not installed", tc.tool)
			}
			for i := 0; i < 4; i++ {
				os.Remove(filepath.Join(dir, tc.rec+"."+itoa(i)+".comm"))
			}
			cmd := exec.Command(bin, tc.args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "REC_DIR="+dir, "NO_UPDATE_NOTIFIER=1", "DENO_NO_UPDATE_CHECK=1", "npm_config_update_notifier=false")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s %q: %v\n%s", tc.tool, tc.args, err, out)
			}
			var chain []Process
			for i := 0; i < 4; i++ {
				comm, err := os.ReadFile(filepath.Join(dir, tc.rec+"."+itoa(i)+".comm"))
				if err != nil {
					t.Fatalf("the script did not record ancestor %d: %v", i, err)
				}
				cmdline, _ := os.ReadFile(filepath.Join(dir, tc.rec+"."+itoa(i)+".cmdline"))
				chain = append(chain, Process{Name: strings.TrimSuffix(string(comm), "\n"), Args: splitCmdline(cmdline)})
			}
			t.Logf("%s %q ran the script under %+v", tc.tool, tc.args, chain)
			for _, p := range chain {
				if !set.isLauncher(p) {
					t.Fatalf("%+v, an ancestor of the script below the test, is not a launcher", p)
				}
				if _, shell := shellSpecOf(p.Name); !shell {
					return // the runner itself, a launcher
				}
			}
			t.Fatalf("no runner among %+v", chain)
		})
	}
}

// TestSharedServerKind_RealMultiplexers starts a real tmux server and a real
// screen session (each skipped when not installed) with a window command,
// reads the window command's parent from /proc as the walk does, and checks
// that the parent is a shared server.
func TestSharedServerKind_RealMultiplexers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs tmux and screen")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		tool       string
		start, end []string
	}{
		{"tmux", []string{"-L", "policy-test", "-f", "/dev/null", "new-session", "-d"}, []string{"-L", "policy-test", "kill-server"}},
		{"screen", []string{"-dmS", "policy-test"}, []string{"-S", "policy-test", "-X", "quit"}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			bin, err := exec.LookPath(tc.tool)
			if err != nil {
				t.Skipf("%s is not installed", tc.tool)
			}
			mark := filepath.Join(dir, tc.tool+".ppid")
			// The window command records its parent pid, then waits.
			script := "echo $PPID > " + mark + ".tmp && mv " + mark + ".tmp " + mark + " && sleep 60"
			cmd := exec.Command(bin, append(tc.start, "sh", "-c", script)...)
			cmd.Env = append(os.Environ(), "TMUX=", "HOME="+dir, "SCREENDIR="+filepath.Join(dir, "screens"))
			os.Mkdir(filepath.Join(dir, "screens"), 0o700)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", tc.tool, err, out)
			}
			defer func() {
				end := exec.Command(bin, tc.end...)
				end.Env = cmd.Env
				end.Run()
			}()
			var ppid []byte
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if ppid, err = os.ReadFile(mark); err == nil || time.Now().After(deadline) {
					break
				}
			}
			if err != nil {
				t.Fatalf("the window command did not start: %v", err)
			}
			pid := strings.TrimSpace(string(ppid))
			stat, err := os.ReadFile("/proc/" + pid + "/stat")
			if err != nil {
				t.Fatal(err)
			}
			st, err := parseStat(stat)
			if err != nil {
				t.Fatal(err)
			}
			cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			p := Process{PID: st.pid, Name: st.comm, Args: splitCmdline(cmdline)}
			if kind := sharedServerKind(p); !strings.Contains(kind, "multiplexer") {
				t.Errorf("the %s server %+v is not a shared server (kind %q)", tc.tool, p, kind)
			}
			t.Logf("%s: the window's parent is %+v", tc.tool, p)
		})
	}
}
