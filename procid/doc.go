// Package procid holds every rule of mcp-resume that decides whose session
// is resumed: which process is the MCP host that launched this stdio MCP
// server ([Resolve]), whether that host holds the server's stdio, and
// whether the MCP host a token file was written under is still alive
// ([Liveness]). It is compiled into the plugin (plugin/plugin.wasm), so
// every host language (Go, Python, TypeScript) runs the same rules, and it
// is tested natively with fixture answers. The defaults of the plugin's open
// export (state directory, app name, instance key, the MCP_RESUME switch)
// are not here but in plugin/internal/resume (config.go).
//
// The package is importable so that other tools can resolve an MCP host the
// way the plugin does. Its API is unstable before v1: it changes with the
// contract of hostfuncs/README.md (whose ABI version the plugin reports).
//
// In this package "the host" is the MCP host being identified. The program
// that runs the plugin (the Extism host, your MCP server process) appears
// only through its host functions, and is called that.
//
// It cannot see the operating system. It works purely from the answers of
// the host primitives of hostfuncs/README.md: the facts of mcp_resume_facts
// ([hostfuncs.Facts]) and the batched read-only operations of
// mcp_resume_inspect (an [Inspector]). Any answer it cannot use (not
// parseable, the wrong number of results, a missing field, a host function
// that failed without answering) means "cannot tell": for identity that
// turns resume off ([ErrNoAnswer]), for liveness it is
// [hostfuncs.HostUnknown], never "gone".
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
// the nearest ancestor that is not a launcher, reading at most 16 (maxDepth)
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
//     its Args, parsed the way that shell parses its options, show that it
//     runs a command: -c (in bash, dash, zsh, ksh and mksh a flag whose
//     command is the first operand, "-c", "-lc", "-ic"; in fish an option
//     with the command as its argument, "-c CMD", "--command=CMD"), or,
//     without -s, a script operand after the options ("bash ./run.sh").
//     Every option that takes an argument consumes it, so its argument is
//     never taken for a script: bash --init-file and --rcfile (also with one
//     dash, before the short options), -o and -O; dash and ash -o; zsh -o
//     (also "-oname") and --emulate; ksh -o and -R; mksh -o and -T; fish
//     -C/--init-command, -d/--debug, -o/--debug-output, -p/--profile,
//     --profile-startup, -f/--features, -D/--debug-stack-frames (fish long
//     options also as "--name=value" and as unique abbreviations). "--" and
//     a lone "-" end the options (in fish "-" is an operand), and so does
//     zsh's -b. A shell whose Args are unknown, that reads its standard
//     input (no operand, or -s), or whose options it would refuse (an
//     unknown long option: it exits with a usage error), is not a launcher:
//     it is the host. So a login shell "-bash" in a terminal, and "bash
//     --init-file <script>" as VS Code starts its integrated terminal, are
//     hosts. Skipping them would resolve to the terminal emulator or
//     multiplexer that all their sibling shells share, and terminal 2 would
//     resume terminal 1's session. On macOS, Args of another user's process
//     are unknown. The option table per shell is shellTable (shell.go),
//     checked against the real shells.
//   - It is npm titling itself: Name or Args[0] is "npm " followed by the
//     command's positional words, such as "npm exec foo", "npm x foo", "npm
//     start", "npm run dev", "npm run-script dev", "npm test", "npm restart"
//     (or the 15-byte truncation in comm, "npm run-script "). npm 7 and
//     later (and so npx) set process.title to "npm" and the positional
//     arguments, which overwrites both /proc/<pid>/comm and the argument
//     area (/proc/<pid>/cmdline reads "npm run who --a b" followed by NUL
//     padding), as observed with npm 11.19.1 on node 20.20.2. Every npm
//     command counts, because "npm" is a launcher by name before the title
//     is set and an npm process runs at most one script or package binary
//     at a time, exits with it, and holds no session of its own.
//   - It is node running a package manager: the base name of Args[0] is
//     node or nodejs and the base name of Args[1], without a .js, .cjs or
//     .mjs extension, is a package manager's script (nodeTools in
//     launcher.go: npm, npx, pnpm, yarn, ...) or a Yarn 2+ release
//     ("yarn-4.5.0.cjs").
//   - It is bun running a package script or binary: the base name of
//     Args[0] is bun and its first word is "x", or "run" followed by a
//     script name, or a script name ("bun dev"). A script name has no '/'
//     and no JavaScript or TypeScript extension and is not one of bun's own
//     commands (install, build, test, repl, ...): "bun run host.ts" runs the
//     file inside the bun process, which may then be the MCP host.
//   - It is "deno task": the base name of Args[0] is deno and its first
//     word is "task" ("deno run host.ts" runs in the deno process).
//
// The launcher names and the runners behind them (npm, pnpm, yarn, bun,
// deno, uv, pdm, hatch, poetry, pipx, as observed) are listed in one place
// only, launcher.go (defaultLaunchers, nodeTools, with why each is there).
// A runner counts as a launcher because it runs one script or command as
// its child and exits with it, or replaces itself with it, and holds no
// session of its own. sudo, doas, su and similar are deliberately absent:
// they change the user, and a session must not be resumed across users.
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
//   - the resolved host's Name or Args[0] base name is an init system,
//     supervisor or subreaper (reapers in launcher.go: init, systemd,
//     launchd, tini, containerd-shim, ...).
//
// As a consequence a server whose host runs as pid 1, such as a host that is
// the entry point of a container, gets no session resume.
//
// # Shared servers
//
// Some processes are the parent of many unrelated sessions at the same time,
// so that servers launched by two different MCP hosts (or from two
// terminals) would both resolve to them. They are never taken for the host
// either: when the walk reaches one (sharedServers in launcher.go), by Name
// (as for reapers, truncation included), the base name of Args[0], or
// either of them before a ": " title, Resolve fails with [ErrSharedServer]
// and resume is off, even when the name is also listed as a launcher. The
// kinds, and why each is shared:
//
//   - remote-login servers (sshd, sshd-session, ...). With ssh connection
//     sharing (ControlMaster/ControlPersist) every channel of one
//     connection, so every "ssh host server" of every local MCP host, is a
//     child of one "sshd: user@notty", which also holds the channels'
//     pipes, so the stdio check cannot tell them apart. Without sharing
//     each launch gets a new sshd, so a resume could never happen there
//     anyway: no real setup loses resume through this rule.
//   - terminal multiplexers (tmux, screen, ...). A server started as a
//     window command ("tmux new-window CMD") has the multiplexer as its host
//     and loses resume; one started from a window's interactive shell has
//     that shell as its host.
//   - terminal emulators and terminal servers (gnome-terminal-server,
//     kitty, iTerm2, ...). A terminal that starts a server as a tab's
//     command without a shell loses resume. Terminals that are MCP hosts
//     themselves (VS Code and other editors, Warp) are not on the list:
//     their own servers must resume, and their tabs' interactive shells are
//     hosts before the walk reaches them.
//
// The list also names MCP gateways and proxies (supergateway, mcp-proxy,
// mcpo, mcp-hub, mcphub), marked gateway: the walk takes them for the host,
// and the trust rule refuses them.
//
// # Who is trusted
//
// A resolved host is not yet a host to resume under: [CheckTrust] keeps
// resume only under a host that can be shown to act for one person at a
// time, since everyone one host serves would share its token files. In
// order, the first match deciding: a known MCP gateway (by comm, program,
// interpreter script or node_modules package) is refused; on Linux a host
// with a TCP socket in state LISTEN on a non-loopback address (its socket
// inodes from its fd list, found in its namespace's tcp and tcp6 tables,
// parsed by one parser, parseNetTable) is refused; an unknown host
// listening on loopback only is refused; an unknown host with no
// controlling terminal (tty_nr 0; macOS e_tdev NODEV) and no desktop
// session (DISPLAY or WAYLAND_DISPLAY in /proc/<host>/environ; macOS a
// LaunchServices application's __CFBundleIdentifier or XPC_SERVICE_NAME
// application.*) is refused; what cannot be read refuses too. Known
// single-user MCP hosts (knownHosts: VS Code and forks with their remote
// servers, Claude, Codex, Zed) skip the last two rules, never the first
// two. The error wraps [ErrSharedHost]. The plugin skips the rule when
// the server's environment vouches for the host (MCP_RESUME=on, or
// MCP_RESUME_INSTANCE set to a key). macOS has no listening-socket check.
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
// that adopted it, or from one that every window of a terminal shares. When
// a launcher exits before the server resolves its host (a launcher that
// double-forks, or crashes), Linux re-parents the server to the nearest
// subreaper (PR_SET_CHILD_SUBREAPER), and a subreaper whose name is not on
// the reaper list would be taken for the host of every server orphaned under
// it (docs/RELIABILITY.md, faults 11c and 22). A terminal multiplexer that
// runs servers as window commands (tmux, screen, a terminal server) is the
// parent of every window's server (fault 23). The kernel does not expose the
// subreaper flag. What it does expose is who holds the server's stdio, and
// an MCP host always holds the other end of the pipes or socket pair it
// speaks MCP through; a shell that runs a server by hand holds its
// terminal. So on Linux [Resolve] checks the resolved host against this
// process's stdin, then stdout: the fds facts.stdio_fds names (default 0
// and 1; a binding whose MCP SDK repoints fds 0 and 1 while it serves
// reports copies it took earlier), with fstat and readlink
// /proc/self/fd/<n> of each. Each fd gets one verdict:
//
//   - An anonymous pipe ("pipe:[N]") or a named FIFO (its path): verified
//     when the host has the same pipe or FIFO open at the other end, read
//     against write, per the access mode in the fdinfo flags (the fds
//     operation, for this process and for the host, with the pipe as
//     target); disproved when it does not (a forking launcher's copy of the
//     server's own end does not count).
//   - A terminal (/dev/pts/<n>, /dev/tty<name>, /dev/console): verified when
//     the host holds the same terminal in any mode, as an interactive shell
//     holds its /dev/pts/N; disproved when it does not, as a multiplexer or
//     terminal emulator, which holds only the master side /dev/ptmx, does
//     not.
//   - A socket: the peer operation (SO_PEERCRED, unix(7)) verifies when it
//     names the host (for a socket pair, as Node and libuv hosts give their
//     children, the process that created the pair), and disproves when it
//     names another pid.
//   - Cannot tell: /dev/null, /dev/tty (each process's own controlling
//     terminal), a regular file or any other file, a closed fd, a link or
//     fdinfo that cannot be read, a host whose fds cannot be listed (another
//     user's process, or one made non-dumpable as sshd, ssh-agent and setuid
//     programs are), a socket peer of 0 (outside this PID namespace, so not
//     the host, which is inside).
//   - The residual: a socket whose peer this host cannot read at all (peer
//     answers unsupported: Node has no SO_PEERCRED).
//   - Before any of that, a socket must be a Unix socket of this network
//     namespace (listed by its inode in /proc/self/net/unix): a TCP or UDP
//     socket, or one found in no table, fails with [ErrNetworkStdio]
//     whatever the other fd shows, in every host language.
//
// One fd verified is enough: [Identity.Stdio] then reads "verified: ...".
// When neither fd is verified and one is disproved, Resolve fails with
// [ErrAdopted]. When neither fd is verified or disproved and both are the
// residual, the identity stands and Stdio reads "not checked: ..." with the
// reasons: a TypeScript server under a Node or Electron host cannot check its
// socket pair (docs/RELIABILITY.md, the residual of 11e). In every other
// case "cannot tell" never lets the identity stand: Resolve fails with
// [ErrUnverified], resume off, and the message names the reason and, for
// /dev/null, the fix (create the store before the MCP SDK serves stdio). A
// host that is gone by the time its fds are listed fails with [ErrRace].
//
// Consequences: a server whose stdin and stdout are /dev/null, files or
// closed never resumes; nor does one run by a host whose fds it cannot list
// (a host running as another user, or a non-dumpable one); nor one run
// directly as the command of a terminal multiplexer's window or a terminal
// emulator. A process the walk stops at that passes its own stdio through
// to the server, rather than talking to it, is refused too. That is what a
// launcher does; if such a process only launches servers, add it to
// MCP_RESUME_LAUNCHERS. Every default launcher passes stdio through, which
// is why only the host is examined.
//
// On macOS there are no subreapers: an orphan is adopted by launchd, pid 1,
// which the walk refuses. There is no check there, and Stdio reads "not
// checked: no subreapers on this system".
//
// # Time namespaces
//
// Since Linux 5.6 a process may run in a time namespace whose boot clock is
// shifted (time_namespaces(7)), and the starttime of every /proc/<pid>/stat
// it reads is shifted with it. Sandboxes that start the clock near zero, one
// after the other, each in a fresh PID namespace, name their hosts alike:
// the same pid (the host is pid 2 each time), the same tick, and a PID
// namespace inode that Linux recycles within about a second of the previous
// namespace's end; the time namespace's inode is recycled the same way
// (docs/RELIABILITY.md, fault 24). So the first identity call reads
// /proc/self/timens_offsets, and a non-zero boottime offset fails with
// [ErrTimeNamespace]: resume is off in such sandboxes, and after a
// checkpoint/restore that shifts the clock. The monotonic offset enters no
// start time and is ignored. A missing file is a kernel without time
// namespaces; any other failure to read it cannot tell (also
// ErrTimeNamespace).
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
// check, the boot ID, the PID namespace, the server's stat and cmdline, the
// fstat and /proc link of its stdin and stdout and the time-namespace
// offsets; one call per ancestor level (the parent's stat, cmdline and
// program image, the child's stat again, kill of the parent); and one more
// for the stdio check when stdin or stdout is a pipe, a FIFO, a terminal or a
// socket. A server launched directly by its host over pipes makes three.
// On macOS: one call for the server (two where sysctl is unsupported and ps
// answers), then one per level. [Liveness] makes one call per 20 files on
// Linux, one (or two, with ps) on macOS.
package procid
