"""``mcp_resume_eval``: run one plugin-written Lua script on Redis or Valkey (hostfuncs/README.md,
"``mcp_resume_eval``"), the handle store's Redis backend. The plugin writes every script, key and argument
and reads every reply; this module only carries them, with redis-py.

:class:`EvalClients` keeps one redis-py client per (url, cluster, timeout) for one store: a resume store's
host functions own theirs, a :class:`~mcp_resume.HandleStore` shares one among its pool of plugin instances
and closes it with the store. No request is ever sent twice (a script may have run when its reply was
lost): every retry redis-py 5-8 would make on its own is turned off, so a timeout answers ``timeout`` and
a broken connection ``unavailable``, and the plugin decides. The next call reconnects.

Requests come in two forms (README, ABI 11): JSON (:meth:`EvalClients.run`) and the binary form
(:meth:`EvalClients.run_binary`: first byte ``0x01``, keys, arguments and reply strings as raw bytes), which
differ in their encoding only: both are checked by the same rules and run through the same clients and the
same error mapping.

Nothing here raises into the caller: :meth:`EvalClients.run` answers ``{"reply": ...}`` or ``{"error":
{"code", "message"}}``, :meth:`EvalClients.run_binary` ``0x00`` and the binary reply or that error object as
JSON bytes. No message holds the URL (it may carry a password): messages come from the
library's text, which names the address only, and any part of the URL's credentials found there anyway is
replaced by ``***``.
"""

from __future__ import annotations

import json
import re
import struct
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any, Union

import redis
import redis.exceptions as rex
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

__all__ = ["BINARY_FORM", "EvalClients", "MAX_TIMEOUT_MS"]

#: The largest ``timeout_ms`` (Go ``hostfuncs.MaxEvalTimeoutMS``); the smallest is 1.
MAX_TIMEOUT_MS = 60000
_SHA1 = re.compile(r"[0-9a-f]{40}")
#: The first byte of a binary request (README, "The binary form"; a JSON request starts with ``{``).
BINARY_FORM = 0x01
#: The flag bits of a binary request: ``cluster``, and the script is source (``EVAL``), else a SHA-1 (``EVALSHA``).
_FLAG_CLUSTER, _FLAG_SOURCE = 0x01, 0x02
#: A binary request's head: form, flags, timeout_ms (u32), the script's length (u32).
_HEAD = struct.Struct(">BBII")
_U16, _U32 = struct.Struct(">H"), struct.Struct(">I")
#: Binary reply heads: kind ``i`` and an i64; kind ``s``/``e``/``a`` and a u32 length or count.
_INT, _LEN = struct.Struct(">cq"), struct.Struct(">cI")
#: A checked request: (url, cluster, sha1, script, keys, args, timeout_ms); strings in JSON, bytes in binary.
_Request = tuple[str, bool, Union[str, None], Union[str, bytes, None], Union[list[str], list[bytes]],
                 Union[list[str], list[bytes]], int]
#: Errors meaning no connection could be made or it broke, or the server cannot run a script now (README:
#: refused, reset, DNS, TLS, LOADING, BUSY, CLUSTERDOWN, READONLY, MASTERDOWN, TRYAGAIN, a MOVED or ASK left after
#: the cluster client's redirects). BusyLoadingError is a ConnectionError, MasterDownError a ClusterDownError,
#: MovedError an AskError; the cluster client's own failures (no node reachable, a slot no node serves) count
#: too. Order matters: TimeoutError and AuthenticationError (a ConnectionError: ``auth``) are caught first.
_UNAVAILABLE = (rex.ConnectionError, rex.ClusterDownError, rex.ReadOnlyError, rex.TryAgainError, rex.AskError,
                rex.RedisClusterException, rex.ClusterError, OSError)
#: Error replies redis-py raises as a plain ResponseError that mean "cannot run a script now", not a failed
#: script: BUSY (another client's script holds the server).
_UNAVAILABLE_REPLY = ("BUSY ",)


class _Answer(Exception):
    """An error answer: ``code`` and ``message``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.error = {"error": {"code": code, "message": message}}


def _strings(doc: dict[str, Any], key: str) -> list[str]:
    """``doc[key]``: a list of strings that UTF-8 can carry (no lone surrogate), else ``invalid_request``."""
    v = doc.get(key)
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        raise _Answer("invalid_request", f"mcp_resume_eval: {key} must be a list of strings")
    try:
        for s in v:
            s.encode("utf-8")
    except UnicodeEncodeError:
        raise _Answer("invalid_request", f"mcp_resume_eval: {key} holds a string that is not UTF-8") from None
    return v


def _request(doc: dict[str, Any]) -> _Request:
    """The checked request ``(url, cluster, sha1, script, keys, args, timeout_ms)``; ``invalid_request`` (never
    quoting the URL) for anything the README's request rule refuses. No I/O."""
    cluster, sha1, script = doc.get("cluster"), doc.get("sha1"), doc.get("script")
    # An empty sha1 or script is not given (the Go host's rule): an empty script is refused, never run.
    sha1, script = (None if v == "" else v for v in (sha1, script))
    url = _check_url(doc.get("url"))
    if cluster is None:
        cluster = False
    if not isinstance(cluster, bool):
        raise _Answer("invalid_request", "mcp_resume_eval: cluster must be true or false")
    if (sha1 is None) == (script is None):
        raise _Answer("invalid_request", "mcp_resume_eval: give exactly one of sha1 and script")
    if sha1 is not None:
        sha1 = _check_sha1(sha1)
    if script is not None and not isinstance(script, str):
        raise _Answer("invalid_request", "mcp_resume_eval: script must be a string")
    keys, args = _strings(doc, "keys"), _strings(doc, "args")
    if script is not None:
        _strings({"script": [script]}, "script")
    timeout = _check_timeout(doc.get("timeout_ms"))
    return url, cluster, sha1, script, keys, args, timeout


def _check_sha1(sha1: Any) -> str:
    """``sha1`` if it is 40 lowercase hex digits, else ``invalid_request``. No I/O."""
    if not (isinstance(sha1, str) and _SHA1.fullmatch(sha1)):
        raise _Answer("invalid_request", "mcp_resume_eval: sha1 must be 40 lowercase hex digits")
    return sha1


def _check_timeout(timeout: Any) -> int:
    """``timeout`` if it is an integer from 1 to 60000 (``timeout_ms``), else ``invalid_request``. No I/O."""
    if type(timeout) is not int or not 1 <= timeout <= MAX_TIMEOUT_MS:
        raise _Answer("invalid_request", f"mcp_resume_eval: timeout_ms must be an integer 1..{MAX_TIMEOUT_MS}")
    return timeout


class _Reader:
    """Reads a binary request's fields in order; a field cut short raises ``invalid_request`` naming it."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int, what: str) -> bytes:
        """The next ``n`` bytes (``what`` names them in the error)."""
        end = self.pos + n
        if end > len(self.data):
            raise _Answer("invalid_request", f"mcp_resume_eval binary request: {what} is cut short")
        out, self.pos = self.data[self.pos:end], end
        return out

    def strings(self, what: str) -> list[bytes]:
        """A u16 count, then that many u32-length strings (``KEYS`` or ``ARGV``), as raw bytes."""
        (n,) = _U16.unpack(self.take(2, f"the count of {what}"))
        return [self.take(_U32.unpack(self.take(4, f"{what} {i}"))[0], f"{what} {i}") for i in range(n)]


def _binary_request(req: bytes) -> _Request:
    """The checked binary request (README, ``mcp_resume_eval``, "The binary form"): ``(url, cluster, sha1, script,
    keys, args, timeout_ms)`` with the script's source, the keys and the args as raw ``bytes``, ``sha1`` (for
    ``EVALSHA``) or the URL as ``str``. ``invalid_request`` (never quoting the URL) for a field cut short, an
    unknown flag bit, or a rule of the JSON form broken: the timeout's range, an empty script, the SHA-1's form,
    a URL that is not UTF-8 or that :func:`_check_url` refuses. No I/O."""
    rd = _Reader(req)
    form, flags, timeout, n = _HEAD.unpack(rd.take(_HEAD.size, "the head (form, flags, timeout_ms, script length)"))
    if form != BINARY_FORM:
        raise _Answer("invalid_request", "mcp_resume_eval binary request: the first byte is not 0x01")
    if flags & ~(_FLAG_CLUSTER | _FLAG_SOURCE):
        raise _Answer("invalid_request", f"mcp_resume_eval binary request: unknown flag bits "
                      f"{flags & ~(_FLAG_CLUSTER | _FLAG_SOURCE):#04x}")
    code = rd.take(n, "the script")
    keys, args = rd.strings("keys"), rd.strings("args")
    try:
        url = req[rd.pos:].decode("utf-8")
    except UnicodeDecodeError:
        raise _Answer("invalid_request", "mcp_resume_eval: url must be a string redis://... or rediss://...") from None
    url = _check_url(url)
    timeout = _check_timeout(timeout)
    sha1: str | None = None
    script: bytes | None = None
    if flags & _FLAG_SOURCE:
        if not code:
            raise _Answer("invalid_request", "mcp_resume_eval binary request: the script is empty")
        script = code
    else:
        sha1 = _check_sha1(code.decode("latin-1"))  # any bytes: the SHA-1 rule refuses what is not lowercase hex
    return url, bool(flags & _FLAG_CLUSTER), sha1, script, keys, args, timeout


def _check_url(url: Any) -> str:
    """``url`` if a host's client library would use it as given, else ``invalid_request``: not a string
    starting ``redis://`` or ``rediss://``, a port that is not a number from 1 to 65535, or a database path that is
    not decimal digits (redis-py alone would ignore it and use database 0, where go-redis and node-redis refuse it:
    README, ``mcp_resume_eval``). No I/O."""
    if not isinstance(url, str) or not url.startswith(("redis://", "rediss://")):
        raise _Answer("invalid_request", "mcp_resume_eval: url must be a string redis://... or rediss://...")
    bad = _Answer("invalid_request", "mcp_resume_eval: url is not a Redis URL the client accepts "
                  "(redis://[user:password@]host[:port][/db], port 1-65535, db digits)")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        raise bad from None
    db = parts.path[1:] if parts.path.startswith("/") else parts.path
    if not parts.hostname or port == 0 or (db and not (db.isascii() and db.isdigit())):
        raise bad
    return url


def _secrets(url: str) -> list[str]:
    """The parts of ``url`` no message may show: its user and password (raw and percent-decoded)."""
    try:
        parts = urllib.parse.urlsplit(url)
        found = [parts.username, parts.password]
    except ValueError:
        return []
    out = [s for s in found if s]
    # Shorter than 3 bytes is left alone, as in the Go and Node hosts: replacing every "me" garbles the message.
    return [s for s in dict.fromkeys(out + [urllib.parse.unquote(s) for s in out]) if len(s) >= 3]


def _scrub(text: str, url: str) -> str:
    """``text`` with the URL and its credentials replaced by ``***``."""
    for s in [url, *_secrets(url)]:
        text = text.replace(s, "***")
    return text


def _error_text(e: BaseException) -> str:
    """The server's error text: redis-py strips a known error code (``ERR``, ``OOM``, ``NOPERM``...) from the
    message; redis-py 6+ keeps it as ``status_code``, and it is put back in front (redis-py 5: it stays off)."""
    text = str(e.args[0]) if e.args else str(e)
    code = getattr(e, "status_code", None)
    if isinstance(code, str) and code and not text.startswith(code):
        text = f"{code} {text}"
    return text


def _reply(v: Any) -> Any:
    """A RESP2 reply as JSON: nil → ``None``, integers as they are, bulk and status strings as ``str`` (bytes that
    are not UTF-8 as U+FFFD), arrays recursively, an error inside an array → ``{"err": <text>}``."""
    if v is None or (isinstance(v, int) and not isinstance(v, bool)):
        return v
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)):
        return [_reply(x) for x in v]
    if isinstance(v, rex.ResponseError):
        return {"err": _error_text(v)}
    if isinstance(v, bool):
        return int(v)
    return str(v)  # RESP2 has no other kind; never reached with the plugin's scripts


def _utf8(text: str) -> bytes:
    """``text`` as UTF-8, a lone surrogate as the byte it escapes (``surrogateescape``), else as ``?``."""
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace")


def _encode_reply(v: Any, parts: list[bytes]) -> None:
    """Append a RESP2 reply from redis-py (``decode_responses`` off) in the binary encoding (README, "The binary
    form") to ``parts``: ``None`` → ``n``; ``int`` → ``i`` and an i64 (``True``/``False`` as 1/0, never sent over
    RESP2); ``bytes`` (a bulk string, or a status reply's text such as ``OK``) → ``s`` and the exact bytes; a
    list → ``a``, its count and each element; an error reply inside an array (a ``ResponseError`` instance) →
    ``e`` and its text with the error code (:func:`_error_text`; redis-py decodes an error's text, so a byte of
    it that is not UTF-8 comes back as U+FFFD's three bytes); a ``str`` → ``s`` and its UTF-8. Large strings
    are appended as they are, not copied. Raises ``struct.error`` for an integer outside int64 (RESP has none)."""
    if v is None:
        parts.append(b"n")
    elif isinstance(v, bytes):
        parts.append(_LEN.pack(b"s", len(v)))
        parts.append(v)
    elif isinstance(v, int):
        parts.append(_INT.pack(b"i", v))
    elif isinstance(v, (list, tuple)):
        parts.append(_LEN.pack(b"a", len(v)))
        for x in v:
            _encode_reply(x, parts)
    elif isinstance(v, rex.ResponseError):
        text = _utf8(_error_text(v))
        parts.append(_LEN.pack(b"e", len(text)))
        parts.append(text)
    else:  # a str (redis-py decoding on), or anything else as its text; never reached with RESP2 and bytes
        text = _utf8(v if isinstance(v, str) else str(v))
        parts.append(_LEN.pack(b"s", len(text)))
        parts.append(text)


class EvalClients:
    """The redis-py clients of one store for ``mcp_resume_eval``, keyed by (url, cluster, timeout_ms): created on
    the first call that names them, shared by every thread (redis-py's clients are thread-safe), closed by
    :meth:`close`. Thread-safe."""

    def __init__(self) -> None:
        self._mu = threading.Lock()
        self._clients: dict[tuple[str, bool, int], Any] = {}
        self._closed = False

    def _client(self, url: str, cluster: bool, timeout_ms: int) -> Any:
        """The client for ``(url, cluster, timeout_ms)``, made now if needed. ``timeout_ms`` is both the connect
        and the read timeout of its sockets; every retry is off (no resend: README, "Never resend"). A cluster
        client reads the slot map from ``url``'s node when made, so making it may raise what a call raises (under
        the lock: the store's threads wait for one attempt, at most ``timeout_ms``, rather than each connecting)."""
        key = (url, cluster, timeout_ms)
        with self._mu:
            if self._closed:
                raise _Answer("unavailable", "mcp_resume_eval: this store is closed")
            client = self._clients.get(key)
            if client is not None:
                return client
            seconds = timeout_ms / 1000
            options: dict[str, Any] = {"socket_connect_timeout": seconds, "socket_timeout": seconds,
                                       "retry": Retry(NoBackoff(), 0), "retry_on_timeout": False, "protocol": 2}
            parts = urllib.parse.urlsplit(url)
            if parts.password and not parts.username:
                # A password without a user is the default user's (README, mcp_resume_eval): AUTH default <pw>,
                # which a server whose default user needs no password accepts, as go-redis's HELLO does.
                options["username"] = "default"
            try:
                if cluster:
                    # The cluster client's own retries (after a timeout, a broken connection, CLUSTERDOWN)
                    # follow `retry` from redis-py 6 on; 5 counts them in cluster_error_retry_attempts.
                    if int(redis.__version__.split(".")[0]) < 6:
                        options["cluster_error_retry_attempts"] = 0
                    client = RedisCluster.from_url(url, **options)
                else:
                    client = redis.Redis.from_url(url, retry_on_error=[], **options)
            except ValueError:
                raise _Answer("invalid_request", "mcp_resume_eval: url is not a Redis URL redis-py accepts") from None
            self._clients[key] = client
            return client

    def run(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Serve one ``mcp_resume_eval`` request (a parsed JSON object): the request checked before any I/O, then
        ``EVALSHA`` (``sha1``) or ``EVAL`` (``script``) with ``keys`` and ``args``. Answers ``{"reply": ...}``
        or an error: ``invalid_request`` (the request, or a URL redis-py refuses), ``noscript`` (NOSCRIPT),
        ``script`` (any other error reply, its text with the error code), ``auth`` (NOAUTH, WRONGPASS, AUTH
        failing while connecting), ``timeout`` (no reply within ``timeout_ms``; the connection is dropped),
        ``unavailable`` (no connection, or it broke; refused, DNS, TLS, LOADING, BUSY, CLUSTERDOWN, READONLY,
        MASTERDOWN, TRYAGAIN, MOVED/ASK left after redirects; or this store closed). Never raises."""
        given = doc.get("url")
        out, error = self._serve(lambda: _request(doc), given if isinstance(given, str) else "")
        return error if error is not None else {"reply": _reply(out)}

    def run_binary(self, req: bytes) -> bytes:
        """Serve one ``mcp_resume_eval`` request in the binary form (README, "The binary form": first byte
        ``0x01``, then the flags, ``timeout_ms``, the script, the keys and the args as raw bytes, the URL last):
        checked before any I/O (:func:`_binary_request`), then run exactly as :meth:`run` runs a JSON request,
        the keys and args sent as the bytes given. Answers ``0x00`` and the binary reply (kinds ``n`` nil, ``i``
        an i64, ``s`` a bulk or status string as the exact bytes the server sent, ``a`` an array, ``e`` an
        error reply inside an array with its code), or the error object of :meth:`run` as JSON bytes (first
        byte ``{``), with the same codes; a request that breaks the layout is ``invalid_request``. Never
        raises."""
        out, error = self._serve(lambda: _binary_request(req), "")
        if error is None:
            try:
                parts = [b"\x00"]
                _encode_reply(out, parts)
                return b"".join(parts)
            except Exception as e:  # noqa: BLE001 - never raised with RESP2's kinds; a host function never raises
                what = f"mcp_resume_eval: a reply this host cannot encode: {type(e).__name__}"
                error = _Answer("unavailable", what).error
        return json.dumps(error, separators=(",", ":")).encode()

    def _serve(self, parse: Callable[[], _Request], url: str) -> tuple[Any, dict[str, Any] | None]:
        """Check a request with ``parse`` (no I/O; it raises :class:`_Answer` ``invalid_request``), then run it on
        this store's client for its (url, cluster, timeout): ``EVALSHA`` with a ``sha1``, else ``EVAL``. Returns
        ``(redis-py's reply, None)`` or ``(None, the error answer)`` with the codes of :meth:`run`; ``url``
        scrubs messages until ``parse`` gives the request's own. Never raises."""
        try:
            url, cluster, sha1, script, keys, args, timeout_ms = parse()
            client = self._client(url, cluster, timeout_ms)
            if sha1 is not None:
                return client.evalsha(sha1, len(keys), *keys, *args), None
            return client.eval(script, len(keys), *keys, *args), None
        except _Answer as a:
            return None, a.error
        except rex.NoScriptError:
            return None, {"error": {"code": "noscript", "message": "NOSCRIPT No matching script"}}
        except (rex.TimeoutError, TimeoutError) as e:
            # redis-py closed the connection (it disconnects on a read timeout): the late reply is never read.
            return None, _Answer("timeout", _scrub(f"mcp_resume_eval: no reply within the deadline: {e}", url)).error
        except rex.AuthenticationError as e:  # NOAUTH, WRONGPASS, AUTH failing while connecting
            text = _error_text(e)
            if not text.startswith(("NOAUTH", "WRONGPASS")):
                text = f"AUTH failed: {text}"
            return None, _Answer("auth", _scrub(text, url)).error
        except _UNAVAILABLE as e:
            return None, _Answer("unavailable", _scrub(f"mcp_resume_eval: server unavailable: {_error_text(e)}",
                                                       url)).error
        except rex.ResponseError as e:
            text = _error_text(e)
            if text.startswith(_UNAVAILABLE_REPLY):
                return None, _Answer("unavailable", _scrub(f"mcp_resume_eval: server unavailable: {text}", url)).error
            return None, _Answer("script", _scrub(text, url)).error
        except Exception as e:  # noqa: BLE001 - a host function never raises (the contract)
            return None, _Answer("unavailable", _scrub(f"mcp_resume_eval: {type(e).__name__}: {e}", url)).error

    def close(self) -> None:
        """Close every client (their connections); later calls answer ``unavailable``. Idempotent."""
        with self._mu:
            self._closed = True
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            try:
                client.close()
            except Exception:  # noqa: BLE001, S110 - closing a broken connection may fail; nothing to do
                pass
