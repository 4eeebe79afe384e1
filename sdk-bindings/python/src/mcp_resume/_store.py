"""``ResumeTokenStore``: the Python host API of the mcp-resume plugin (mirrors Go ``host.Store``)."""

from __future__ import annotations

import builtins
import contextlib
import json
import logging
import os
import threading
from dataclasses import dataclass
from typing import Any, Union
from collections.abc import Iterable

import extism

from . import _runtime
from ._errors import InvalidAppError, InvalidOptionError, InvalidTokenError, PluginError, MCPResumeError, from_code
from ._hostfuncs import ABI_VERSION, HostFunctions

__all__ = ["NO_INSTANCE", "ResumeTokenStore", "TokenFile"]

#: As ``instance``: no instance key, like ``""`` (Go ``host.NoInstance``).
NO_INSTANCE = "-"

PathLike = Union[str, "os.PathLike[str]"]
Logger = Union[logging.Logger, "logging.LoggerAdapter[Any]"]


class _Closed(RuntimeError):
    """The store was closed; calls into it do nothing."""


@dataclass(frozen=True)
class TokenFile:
    """One token file as the plugin's ``list`` reports it (never its token): ``name``, the MCP host's ``pid``
    and ``start_time`` (spec 000, "Token File Naming Strategy"), ``instance`` (16 hex digits, ``""`` for
    none), ``host`` (``"alive"``, ``"gone"`` or ``"unknown"``), ``age_seconds``."""

    name: str
    pid: int
    start_time: str
    instance: str = ""
    host: str = "unknown"
    age_seconds: int = 0


# What each open option must be, in the plugin's words (its messages say "<option> must be <want>, not <got>").
_WANT = {"app": "a string", "state_root": "a string", "instance": "a string", "launchers": "a list of strings"}


def _json_safe(option: str, value: Any) -> Any:
    """``value`` if JSON can carry it as it is (so the plugin judges its type and says what was wrong);
    else :class:`InvalidAppError`/:class:`InvalidOptionError` in the plugin's words with the Python type."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, dict)):
        try:
            json.dumps(value)
            return value
        except (TypeError, ValueError):
            pass
        if isinstance(value, list):
            bad = next(v for v in value if not _jsonable(v))
            return _refuse(option, f"a list holding {type(bad).__name__}")
    return _refuse(option, type(value).__name__)


def _jsonable(v: Any) -> bool:
    """Whether ``json.dumps`` can carry ``v``."""
    try:
        json.dumps(v)
        return True
    except (TypeError, ValueError):
        return False


def _refuse(option: str, got: str) -> Any:
    """Raise the refusal of ``option`` given ``got`` (a type's name), in the plugin's words: never returns."""
    msg = f"{option} must be {_WANT[option]}, not {got}"
    raise (InvalidAppError if option == "app" else InvalidOptionError)(msg)


def _open_request(app: Any, state_root: Any, launchers: Any, instance: Any) -> bytes:
    """The plugin's ``open`` input for the constructor's arguments. Values go to the plugin as they are,
    so that it, not this binding, decides what is wrong and says it the same way in every language
    (``launchers="npx"`` arrives as a string and is refused, not split into letters; a relative
    ``state_root`` is made absolute by the plugin against ``facts.cwd``); path-likes become their string,
    and values JSON cannot carry are refused here with their Python type."""
    req: dict[str, Any] = {"caller": "python"}  # the plugin's messages then name options as Python does
    if app is not None:
        req["app"] = _json_safe("app", app)
    if isinstance(state_root, (str, bytes, os.PathLike)):
        path = os.fsdecode(os.fspath(state_root))
        if path:
            req["state_root"] = path
    elif state_root is not None:
        req["state_root"] = _json_safe("state_root", state_root)
    if instance is not None:
        req["instance"] = _json_safe("instance", instance)
    if launchers is not None:
        is_iterable = isinstance(launchers, Iterable) and not isinstance(launchers, (str, bytes, dict))
        req["launchers"] = _json_safe("launchers", list(launchers) if is_iterable else launchers)
    return json.dumps(req).encode("utf-8", "surrogateescape")


class ResumeTokenStore:
    """One MCP server instance's resume-token store (spec 000); thread-safe, a context manager.

    ``load()`` the token to offer the broker, ``store()`` every token it issues, ``reject()`` one it
    refused. The logic, rules and defaults are the Wasm plugin's; this class answers its host functions
    and calls its exports (one plugin instance per store). ``load``/``store``/``reject`` log failures and
    never raise (except :class:`InvalidTokenError`); nothing is written to stdout.

    Inputs, passed to the plugin's ``open`` (hostfuncs/README.md, "Plugin exports"): ``app`` (1-64 of
    ``[A-Za-z0-9._-]``, starting with a letter or digit); ``state_root`` (the state root, the directory holding one state directory per app, passed as
    given: the plugin takes a relative one against the working directory; the store's directory, the
    ``state_dir`` property, is ``<state_root>/<app>``, so apps never share one; default root
    ``$MCP_RESUME_STATE_DIR``, else ``$XDG_STATE_HOME/mcp-resume`` or ``~/.local/state/mcp-resume``,
    macOS ``~/Library/Application Support/mcp-resume``; created 0700 on first use); ``logger`` (gets the spec's lines with ``extra={"event", "detail"}``;
    default ``logging.getLogger("mcp_resume")``); ``launchers`` (extra names to skip when looking for the
    MCP host); ``instance`` (tells apart instances one host runs at once; default
    ``$MCP_RESUME_INSTANCE``, else the plugin's default key: ``sys.argv[1:]``, the working directory and the environment, minus the variables that change on every launch (``policy.VolatileEnv``); ``""``/``"-"``: none; one key, one
    token file, held by the first instance: the others log ``instance_busy`` and run without resume).

    Raises :class:`InvalidAppError`/:class:`InvalidOptionError` when ``open`` refuses the app or an
    option, with the plugin's message, which names the option, what it must be and what was given, the
    same in every language (``launchers="npx"``: "launchers must be a list of strings, not a string: ...";
    ``app=None``: "app name missing: ..."); values go to the plugin unconverted, so a string is never
    split into letters. Raises :class:`PluginError` when the plugin cannot be loaded or its ABI version is
    not :data:`ABI_VERSION` (``"11"``). Serve without resume then. Identity, directory or lock problems only turn resume off (logged).
    """

    #: The Wasm module to run instead of the shipped plugin (tests only).
    _wasm: bytes | None = None
    #: The host functions' class (tests only: the conformance runner's pinned system subclasses it).
    _host_functions: type[HostFunctions] = HostFunctions

    def __init__(self, app: str, *, state_root: PathLike | None = None, logger: Logger | None = None,
                 launchers: Iterable[str] | None = None, instance: str | None = None, _defer: bool = False) -> None:
        # _defer (AsyncResumeTokenStore only): stop before the plugin; _connect() does the rest, in a worker thread.
        req = _open_request(app, state_root, launchers, instance)
        self._app = app
        self._logger: Logger = logger if logger is not None else logging.getLogger("mcp_resume")
        self._funcs = self._host_functions(self._logger)
        # The stdio check must see fds 0 and 1 as the MCP host set them up; the MCP SDK points them at
        # /dev/null once it serves stdio, maybe before the first load() (one inside a tool handler).
        self._funcs.keep_stdio()
        self._lock = threading.Lock()
        self._closed = False
        self._plugin: extism.Plugin | None = None
        self._req = req
        if not _defer:
            self._connect()

    def _connect(self) -> None:
        """The slow part of the constructor: compile (on a cold cache), instantiate, check the ABI, ``open``.
        Raises what the constructor raises."""
        req = self._req
        self._plugin = _runtime.new_plugin(self._wasm)
        try:
            try:
                version = self._call("mcp_resume_abi_version", b"").decode("utf-8", "replace")
            except extism.Error as e:
                version = f"unknown ({e})"
            if version != ABI_VERSION:
                raise PluginError(f'mcp-resume plugin unusable: plugin ABI version "{version}", this host implements '
                                  f'"{ABI_VERSION}"; reinstall mcp-resume so plugin and host match')
            out = json.loads(self._export("open", req))
            self._state_dir: str = out["state_dir"]
            self._funcs.set_state_dir(self._state_dir)  # the file functions act in it, and only in it, from now on
            self._state_root: str = out.get("state_root") or ""
            self._resume: bool = bool(out["resume"])
        except MCPResumeError:
            self._release()
            raise
        except (ValueError, KeyError, TypeError) as e:
            self._release()
            raise PluginError(f"mcp-resume plugin unusable: open returned malformed JSON: {e}") from e

    @property
    def app(self) -> str:
        """The app name given to the constructor."""
        return self._app

    @property
    def state_dir(self) -> str:
        """The absolute state directory this store uses, the app's own inside :attr:`state_root` (from the
        plugin's ``open``)."""
        return self._state_dir

    @property
    def state_root(self) -> str:
        """The directory that holds one state directory per app (the plugin's ``open``), ``""`` when
        unknown; ``python -m mcp_resume list`` lists the apps under it."""
        return self._state_root

    @property
    def resume(self) -> bool:
        """False when ``open`` already knew resume is off (``MCP_RESUME=off``, an unsupported OS)."""
        return self._resume

    def __repr__(self) -> str:
        return f"ResumeTokenStore(app={self._app!r}, state_dir={getattr(self, '_state_dir', '')!r})"

    def _release(self) -> None:
        plugin, self._plugin = self._plugin, None
        self._closed = True
        self._funcs.close()
        if plugin is not None:
            plugin.__exit__(None, None, None)

    def _call(self, export: str, data: bytes) -> bytes:
        """Run one export under the lock: its output. Raises ``extism.Error`` or ``_Closed``."""
        with self._lock:
            if self._closed or self._plugin is None:
                raise _Closed("mcp-resume: store is closed")
            return bytes(self._plugin.call(export, data, host_context=self._funcs))

    def _export(self, export: str, data: bytes = b"") -> bytes:
        """Run one export. Its JSON error ``{"code", "message"}`` raises the exception of the code
        (:func:`from_code`), any other failure :class:`PluginError`; a closed store ``_Closed``."""
        try:
            return self._call(export, data)
        except extism.Error as e:
            try:
                doc = json.loads(str(e))
                err = from_code(str(doc["code"]), str(doc["message"]))
            except (ValueError, KeyError, TypeError):
                raise PluginError(f"mcp-resume plugin failed in {export}: {e}") from None
            raise err from None

    def _failed(self, export: str, err: BaseException) -> None:
        """Log a failure of ``export`` (a closed store at debug level). Never raises."""
        closed = isinstance(err, _Closed)
        msg = "mcp-resume: %s ignored: %s" if closed else "mcp-resume plugin failed in %s; session resume skipped: %s"
        with contextlib.suppress(Exception):
            self._logger.log(logging.DEBUG if closed else logging.ERROR, msg, export, err,
                             extra={"event": "store_closed" if closed else "plugin_failed", "detail": str(err)})

    def load(self) -> str | None:
        """The token the previous instance under the same MCP host stored, or ``None``: nothing to offer
        (first run, resume off, a corrupt file, which is deleted). Spec 000, "MCP Server Startup",
        "Token File Corrupted". Never raises."""
        try:
            out = self._export("load")
            return out.decode("ascii") if out else None
        except Exception as e:  # noqa: BLE001 - never crash the server
            self._failed("load", e)
            return None
        finally:
            self._funcs.release_stdio()  # the host is resolved: the stdio copies are read no more

    def store(self, token: str) -> None:
        """Persist ``token``, just issued by the broker, for the next instance (spec 000, "Token Persistence").
        After a resumed ``load`` it logs "Session resumed successfully" once; a failed write is logged, not
        raised. Raises :class:`InvalidTokenError` unless ``token`` is a ``str`` of 1-4096 visible ASCII bytes."""
        if not isinstance(token, str):
            raise InvalidTokenError(f"invalid token: expected str, got {type(token).__name__}")
        try:
            self._export("store", token.encode("utf-8", "surrogateescape"))
            self._funcs.release_stdio()
        except InvalidTokenError:
            raise
        except Exception as e:  # noqa: BLE001 - never crash the server
            self._failed("store", e)

    def reject(self) -> None:
        """The broker refused the loaded token: delete its file unless it already holds a newer
        valid token (spec 000, "Broker Rejects Token"). Never raises."""
        try:
            self._export("reject")
            self._funcs.release_stdio()
        except Exception as e:  # noqa: BLE001 - never crash the server
            self._failed("reject", e)

    def _json(self, export: str, key: str | None = None, data: bytes = b"") -> Any:
        """The JSON object ``export`` outputs for ``data``, or its ``key``. Raises :class:`PluginError`
        (closed store included), or the exception of the export's error code."""
        try:
            out = self._export(export, data)
        except _Closed as e:
            raise PluginError(f"mcp-resume {export}: {e}") from None
        try:
            doc = json.loads(out)
            return doc[key] if key else dict(doc)
        except (ValueError, KeyError, TypeError) as e:
            raise PluginError(f"mcp-resume plugin unusable: {export} returned malformed JSON: {e}") from e

    def list(self) -> list[TokenFile]:
        """The token files of the state directory with their hosts' state (never tokens); needs no host
        identity, creates nothing. Raises :class:`PluginError`."""
        files = self._json("list", "files")
        try:
            return [TokenFile(f["name"], int(f["pid"]), f["start_time"], f.get("instance") or "", f["host"],
                              int(f["age_seconds"])) for f in files]
        except (KeyError, TypeError, ValueError) as e:
            raise PluginError(f"mcp-resume plugin unusable: list returned malformed JSON: {e}") from e

    def prune(self) -> builtins.list[dict[str, str]]:  # `list` is the method above
        """Delete the token and lock files of MCP hosts that are gone, and token files of hosts that cannot
        be checked once older than 30 days; never a live host's, never this instance's own. Returns
        ``[{"name", "reason": "host_gone"|"aged", "host"}]`` (each also logged). Raises :class:`PluginError`."""
        return builtins.list(self._json("prune", "removed") or [])

    def whoami(self, pid: int | None = None) -> dict[str, Any]:
        """The MCP host this process resolves and how (the plugin's ``whoami``): ``pid``, ``start_time``,
        ``stdio``, ``instance_suffix``, ``token_file``, ``lock_file``, ``state_dir``, ``chain`` and,
        when the identity is unavailable, ``error``. With ``pid``: what that running MCP server process
        would resolve, with this store's instance key and state directory (on Linux a socket on its stdio
        cannot be checked from outside: ``stdio`` then says "not checked"). Raises :class:`PluginError`,
        :class:`InvalidOptionError` for a pid of 1 or below 0 or one no process has."""
        data = b"" if pid is None else json.dumps({"pid": pid}).encode()
        out = dict(self._json("whoami", data=data))
        if pid is None:
            self._funcs.release_stdio()  # this process's identity is resolved: the stdio copies are done
        return out

    def _render(self, doc: dict[str, Any]) -> bytes:
        """The plugin's ``render`` export: what the ``mcp-resume`` CLI prints for ``doc`` (``command``,
        ``json``, ``show_state_dir``, ``whoami``, ``apps``; hostfuncs/README.md). Raises like ``_export``."""
        return self._export("render", json.dumps(doc).encode())

    def close(self) -> None:
        """Release the plugin instance and the token file's lock. Idempotent; afterwards ``load``
        returns ``None``, ``store``/``reject`` do nothing, ``list``/``prune``/``whoami`` raise."""
        with self._lock:
            if not self._closed:
                self._release()

    def __enter__(self) -> ResumeTokenStore:
        """The store itself; leaving the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the store (:meth:`close`); exceptions propagate."""
        self.close()
