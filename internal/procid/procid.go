package procid

import (
	"errors"
	"fmt"
	"os"
)

// Sentinel errors. Errors returned by this package wrap one or more of them,
// so callers can test with [errors.Is], except failures to read /proc or
// sysctl for other reasons (such as permission denied), which wrap the
// operating system's error instead. Any error from [Host] or
// [HostOf] means the same thing to a caller: the host cannot be identified
// with certainty, so session resume is off for this instance (spec 000,
// "Parent Process Information Unavailable").
var (
	// ErrUnsupported is returned on operating systems other than Linux and
	// macOS (spec 000, "Platform Support").
	ErrUnsupported = errors.New("process identity is not supported on this operating system")

	// ErrNotFound is returned when no process with the requested PID exists,
	// or the PID is not positive.
	ErrNotFound = errors.New("process not found")

	// ErrReaper is returned when the host would be PID 0 or 1 or an init or
	// reaper process: the server or a launcher was orphaned, or the real host
	// is outside this PID namespace. Such processes are shared by unrelated
	// clients, so resuming under them could resume someone else's session.
	ErrReaper = errors.New("the MCP host would be an init or reaper process")

	// ErrRace is returned when a process's parent PID or start time changed
	// while the ancestor chain was being read, or a process in the chain
	// exited during the walk.
	ErrRace = errors.New("the process tree changed while it was being read")

	// ErrNoBootID is returned on Linux when /proc/sys/kernel/random/boot_id
	// is missing, unreadable or not a UUID; without it a start time cannot be
	// told apart from one of a previous boot.
	ErrNoBootID = errors.New("cannot read the kernel boot ID (is /proc mounted?)")

	// ErrTooDeep is returned when more than [MaxDepth] ancestors would have to
	// be walked to get past the launchers.
	ErrTooDeep = errors.New("too many launcher processes above the server")

	// ErrMalformed is returned when the kernel's description of a process
	// cannot be parsed (/proc/<pid>/stat on Linux, struct kinfo_proc on
	// macOS), including an empty process name on macOS.
	ErrMalformed = errors.New("malformed process information")

	// ErrNamespace is returned on Linux when the PID namespace cannot be
	// verified: /proc belongs to another PID namespace than this process
	// (so /proc/<pid> would name other processes), or a process's
	// /proc/<pid>/ns/pid cannot be read. It is also returned by Alive for a
	// start time recorded in another PID namespace, which cannot be checked.
	ErrNamespace = errors.New("cannot verify the PID namespace")

	// ErrAdopted is returned by [Host] on Linux when the resolved host
	// provably does not hold the other end of the server's stdin or stdout:
	// the server was orphaned and adopted by a subreaper that is not on the
	// reaper list, or the host passed its own stdio through to the server
	// like a launcher (docs/RELIABILITY.md, fault 11c).
	ErrAdopted = errors.New("the resolved MCP host does not hold the server's stdio")
)

// MaxDepth is the most ancestors [HostOf] reads, the host included; a chain
// of more than MaxDepth-1 launchers fails with [ErrTooDeep].
const MaxDepth = 16

// LaunchersEnv is the environment variable [Host] and [HostOf] read for extra
// launcher names: a comma-separated list such as "my-wrapper,direnv". Spaces
// around names and empty names are ignored.
const LaunchersEnv = "MCP_RESUME_LAUNCHERS"

// Process is one process as the kernel describes it, seen by [Lookup] or
// while walking ancestors.
type Process struct {
	// PID is the process ID.
	PID int
	// PPID is the parent's process ID; 0 when the parent is outside this PID
	// namespace or for PID 1.
	PPID int
	// Name is the kernel's short name for the process. Linux: comm from
	// /proc/<pid>/stat, at most 15 bytes, which may hold spaces and
	// parentheses and changes on exec or when the process sets its title.
	// macOS: p_comm from struct kinfo_proc, at most 16 bytes.
	Name string
	// Args is the argument vector. Linux: /proc/<pid>/cmdline split on NUL
	// with trailing empty strings dropped; nil when unreadable or empty
	// (kernel threads, zombies). A process that set its title (node, npm)
	// shows the title as one element, such as "npm exec foo". macOS: argv
	// from sysctl kern.procargs2, nil when the kernel refuses it (another
	// user's process) or it cannot be decoded.
	Args []string
	// StartTime names this process instance among all that ever had PID;
	// see the package documentation for its format on each system.
	StartTime string
}

// Identity is the resolved MCP host: the pair the token file is named after
// (spec 000, "Token File Naming Strategy").
type Identity struct {
	// PID is the host's process ID.
	PID int
	// StartTime is the host's [Process.StartTime].
	StartTime string
	// Chain holds the ancestors walked, nearest first: the launchers, then
	// the host itself as the last element. It is never empty.
	Chain []Process
	// Stdio says how [Host] checked that the host holds the other end of
	// the server's stdin or stdout, for logs: "verified: stdin pipe:[123]
	// is held by the host as fd 7", or "not checked: ..." with the reason
	// (a tty, /dev/null, another user's host, another system). Empty from
	// [HostOf], which does not check.
	Stdio string
}

// Options adjusts how [Host] and [HostOf] resolve the host. A nil *Options
// is the same as the zero value.
type Options struct {
	// Launchers are extra process names treated as launchers, in addition to
	// [DefaultLaunchers] and the names in [LaunchersEnv]. They are matched
	// against Name and the base name of Args[0] like the defaults. Nil adds
	// none.
	Launchers []string
}

// source reads processes from one kernel interface.
type source interface {
	// lookup describes pid; errors wrap ErrNotFound when it does not exist.
	lookup(pid int) (Process, error)
	// alive reports whether pid runs with exactly startTime.
	alive(pid int, startTime string) (bool, error)
}

// Host resolves the MCP host of the current process: [HostOf] for
// [os.Getpid], then, on Linux, a check that the host holds the other end of
// this process's stdin or stdout (see the package documentation, "Stdio").
// opts may be nil.
//
// It returns the host's PID and start time, the ancestors walked and, in
// Identity.Stdio, how the check went. Any error means session resume must
// be off (spec 000, "Parent Process Information Unavailable"): those of
// [HostOf], [ErrAdopted] when the host provably does not hold the server's
// stdio, and [ErrRace] when it exits during the check.
func Host(opts *Options) (Identity, error) {
	id, err := HostOf(os.Getpid(), opts)
	if err != nil {
		return Identity{}, err
	}
	return verifyStdio(id)
}

// HostOf resolves the MCP host of the process pid: the nearest ancestor of
// pid that is not a launcher (see the package documentation). opts may be
// nil; the names in opts.Launchers and in the environment variable
// [LaunchersEnv] are added to [DefaultLaunchers].
//
// It returns the host's PID and [Process.StartTime] (spec 000, "Token File
// Naming Strategy") and the ancestors walked in Identity.Chain.
//
// Errors, each meaning session resume must be off (spec 000, "Parent Process
// Information Unavailable"):
//   - [ErrUnsupported] on systems other than Linux and macOS;
//   - [ErrNotFound] when pid does not exist;
//   - [ErrReaper] when the walk reaches PID 0 or 1 or a reaper;
//   - [ErrRace] when the tree changed during the walk (a retry may succeed);
//   - [ErrTooDeep] after [MaxDepth] ancestors;
//   - [ErrNoBootID] on Linux without a boot ID;
//   - [ErrMalformed] or an [os.PathError] when process information cannot
//     be read or parsed.
func HostOf(pid int, opts *Options) (Identity, error) {
	src, err := newSource()
	if err != nil {
		return Identity{}, err
	}
	var extra []string
	if opts != nil {
		extra = opts.Launchers
	}
	return resolve(src, pid, newLauncherSet(extra, os.Getenv(LaunchersEnv)))
}

// Lookup describes the process pid as the kernel sees it now.
//
// Errors: [ErrNotFound] (wrapped) when pid is not positive or no such process
// exists; [ErrUnsupported] on systems other than Linux and macOS;
// [ErrNoBootID] on Linux without a boot ID; [ErrMalformed] or an
// [os.PathError] when its information cannot be read or parsed.
func Lookup(pid int) (Process, error) {
	src, err := newSource()
	if err != nil {
		return Process{}, err
	}
	p, err := src.lookup(pid)
	if err != nil {
		return Process{}, fmt.Errorf("procid: look up pid %d: %w", pid, err)
	}
	return p, nil
}

// Alive reports whether process pid is running and is the same instance as
// startTime, a [Process.StartTime] or [Identity.StartTime] recorded earlier,
// possibly by another process or before a reboot. It is how a stale token
// file is recognised (spec 000, "PID Reuse").
//
// It returns false with a nil error when no process pid exists, when it is a
// zombie, when its start time differs (the PID was reused), when startTime
// comes from a previous boot, and when startTime is malformed.
//
// Errors: [ErrUnsupported] on systems other than Linux and macOS;
// [ErrNoBootID] on Linux without a boot ID; [ErrMalformed] or an
// [os.PathError] when the process exists but cannot be read. On an error the
// answer is unknown, and a caller must not treat the process as alive.
func Alive(pid int, startTime string) (bool, error) {
	src, err := newSource()
	if err != nil {
		return false, err
	}
	ok, err := src.alive(pid, startTime)
	if err != nil {
		return false, fmt.Errorf("procid: check whether pid %d is alive: %w", pid, err)
	}
	return ok, nil
}

// resolve walks from pid's parent to the nearest ancestor that is not a
// launcher in set. See HostOf.
func resolve(src source, pid int, set launcherSet) (Identity, error) {
	child, err := src.lookup(pid)
	if err != nil {
		return Identity{}, fmt.Errorf("procid: resolve MCP host of pid %d: %w", pid, err)
	}
	var chain []Process
	for {
		if len(chain) == MaxDepth {
			return Identity{}, fmt.Errorf("procid: resolve MCP host of pid %d: the %d nearest ancestors (%q to %q) are all launchers; session resume is off: %w",
				pid, MaxDepth, chain[0].Name, chain[len(chain)-1].Name, ErrTooDeep)
		}
		if child.PPID <= 1 {
			return Identity{}, fmt.Errorf("procid: resolve MCP host of pid %d: %s has parent pid %d: it was orphaned (restart the MCP host) or the host is outside this PID namespace; session resume is off: %w",
				pid, describe(child), child.PPID, ErrReaper)
		}
		parent, err := src.lookup(child.PPID)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return Identity{}, fmt.Errorf("procid: resolve MCP host of pid %d: parent of %s exited during the walk; retry: %w: %w",
					pid, describe(child), ErrRace, err)
			}
			return Identity{}, fmt.Errorf("procid: resolve MCP host of pid %d: read parent of %s: %w", pid, describe(child), err)
		}
		again, err := src.lookup(child.PID)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				return Identity{}, fmt.Errorf("procid: resolve MCP host of pid %d: %s exited during the walk; retry: %w: %w",
					pid, describe(child), ErrRace, err)
			}
			return Identity{}, fmt.Errorf("procid: resolve MCP host of pid %d: re-read %s: %w", pid, describe(child), err)
		}
		if again.PPID != child.PPID || again.StartTime != child.StartTime {
			return Identity{}, fmt.Errorf("procid: resolve MCP host of pid %d: %s changed from parent %d start %s to parent %d start %s while its parent was read; retry: %w",
				pid, describe(child), child.PPID, child.StartTime, again.PPID, again.StartTime, ErrRace)
		}
		chain = append(chain, parent)
		if isReaper(parent) {
			return Identity{}, fmt.Errorf("procid: resolve MCP host of pid %d: the host would be %s, which serves unrelated processes; session resume is off: %w",
				pid, describe(parent), ErrReaper)
		}
		if !set.isLauncher(parent) {
			return Identity{PID: parent.PID, StartTime: parent.StartTime, Chain: chain}, nil
		}
		child = parent
	}
}

// describe names p in error messages: pid 42 ("sh").
func describe(p Process) string {
	return fmt.Sprintf("pid %d (%q)", p.PID, p.Name)
}
