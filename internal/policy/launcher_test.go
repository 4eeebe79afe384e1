package policy

import (
	"testing"
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
		{name: "npm run title is not npm exec", p: Process{Name: "npm run dev"}},
		{name: "node npm-cli.js exec", p: Process{Name: "node", Args: []string{"node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "exec", "x"}}, want: true},
		{name: "nodejs npx", p: Process{Name: "nodejs", Args: []string{"/usr/bin/nodejs", "/usr/bin/npx", "x"}}, want: true},
		{name: "node yarn.mjs", p: Process{Name: "node", Args: []string{"node", "/opt/yarn/yarn.mjs", "dlx", "x"}}, want: true},
		{name: "node script", p: Process{Name: "node", Args: []string{"node", "/opt/host/cli.js"}}},
		{name: "node alone", p: Process{Name: "node", Args: []string{"node"}}},
		{name: "bun x", p: Process{Name: "bun", Args: []string{"bun", "x", "server"}}, want: true},
		{name: "bun run", p: Process{Name: "bun", Args: []string{"bun", "run", "host.ts"}}},
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
	for _, n := range append(DefaultLaunchers(), "foo", "bar", "baz", "qux") {
		if !set[n] {
			t.Errorf("NewLauncherSet lacks %q", n)
		}
	}
	if want := len(DefaultLaunchers()) + 4; len(set) != want {
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

// TestDefaults_Copies: the exported lists are copies; changing one changes
// nothing for the next caller.
func TestDefaults_Copies(t *testing.T) {
	l := DefaultLaunchers()
	l[0] = "sudo"
	if DefaultLaunchers()[0] != "sh" {
		t.Error("DefaultLaunchers returned the package's own slice")
	}
	r := Reapers()
	r[0] = "claude"
	if Reapers()[0] != "init" {
		t.Error("Reapers returned the package's own slice")
	}
}
