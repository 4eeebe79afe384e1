package procid

import (
	"errors"
	"strconv"

	"github.com/mcp-resume/mcp-resume/hostfuncs"
)

// Sentinel errors. Every error of [Resolve] wraps one or more of them, so
// callers can test with [errors.Is]. Any error from Resolve means the same
// thing to a caller: the host cannot be identified with certainty, so
// session resume is off for this instance (spec 000, "Parent Process
// Information Unavailable").
var (
	// ErrUnsupported: the operating system is neither Linux nor macOS
	// (spec 000, "Platform Support"), or the host functions cannot answer
	// an operation the rule needs there.
	ErrUnsupported = errors.New("process identity is not supported on this operating system")

	// ErrNotFound: no process with the requested pid exists.
	ErrNotFound = errors.New("process not found")

	// ErrReaper: the host would be pid 0 or 1 or an init or reaper
	// process: the server or a launcher was orphaned, or the real host is
	// outside this PID namespace. Such processes are shared by unrelated
	// clients, so resuming under them could resume someone else's session.
	ErrReaper = errors.New("the MCP host would be an init or reaper process")

	// ErrSharedServer: the host would be a process that serves many
	// unrelated sessions at once, so that two different MCP hosts' servers
	// would both resolve to it: a remote-login server (sshd, sshd-session
	// under ssh connection sharing), a terminal multiplexer (tmux, screen)
	// or a terminal emulator or terminal server (sharedServers in
	// launcher.go). As for ErrReaper, resuming under it could resume
	// someone else's session.
	ErrSharedServer = errors.New("the MCP host would be a process shared by unrelated sessions")

	// ErrRace: a process's parent pid or start time changed while the
	// ancestor chain was being read, or a process in the chain exited
	// during the walk or the stdio check.
	ErrRace = errors.New("the process tree changed while it was being read")

	// ErrNoBootID: on Linux /proc/sys/kernel/random/boot_id is missing,
	// unreadable or not a UUID; without it a start time cannot be told
	// apart from one of a previous boot.
	ErrNoBootID = errors.New("cannot read the kernel boot ID (is /proc mounted?)")

	// ErrTooDeep: more than 16 (maxDepth) ancestors would have to be walked
	// to get past the launchers.
	ErrTooDeep = errors.New("too many launcher processes above the server")

	// ErrMalformed: the kernel's description of a process
	// (/proc/<pid>/stat, struct kinfo_proc, ps output) cannot be parsed.
	ErrMalformed = errors.New("malformed process information")

	// ErrNamespace: on Linux the PID namespace cannot be verified: /proc
	// belongs to another PID namespace than this process (readlink
	// /proc/self is not facts.pid, so /proc/<pid> would name other
	// processes), or /proc/self/ns/pid cannot be read.
	ErrNamespace = errors.New("cannot verify the PID namespace")

	// ErrAdopted: on Linux the resolved host provably does not hold the
	// other end of the server's stdin or stdout: the server was orphaned
	// and adopted by a subreaper that is not on the reaper list, or the
	// host passed its own stdio through to the server like a launcher
	// (docs/RELIABILITY.md, fault 11c).
	ErrAdopted = errors.New("the resolved MCP host does not hold the server's stdio")

	// ErrUnverified: on Linux nothing in the server's stdio shows that the
	// resolved host launched it, and nothing disproves it either: stdin and
	// stdout are /dev/null, regular files or closed, or pipes, FIFOs or
	// terminals whose holders cannot be listed (the host runs as another
	// user or is not dumpable). "Cannot tell" never lets an identity stand
	// that the stdio check exists to refuse (docs/RELIABILITY.md, faults 22
	// and 25).
	ErrUnverified = errors.New("the server's stdio does not show that the resolved MCP host launched it")

	// ErrTimeNamespace: on Linux this process's time namespace shifts the
	// boot clock (/proc/self/timens_offsets shows a non-zero boottime
	// offset), so process start times read here can repeat those of an
	// earlier sandbox whose clock also started near zero, or the offsets
	// cannot be read (docs/RELIABILITY.md, fault 24).
	ErrTimeNamespace = errors.New("the boot clock of this time namespace is shifted")

	// ErrHidden: a process exists but /proc does not show it (mounted
	// hidepid=1 or 2 and it belongs to another user): its stat is
	// not_found while kill(pid, 0) answers permission (fault 12).
	ErrHidden = errors.New("the process exists but /proc hides it")

	// ErrPermission: the host functions answered "permission" for an
	// operation the rule needs.
	ErrPermission = errors.New("permission denied")

	// ErrExe: on Linux the resolved host's program image cannot be
	// identified: stat of /proc/<pid>/exe failed (another user's or a
	// non-dumpable process: permission; host functions without the exe
	// operation: unsupported). A process keeps its pid and start time across
	// execve(2), so without the image an exec'd host would inherit its
	// predecessor's session.
	ErrExe = errors.New("cannot identify the MCP host's program image")

	// ErrNoAnswer: a host function failed without a usable answer (the
	// response is not JSON, has the wrong number of results, lacks a field,
	// or is an error as a whole). It means "cannot tell", never "gone".
	ErrNoAnswer = errors.New("the host gave no usable answer")
)

// maxDepth is the most ancestors the walk reads, the host included; a chain
// of more than maxDepth-1 launchers fails with [ErrTooDeep].
const maxDepth = 16

// EnvLaunchers is the environment variable (reported in facts.env) that
// adds launcher names: a comma-separated list such as "my-wrapper,direnv".
const EnvLaunchers = "MCP_RESUME_LAUNCHERS"

// Roles of [hostfuncs.Process.Role] in a chain.
const (
	roleLauncher = "launcher"
	roleHost     = "host"
)

// Process is one process as the kernel describes it, seen while walking
// ancestors. It is the rules' view, not the report: the walk also keeps
// what only the rules need (whether it is a zombie, its program image), and
// has no role yet. The chain element the plugin reports (whoami, JSON, with
// its role) is [hostfuncs.Process]; [Identity.WireChain] makes those.
type Process struct {
	// PID is the process ID.
	PID int
	// PPID is the parent's process ID; 0 when the parent is outside this PID
	// namespace or for PID 1.
	PPID int
	// Name is the kernel's short name for the process. Linux: comm from
	// /proc/<pid>/stat, at most 15 bytes, which may hold spaces and
	// parentheses. macOS: p_comm from struct kinfo_proc (or ucomm from ps),
	// at most 16 bytes.
	Name string
	// Args is the argument vector. Linux: /proc/<pid>/cmdline split on NUL
	// with trailing empty strings dropped; nil when unreadable or empty.
	// macOS: argv from kern.procargs2 (or ps's args), nil when the kernel
	// refuses it (another user's process) or it cannot be decoded.
	Args []string
	// StartTime names this process instance among all that ever had PID;
	// see the package documentation for its format on each system.
	StartTime string
	// zombie is set for a process that exited and was not reaped yet.
	zombie bool
	// exe (Linux) is the program image's "<dev>x<ino>" (exeID), read for
	// every parent of the walk; exeErr says why it is unknown.
	exe    string
	exeErr error
	// macOS, for the trust rule (trust.go): tty is e_tdev of struct
	// kinfo_proc (darwinNoDev: no controlling terminal), ttyKnown whether
	// it was read (not with ps), ttyFG whether ps shows the process in the
	// foreground of a terminal ("+" in its state); env is the environment
	// of kern.procargs2, envKnown whether it was read.
	tty      int32
	ttyKnown bool
	ttyFG    bool
	env      []string
	envKnown bool
}

// Identity is the resolved MCP host: the pair the token file is named after
// (spec 000, "Token File Naming Strategy").
type Identity struct {
	// PID is the host's process ID.
	PID int
	// StartTime is the host's [Process.StartTime] and, on Linux, its
	// program image: "<ticks>.<boot_id>.<pid_ns>.<dev>x<ino>" (see the
	// package documentation, "Start time").
	StartTime string
	// Chain holds the ancestors walked, nearest first: the launchers, then
	// the host itself as the last element. It may be partial (and then is
	// all launchers) when Resolve fails.
	Chain []Process
	// Stdio says how the host was checked against the server's stdin and
	// stdout, for logs: "verified: stdin pipe:[123] is held by the host as
	// fd 7", or "not checked: ..." with the reasons.
	Stdio string
	// Trust is the verdict of the trust rule for whoami and logs
	// ("single user: ..." from [CheckTrust], or the opt-in that skipped
	// it); "" until the caller sets it. Resolve leaves it empty.
	Trust string
}

// WireChain returns the chain as [hostfuncs.Process] values with roles: every
// element is a launcher except the last of a resolved identity (ok true),
// which is the host.
func (id Identity) WireChain(ok bool) []hostfuncs.Process {
	out := make([]hostfuncs.Process, 0, len(id.Chain))
	for i, p := range id.Chain {
		role := roleLauncher
		if ok && i == len(id.Chain)-1 {
			role = roleHost
		}
		args := p.Args
		if args == nil {
			args = []string{}
		}
		out = append(out, hostfuncs.Process{PID: p.PID, PPID: p.PPID, Name: p.Name, Args: args, StartTime: p.StartTime, Role: role})
	}
	return out
}

// Inspector asks the host function mcp_resume_inspect for the answers to
// ops, in order. It returns an error (for the caller to wrap) when the host
// gave no usable response at all: not JSON, a top-level error. The policy
// itself checks the number of results.
type Inspector func(ops []hostfuncs.InspectOp) ([]hostfuncs.InspectResult, error)

// inspect runs ops through in and checks that one result came back per
// operation; any other answer is ErrNoAnswer.
func inspect(in Inspector, ops []hostfuncs.InspectOp) ([]hostfuncs.InspectResult, error) {
	res, err := in(ops)
	if err != nil {
		return nil, &wrapError{msg: "mcp_resume_inspect: " + ErrNoAnswer.Error() + ": " + err.Error(), errs: []error{ErrNoAnswer}}
	}
	if len(res) != len(ops) {
		return nil, wrap("mcp_resume_inspect answered "+itoa(len(res))+" results for "+itoa(len(ops))+" operations", ErrNoAnswer)
	}
	return res, nil
}

// codeErr maps the error code of a host answer to this package's sentinels.
func codeErr(code string) error {
	switch code {
	case hostfuncs.CodeNotFound:
		return ErrNotFound
	case hostfuncs.CodePermission:
		return ErrPermission
	case hostfuncs.CodeUnsupported:
		return ErrUnsupported
	default:
		return ErrNoAnswer
	}
}

// resultErr returns nil when r succeeded, else an error naming what (an
// operation) and wrapping the sentinel for its code.
func resultErr(what string, r hostfuncs.InspectResult) error {
	if r.Error == nil {
		return nil
	}
	return wrap(what+": "+r.Error.Code+" ("+r.Error.Message+")", codeErr(r.Error.Code))
}

// code returns r's error code, "" when it succeeded.
func code(r hostfuncs.InspectResult) string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// Op constructors, so the batches below read like the contract's table
// (hostfuncs/README.md, "mcp_resume_inspect"). Each op is typed: the host
// builds the /proc path from it, so no path crosses the boundary.
func opBootID() hostfuncs.InspectOp { return hostfuncs.InspectOp{Op: hostfuncs.OpBootID} }
func opSelf() hostfuncs.InspectOp   { return hostfuncs.InspectOp{Op: hostfuncs.OpSelf} }
func opTimens() hostfuncs.InspectOp { return hostfuncs.InspectOp{Op: hostfuncs.OpTimens} }
func opSelfNS() hostfuncs.InspectOp {
	return hostfuncs.InspectOp{Op: hostfuncs.OpPidNS, PID: hostfuncs.PIDSelf}
}
func opStat(pid int) hostfuncs.InspectOp    { return opPID(hostfuncs.OpStat, pid) }
func opCmdline(pid int) hostfuncs.InspectOp { return opPID(hostfuncs.OpCmdline, pid) }

// opSelfFD asks for the target of this process's fd (readlink
// /proc/self/fd/<fd>).
func opSelfFD(fd int) hostfuncs.InspectOp {
	return hostfuncs.InspectOp{Op: hostfuncs.OpFDLink, PID: hostfuncs.PIDSelf, FD: fd}
}
func opPID(op string, pid int) hostfuncs.InspectOp {
	return hostfuncs.InspectOp{Op: op, PID: strconv.Itoa(pid)}
}

// describe names p in error messages: pid 42 ("sh").
func describe(p Process) string {
	return "pid " + itoa(p.PID) + " (" + quote(p.Name) + ")"
}

// walker reads processes from one kernel interface for the walk.
type walker interface {
	// step reads child's parent and then child again, in that order (one
	// host call): the parent read in between is the child's real parent
	// when the child is unchanged. The error is set when the host gave no
	// usable answer; a process that could not be read is in the result.
	step(child Process) (stepResult, error)
}

// stepResult is what one step of the walk read.
type stepResult struct {
	parent    Process // the child's parent, as read
	parentErr error   // why the parent could not be read; wraps ErrNotFound when it is gone
	again     Process // the child, read again after its parent
	againErr  error   // why the child could not be read again; wraps ErrNotFound when it is gone
}

// walk goes from self's parent up to the nearest ancestor that is not a
// launcher in set. The error messages are those of the reference
// implementation (the former procid package) where they still apply.
func walk(w walker, self Process, set LauncherSet) (Identity, error) {
	pid := self.PID
	child := self
	var chain []Process
	fail := func(msg string, errs ...error) (Identity, error) {
		return Identity{Chain: chain}, wrap("resolve MCP host of pid "+itoa(pid)+": "+msg, errs...)
	}
	for {
		if len(chain) == maxDepth {
			return fail("the "+itoa(maxDepth)+" nearest ancestors ("+quote(chain[0].Name)+" to "+quote(chain[len(chain)-1].Name)+") are all launchers; session resume is off",
				ErrTooDeep)
		}
		if child.PPID <= 1 {
			return fail(describe(child)+" has parent pid "+itoa(child.PPID)+": it was orphaned (restart the MCP host) or the host is outside this PID namespace; session resume is off",
				ErrReaper)
		}
		r, err := w.step(child)
		parent, again := r.parent, r.again
		switch {
		case err != nil:
			return fail("read parent of "+describe(child), err)
		case r.parentErr != nil && errors.Is(r.parentErr, ErrNotFound):
			return fail("parent of "+describe(child)+" exited during the walk; retry", ErrRace, r.parentErr)
		case r.parentErr != nil:
			return fail("read parent of "+describe(child), r.parentErr)
		case r.againErr != nil && errors.Is(r.againErr, ErrNotFound):
			return fail(describe(child)+" exited during the walk; retry", ErrRace, r.againErr)
		case r.againErr != nil:
			return fail("re-read "+describe(child), r.againErr)
		case again.PPID != child.PPID || again.StartTime != child.StartTime:
			return fail(describe(child)+" changed from parent "+itoa(child.PPID)+" start "+child.StartTime+" to parent "+itoa(again.PPID)+" start "+again.StartTime+" while its parent was read; retry",
				ErrRace)
		}
		chain = append(chain, parent)
		if isReaper(parent) {
			return fail("the host would be "+describe(parent)+", which serves unrelated processes; session resume is off", ErrReaper)
		}
		if kind := sharedServerKind(parent); kind != "" {
			return fail("the host would be "+describe(parent)+", "+kind+", so the servers of different MCP hosts would all resolve to it; session resume is off", ErrSharedServer)
		}
		if !set.isLauncher(parent) {
			return Identity{PID: parent.PID, StartTime: parent.StartTime, Chain: chain}, nil
		}
		child = parent
	}
}

// Resolve identifies the MCP host of this server process from the host's
// facts, reading processes through in: the nearest ancestor that is not a
// launcher in set, then (Linux) the check that it holds the other end of the
// server's stdin or stdout. See the package documentation for every rule.
//
// It returns the host's pid and start time, the ancestors walked, and how
// the stdio check went. On failure the Identity holds the chain read so far
// (for whoami) and the error wraps one of the sentinels: [ErrUnsupported] on
// other systems; [ErrNamespace] for a /proc of another PID namespace;
// [ErrNoBootID]; [ErrReaper]; [ErrSharedServer]; [ErrRace]; [ErrTooDeep]; [ErrMalformed];
// [ErrHidden] for a host hidden by hidepid; [ErrAdopted] for a host that
// does not hold the server's stdio; [ErrUnverified] when nothing in the
// server's stdio shows that the host launched it; [ErrTimeNamespace] when
// this time namespace shifts the boot clock; [ErrNoAnswer] when a host function gave
// no usable answer. Each means session resume is off (spec 000, "Parent
// Process Information Unavailable").
func Resolve(f hostfuncs.Facts, set LauncherSet, in Inspector) (Identity, error) {
	return ResolveFor(f, f.PID, set, in)
}

// ResolveFor is Resolve for the server process pid, which may be another
// process than the one the facts describe: what `mcp-resume whoami --pid`
// reports for a running server. The walk and every rule are Resolve's. The
// one difference is the stdio check on Linux for another process: its fds
// 0 and 1 are read from its fd list (the fds operation on pid) instead of
// fstat and /proc/self, and a socket there cannot tell, because only the
// process holding a socket can ask for its peer (SO_PEERCRED); the server
// itself may then still refuse a host that this answer accepts (its Stdio
// says so). Another user's process cannot be listed: its stdio cannot tell
// either. pid <= 0 fails with ErrNoAnswer.
func ResolveFor(f hostfuncs.Facts, pid int, set LauncherSet, in Inspector) (Identity, error) {
	switch f.OS {
	case "linux":
		return resolveLinux(f, pid, set, in)
	case "darwin":
		if pid <= 0 {
			return Identity{}, wrap("resolve MCP host of pid "+itoa(pid), ErrNoAnswer)
		}
		return resolveDarwin(f, pid, set, in)
	default:
		return Identity{}, wrap("resolve MCP host of pid "+itoa(pid)+" on "+quote(f.OS), ErrUnsupported)
	}
}
