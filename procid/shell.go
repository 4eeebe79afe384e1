package procid

import "strings"

// This file holds the one rule that tells a shell running a command (a
// launcher) from an interactive shell or one reading its standard input (a
// host): each shell's invocation options, parsed the way that shell parses
// them, with every option that takes an argument.

// shellSpec is how one shell parses the options it is invoked with. The
// fields come from each shell's source and manual and were checked against
// the real shells (bash 5.2, dash 0.5.12, zsh 5.9, ksh 93u+m/1.0.4, mksh
// R59c, fish 3.6.0); see TestShells_RealShells.
type shellSpec struct {
	// arg holds the short option letters that take an argument: bash "o"
	// (set -o name) and "O" (shopt name); dash "o"; zsh "o"; ksh "o" and
	// "R" (a cross-reference file, in ksh93 before u+m); mksh "o" and "T"
	// (a terminal to spawn on); fish "cCpdfDo" (getopt "+hPilNnvc:C:p:d:f:D:o:").
	arg string
	// attached: the argument of an arg letter is the rest of its word when
	// there is one ("-onoglob"), as in zsh, ksh, mksh and fish (getopt).
	// Otherwise (bash, dash, ash) each arg letter takes the next unused
	// word, and the rest of the word holds more letters ("-xo noglob",
	// "-ox noglob" and "-oO noglob extglob" all parse).
	attached bool
	// plus: a word starting with '+' is an option cluster too ("+o
	// noglob"); not in fish, where it is an operand.
	plus bool
	// cmdArg: -c takes the command as its own argument (fish: "-c CMD",
	// "-cCMD"); otherwise -c is a flag and the command is the first operand
	// (bash, dash, zsh, ksh, mksh: "bash -c -x CMD" and "bash -xc CMD").
	cmdArg bool
	// stdin: -s makes the operands positional parameters and the commands
	// come from standard input (all but fish).
	stdin bool
	// endB: 'b' in a cluster ends the options, like "--" (zsh).
	endB bool
	// dashOperand: a lone "-" is an operand (fish's getopt) rather than the
	// end of the options (every other shell).
	dashOperand bool
	// long lists the long option names (without dashes), each followed by
	// '=' when it takes an argument, separated and surrounded by spaces
	// (" rcfile= login "): a string rather than a map, so that the table
	// is static data in the plugin rather than code that builds it. A long
	// option not listed is unknown: the shell refuses it (bash, dash, mksh,
	// fish), so the parse cannot tell. With anyLong set, every other long
	// name is a flag (zsh and ksh accept each option name as --name).
	long    string
	anyLong bool
	// longEq: a long option's argument may follow '=' in the same word
	// ("--init-command=CMD"; fish's getopt_long). bash does not accept it
	// ("--rcfile=x" is an invalid option).
	longEq bool
	// longAbbrev: a long option may be abbreviated to any unique prefix
	// (fish's getopt_long: "--init", "--comm=").
	longAbbrev bool
	// singleDashLong: long options may be written with one dash as well
	// ("-rcfile x", "-login"), and are only recognised before the first
	// short-option cluster (bash's parse_long_options runs first).
	singleDashLong bool
}

// bashLong are bash's long options (bash 5.2, shell.c long_args); the two
// that take a file name end in '='.
const bashLong = " init-file= rcfile= debug debugger dump-po-strings dump-strings help login noediting noprofile norc posix pretty-print protected restricted verbose version wordexp "

// The parse of each shell. sh and ash use bash's: /bin/sh is bash in POSIX
// mode on many systems and dash or busybox ash on others, which parse the
// same short options (their -o also takes the next word) and refuse long
// ones, so a long option there means the shell exits at once.
var (
	bashSpec = shellSpec{arg: "oO", plus: true, stdin: true, long: bashLong, singleDashLong: true}
	dashSpec = shellSpec{arg: "o", plus: true, stdin: true}
	zshSpec  = shellSpec{arg: "o", attached: true, plus: true, stdin: true, endB: true, long: " emulate= version help ", anyLong: true}
	kshSpec  = shellSpec{arg: "oR", attached: true, plus: true, stdin: true, anyLong: true, longEq: true}
	mkshSpec = shellSpec{arg: "oT", attached: true, plus: true, stdin: true}
	fishSpec = shellSpec{arg: "cCpdfDo", attached: true, cmdArg: true, dashOperand: true, longEq: true, longAbbrev: true,
		long: " command= init-command= features= debug= debug-output= debug-stack-frames= profile= profile-startup=" +
			" interactive login no-config no-execute print-rusage-self print-debug-categories private help version "}
)

// shellSpecOf returns the parse of the shell called name, for each shell on
// the launcher list (sh, bash, dash, zsh, ksh, mksh, ash, fish); ok is false
// for any other name. A shell is a launcher only when
// [shellSpec.runsCommand] says it runs a command.
func shellSpecOf(name string) (sp *shellSpec, ok bool) {
	switch name {
	case "sh", "bash", "ash":
		return &bashSpec, true
	case "dash":
		return &dashSpec, true
	case "zsh":
		return &zshSpec, true
	case "ksh":
		return &kshSpec, true
	case "mksh":
		return &mkshSpec, true
	case "fish":
		return &fishSpec, true
	}
	return nil, false
}

// runsCommand reports whether a shell invoked with args (args[0] is its
// name, as in /proc/<pid>/cmdline) runs a command rather than an
// interactive session or commands from its standard input:
//
//   - -c ("-c", "-lc", "-ic", fish "--command CMD") runs a command, even
//     with -s;
//   - otherwise, unless -s is given, the first operand after the options is
//     a script the shell runs;
//   - otherwise (no operand, or -s) the shell reads its standard input: an
//     interactive shell in a terminal, whose init file may be named by an
//     option ("bash --init-file <script>", how VS Code starts its
//     integrated terminal; "--rcfile", fish "-C CMD") without making it run
//     a command.
//
// Every option that takes an argument consumes it, so the argument is never
// taken for a script. When the parse cannot tell (unknown args, nil; an
// option the shell does not know, which makes it exit with a usage error;
// a missing argument), runsCommand reports false: a shell taken for the
// host is refused by the stdio check or gets its own identity, whereas an
// interactive shell taken for a launcher would give every terminal of one
// terminal owner the same host.
func (sp *shellSpec) runsCommand(args []string) bool {
	if len(args) < 2 {
		return false
	}
	cmd, stdin, shortSeen := false, false, false
	i := 1
options:
	for i < len(args) {
		a := args[i]
		switch {
		case a == "":
			break options // an empty operand
		case a == "--":
			i++
			break options
		case a == "-":
			if !sp.dashOperand {
				i++
			}
			break options
		case a[0] == '-' && (a[1] == '-' || sp.singleDashLong && !shortSeen && sp.knowsLong(a[1:])):
			if sp.singleDashLong && shortSeen {
				return false // bash: "--" inside a cluster is an invalid option
			}
			name, eq := strings.TrimPrefix(a[1:], "-"), false
			if sp.longEq {
				name, _, eq = strings.Cut(name, "=")
			}
			name, takes, ok := sp.lookupLong(name)
			if !ok {
				return false
			}
			if takes && !eq {
				if i+1 >= len(args) {
					return false
				}
				i++ // the argument, never an operand
			}
			if sp.cmdArg && name == "command" {
				cmd = true
			}
			i++
		case a[0] == '-' || sp.plus && a[0] == '+':
			shortSeen = true
			next := i + 1
			for j := 1; j < len(a); j++ {
				c := a[j]
				switch {
				case sp.endB && c == 'b':
					i = next
					break options
				case strings.IndexByte(sp.arg, c) >= 0:
					if sp.cmdArg && c == 'c' {
						cmd = true
					}
					if sp.attached && j+1 < len(a) {
						j = len(a) // the rest of the word is the argument
						continue
					}
					if next < len(args) {
						next++
					} else if sp.attached || sp.cmdArg && c == 'c' {
						return false // getopt-style shells refuse a missing argument
					}
				case c == 'c' && !sp.cmdArg:
					cmd = true
				case c == 's' && sp.stdin:
					stdin = true
				}
			}
			i = next
		default:
			break options
		}
	}
	operand := i < len(args)
	return cmd || operand && !stdin
}

// knowsLong reports whether name (without its dashes) is one of sp's long
// options, for bash's single-dash spelling ("-rcfile").
func (sp *shellSpec) knowsLong(name string) bool {
	_, _, ok := sp.lookupLong(name)
	return ok
}

// lookupLong resolves a long option name: its full name, whether it takes
// an argument, and whether the shell knows it (see [shellSpec.long]).
func (sp *shellSpec) lookupLong(name string) (string, bool, bool) {
	if name == "" {
		return "", false, false
	}
	if strings.Contains(sp.long, " "+name+"= ") {
		return name, true, true
	}
	if strings.Contains(sp.long, " "+name+" ") {
		return name, false, true
	}
	if sp.longAbbrev {
		match, takes, n := "", false, 0
		for _, full := range strings.Fields(sp.long) {
			full, t := strings.CutSuffix(full, "=")
			if strings.HasPrefix(full, name) {
				match, takes, n = full, t, n+1
			}
		}
		return match, takes, n == 1
	}
	return name, false, sp.anyLong
}
