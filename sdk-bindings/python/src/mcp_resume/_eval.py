"""``mcp_resume_eval``: run one plugin-written Lua script on Redis or Valkey (hostfuncs/README.md,
"``mcp_resume_eval``"), the handle store's Redis backend. The plugin writes every script, key and argument
and reads every reply; this module only carries them, with redis-py.

:class:`EvalClients` keeps one redis-py client per (url, cluster, timeout) for one store: a resume store's
host functions own theirs, a :class:`~mcp_resume.HandleStore` shares one among its pool of plugin instances
and closes it with the store. No request is ever sent twice (a script may have run when its reply was
lost): every retry redis-py 5-8 would make on its own is turned off, so a timeout answers ``timeout`` and
a broken connection ``unavailable``, and the plugin decides. The next call reconnects.

Nothing here raises into the caller: :meth:`EvalClients.run` answers ``{"reply": ...}`` or ``{"error":
{"code", "message"}}``. No message holds the URL (it may carry a password): messages come from the
library's text, which names the address only, and any part of the URL's credentials found there anyway is
replaced by ``***``.
"""

from __future__ import annotations

import re
import threading
import urllib.parse
from typing import Any

import redis
import redis.exceptions as rex
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.retry import Retry

__all__ = ["EvalClients", "MAX_TIMEOUT_MS"]

#: The largest ``timeout_ms`` (Go ``hostfuncs.MaxEvalTimeoutMS``); the smallest is 1.
MAX_TIMEOUT_MS = 60000
_SHA1 = re.compile(r"[0-9a-f]{40}")
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


def _request(doc: dict[str, Any]) -> tuple[str, bool, str | None, str | None, list[str], list[str], int]:
    """The checked request ``(url, cluster, sha1, script, keys, args, timeout_ms)``; ``invalid_request`` (never
    quoting the URL) for anything the README's request rule refuses. No I/O."""
    url, cluster, sha1, script = doc.get("url"), doc.get("cluster"), doc.get("sha1"), doc.get("script")
    if not isinstance(url, str) or not url.startswith(("redis://", "rediss://")):
        raise _Answer("invalid_request", "mcp_resume_eval: url must be a string redis://... or rediss://...")
    _check_url(url)
    if cluster is None:
        cluster = False
    if not isinstance(cluster, bool):
        raise _Answer("invalid_request", "mcp_resume_eval: cluster must be true or false")
    if (sha1 is None) == (script is None):
        raise _Answer("invalid_request", "mcp_resume_eval: give exactly one of sha1 and script")
    if sha1 is not None and not (isinstance(sha1, str) and _SHA1.fullmatch(sha1)):
        raise _Answer("invalid_request", "mcp_resume_eval: sha1 must be 40 lowercase hex digits")
    if script is not None and not isinstance(script, str):
        raise _Answer("invalid_request", "mcp_resume_eval: script must be a string")
    keys, args = _strings(doc, "keys"), _strings(doc, "args")
    if script is not None:
        _strings({"script": [script]}, "script")
    timeout = doc.get("timeout_ms")
    if type(timeout) is not int or not 1 <= timeout <= MAX_TIMEOUT_MS:
        raise _Answer("invalid_request", f"mcp_resume_eval: timeout_ms must be an integer 1..{MAX_TIMEOUT_MS}")
    return url, cluster, sha1, script, keys, args, timeout


def _check_url(url: str) -> None:
    """Refuse, as ``invalid_request``, a URL no host's client library would use as given: a port that is not a
    number from 1 to 65535, or a database path that is not decimal digits (redis-py alone would ignore it and
    use database 0, where go-redis and node-redis refuse it: README, ``mcp_resume_eval``). No I/O."""
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
        url: str = given if isinstance(given, str) else ""
        try:
            url, cluster, sha1, script, keys, args, timeout_ms = _request(doc)
            client = self._client(url, cluster, timeout_ms)
            if sha1 is not None:
                out = client.evalsha(sha1, len(keys), *keys, *args)
            else:
                out = client.eval(script, len(keys), *keys, *args)
            return {"reply": _reply(out)}
        except _Answer as a:
            return a.error
        except rex.NoScriptError:
            return {"error": {"code": "noscript", "message": "NOSCRIPT No matching script"}}
        except (rex.TimeoutError, TimeoutError) as e:
            # redis-py closed the connection (it disconnects on a read timeout): the late reply is never read.
            return _Answer("timeout", _scrub(f"mcp_resume_eval: no reply within the deadline: {e}", url)).error
        except rex.AuthenticationError as e:  # NOAUTH, WRONGPASS, AUTH failing while connecting
            text = _error_text(e)
            if not text.startswith(("NOAUTH", "WRONGPASS")):
                text = f"AUTH failed: {text}"
            return _Answer("auth", _scrub(text, url)).error
        except _UNAVAILABLE as e:
            return _Answer("unavailable", _scrub(f"mcp_resume_eval: server unavailable: {_error_text(e)}", url)).error
        except rex.ResponseError as e:
            text = _error_text(e)
            if text.startswith(_UNAVAILABLE_REPLY):
                return _Answer("unavailable", _scrub(f"mcp_resume_eval: server unavailable: {text}", url)).error
            return _Answer("script", _scrub(text, url)).error
        except Exception as e:  # noqa: BLE001 - a host function never raises (the contract)
            return _Answer("unavailable", _scrub(f"mcp_resume_eval: {type(e).__name__}: {e}", url)).error

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
