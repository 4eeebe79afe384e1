package procid

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// shellRow is one invocation of a shell: is it a launcher (it runs a
// command) or a host (interactive, or reading its standard input)?
type shellRow struct {
	shell string   // the shell's name (comm)
	args  []string // its argument vector, args[0] included
	want  bool     // a launcher
	why   string
	// notHere: the row is not checked against the real shell, because the
	// installed version parses it differently on purpose (an option of
	// another version) or the shell is not a separate program here.
	notHere string
}

// shellTable is the option table of every shell on the launcher list. The
// operands "script" and "init" are files, "echo RAN-CMD" and "echo
// RAN-INIT" commands, for TestShells_RealShells.
var shellTable = []shellRow{
	// bash
	{"bash", []string{"bash", "-c", "echo RAN-CMD"}, true, "-c runs the first operand", ""},
	{"bash", []string{"bash", "-lc", "echo RAN-CMD"}, true, "c in a cluster", ""},
	{"bash", []string{"-bash"}, false, "login shell (argv[0] starts with '-') without operands: interactive", ""},
	{"bash", []string{"bash", "-i"}, false, "interactive", ""},
	{"bash", []string{"bash", "script"}, true, "a script operand", ""},
	{"bash", []string{"bash", "--init-file", "init"}, false, "--init-file takes a file: how VS Code starts its integrated terminal", ""},
	{"bash", []string{"bash", "--init-file", "init", "-i"}, false, "--init-file's file is not a script", ""},
	{"bash", []string{"bash", "-init-file", "init", "-i"}, false, "bash accepts its long options with one dash", ""},
	{"bash", []string{"bash", "--rcfile", "init", "-i"}, false, "--rcfile takes a file", ""},
	{"bash", []string{"bash", "-rcfile", "init"}, false, "-rcfile is --rcfile", ""},
	{"bash", []string{"bash", "--rcfile", "init", "script"}, true, "the operand after --rcfile's file is a script", ""},
	{"bash", []string{"bash", "--login", "-c", "echo RAN-CMD"}, true, "long flag, then -c", ""},
	{"bash", []string{"bash", "--noprofile", "--norc"}, false, "long flags only", ""},
	{"bash", []string{"bash", "-o", "vi"}, false, "-o takes an option name", ""},
	{"bash", []string{"bash", "+o", "history", "-i"}, false, "+o takes an option name", ""},
	{"bash", []string{"bash", "-o", "noglob", "script"}, true, "the operand after -o's name is a script", ""},
	{"bash", []string{"bash", "-O", "extglob"}, false, "-O takes a shopt name", ""},
	{"bash", []string{"bash", "+O", "extglob"}, false, "+O takes a shopt name", ""},
	{"bash", []string{"bash", "-O", "extglob", "script"}, true, "the operand after -O's name is a script", ""},
	{"bash", []string{"bash", "-xO", "extglob"}, false, "O at the end of a cluster takes the next word", ""},
	{"bash", []string{"bash", "-Ox", "extglob"}, false, "O takes the next word and x stays a flag: bash never takes the rest of the word", ""},
	{"bash", []string{"bash", "-oO", "noglob", "extglob"}, false, "each argument letter takes the next unused word", ""},
	{"bash", []string{"bash", "-co", "noglob", "echo RAN-CMD"}, true, "-c with -o: the command is the first operand after -o's name", ""},
	{"bash", []string{"bash", "-s", "script"}, false, "-s: the operands are positional parameters, commands come from stdin", ""},
	{"bash", []string{"bash", "-s", "-c", "echo RAN-CMD"}, true, "-c wins over -s", ""},
	{"bash", []string{"bash", "-i", "-c", "echo RAN-CMD"}, true, "-i with -c runs the command", ""},
	{"bash", []string{"bash", "--", "script"}, true, "-- ends the options", ""},
	{"bash", []string{"bash", "-", "script"}, true, "a lone - ends the options", ""},
	{"bash", []string{"bash", "-o"}, false, "-o without a name lists the options and reads stdin", ""},
	{"bash", []string{"bash", "--rcfile=init", "-i"}, false, "bash refuses --name=value and exits", ""},
	{"bash", []string{"bash", "-i", "--rcfile", "init"}, false, "long options only before short ones: bash refuses it and exits", ""},
	{"bash", []string{"bash", "--bogus", "script"}, false, "an unknown long option: bash exits", ""},
	// sh (dash here; bash in POSIX mode elsewhere), dash, ash
	{"sh", []string{"sh", "-c", "echo RAN-CMD"}, true, "-c", ""},
	{"sh", []string{"sh", "script"}, true, "a script operand", ""},
	{"sh", []string{"sh", "-s", "script"}, false, "-s reads stdin", ""},
	{"sh", []string{"sh", "-o", "noglob"}, false, "-o takes an option name", ""},
	{"sh", []string{"sh", "-ox", "noglob", "script"}, true, "o takes the next word, x is a flag, then the script", ""},
	{"sh", []string{"sh", "--rcfile", "init"}, false, "bash: an rc file; dash: refused", ""},
	{"dash", []string{"dash", "-o", "noglob"}, false, "-o takes an option name", ""},
	{"dash", []string{"dash", "-xo", "noglob", "script"}, true, "o at the end of a cluster, then the script", ""},
	{"dash", []string{"dash", "+o", "noglob"}, false, "+o takes an option name", ""},
	{"dash", []string{"dash", "-l"}, false, "login shell", ""},
	{"dash", []string{"dash", "-i", "-s", "script"}, false, "-s reads stdin", ""},
	{"dash", []string{"dash", "--login", "script"}, false, "dash has no long options: it exits", ""},
	{"ash", []string{"ash", "-o", "noglob"}, false, "-o takes an option name (busybox ash)", "no ash here"},
	{"ash", []string{"ash", "-c", "server"}, true, "-c (busybox ash)", "no ash here"},
	// zsh
	{"zsh", []string{"zsh", "-c", "echo RAN-CMD"}, true, "-c", ""},
	{"zsh", []string{"-zsh"}, false, "login shell", ""},
	{"zsh", []string{"zsh", "-o", "noglob"}, false, "-o takes an option name", ""},
	{"zsh", []string{"zsh", "-onoglob"}, false, "zsh takes the rest of the word as -o's name", ""},
	{"zsh", []string{"zsh", "-xo", "noglob", "script"}, true, "o at the end of a cluster, then the script", ""},
	{"zsh", []string{"zsh", "+o", "noglob"}, false, "+o takes an option name", ""},
	{"zsh", []string{"zsh", "--emulate", "sh"}, false, "--emulate takes a shell name", ""},
	{"zsh", []string{"zsh", "--emulate", "sh", "script"}, true, "the operand after --emulate's name is a script", ""},
	{"zsh", []string{"zsh", "--no-rcs"}, false, "every option name is a long flag", ""},
	{"zsh", []string{"zsh", "--no-rcs", "script"}, true, "long flag, then the script", ""},
	{"zsh", []string{"zsh", "-b", "script"}, true, "-b ends the options", ""},
	{"zsh", []string{"zsh", "-i", "-s", "script"}, false, "-s reads stdin", ""},
	{"zsh", []string{"zsh", "-ic", "echo RAN-CMD"}, true, "-ic", ""},
	{"zsh", []string{"zsh", "-c", "-x", "echo RAN-CMD"}, true, "options after -c, then the command", ""},
	// ksh93
	{"ksh", []string{"ksh", "-c", "echo RAN-CMD"}, true, "-c", ""},
	{"ksh", []string{"ksh", "-o", "vi"}, false, "-o takes an option name", ""},
	{"ksh", []string{"ksh", "-ovi"}, false, "ksh takes the rest of the word as -o's name", ""},
	{"ksh", []string{"ksh", "-o", "vi", "script"}, true, "the operand after -o's name is a script", ""},
	{"ksh", []string{"ksh", "--norc"}, false, "every option name is a long flag", ""},
	{"ksh", []string{"ksh", "--posix", "script"}, true, "long flag, then the script", ""},
	{"ksh", []string{"ksh", "-E"}, false, "flag only", ""},
	{"ksh", []string{"ksh", "-s", "script"}, false, "-s reads stdin", ""},
	{"ksh", []string{"ksh", "-R", "db"}, false, "-R takes a cross-reference file", "ksh93 before u+m; 93u+m refuses -R"},
	// mksh
	{"mksh", []string{"mksh", "-c", "echo RAN-CMD"}, true, "-c", ""},
	{"mksh", []string{"mksh", "-o", "noglob"}, false, "-o takes an option name", ""},
	{"mksh", []string{"mksh", "-onoglob"}, false, "mksh takes the rest of the word as -o's name", ""},
	{"mksh", []string{"mksh", "-l", "script"}, true, "login flag, then the script", ""},
	{"mksh", []string{"mksh", "-T", "/dev/tty7"}, false, "-T takes a terminal", "it would open a virtual console"},
	// fish
	{"fish", []string{"fish", "-c", "echo RAN-CMD"}, true, "-c takes the command", ""},
	{"fish", []string{"fish", "--command=echo RAN-CMD"}, true, "--command=", ""},
	{"fish", []string{"fish", "--command", "echo RAN-CMD"}, true, "--command and its argument", ""},
	{"fish", []string{"fish", "--comm=echo RAN-CMD"}, true, "a unique abbreviation of --command", ""},
	{"fish", []string{"fish", "-cecho RAN-CMD"}, true, "-c with its command attached", ""},
	{"fish", []string{"fish", "-ic", "echo RAN-CMD"}, true, "-i, then -c with the next word", ""},
	{"fish", []string{"fish", "-C", "echo RAN-INIT"}, false, "-C runs an init command, then the interactive session", ""},
	{"fish", []string{"fish", "-Cecho RAN-INIT"}, false, "-C with its command attached", ""},
	{"fish", []string{"fish", "--init-command", "echo RAN-INIT"}, false, "--init-command takes a command", ""},
	{"fish", []string{"fish", "--init-command=echo RAN-INIT"}, false, "--init-command=", ""},
	{"fish", []string{"fish", "--init", "echo RAN-INIT"}, false, "a unique abbreviation of --init-command", ""},
	{"fish", []string{"fish", "--init-command", "echo RAN-INIT", "script"}, true, "the operand after the init command is a script", ""},
	{"fish", []string{"fish", "--in", "x"}, false, "an ambiguous abbreviation (--init-command, --interactive): fish exits", ""},
	{"fish", []string{"fish", "-d", "proc"}, false, "-d takes debug categories", ""},
	{"fish", []string{"fish", "-o", "dbg"}, false, "-o takes the debug output file", ""},
	{"fish", []string{"fish", "-p", "prof"}, false, "-p takes the profile file", ""},
	{"fish", []string{"fish", "--profile-startup", "prof"}, false, "--profile-startup takes a file", ""},
	{"fish", []string{"fish", "-i"}, false, "interactive", ""},
	{"fish", []string{"fish", "-N", "script"}, true, "flag, then the script", ""},
	{"fish", []string{"fish", "-l", "--", "script"}, true, "-- ends the options", ""},
	{"fish", []string{"fish", "--bogus"}, false, "an unknown long option: fish exits", ""},
}

// TestShells: the option table, through isLauncher with the shell's comm.
func TestShells(t *testing.T) {
	set := NewLauncherSet(nil, "")
	for _, r := range shellTable {
		t.Run(r.shell+" "+strings.Join(r.args[1:], " "), func(t *testing.T) {
			if got := set.isLauncher(Process{Name: r.shell, Args: r.args}); got != r.want {
				t.Errorf("isLauncher(%s %q) = %v, want %v: %s", r.shell, r.args, got, r.want, r.why)
			}
		})
	}
	// Every shell on the launcher list has a parse.
	for _, n := range defaultLaunchers {
		if _, ok := shellSpecOf(n); !ok && strings.Contains(" sh bash dash zsh ksh mksh ash fish ", " "+n+" ") {
			t.Errorf("shell %s has no option parse", n)
		}
	}
}

// TestShells_RealShells runs every row of the option table through the real
// shell where it is installed, with a script file, an init file and
// commands on standard input, and checks that the shell runs a command
// (prints RAN-CMD or RAN-SCRIPT) exactly when the table calls it a
// launcher. A row whose shell is missing is skipped (CI installs zsh, ksh,
// fish and mksh).
func TestShells_RealShells(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real shells")
	}
	dir := t.TempDir()
	for name, text := range map[string]string{"script": "echo RAN-SCRIPT\n", "init": "echo RAN-INIT\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_DATA_HOME=" + filepath.Join(dir, "data"),
		"PATH=" + os.Getenv("PATH"), "TERM=dumb", "ENV=", "BASH_ENV="}
	for _, r := range shellTable {
		t.Run(r.shell+" "+strings.Join(r.args[1:], " "), func(t *testing.T) {
			if r.notHere != "" {
				t.Skip(r.notHere)
			}
			bin, err := exec.LookPath(r.shell)
			if err != nil {
				t.Skipf("%s is not installed", r.shell)
			}
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Args = r.args
			cmd.Dir, cmd.Env = dir, env
			cmd.Stdin = strings.NewReader("echo RAN-STDIN\n")
			out, _ := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("%q did not finish: %s", r.args, out)
			}
			ran := strings.Contains(string(out), "RAN-CMD") || strings.Contains(string(out), "RAN-SCRIPT")
			if ran != r.want {
				t.Errorf("real %s %q ran a command: %v, but the table says launcher: %v (%s); output:\n%s", r.shell, r.args, ran, r.want, r.why, out)
			}
		})
	}
}
