// Package policy holds every rule of mcp-resume that decides whose session
// is resumed: which process is the MCP host that launched this stdio MCP
// server, whether that host holds the server's stdio, whether the host a
// token file was written under is still alive, and the defaults of the open
// export (state directory, app name, instance key, launchers, the
// MCP_RESUME switch; see [Configure], [AppDirName], [DefaultInstanceKey]
// and [VolatileEnv]). It is compiled into the plugin (plugin/plugin.wasm),
// so every host (Go, Python, TypeScript) runs the same rules, and it is
// tested natively with fixture answers.
//
// It cannot see the operating system. It works purely from the answers of
// the host primitives of hostfuncs/README.md: the facts of mcp_resume_facts
// ([wire.Facts]) and the batched read-only operations of mcp_resume_inspect
// (an [Inspector]). Any answer it cannot use (not parseable, the wrong number
// of results, a missing field, a host function that failed without
// answering) means "cannot tell": for identity that turns resume off
// ([ErrNoAnswer]), for liveness it is wire.HostUnknown, never "gone".
//
// The rule throughout is the spec's: "Better to lose session resume than risk
// resuming someone else's session" (spec 000, "Parent Process Information
// Unavailable"). Whenever the host cannot be identified with certainty
// [Resolve] returns an error, and the store turns resume off.
//
// # Platforms
//
// Linux and macOS are supported (spec 000, "Platform Support"): facts.os is
// "linux" or "darwin". On every other system Resolve fails with
// [ErrUnsupported] and [Liveness] answers unknown.
//
// # Start time
//
// The host is named by its pid and a start time, an opaque string compared
// for equality and embedded in file names (token-<pid>-<start_time>, spec
// 000, "Token File Naming Strategy"). It holds only ASCII digits, lowercase
// hex digits and dots.
//
// On Linux a process's start time ([Process.StartTime]) is
//
//	<starttime>.<boot_id>.<pid_ns>
//
// where <starttime> is field 22 of /proc/<pid>/stat in decimal (clock ticks
// since boot, see proc_pid_stat(5)), <boot_id> is the contents of
// /proc/sys/kernel/random/boot_id with the dashes removed (32 lowercase hex
// digits), and <pid_ns> is the inode number of the PID namespace, from the
// link /proc/self/ns/pid ("pid:[4026531836]"). The host's start time
// ([Identity.StartTime], the one in file names) adds its program image:
//
//	<starttime>.<boot_id>.<pid_ns>.<dev>x<ino>
//
// where <dev> and <ino> are st_dev and st_ino of stat(2) of
// /proc/<pid>/exe in decimal (the exe operation; the link is followed to
// the program file, even a deleted one). execve(2) keeps the pid and the
// start ticks, so without the image a host that stored a session and then
// exec'd into another program would be the same host. A host whose image
// cannot be read (exe answers permission for another user's or a
// non-dumpable process, unsupported for a host without the operation)
// fails with [ErrExe]: resume off. For example, a process that started
// 98765 ticks after a boot whose ID is 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0,
// in the initial PID namespace, running the program file with device 2049
// and inode 1234567, has the host start time
//
//	98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836.2049x1234567
//
// Limits: an exec into the same program file (an interpreter re-executing
// itself with another script) keeps the image; an in-place upgrade of the
// host's binary does not change a running host's image (its
// /proc/<pid>/exe still names the old inode).
//
// The namespace matters because two PID namespaces hand out the same pids and
// share the boot ID and clock. A process visible in this process's /proc is
// in its PID namespace, so the reader's own (always readable) link names it.
// Before using anything else the policy checks that readlink /proc/self is
// facts.pid, i.e. that /proc belongs to this process's PID namespace (under
// `unshare -p` without --mount-proc it does not, and /proc/<pid> names other
// processes: faults 10b and 11d): otherwise [ErrNamespace]. [Liveness]
// answers unknown (cannot tell) for a start time recorded in another
// namespace rather than "gone", so a live host elsewhere is never pruned.
//
// The tick count tells apart two processes that held the same pid during one
// boot; the boot ID tells apart processes from different boots, whose tick
// counts restart at zero. Neither depends on the wall clock. Since Linux 5.6
// the tick count is shifted by the reader's time namespace, so a start time
// only compares equal to one read in the same time namespace; a server and
// its relaunches under one host share it.
//
// On macOS the start time is
//
//	<tv_sec>
//
// the seconds of p_starttime, in decimal, in ONE form for every host: from
// struct kinfo_proc (sysctl kern.proc.pid) where the host can call sysctl,
// or from the lstart column of ps where it cannot (Node), which prints
// whole seconds. The kernel records p_starttime once, from the wall clock,
// when the process is forked. Whole seconds suffice because the start time
// only has to tell apart two processes that held the same pid: macOS hands
// out pids sequentially up to 99998 before wrapping, so a pid is reused
// within one second only after about 100 000 forks in that second. Files
// written before ABI 3 by the Go and Python hosts record
// "<tv_sec>.<tv_usec>"; [Liveness] matches those on the seconds.
//
// The host's start time on macOS adds its program image as the macOS
// primitives give it to every host: "<tv_sec>.c<hex of p_comm>", p_comm
// being the first 16 bytes of the name of the file the process last
// exec'd (kinfo_proc, or ucomm from ps). execve(2) keeps the pid and
// p_starttime but replaces p_comm, so a host that exec'd into a program of
// another name is another host; into one of the same name it is not.
//
// # Launchers
//
// Stdio MCP servers are seldom direct children of their host. A host runs
// "npx -y some-server", which is an npm node process that runs "sh -c
// some-server", which runs the server; or "uv run", "uvx", "env", a wrapper
// script, and so on. Those intermediate processes are launchers: they live
// only as long as one server does, so they would give every relaunch a new
// identity. The walk therefore goes up from the server's parent and stops at
// the nearest ancestor that is not a launcher, reading at most [MaxDepth]
// ancestors ([ErrTooDeep] beyond). [Identity.Chain] lists the processes it
// walked through.
//
// A process is a launcher when any of these holds:
//
//   - Its Name, or the base name of Args[0], is in the launcher set, and the
//     name is not a shell. Names are compared exactly, except that a Name of
//     15 or more bytes also matches every set entry it is a prefix of,
//     because the kernel truncates names (Linux comm holds 15 bytes, macOS
//     p_comm 16).
//   - The name is a shell (sh, bash, dash, zsh, ksh, mksh, ash, fish) and
//     Args show it runs a command rather than an interactive session: an
//     option cluster containing 'c' ("-c", "-lc", "-ilc"), "--command", or an
//     operand such as a script path ("bash ./run-server.sh"). A shell whose
//     Args are unknown or show no command, such as a login shell "-bash" in
//     a terminal, is not a launcher: it is the host. Skipping it would
//     resolve to the terminal emulator or tmux server that all its sibling
//     shells share. On macOS, Args of another user's process are unknown.
//   - It is npm exec titling itself: Name or Args[0] is "npm exec ..." or
//     "npm x ...". npm 7 and later (and so npx) set process.title, which
//     overwrites both /proc/<pid>/comm (truncated to 15 bytes, e.g.
//     "npm exec ./tiny") and the argument area (/proc/<pid>/cmdline reads
//     "npm exec ./tinypkg" followed by NUL padding), as observed with npm
//     11.19.1 on node 20.20.2.
//   - It is node running a package manager: the base name of Args[0] is
//     node or nodejs and the base name of Args[1], without a .js, .cjs or
//     .mjs extension, is npm, npx, npm-cli, npx-cli, pnpm, pnpx, yarn or
//     yarnpkg.
//   - It is "bun x": the base name of Args[0] is bun and Args[1] is "x".
//
// The default launchers ([DefaultLaunchers]) are
//
//	sh bash dash zsh ksh mksh ash fish
//	env nice nohup setsid stdbuf time timeout ionice taskset chrt
//	uv uvx pipx poetry hatch pdm
//	npm npx pnpm pnpx yarn bunx
//
// sudo, doas, su and similar are deliberately absent: they change the user,
// and a session must not be resumed across users.
//
// To add launchers, list their names in the open option "launchers" or in
// the environment variable MCP_RESUME_LAUNCHERS (comma-separated, for example
// MCP_RESUME_LAUNCHERS=my-wrapper,direnv; [EnvLaunchers]). Both are merged
// with the defaults ([NewLauncherSet]); neither can remove a default.
//
// A host that is itself a shell script running the server directly looks
// exactly like a launcher; its identity then comes from the script's parent.
//
// # Reapers
//
// An init process or reaper (a process that adopts orphans) is shared by
// many unrelated processes and lives for the whole boot or container, so it
// must never be taken for the host. The walk fails with [ErrReaper] when
//
//   - it reaches a parent pid of 0 or 1: the server or one of its launchers
//     was orphaned and re-parented, or the host is outside the server's PID
//     namespace; or
//   - the resolved host's Name or Args[0] base name is one of [Reapers]:
//     init, systemd, launchd, kthreadd, tini, docker-init, dumb-init,
//     catatonit, s6-svscan, s6-supervise, runit, runsv, runsvdir,
//     openrc-init, containerd-shim, containerd-shim-runc-v2, conmon.
//
// As a consequence a server whose host runs as pid 1, such as a host that is
// the entry point of a container, gets no session resume.
//
// # Hidden processes
//
// A /proc mounted hidepid=1 or 2 hides other users' processes: their
// /proc/<pid>/stat is missing although they run. When a stat read answers
// not_found, the policy asks kill(pid, 0) in the same batch; permission
// (EPERM) means the process exists and belongs to another user. The walk
// then fails with [ErrHidden] ("cannot tell", resume off, never "the parent
// exited"), and [Liveness] answers unknown, never gone (fault 12). Only
// kill's not_found (ESRCH) confirms that a process is gone.
//
// # Stdio
//
// The walk alone cannot tell the process that launched the server from one
// that adopted it. When a launcher exits before the server resolves its
// host (a launcher that double-forks, or crashes), Linux re-parents the
// server to the nearest subreaper (PR_SET_CHILD_SUBREAPER), and a subreaper
// whose name is not on the reaper list would be taken for the host of every
// server orphaned under it, so a second MCP host's server would resume the
// first one's session (docs/RELIABILITY.md, fault 11c). The kernel does not
// expose the subreaper flag. What it does expose is who holds the server's
// stdio, and an MCP host always holds the other end of the pipes or socket
// pair it speaks MCP through. So on Linux [Resolve] checks the resolved
// host against this process's stdin, then stdout, with fstat and readlink
// /proc/self/fd/<n> of each:
//
//   - An anonymous pipe ("pipe:[N]"): the host must have the same pipe open
//     at the other end, read against write, per the access mode in the
//     fdinfo flags (the fds operation, for this process and for the host,
//     with the pipe as target). A forking launcher's copy of the server's own
//     end does not count.
//   - A socket: the peer operation (SO_PEERCRED, unix(7)) must name the
//     host. For a socket pair, as Node and libuv hosts give their children,
//     it is the process that created the pair.
//   - Anything else (a terminal, /dev/null, a file, a named FIFO), a socket
//     without peer credentials (peer unsupported, as in Node, or 0), or a
//     host whose fds cannot be listed (another user's process, or one made
//     non-dumpable) cannot tell.
//
// One fd verified is enough: [Identity.Stdio] then reads "verified: ...".
// When neither fd is verified and one is disproved, Resolve fails with
// [ErrAdopted]. When neither can tell, the identity stands and Stdio reads
// "not checked: ..." with the reasons, so a server started by hand in a
// terminal still resolves its shell as the host. A host that is gone by the
// time its fds are listed fails with [ErrRace].
//
// A consequence: a process the walk stops at that passes its own stdio
// through to the server, rather than talking to it, is refused too. That is
// what a launcher does; if such a process only launches servers, add it to
// MCP_RESUME_LAUNCHERS. Every default launcher passes stdio through, which
// is why only the host is examined.
//
// On macOS there are no subreapers: an orphan is adopted by launchd, pid 1,
// which the walk refuses. There is no check there, and Stdio reads "not
// checked: no subreapers on this system".
//
// # Races
//
// The process tree can change while it is being read: a launcher exits, its
// child is re-parented, and its pid is reused. Each step of the walk reads
// the parent and then the child again (in one batch, which the host runs in
// order), and fails with [ErrRace] unless the child still has the same
// parent pid and start time. A child is re-parented the moment its parent
// exits, before that pid can be reused, so the parent read in between is the
// child's real parent.
//
// # Host calls
//
// Resolve on Linux makes one mcp_resume_inspect call for the own-/proc
// check, the boot ID, the PID namespace, the server's stat and cmdline and
// the fstat and /proc link of its stdin and stdout; one call per ancestor
// level (the parent's stat, cmdline and program image, the child's stat again, kill of the
// parent); and one more for the stdio check when stdin or stdout is a pipe
// or a socket. A server launched directly by its host over pipes makes three.
// On macOS: one call for the server (two where sysctl is unsupported and ps
// answers), then one per level. [Liveness] makes one call per 20 files on
// Linux, one (or two, with ps) on macOS.
package policy
