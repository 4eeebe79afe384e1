"""``python -m mcp_resume``: the mcp-resume command line, without Go.

::

    python -m mcp_resume whoami [--json] [--app NAME] [--instance KEY] [--pid PID]
    python -m mcp_resume list   [--json] [--app NAME] [--state-dir ROOT]
    python -m mcp_resume prune  [--json] [--app NAME] [--state-dir ROOT]
    python -m mcp_resume state list|gc [--json] [--app NAME] [--state-dir ROOT] [APP]
    python -m mcp_resume precompile     # fill the plugin's compilation cache now (install time)

The same commands, flags, output and exit status as the Go command (``go run ./host/cmd/mcp-resume``) and
``npx mcp-resume``: every answer is the plugin's (its ``whoami``, ``list`` and ``prune`` exports) and so is
every byte printed to stdout (its ``render`` export), so this module only parses arguments and prints. list and
prune cover every app directory under the state root (``--state-dir``, else ``$MCP_RESUME_STATE_DIR``, else
per user), or the one of ``--app``; they never print a token. ``state list`` and ``state gc`` do the same for the handle stores (the apps'
``handles/`` directories; an app without one is skipped, so that looking creates nothing): the plugin's
``handle_list``/``handle_gc`` outputs rendered, key-hash prefixes, states, generations, sizes, ages and
counts, never a value or a handle. Flags may come before or after APP, in any order; ``--`` ends them.

Exit status: 0 on success (an app directory without token files or handles is an empty answer); 1 on a
runtime failure, with one line on stderr, ``mcp-resume <command>: <what was wrong and what to do>``; 2 on
bad usage (an unknown command or flag, a flag without its value, an unexpected argument), with the usage
text. The failures, worded by the plugin as in every language, include ``whoami --pid PID`` of a pid no
process has (``no process has pid PID: ...``), and ``list``, ``prune`` and ``state list|gc`` when the state
root holds no app directory (``no app directories under ROOT: ...``) or ``--app NAME``/APP names an app
without a directory there (``no app "NAME" under ROOT; the apps there: a, b``).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import stat

from . import InvalidAppError  # the public name, which every store's invalid_app refusal keeps
from ._handles import HandleStore
from ._store import NO_INSTANCE, ResumeTokenStore

#: The app name stores are opened with when no --app is given: it only picks a default directory.
CLI_APP = "mcp-resume"
COMMANDS = ("whoami", "list", "prune", "state")
#: The subcommands of ``state``.
STATE_COMMANDS = ("list", "gc")
#: Flags taking a value, and the boolean one (as Go's flag package reads them: -x or --x, "--x v" or "--x=v").
VALUE_FLAGS = ("app", "state-dir", "instance", "pid")


class _Usage(Exception):
    """Bad usage: the message, printed with the usage text; exit 2."""


class _Failure(Exception):
    """A failure the command itself finds (no state root, an unreadable root, Redis without an app): the
    message, printed as one line; exit 1."""


def _answered(e: BaseException) -> bool:
    """Whether ``e`` is a failure to print as one line (exit 1), not a bug: this module's own, or an error
    either store raises for the plugin's or the host's answer (the package's exception classes, whatever
    their names)."""
    return isinstance(e, _Failure) or type(e).__module__.startswith("mcp_resume.")


def _invalid_app(e: BaseException) -> bool:
    """Whether ``e`` is the plugin's ``invalid_app`` refusal, from either store."""
    return isinstance(e, InvalidAppError) or getattr(e, "code", None) == "invalid_app"


def _quiet() -> logging.Logger:
    """A logger that drops everything: the CLI's own store must not log the spec's lines."""
    log = logging.getLogger("mcp_resume.cli")
    log.propagate = False
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    return log


def _parse(args: list[str], positional: int = 0) -> dict[str, Any]:
    """The flags of ``args`` (after the command), each as Go's flag package reads it, and at most
    ``positional`` arguments (``opts["args"]``, in order): flags and arguments in any order, ``--`` ending the
    flags. Raises :class:`_Usage`."""
    opts: dict[str, Any] = {"json": False, "app": "", "state-dir": "", "instance": "", "pid": 0}
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i + 1:]
            break
        if not arg.startswith("-") or arg == "-":
            rest.append(arg)
            i += 1
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        if name == "json":
            if eq and value not in ("true", "false", "1", "0"):
                raise _Usage(f'invalid boolean value "{value}" for -json')
            opts["json"] = not eq or value in ("true", "1")
        elif name in VALUE_FLAGS:
            if not eq:
                i += 1
                if i == len(args):
                    raise _Usage(f"flag needs an argument: -{name}")
                value = args[i]
            if name == "pid":
                try:
                    opts["pid"] = int(value, 10)
                except ValueError:
                    raise _Usage(f'invalid value "{value}" for flag -pid: parse error') from None
            else:
                opts[name] = value
        elif name in ("h", "help"):
            raise _Usage("")
        else:
            raise _Usage(f"flag provided but not defined: -{name}")
        i += 1
    opts["args"] = rest
    if len(rest) > positional:
        raise _Usage(f'unexpected argument "{rest[-1]}"')
    return opts


def _open(app: str, state_root: str = "", instance: str = "") -> ResumeTokenStore:
    """A quiet store for ``app``. The instance key is the declared one, else ``$MCP_RESUME_INSTANCE`` (read
    by the plugin), else none: the CLI's own arguments are not a server's."""
    if not instance and not os.environ.get("MCP_RESUME_INSTANCE"):
        instance = NO_INSTANCE
    return ResumeTokenStore(app, state_root=state_root or None, logger=_quiet(), instance=instance or None)


def _subdirs(root: str) -> list[str]:
    """The names of the directories directly in ``root`` (symlinks not followed); none for a missing root."""
    try:
        with os.scandir(root) as it:
            return sorted(e.name for e in it if e.is_dir(follow_symlinks=False))
    except FileNotFoundError:
        return []
    except OSError as e:
        raise _Failure(f"state root {root}: {(e.strerror or str(e)).lower()}") from None


def _run(cmd: str, opts: dict[str, Any]) -> bytes:
    """The bytes ``cmd`` prints to stdout. The render input carries the root, the directories in it and the app
    named, from which the plugin decides that there is nothing to answer for (no app directories, or none for
    the app). Raises :class:`_Failure` or the stores' errors."""
    doc: dict[str, Any] = {"command": cmd, "json": opts["json"], "apps": []}
    if cmd == "whoami":
        with _open(opts["app"] or CLI_APP, instance=opts["instance"]) as store:
            doc["show_state_dir"] = bool(opts["app"])
            doc["whoami"] = store.whoami(opts["pid"] or None)
            return store._render(doc)
    export, member = ("list", "files") if cmd == "list" else ("prune", "removed")
    with _open(opts["app"] or CLI_APP, opts["state-dir"]) as base:
        if not base.state_root:
            raise _Failure("no state root: set MCP_RESUME_STATE_DIR or HOME")
        dirs = _subdirs(base.state_root)
        doc.update(state_root=base.state_root, root_dirs=dirs, app=opts["app"])
        for app in [opts["app"]] if opts["app"] else dirs:
            try:
                store = _open(app, opts["state-dir"])
            except Exception as e:
                if opts["app"] or not _invalid_app(e):
                    raise
                continue  # not an app's directory: the plugin's app rule decides
            with store:
                doc["apps"].append({"app": app, "state_dir": store.state_dir, member: store._json(export, member) or []})
        return base._render(doc)


def _handles_dir(path: str) -> bool:
    """Whether ``path`` is a directory (a symlink is not): an app's handle store exists."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _run_state(sub: str, opts: dict[str, Any]) -> bytes:
    """The bytes ``state list`` or ``state gc`` prints: each app's ``handle_list``/``handle_gc`` output,
    rendered by the plugin. Opens a handle store only where its directory exists; on Redis (the environment's
    ``MCP_RESUME_STATE_URL``) there is none to look for, and no root to check. Raises
    :class:`_Failure` or the stores' errors."""
    if opts["app"] and opts["args"] and opts["args"][0] != opts["app"]:
        raise _Usage(f'unexpected argument "{opts["args"][0]}"')  # --app NAME and APP must agree
    app = opts["app"] or "".join(opts["args"])
    doc: dict[str, Any] = {"command": f"state_{sub}", "json": opts["json"], "apps": []}
    if not app:
        # Opening touches nothing: this only reads the backend the environment selects.
        with HandleStore(CLI_APP, state_root=opts["state-dir"] or None, pool_size=1, logger=_quiet()) as probe:
            if probe.backend == "redis":
                raise _Failure(f"the handle stores are on {probe.state_url} (MCP_RESUME_STATE_URL): name the "
                                       f"app, as in `mcp-resume state {sub} APP`; a Redis server has no app directories "
                                       "to list")
    with _open(app or CLI_APP, opts["state-dir"]) as base:
        root = base.state_root
        if not root:
            raise _Failure("no state root: set MCP_RESUME_STATE_DIR or HOME")
        dirs = _subdirs(root)
        redis = False
        for name in [app] if app else dirs:
            try:
                store = HandleStore(name, state_root=opts["state-dir"] or None, pool_size=1, logger=_quiet())
            except Exception as e:
                if app or not _invalid_app(e):
                    raise
                continue  # not an app's directory: the plugin's app rule decides
            with store:
                entry: dict[str, Any] = {"app": name, "state_dir": store.state_dir}
                if store.backend == "redis":
                    redis = True
                    entry.update(backend="redis", state_url=store.state_url)
                elif not _handles_dir(store.state_dir):
                    continue  # no handle store: nothing to show, and looking creates nothing
                entry[sub] = store._call(f"handle_{sub}", {})
                doc["apps"].append(entry)
        if not redis:
            doc.update(state_root=root, root_dirs=dirs, app=app)
        return base._render(doc)


def _usage() -> str:
    """The usage text, from the plugin (the same in every language)."""
    with _open(CLI_APP) as store:
        return store._render({"command": "usage"}).decode()


def main(argv: list[str] | None = None) -> int:
    """Run the command line on ``argv`` (default ``sys.argv[1:]``): the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["precompile"]:
        from ._runtime import compiled_plugin
        compiled_plugin()
        return 0
    try:
        if not args or args[0] in ("-h", "--help", "help"):
            sys.stderr.write(_usage())
            return 2 if not args else 0
        cmd = args[0]
        if cmd not in COMMANDS:
            sys.stderr.write(f'mcp-resume: unknown command "{cmd}"\n\n{_usage()}')
            return 2
        rest = args[1:]
        if cmd == "state":
            if not rest or rest[0] not in STATE_COMMANDS:
                sys.stderr.write(f'mcp-resume state: want "state list" or "state gc"\n\n{_usage()}')
                return 2
            cmd, rest = f"state {rest[0]}", rest[1:]
        try:
            opts = _parse(rest, positional=1 if cmd.startswith("state") else 0)
            out = _run_state(cmd[6:], opts) if cmd.startswith("state") else _run(cmd, opts)
        except _Usage as e:
            if not str(e):
                sys.stderr.write(_usage())
                return 0
            sys.stderr.write(f"mcp-resume {cmd}: {e}\n\n{_usage()}")
            return 2
    except Exception as e:
        if not _answered(e):
            raise
        msg = str(e)
        words = args[:2] if args[:1] == ["state"] and args[1:2] and args[1] in STATE_COMMANDS else args[:1]
        prefix = f"mcp-resume {' '.join(words)}: " if words else "mcp-resume: "
        sys.stderr.write(msg if msg.startswith(prefix) else prefix + msg)
        sys.stderr.write("\n")
        return 1
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
