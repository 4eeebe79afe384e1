// Package procid resolves the identity of the MCP host that launched the
// current stdio MCP server: the host's process ID and a start time that,
// together, name one process instance. mcp-resume files the session token
// under that identity (token-<pid>-<start_time>, spec 000, "Token File
// Naming Strategy"), so a server relaunched by the same host instance finds
// its session again and a server under any other host does not.
//
// The rule throughout is the spec's: "Better to lose session resume than risk
// resuming someone else's session" (spec 000, "Parent Process Information
// Unavailable"). Whenever the host cannot be identified with certainty the
// functions return an error, and the caller turns resume off.
//
// # Platforms
//
// Linux and macOS are supported (spec 000, "Platform Support"). On every
// other system [Host], [HostOf], [Lookup] and [Alive] return an error
// wrapping [ErrUnsupported].
//
// # Start time
//
// [Process.StartTime] and [Identity.StartTime] are opaque strings meant to be
// compared for equality and embedded in file names. They contain only ASCII
// digits, lowercase hex digits and one '.'.
//
// On Linux StartTime is
//
//	<starttime>.<boot_id>.<pid_ns>
//
// where <starttime> is field 22 of /proc/<pid>/stat in decimal (clock ticks
// since boot, see proc_pid_stat(5)), <boot_id> is the contents of
// /proc/sys/kernel/random/boot_id with the dashes removed (32 lowercase hex
// digits), and <pid_ns> is the inode number of the PID namespace the pid
// belongs to, from the link /proc/self/ns/pid ("pid:[4026531836]"). For
// example, a process that started 98765 ticks after a boot whose ID is
// 0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0, in the initial PID namespace, has
// StartTime
//
//	98765.0f1e2d3c4b5a69788796a5b4c3d2e1f0.4026531836
//
// The namespace matters because two PID namespaces hand out the same pids and
// share the boot ID and clock: two hosts, each pid 2 of its own namespace,
// started in the same 10 ms tick would otherwise have the same identity. A
// process visible in this process's /proc is in its PID namespace, so the
// reader's own (always readable) link names it. Before reading anything the
// package checks that /proc/self is this process, i.e. that /proc belongs to
// its PID namespace (under `unshare -p` without --mount-proc it does not, and
// /proc/<pid> names other processes): otherwise [ErrNamespace]. [Alive]
// answers [ErrNamespace] (cannot tell) for a StartTime recorded in another
// namespace rather than "gone", so a live host elsewhere is never pruned.
//
// The tick count tells apart two processes that held the same PID during one
// boot; the boot ID tells apart processes from different boots, whose tick
// counts restart at zero. Neither depends on the wall clock, so setting the
// clock or NTP adjustments cannot change a StartTime. If the boot ID cannot
// be read, the functions return an error wrapping [ErrNoBootID]. Since Linux
// 5.6 the tick count is shifted by the reader's time namespace, so a
// StartTime only compares equal to one read in the same time namespace; a
// server and its relaunches under one host share it.
//
// On macOS StartTime is
//
//	<tv_sec>.<tv_usec>
//
// the p_starttime field of the process's struct kinfo_proc (sysctl
// kern.proc.pid): seconds since the Unix epoch in decimal, then the
// microseconds as exactly six decimal digits, for example
// 1700000000.000042. The kernel records it once, from the wall clock, when
// the process is forked, so it does not change while the process runs.
//
// # Launchers
//
// Stdio MCP servers are seldom direct children of their host. A host runs
// "npx -y some-server", which is an npm node process that runs "sh -c
// some-server", which runs the server; or "uv run", "uvx", "env", a wrapper
// script, and so on. Those intermediate processes are launchers: they live
// only as long as one server does, so they would give every relaunch a new
// identity. [HostOf] therefore walks up from the server's parent and returns
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
//     11.19.1 on node 20.20.2. npx is the same process, titled the same way.
//   - It is node running a package manager: the base name of Args[0] is
//     node or nodejs and the base name of Args[1], without a .js, .cjs or
//     .mjs extension, is npm, npx, npm-cli, npx-cli, pnpm, pnpx, yarn or
//     yarnpkg.
//   - It is "bun x": the base name of Args[0] is bun and Args[1] is "x".
//
// The default launcher set is [DefaultLaunchers]:
//
//	sh bash dash zsh ksh mksh ash fish
//	env nice nohup setsid stdbuf time timeout ionice taskset chrt
//	uv uvx pipx poetry hatch pdm
//	npm npx pnpm pnpx yarn bunx
//
// sudo, doas, su and similar are deliberately absent: they change the user,
// and a session must not be resumed across users.
//
// To add launchers, list their names in [Options.Launchers] or in the
// environment variable MCP_RESUME_LAUNCHERS (comma-separated, for example
// MCP_RESUME_LAUNCHERS=my-wrapper,direnv). Both are merged with
// [DefaultLaunchers]; neither can remove a default.
//
// A host that is itself a shell script running the server directly looks
// exactly like a launcher; its identity then comes from the script's parent.
//
// # Reapers
//
// An init process or reaper (a process that adopts orphans) is shared by
// many unrelated processes and lives for the whole boot or container, so it
// must never be taken for the host. [HostOf] fails with [ErrReaper] when
//
//   - the walk reaches a parent PID of 0 or 1: the server or one of its
//     launchers was orphaned and re-parented, or the host is outside the
//     server's PID namespace; or
//   - the resolved host's Name or Args[0] base name is one of: init,
//     systemd, launchd, kthreadd, tini, docker-init, dumb-init, catatonit,
//     s6-svscan, s6-supervise, runit, runsv, runsvdir, openrc-init,
//     containerd-shim, containerd-shim-runc-v2, conmon.
//
// As a consequence a server whose host runs as PID 1, such as a host that is
// the entry point of a container, gets no session resume.
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
// pair it speaks MCP through. So on Linux [Host] (not [HostOf], which can
// describe any pid) checks the resolved host, the last element of the
// chain, against this process's stdin, then stdout:
//
//   - An anonymous pipe ("pipe:[N]" in /proc/self/fd): the host must have
//     the same pipe open at the other end, read against write, per the
//     access mode in /proc/<pid>/fdinfo (proc_pid_fdinfo(5)). A forking
//     launcher's copy of the server's own end does not count.
//   - A socket: SO_PEERCRED (unix(7)) must name the host. For a socket pair,
//     as Node and libuv hosts give their children, it is the process that
//     created the pair.
//   - Anything else (a terminal, /dev/null, a file, a named FIFO), a socket
//     without peer credentials, or a host whose /proc/<pid>/fd cannot be
//     listed (another user's process, or one made non-dumpable) cannot tell.
//
// One fd verified is enough: [Identity.Stdio] then reads "verified: ...".
// When neither fd is verified and one is disproved, [Host] fails with
// [ErrAdopted]. When neither can tell, the identity stands and Stdio reads
// "not checked: ..." with the reasons, so a server started by hand in a
// terminal still resolves its shell as the host.
//
// A consequence: a process the walk stops at that passes its own stdio
// through to the server, rather than talking to it, is refused too. That is
// what a launcher does; if such a process only launches servers, add it to
// MCP_RESUME_LAUNCHERS. Every default launcher passes stdio through, which
// is why only the host is examined.
//
// On macOS there are no subreapers: an orphan is adopted by launchd, pid 1,
// which the walk refuses. [Host] does not check there, and Stdio reads "not
// checked: no subreapers on this system".
//
// # Races
//
// The process tree can change while it is being read: a launcher exits, its
// child is re-parented, and its PID is reused. Each step of the walk reads
// the child, then its parent, then the child again, and fails with
// [ErrRace] unless the child still has the same parent PID and start time.
// A child is re-parented the moment its parent exits, before that PID can
// be reused, so the parent read in between is the child's real parent.
//
// # Concurrency
//
// All functions are safe for concurrent use. [DefaultLaunchers] is read on
// every call and must not be modified; use [Options.Launchers] instead.
package procid
