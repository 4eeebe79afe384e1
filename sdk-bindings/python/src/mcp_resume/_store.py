"""``ResumeTokenStore``: the Python host API of the mcp-resume plugin (mirrors Go ``host.Store``)."""

from __future__ import annotations

import builtins
import functools
import json
import logging
import os
import re
import sys
import threading
from dataclasses import dataclass
from typing import Union
from collections.abc import Callable, Iterable

import extism
import platformdirs

from . import _procid, _runtime
from ._errors import InvalidAppError, InvalidTokenError, PluginError
from ._hostfuncs import ABI_VERSION, HostFunctions

__all__ = ["INSTANCE_ENV", "NO_INSTANCE", "STATE_DIR_ENV", "ResumeTokenStore", "TokenFile", "default_state_dir", "resolve_instance"]

#: Environment variable that overrides the state directory (an explicit ``state_dir`` wins over it).
STATE_DIR_ENV = "MCP_RESUME_STATE_DIR"

#: Environment variable that sets the instance key when ``instance`` is not given
#: (an MCP host's server configuration can set it per server entry).
INSTANCE_ENV = "MCP_RESUME_INSTANCE"

#: As ``instance`` (or ``$MCP_RESUME_INSTANCE``): no instance key, like ``""``
#: (Go ``host.NoInstance``). Every instance under one host is then the same one.
NO_INSTANCE = "-"

_APP = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

PathLike = Union[str, "os.PathLike[str]"]
Logger = Union[logging.Logger, logging.LoggerAdapter]  # type: ignore[type-arg]


class _Closed(RuntimeError):
    """The store was closed; calls into it do nothing."""


@dataclass(frozen=True)
class TokenFile:
    """One token file of the state directory, as ``list()`` reports it (never its token).

    Attributes: ``name`` (``token-<pid>-<start_time>[-<instance>]``), ``pid``
    (the MCP host's pid, int), ``start_time`` (its start time, opaque string;
    spec 000, "Token File Naming Strategy"), ``instance`` (the 16 hex digits of
    ``sha256(instance key)`` that end the name of an instance's file, or ``""``
    when the server did not tell instances apart).
    """

    name: str
    pid: int
    start_time: str
    instance: str = ""


def default_state_dir(app: str) -> str:
    """The default state directory of ``app``: ``platformdirs.user_state_dir("mcp-resume")/<app>``.

    That is ``$XDG_STATE_HOME/mcp-resume/<app>`` (else
    ``~/.local/state/mcp-resume/<app>``) on Linux and
    ``~/Library/Application Support/mcp-resume/<app>`` on macOS, the same as
    the Go host (hostfuncs/README.md, "The state directory"). Per user and per
    app, so two MCP servers under one MCP host never share a token. Raises
    nothing; does not create the directory.
    """
    return os.path.join(platformdirs.user_state_dir("mcp-resume"), app)


def resolve_instance(instance: str | None = None) -> str:
    """The instance key a store reports to the plugin (hostfuncs/README.md, ``mcp_resume_identity``).

    ``None``: ``$MCP_RESUME_INSTANCE`` if set and non-empty, else this
    process's arguments after the script (``sys.argv[1:]``) joined with NUL.
    ``""`` or ``"-"`` (:data:`NO_INSTANCE`), given or resolved: no instance,
    ``""``. Any other string is used as is. Raises nothing.
    """
    if instance is None:
        instance = os.environ.get(INSTANCE_ENV, "") or "\0".join(sys.argv[1:])
    return "" if instance == NO_INSTANCE else instance


class ResumeTokenStore:
    """One MCP server instance's resume-token store (spec 000).

    Open it at startup, ``load()`` the token to offer the broker, ``store()``
    the token the broker returns, ``reject()`` a token the broker refused.
    All the resume logic is the Wasm plugin (the same module the Go and
    TypeScript hosts run); this class supplies its host functions and calls
    its exports. Every failure inside ``load``/``store``/``reject`` is logged
    and swallowed: the resume layer never crashes or blocks the server, and
    never writes to stdout. Methods are thread-safe (one lock serialises the
    calls into the single plugin instance). Usable as a context manager.

    Inputs:
      ``app``: the MCP server application name, 1-64 of ``[A-Za-z0-9._-]``
      starting with a letter or digit (e.g. ``"github-server"``).
      ``state_dir``: where token files live. Default: ``$MCP_RESUME_STATE_DIR``
      if set, else :func:`default_state_dir`. Made absolute; created 0700 on
      first use, never by the constructor.
      ``logger``: receives the plugin's log lines (spec 000, Logging Strategy)
      with ``extra={"event": ..., "detail": ...}``; default
      ``logging.getLogger("mcp_resume")``.
      ``launchers``: extra process names to skip when looking for the MCP host,
      added to the defaults and ``$MCP_RESUME_LAUNCHERS``.
      ``instance``: tells this server instance apart from others the same
      MCP host runs at the same time (hosts start one server several times,
      e.g. with different profiles). Instances with different keys keep
      separate token files and resume independently; instances with the same
      key share one file, which only the first holds (it takes a lock on it
      for its lifetime): the others log "Another server instance under this
      host holds the token file, session resume disabled for this instance"
      and run without resume. Default (``None``): ``$MCP_RESUME_INSTANCE`` if
      set and non-empty, else the process's arguments after the script
      (``sys.argv[1:]``) joined with NUL. ``""`` or ``"-"``: no instance (the
      plain ``token-<pid>-<start_time>`` file). Declare it from your
      configuration (a profile name, a hash of the config file) when copies
      differ by more than their arguments. Only a SHA-256 digest of it
      reaches a file name.
      ``identity``: a callable returning the MCP host's ``(pid, start_time)``
      or raising when it cannot be verified; default: the process tree
      (:func:`mcp_resume._procid.host`). Set it only when your process knows its
      host better than the process tree does (the conformance tests pin one).
      ``alive``: a callable ``(pid, start_time) -> bool`` telling whether the
      host a token or lock file names is still running, raising when it
      cannot tell; default :func:`mcp_resume._procid.alive`. Like
      ``identity``, a seam for tests and embedders: prune deletes the files of
      hosts it reports gone.

    Raises :class:`InvalidAppError` for a bad app name and :class:`PluginError`
    when the plugin cannot be compiled or instantiated or its ABI version is
    not ``"2"``; in both cases a server should carry on without resume.
    Problems with the host identity, the state directory or the lock are not
    errors: they switch resume off and are logged on the first call (spec 000,
    "Parent Process Information Unavailable").

    The first ``load``, ``store`` or ``reject`` also prunes: it deletes the
    token and lock files of MCP hosts that are gone (see :meth:`prune`).
    """

    #: The Wasm module to run instead of the shipped plugin (tests only; ``None`` is the plugin).
    _wasm: bytes | None = None

    def __init__(
        self,
        app: str,
        state_dir: PathLike | None = None,
        *,
        logger: Logger | None = None,
        launchers: Iterable[str] | None = None,
        identity: Callable[[], tuple[int, str]] | None = None,
        instance: str | None = None,
        alive: Callable[[int, str], bool] | None = None,
    ) -> None:
        if not isinstance(app, str) or not _APP.fullmatch(app):
            raise InvalidAppError(
                f"invalid app name {app!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        directory = os.fspath(state_dir) if state_dir is not None else ""
        if not directory:
            directory = os.environ.get(STATE_DIR_ENV, "") or default_state_dir(app)
        self._app = app
        self._state_dir = os.path.abspath(directory)
        self._logger: Logger = logger if logger is not None else logging.getLogger("mcp_resume")
        if identity is None:
            identity = functools.partial(_procid.host, tuple(launchers) if launchers is not None else None)
        if instance is not None and not isinstance(instance, str):
            raise TypeError(f"instance must be a str or None, not {type(instance).__name__}")
        self._instance = resolve_instance(instance)
        self._funcs = HostFunctions(
            self._state_dir, identity, self._logger, instance=self._instance, alive=alive  # type: ignore[arg-type]
        )
        self._lock = threading.Lock()
        self._closed = False
        self._plugin = _runtime.new_plugin(self._wasm)
        try:
            out = bytes(self._plugin.call("mcp_resume_abi_version", b"", host_context=self._funcs))
        except extism.Error as e:
            self._release()
            raise PluginError(
                f"mcp-resume plugin unusable: plugin ABI version unknown ({e}), this host implements "
                f'"{ABI_VERSION}"; reinstall mcp-resume'
            ) from e
        if out != ABI_VERSION.encode():
            self._release()
            raise PluginError(
                f'mcp-resume plugin unusable: plugin ABI version "{out.decode("utf-8", "replace")}", '
                f'this host implements "{ABI_VERSION}"; reinstall mcp-resume so plugin and host match'
            )

    @property
    def app(self) -> str:
        """The app name given to the constructor."""
        return self._app

    @property
    def state_dir(self) -> str:
        """The absolute state directory this store uses."""
        return self._state_dir

    @property
    def instance(self) -> str:
        """The instance key this store reports (``""``: none); see the ``instance`` argument."""
        return self._instance

    def __repr__(self) -> str:
        return f"ResumeTokenStore(app={self._app!r}, state_dir={self._state_dir!r})"

    def _release(self) -> None:
        plugin, self._plugin = self._plugin, None
        self._closed = True
        self._funcs.close()
        if plugin is not None:
            plugin.__exit__(None, None, None)

    def _call(self, export: str, data: bytes) -> bytes:
        """Run one export under the lock. Raises ``extism.Error`` or ``RuntimeError`` (closed)."""
        with self._lock:
            if self._closed or self._plugin is None:
                raise _Closed("mcp-resume: store is closed")
            return bytes(self._plugin.call(export, data, host_context=self._funcs))

    def _failed(self, export: str, err: BaseException) -> None:
        """Log a runtime failure of ``export`` (never a token; never raises)."""
        try:
            if isinstance(err, _Closed):
                self._logger.debug(
                    "mcp-resume: %s called on a closed store; ignored",
                    export,
                    extra={"event": "store_closed", "detail": ""},
                )
                return
            self._logger.error(
                "mcp-resume plugin failed in %s; session resume skipped for this call: %s",
                export,
                err,
                extra={"event": "plugin_failed", "detail": f"{type(err).__name__}: {err}"},
            )
        except Exception:  # noqa: BLE001
            pass

    def load(self) -> str | None:
        """Return the token saved by the previous server instance under the same MCP host, or ``None``.

        ``None`` means there is none to offer: first run (logs "Token file not
        found (first run or clean slate)"), resume off, or a corrupt file,
        which is deleted (logs "Token file corrupted, treating as stale").
        Spec 000, "MCP Server Startup" steps 3-5 and "Token File Corrupted".
        Never raises; a runtime failure is logged and gives ``None``.
        """
        try:
            out = self._call("load", b"")
            return out.decode("ascii") if out else None
        except Exception as e:  # noqa: BLE001 - never crash the server
            self._failed("load", e)
            return None

    def store(self, token: str) -> None:
        """Persist ``token``, which the broker just issued, for the next server instance.

        Call it after every session start or resume (the broker rotates
        tokens). If the previous ``load`` offered a token that was not
        rejected, logs "Session resumed successfully" once. A failed write is
        logged as "Failed to write token file: <error>" and not raised (spec
        000, "Token Persistence").

        Raises :class:`InvalidTokenError` (message starting "invalid token")
        when ``token`` is not a ``str`` of 1-4096 bytes of visible ASCII
        (0x21-0x7E); nothing is written.
        """
        if not isinstance(token, str):
            raise InvalidTokenError(f"invalid token: expected str, got {type(token).__name__}")
        try:
            data = token.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidTokenError("invalid token: it is not encodable text; only visible ASCII (0x21-0x7E) is allowed") from None
        try:
            self._call("store", data)
        except extism.Error as e:
            msg = str(e)
            if msg.startswith("invalid token"):
                raise InvalidTokenError(msg) from None
            self._failed("store", e)
        except Exception as e:  # noqa: BLE001 - never crash the server
            self._failed("store", e)

    def reject(self) -> None:
        """Tell the store the broker refused the token ``load`` returned.

        Logs "Broker rejected resume token, starting fresh session" and
        deletes the token file, unless it already holds a newer valid token
        written by another instance (then logs "Token file holds a newer
        token, leaving it in place"). Spec 000, "Broker Rejects Token".
        Never raises.
        """
        try:
            self._call("reject", b"")
        except Exception as e:  # noqa: BLE001 - never crash the server
            self._failed("reject", e)

    def list(self) -> list[TokenFile]:
        """Report the token files in the state directory (names, pids, start times, instances; never tokens).

        Needs no host identity. A missing state directory gives ``[]``.
        Raises :class:`PluginError` when the directory cannot be listed (the
        message is the plugin's, e.g. an ``io`` error) or the store is closed.
        """
        try:
            out = self._call("list", b"")
        except (extism.Error, RuntimeError) as e:
            raise PluginError(f"mcp-resume list failed: {e}") from e
        try:
            doc = json.loads(out)
            return [
                TokenFile(name=f["name"], pid=int(f["pid"]), start_time=f["start_time"], instance=f.get("instance") or "")
                for f in doc["files"]
            ]
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise PluginError(f"mcp-resume plugin unusable: list returned malformed JSON: {e}") from e

    def prune(self) -> builtins.list[str]:  # `list` is the method above
        """Delete the token and lock files of MCP hosts that are gone; return the names removed.

        A host is gone when its pid is absent, a zombie, or names another
        process or boot. A file whose host cannot be checked is removed only
        once older than 30 days; a file whose host is alive is never removed,
        and neither are this instance's own. Each removal logs "Removed stale
        token file" (event ``stale_removed``). Needs no host identity. The
        first ``load``/``store``/``reject`` already prunes once; call this for
        housekeeping (like ``mcp-resume prune``). Failures on single files are
        skipped. Raises :class:`PluginError` when the plugin fails or the
        store is closed.
        """
        try:
            out = self._call("prune", b"")
        except (extism.Error, RuntimeError) as e:
            raise PluginError(f"mcp-resume prune failed: {e}") from e
        try:
            removed = json.loads(out)["removed"]
            if not isinstance(removed, list) or not all(isinstance(n, str) for n in removed):
                raise TypeError("removed is not a list of names")
            return removed
        except (ValueError, KeyError, TypeError) as e:
            raise PluginError(f"mcp-resume plugin unusable: prune returned malformed JSON: {e}") from e

    def close(self) -> None:
        """Release the plugin instance and the lock on the token file (so another
        instance under the same host may take it over; the process exiting
        releases it too). Safe to call more than once; afterwards ``load``
        returns ``None``, ``store`` and ``reject`` do nothing (a debug line is
        logged) and ``list`` and ``prune`` raise :class:`PluginError`."""
        with self._lock:
            if not self._closed:
                self._release()

    def __enter__(self) -> ResumeTokenStore:
        """Return the store itself; ``with ResumeTokenStore(...) as store:`` closes it on exit."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the store (see :meth:`close`); exceptions propagate."""
        self.close()
