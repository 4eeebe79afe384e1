"""``HandleStore``: durable state handles for sessionless MCP servers, the Python host of the plugin's handle
store (hostfuncs/README.md, "Plugin exports", the ``handles_open`` and ``handle_*`` exports).

The policy (handle syntax, keys, sealing, lifetimes, capacity, generations, the files) is the plugin's, the
same in Go, Python and TypeScript; this module converts Python values to the exports' inputs and back (the
binary form for ``handle_create``, ``handle_get`` and ``handle_put``, so a value crosses the Wasm boundary as
raw bytes; JSON for the others), keeps a pool of plugin instances for threads, and raises the exceptions of
:mod:`mcp_resume._errors`.
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import datetime as dt
import json
import logging
import math
import os
import struct
import threading
from typing import Any, Union
from collections.abc import Callable

import extism

from . import _runtime
from ._errors import (InvalidAppError, InvalidHandleError, InvalidOptionError, InvalidPrincipalError, InvalidValueError,
                      PluginError, StoreUnavailableError, error_from_json)
from ._handle_types import Created, GCResult, HandleInfo, HandleList, Touched, Value, td as _td, when as _when
from ._eval import EvalClients
from ._hostfuncs import ABI_VERSION, HostFunctions

__all__ = ["Created", "GCResult", "HandleInfo", "HandleList", "HandleStore", "Touched", "Value"]  # the values re-exported

PathLike = Union[str, "os.PathLike[str]"]
Logger = Union[logging.Logger, "logging.LoggerAdapter[Any]"]
#: A duration option: a ``datetime.timedelta`` or a number of seconds.
Duration = Union[dt.timedelta, int, float]
#: A clock: returns now as an aware ``datetime`` or as Unix seconds (``time.time``'s kind).
Clock = Callable[[], Union[dt.datetime, float, int]]

_MS = dt.timedelta(milliseconds=1)

# The binary form of handle_create, handle_get and handle_put (hostfuncs/README.md, "Binary form"; Go
# hostfuncs.HandleBinaryForm, HandleFlag*): the input's fixed part (form byte, flags, now_ms, generation,
# idle_ttl_ms, max_age_ms, principal length), then the principal, the handle (u8 length) and the value.
_BIN_INPUT = struct.Struct(">BBqqqqH")
_BIN_FORM = 0x01
_FLAG_NOW, _FLAG_GENERATION, _FLAG_IDLE_TTL, _FLAG_MAX_AGE, _FLAG_VALUE = 1, 2, 4, 8, 16
#: handle_create's output before the handle (generation, idle_ttl_ms, max_age_ms, created_ms), handle_get's
#: fixed part (value_at, where the value starts; generation, created_ms, idle_ttl_ms, max_age_ms), handle_put's
#: (generation).
_BIN_FOUR, _BIN_GET, _BIN_PUT = struct.Struct(">qqqq"), struct.Struct(">Hqqqq"), struct.Struct(">q")
_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _binary_input(principal: bytes, handle: str = "", value: bytes | bytearray | memoryview | None = None,
                  now_ms: int | None = None, generation: int | None = None, idle_ttl_ms: int | None = None,
                  max_age_ms: int | None = None) -> bytes | None:
    """The binary input of a value-carrying export: ``principal`` (UTF-8), ``handle`` (``""`` for
    ``handle_create``), ``value`` when given, each integer when not ``None``. ``None`` when a field does not fit
    the form (a handle over 255 bytes or not encodable, a principal over 65535 bytes, an integer outside int64):
    the caller then sends the JSON form, and the plugin judges the input either way."""
    ints = (now_ms, generation, idle_ttl_ms, max_age_ms)
    if len(principal) > 0xFFFF or any(v is not None and not _I64_MIN <= v <= _I64_MAX for v in ints):
        return None
    try:
        raw = handle.encode("utf-8")
    except UnicodeEncodeError:
        return None
    if len(raw) > 0xFF:
        return None
    flags = sum(bit for bit, v in zip((_FLAG_NOW, _FLAG_GENERATION, _FLAG_IDLE_TTL, _FLAG_MAX_AGE), ints)
                if v is not None) | (_FLAG_VALUE if value is not None else 0)
    fixed = _BIN_INPUT.pack(_BIN_FORM, flags, *(v or 0 for v in ints), len(principal))
    return b"".join((fixed, principal, bytes((len(raw),)), raw, value if value is not None else b""))


def _duration_ms(option: str, value: Any) -> int | None:
    """``value`` (timedelta, or seconds as int/float) in whole milliseconds (rounded), ``None`` for ``None``.
    Raises :class:`InvalidOptionError` for another type. The plugin judges the range (> 0, no longer
    than the store's)."""
    if value is None:
        return None
    if isinstance(value, dt.timedelta):
        return round(value / _MS)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return round(value * 1000)
    raise InvalidOptionError(f"{option} must be a datetime.timedelta or a number of seconds, "
                              f"not {type(value).__name__}")


def _jsonable(option: str, value: Any, want: str = "an integer") -> Any:
    """``value`` if JSON carries it as it is (the plugin then judges its type, in its words), else
    :class:`InvalidOptionError` (:class:`InvalidAppError` for ``app``) saying ``<option> must be <want>, not
    <Python type>``."""
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        cls = InvalidAppError if option == "app" else InvalidOptionError
        raise cls(f"{option} must be {want}, not {type(value).__name__}") from None


def _now_ms(clock: Clock) -> int:
    """The clock's now in Unix milliseconds (floor). Raises :class:`InvalidOptionError` for a bad answer."""
    now = clock()
    if isinstance(now, dt.datetime):
        if now.tzinfo is None:
            raise InvalidOptionError("clock must return an aware datetime (with tzinfo) or Unix seconds")
        return math.floor(now.timestamp() * 1000)
    if isinstance(now, (int, float)) and not isinstance(now, bool) and math.isfinite(now):
        return math.floor(now * 1000)
    raise InvalidOptionError(f"clock must return a datetime or Unix seconds, not {type(now).__name__}")


class _Instance:
    """One plugin instance with its own host functions (their state directory fixed by ``handles_open``).
    Not thread-safe: the pool lends it to one thread at a time."""

    def __init__(self, funcs: HostFunctions, wasm: bytes | None) -> None:
        """Instantiate and check the ABI. Raises :class:`StoreUnavailableError` (plugin unusable)."""
        self.funcs = funcs
        try:
            self.plugin: extism.Plugin | None = _runtime.new_plugin(wasm)
        except PluginError as e:
            raise StoreUnavailableError(str(e)) from None
        try:
            version = self.call("mcp_resume_abi_version", b"").decode("utf-8", "replace")
        except extism.Error as e:
            version = f"unknown ({e})"
        if version != ABI_VERSION:
            self.close()
            raise StoreUnavailableError(f'mcp-resume plugin unusable: plugin ABI version "{version}", '
                                   f'this host implements "{ABI_VERSION}"; reinstall mcp-resume so plugin and host match')

    def call(self, export: str, data: bytes) -> bytes:
        """Run one export: its output. Raises ``extism.Error`` (the export's error string) or
        :class:`StoreUnavailableError` when closed."""
        if self.plugin is None:
            raise StoreUnavailableError("the handle store is closed")
        return bytes(self.plugin.call(export, data, host_context=self.funcs))

    def open(self, req: bytes) -> dict[str, Any]:
        """``handles_open`` with ``req``; on success its ``state_dir`` becomes the host functions' state directory
        (the confinement rule, hostfuncs/README.md). Raises the export's error as :class:`MCPResumeError`."""
        try:
            out = json.loads(self.call("handles_open", req))
            self.funcs.set_state_dir(str(out["state_dir"]))
            return dict(out)
        except extism.Error as e:
            raise error_from_json(str(e)) from None
        except (ValueError, KeyError, TypeError) as e:
            raise StoreUnavailableError(f"mcp-resume plugin unusable: handles_open returned {e}") from None

    def close(self) -> None:
        plugin, self.plugin = self.plugin, None
        self.funcs.close()
        if plugin is not None:
            plugin.__exit__(None, None, None)


class HandleStore:
    """A durable handle store for one app: opaque handles naming sealed values that outlive the process; thread-safe,
    a context manager. The policy is the plugin's (hostfuncs/README.md, "Plugin exports"; ``plugin/README.md``).

    ::

        with HandleStore("my-server") as store:
            c = store.create(principal, b'{"notes": []}')   # c.handle: give it to the client
            v = store.get(c.handle, principal)                # v.data, v.generation
            g = store.put(c.handle, principal, b"...", expect=v.generation)  # ConflictError if someone wrote first

    Files live in ``<state_root>/<app>/handles`` (0700, records 0600, sealed with AES-256-GCM under a key
    derived from the handle: a copy of the directory reveals nothing without the handle). ``MCP_RESUME=off``
    turns session resume off, **not** this store.

    **Redis or Valkey** instead of files (every replica of a server sharing its handles): ``state_url``
    (``None`` or ``""``: ``$MCP_RESUME_STATE_URL``; empty again, the files) is ``redis://[user:password@]host[:port][/db]``
    or ``rediss://...`` (TLS), with at most ``?cluster=true`` (a Redis Cluster node); anything else is
    :class:`InvalidOptionError`, worded without the password. ``timeout`` (``datetime.timedelta`` or seconds;
    ``None``: ``$MCP_RESUME_STATE_TIMEOUT``, Go duration syntax, else 2 s; at most 60 s) bounds each operation,
    connecting included. The same operations, answers and exceptions as on files (hostfuncs/README.md, "The
    Redis backend"; ``plugin/README.md``, "Handle store on Redis"); an unreachable server, a timeout or a
    server without scripting raises :class:`StoreUnavailableError` within ``timeout``. The store keeps one
    redis-py client per URL, shared by its threads, closed by :meth:`close`; no command is ever resent on
    its own (a script may have run): the plugin decides. The constructor does not connect.

    Options (``None``: the environment, then the plugin's default): ``state_root`` (as for
    :class:`ResumeTokenStore`: ``$MCP_RESUME_STATE_DIR``, else the XDG state directory's ``mcp-resume``);
    ``idle_ttl`` (``$MCP_RESUME_STATE_IDLE_TTL``, default 24 h: a handle unused that long expires),
    ``max_age`` (``$MCP_RESUME_STATE_MAX_AGE``, default 30 days after creation, which nothing extends),
    ``tombstone`` (default 7 days: how long an expired or evicted handle answers :class:`HandleExpiredError` /
    :class:`HandleEvictedError` before :class:`HandleNotFoundError`), all ``datetime.timedelta`` or seconds (sent in
    whole milliseconds); ``max_handles`` (default 10,000 live handles; past it the least recently used is
    evicted, exactly per shard: at the default, 64 shards of 157, eviction can begin a little before
    10,000 in all), ``max_handles_per_principal`` (default ``max_handles`` / 4 rounded up: a principal at its
    quota that creates evicts its own least recently used handle, never another principal's; the anonymous
    principal ``""`` has the same quota), ``max_value_bytes`` (default 1 MiB, at most 4 MiB); ``lock_wait`` (default 2 s: how long
    an operation waits for a shard another process holds before :class:`StoreUnavailableError`);
    ``pool_size`` (plugin instances for concurrent threads, created lazily, default ``os.cpu_count()``);
    ``clock`` (a callable returning an aware ``datetime`` or Unix seconds; default the system clock, read
    by the plugin) and ``logger`` (the plugin's ``handle_*`` event lines with ``extra={"event", "detail"}``,
    default ``logging.getLogger("mcp_resume")``; a line names a handle only by 12 hex digits of its key hash).

    Options are keyword-only; an unknown one raises ``TypeError``. Raises :class:`InvalidAppError` (an app name outside the
    plugin's rule, as :class:`ResumeTokenStore` does), :class:`InvalidOptionError` (a bad option, in the plugin's words) and :class:`StoreUnavailableError`
    (the plugin cannot be loaded). A directory (or a Redis server) that cannot be used does not fail the constructor: the plugin
    logs why (event ``handle_store_unavailable``) and every operation raises :class:`StoreUnavailableError`
    saying what and what to do, so a server opens its store at start and keeps serving everything else.
    """

    #: The Wasm module to run instead of the shipped plugin (tests only).
    _wasm: bytes | None = None
    #: The host functions' class (tests only: the conformance runner's pinned system subclasses it).
    _host_functions: type[HostFunctions] = HostFunctions

    def __init__(self, app: str, *, state_root: PathLike | None = None, idle_ttl: Duration | None = None,
                 max_age: Duration | None = None, tombstone: Duration | None = None, max_handles: int | None = None,
                 max_value_bytes: int | None = None, lock_wait: Duration | None = None, pool_size: int | None = None,
                 clock: Clock | None = None, logger: Logger | None = None, state_url: str | None = None,
                 timeout: Duration | None = None, max_handles_per_principal: int | None = None) -> None:
        req: dict[str, Any] = {"caller": "python", "app": _jsonable("app", app, "a string")}
        if isinstance(state_root, (str, os.PathLike)):
            if path := os.fsdecode(os.fspath(state_root)):
                req["state_root"] = path
        elif state_root is not None:
            req["state_root"] = _jsonable("state_root", state_root, "a string")
        if state_url is not None and state_url != "":
            req["state_url"] = _jsonable("state_url", state_url, "a string")
        for key, value in (("idle_ttl", idle_ttl), ("max_age", max_age), ("tombstone", tombstone),
                           ("lock_wait", lock_wait), ("timeout", timeout)):
            if (ms := _duration_ms(key, value)) is not None:
                req[key + "_ms"] = ms
        for key, value in (("max_handles", max_handles), ("max_value_bytes", max_value_bytes),
                           ("max_handles_per_principal", max_handles_per_principal)):
            if value is not None:
                req[key] = _jsonable(key, value)
        if pool_size is None:
            pool_size = os.cpu_count() or 1
        if not isinstance(pool_size, int) or isinstance(pool_size, bool) or pool_size < 1:
            raise InvalidOptionError(f"pool_size must be a positive integer, not {pool_size!r}")
        if clock is not None and not callable(clock):
            raise InvalidOptionError(f"clock must be callable, not {type(clock).__name__}")
        self._app = app
        self._req = json.dumps(req).encode("utf-8", "surrogateescape")
        self._logger: Logger = logger if logger is not None else logging.getLogger("mcp_resume")
        self._clock = clock
        self._pool_size = pool_size
        self._cv = threading.Condition()
        # mcp_resume_eval's Redis clients, one per URL, shared by every plugin instance of the pool; closed
        # when the store is closed and its last instance is gone.
        self._evals = EvalClients()
        self._idle: builtins.list[_Instance] = []
        self._count = 0
        # Tickets: _acquire serves threads in the order they asked (_next_turn).
        self._tickets = self._serving = 0
        self._skipped: set[int] = set()
        self._closed = False
        first, out = self._new_instance()
        self._count = 1
        self._idle.append(first)
        try:
            self._options = out
            self._state_dir = str(out["state_dir"])
            self._idle_ttl, self._max_age = _td(out["idle_ttl_ms"]), _td(out["max_age_ms"])
            self._tombstone = _td(out["tombstone_ms"])
            self._max_handles, self._max_value_bytes = int(out["max_handles"]), int(out["max_value_bytes"])
            self._shards = int(out["shards"])
            self._backend = str(out.get("backend") or "file")
            self._state_url = str(out.get("state_url") or "")
            self._timeout = _td(out["timeout_ms"]) if out.get("timeout_ms") is not None else None
        except (KeyError, TypeError, ValueError) as e:
            self.close()
            raise StoreUnavailableError(f"mcp-resume plugin unusable: handles_open returned {e}") from None

    def _new_instance(self) -> tuple[_Instance, dict[str, Any]]:
        """A new, opened instance and ``handles_open``'s output. Raises :class:`MCPResumeError`."""
        inst = _Instance(self._host_functions(self._logger, self._evals), self._wasm)
        try:
            return inst, inst.open(self._req)
        except BaseException:
            inst.close()
            raise

    # --- the store's values (handles_open's output) ---------------------------------------------------

    @property
    def app(self) -> str:
        """The app name given to the constructor."""
        return self._app

    @property
    def state_dir(self) -> str:
        """The absolute handle directory, ``<state_root>/<app>/handles``; ``""`` on Redis (no directory)."""
        return self._state_dir

    @property
    def idle_ttl(self) -> dt.timedelta:
        """The store's idle TTL: a handle unused this long expires (per-handle values may only be shorter)."""
        return self._idle_ttl

    @property
    def max_age(self) -> dt.timedelta:
        """The store's maximum age, counted from creation; nothing extends it."""
        return self._max_age

    @property
    def tombstone(self) -> dt.timedelta:
        """How long an expired or evicted handle says so before it answers :class:`HandleNotFoundError`."""
        return self._tombstone

    @property
    def max_handles(self) -> int:
        """The capacity cap of live handles (exact per shard, see the class docstring)."""
        return self._max_handles

    @property
    def max_value_bytes(self) -> int:
        """The largest value in bytes."""
        return self._max_value_bytes

    @property
    def shards(self) -> int:
        """The number of shards, fixed when the directory was first opened."""
        return self._shards

    @property
    def backend(self) -> str:
        """Where the handles live: ``"file"`` (:attr:`state_dir`) or ``"redis"`` (:attr:`state_url`)."""
        return self._backend

    @property
    def state_url(self) -> str:
        """The Redis URL in use with its password shown as ``***`` (safe to log); ``""`` for the file backend."""
        return self._state_url

    @property
    def timeout(self) -> dt.timedelta | None:
        """The deadline of each Redis operation, connecting included; ``None`` for the file backend."""
        return self._timeout

    @property
    def pool_size(self) -> int:
        """The most plugin instances this store runs at once (concurrent calls beyond it wait)."""
        return self._pool_size

    def __repr__(self) -> str:
        if getattr(self, "_backend", "file") == "redis":
            return f"HandleStore(app={self._app!r}, state_url={self._state_url!r})"
        return f"HandleStore(app={self._app!r}, state_dir={getattr(self, '_state_dir', '')!r})"

    # --- the pool ---------------------------------------------------------------------------------------

    def _acquire(self) -> _Instance:
        """An idle instance, a new one while fewer than ``pool_size`` exist, else wait for one, in the order the
        threads asked (a ticket each): a thread that gives an instance back cannot take it again ahead of one
        that waits, so no thread starves while others loop. Raises :class:`StoreUnavailableError` (closed, or a new
        instance cannot open)."""
        with self._cv:
            ticket = self._tickets
            self._tickets += 1
            try:
                while True:
                    if self._closed:
                        raise StoreUnavailableError("the handle store is closed")
                    if ticket == self._serving:
                        if self._idle:
                            self._next_turn()
                            return self._idle.pop()
                        if self._count < self._pool_size:
                            self._count += 1
                            self._next_turn()
                            break
                    self._cv.wait()
            except BaseException:
                if ticket == self._serving:
                    self._next_turn()
                else:
                    self._skipped.add(ticket)
                raise
        try:
            return self._new_instance()[0]
        except BaseException:
            with self._cv:
                self._count -= 1
                last = self._closed and self._count == 0
                self._cv.notify_all()
            if last:
                self._evals.close()
            raise

    def _next_turn(self) -> None:
        """Serve the next ticket (skipping those whose threads gave up), waking the waiters. Under ``_cv``."""
        self._serving += 1
        while self._serving in self._skipped:
            self._skipped.discard(self._serving)
            self._serving += 1
        self._cv.notify_all()

    def _release(self, inst: _Instance, broken: bool = False) -> None:
        """Give ``inst`` back; a ``broken`` one (its export trapped) or one of a closed store is closed."""
        with self._cv:
            keep = not (broken or self._closed)
            if keep:
                self._idle.append(inst)
            else:
                self._count -= 1
            last = self._closed and self._count == 0
            self._cv.notify_all()
        if not keep:
            inst.close()
        if last:
            self._evals.close()

    def _export(self, export: str, data: bytes) -> bytes:
        """Run ``export`` with the input ``data`` on a pooled instance: its output bytes. Raises the
        :class:`MCPResumeError` of the export's error code."""
        inst = self._acquire()
        broken = False
        try:
            return inst.call(export, data)
        except extism.Error as e:
            err = error_from_json(str(e))
            broken = type(err) is StoreUnavailableError and err.message.startswith("mcp-resume plugin failed")
            raise err from None
        finally:
            self._release(inst, broken)

    def _call(self, export: str, doc: dict[str, Any]) -> dict[str, Any]:
        """Run ``export`` with the JSON input ``doc`` (plus ``now_ms`` from the clock) on a pooled instance: its
        JSON output. Raises the :class:`MCPResumeError` of the export's error code."""
        if self._clock is not None:
            doc["now_ms"] = _now_ms(self._clock)
        out = self._export(export, json.dumps(doc).encode())
        try:
            result = json.loads(out)
            if not isinstance(result, dict):
                raise TypeError("not a JSON object")
            return result
        except (ValueError, TypeError) as e:
            raise StoreUnavailableError(f"mcp-resume plugin unusable: {export} returned {e}") from None

    # --- operations ---------------------------------------------------------------------------------------

    def _call_binary(self, export: str, principal: str, handle: str | None = None,
                     value: bytes | bytearray | memoryview | None = None, generation: int | None = None,
                     idle_ttl_ms: int | None = None, max_age_ms: int | None = None) -> bytes | dict[str, Any]:
        """Run a value-carrying ``export`` (``handle_create``, ``handle_get``, ``handle_put``) in the binary form
        (:func:`_binary_input`, with ``now_ms`` from the clock): its binary output. An input the form cannot
        carry goes as JSON and answers its JSON output (a ``dict``). Raises the :class:`MCPResumeError` of the
        export's error code."""
        doc = self._who(handle, principal)
        now_ms = _now_ms(self._clock) if self._clock is not None else None
        data = _binary_input(principal.encode("utf-8"), handle or "", value, now_ms, generation, idle_ttl_ms,
                             max_age_ms)
        if data is not None:
            return self._export(export, data)
        if value is not None:
            doc["value"] = base64.b64encode(value).decode("ascii")
        for key, v in (("generation", generation), ("idle_ttl_ms", idle_ttl_ms), ("max_age_ms", max_age_ms)):
            if v is not None:
                doc[key] = v
        return self._call(export, doc)

    def _binary_output(self, export: str, out: bytes, fixed: struct.Struct) -> tuple[tuple[int, ...], bytes]:
        """``out`` split into ``fixed``'s integers and the bytes after them. Raises :class:`StoreUnavailableError`
        when it is shorter."""
        return self._binary_fixed(export, out, fixed), out[fixed.size:]

    @staticmethod
    def _binary_fixed(export: str, out: bytes, fixed: struct.Struct) -> tuple[int, ...]:
        """``fixed``'s integers at the start of ``out``. Raises :class:`StoreUnavailableError` when ``out`` is
        shorter."""
        if len(out) < fixed.size:
            raise StoreUnavailableError(f"mcp-resume plugin unusable: {export} returned {len(out)} bytes, "
                                        f"fewer than {fixed.size}")
        return fixed.unpack_from(out)

    @staticmethod
    def _principal(principal: Any) -> bytes:
        """``principal`` in UTF-8. Raises :class:`InvalidPrincipalError` for a principal that is not a ``str`` or
        not valid UTF-8 (a lone surrogate, which JSON would carry as U+FFFD: another principal)."""
        if not isinstance(principal, str):
            raise InvalidPrincipalError(f"principal must be a str, not {type(principal).__name__}")
        try:
            return principal.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidPrincipalError("principal is not valid UTF-8") from None

    @classmethod
    def _who(cls, handle: Any, principal: Any) -> dict[str, Any]:
        """The ``handle``/``principal`` members. Raises :class:`InvalidHandleError` for a handle that is not a
        ``str``, :class:`InvalidPrincipalError` as :meth:`_principal`."""
        doc = {} if handle is None else {"handle": handle}
        if handle is not None and not isinstance(handle, str):
            raise InvalidHandleError(f"handle must be a str, not {type(handle).__name__}")
        cls._principal(principal)
        return {**doc, "principal": principal}

    @staticmethod
    def _value(value: Any) -> bytes | bytearray | memoryview:
        """``value`` if it is bytes-like. Raises :class:`InvalidValueError`."""
        if not isinstance(value, (bytes, bytearray, memoryview)):
            raise InvalidValueError(f"value must be bytes, not {type(value).__name__}")
        return value

    @staticmethod
    def _expect_int(expect: Any) -> int | None:
        """``expect`` (``None`` or an int generation). Raises :class:`InvalidOptionError` for another type."""
        if expect is not None and (not isinstance(expect, int) or isinstance(expect, bool)):
            raise InvalidOptionError(f"expect must be an int generation, not {type(expect).__name__}")
        return expect

    @classmethod
    def _expect(cls, doc: dict[str, Any], expect: Any) -> dict[str, Any]:
        """``doc`` with ``generation`` set to ``expect`` unless it is ``None`` (:meth:`_expect_int`)."""
        if cls._expect_int(expect) is not None:
            doc["generation"] = expect
        return doc

    def create(self, principal: str, value: bytes, *, idle_ttl: Duration | None = None,
               max_age: Duration | None = None) -> Created:
        """Store ``value`` under a new handle for ``principal`` (the authenticated subject or client id; ``""``
        anonymous, e.g. over stdio). ``idle_ttl``/``max_age`` (timedelta or seconds) may only shorten the
        store's. May evict the least recently used handle of the shard at the cap. Raises
        :class:`InvalidPrincipalError`, :class:`InvalidValueError`, :class:`ValueTooLargeError` (nothing written),
        :class:`InvalidOptionError` (a lifetime longer than the store's), :class:`StoreUnavailableError`."""
        self._principal(principal)
        out = self._call_binary("handle_create", principal, value=self._value(value),
                                idle_ttl_ms=_duration_ms("idle_ttl", idle_ttl), max_age_ms=_duration_ms("max_age", max_age))
        if isinstance(out, dict):
            return Created(str(out["handle"]), int(out["generation"]), _td(out["idle_ttl_ms"]),
                           _td(out["max_age_ms"]), _when(out["created_ms"]))
        (generation, idle_ms, max_age_ms, created_ms), rest = self._binary_output("handle_create", out, _BIN_FOUR)
        if not rest or len(rest) != 1 + rest[0]:
            raise StoreUnavailableError("mcp-resume plugin unusable: handle_create returned a malformed handle")
        return Created(rest[1:].decode("ascii", "replace"), generation, _td(idle_ms), _td(max_age_ms),
                       _when(created_ms))

    def get(self, handle: str, principal: str) -> Value:
        """The value and generation of ``handle``; refreshes its idle time (the last use is rewritten only when
        it moves by min(idle TTL/64, 60 s) or more, 1 s on Redis; in between the record is read alone, without
        the shard's lock).
        Raises :class:`InvalidHandleError` (before any I/O),
        :class:`InvalidPrincipalError`, :class:`HandleNotFoundError` (also for another principal's handle),
        :class:`HandleExpiredError` (``reason``), :class:`HandleEvictedError`, :class:`StoreUnavailableError`."""
        out = self._call_binary("handle_get", principal, handle=handle)
        if isinstance(out, dict):
            return Value(base64.b64decode(out["value"]), int(out["generation"]), _when(out["created_ms"]),
                         _td(out["idle_ttl_ms"]), _td(out["max_age_ms"]))
        # The integers only: the value is sliced once, at value_at.
        value_at, generation, created_ms, idle_ms, max_age_ms = self._binary_fixed("handle_get", out, _BIN_GET)
        if not _BIN_GET.size <= value_at <= len(out):
            raise StoreUnavailableError(f"mcp-resume plugin unusable: handle_get's value_at {value_at} is outside "
                                        f"its output of {len(out)} bytes")
        data = out[value_at:]
        return Value(data, generation, _when(created_ms), _td(idle_ms), _td(max_age_ms))

    def put(self, handle: str, principal: str, value: bytes, *, expect: int | None = None) -> int:
        """Replace the value of ``handle``: the new generation (the old + 1); refreshes its idle time.
        ``expect=None`` (the default) writes unconditionally: the last writer wins. An int ``expect`` writes only
        if the current generation is ``expect`` (compare-and-set), else :class:`ConflictError` with the current
        ``generation`` and nothing changed. A killed
        process leaves the old record or the new one, never a torn one. Raises as :meth:`get`, plus
        :class:`InvalidValueError`, :class:`ValueTooLargeError`, :class:`ConflictError`, :class:`InvalidOptionError`."""
        self._who(handle, principal)
        out = self._call_binary("handle_put", principal, handle=handle, value=self._value(value),
                                generation=self._expect_int(expect))
        if isinstance(out, dict):
            return int(out["generation"])
        return self._binary_output("handle_put", out, _BIN_PUT)[0][0]

    def delete(self, handle: str, principal: str, *, expect: int | None = None) -> None:
        """Delete ``handle`` (no tombstone: it answers :class:`HandleNotFoundError` afterwards). ``expect=None`` (the
        default) deletes unconditionally; an int ``expect`` only at that generation, else :class:`ConflictError`.
        Raises as :meth:`put`."""
        self._call("handle_delete", self._expect(self._who(handle, principal), expect))

    def touch(self, handle: str, principal: str) -> Touched:
        """Refresh the idle time of ``handle`` only (a ``StateStore``'s ``updateTTL``; the maximum age stays). Raises as
        :meth:`get`."""
        out = self._call("handle_touch", self._who(handle, principal))
        return Touched(int(out["generation"]), _td(out["idle_ttl_ms"]), _td(out["max_age_ms"]))

    def exists(self, handle: str, principal: str) -> bool:
        """Whether ``handle`` is live for ``principal`` (False for unknown, expired, evicted, another
        principal's); never refreshes. Raises :class:`InvalidHandleError`, :class:`InvalidPrincipalError`,
        :class:`StoreUnavailableError`."""
        return bool(self._call("handle_exists", self._who(handle, principal))["exists"])

    def list(self) -> HandleList:
        """Every live handle and tombstone, by key-hash prefix (never a handle, value or principal). Raises
        :class:`StoreUnavailableError`."""
        out = self._call("handle_list", {})
        infos = [HandleInfo(str(h["key"]), str(h["state"]), h.get("generation"), h.get("size"), _td(h["age_ms"]),
                            _td(h["idle_ms"])) for h in out.get("handles") or []]
        return HandleList(infos, int(out["live"]), int(out["tombstones"]), int(out["shards"]), int(out["bytes"]))

    def gc(self) -> GCResult:
        """Expire what is due, drop tombstones past their period, remove orphan records and temporary files.
        Raises :class:`StoreUnavailableError`."""
        out = self._call("handle_gc", {})
        return GCResult(*(int(out[k]) for k in ("expired_idle", "expired_max_age", "tombstones_dropped",
                                                "orphans_removed", "temps_removed", "live")))

    def close(self) -> None:
        """Release the idle plugin instances now and the busy ones when their calls end. Idempotent; every
        later call raises :class:`StoreUnavailableError`. The files stay."""
        with self._cv:
            self._closed = True
            idle, self._idle = self._idle, []
            self._count -= len(idle)
            last = self._count == 0
            self._cv.notify_all()
        for inst in idle:
            with contextlib.suppress(Exception):
                inst.close()
        if last:  # else the last busy call's _release closes them
            self._evals.close()

    def __enter__(self) -> HandleStore:
        """The store itself; leaving the ``with`` block closes it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the store (:meth:`close`); exceptions propagate."""
        self.close()
