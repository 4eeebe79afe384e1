"""``mcp_resume_eval`` (hostfuncs/README.md, "``mcp_resume_eval``"): what the shared ``host_eval_*`` cases do not
pin, on a real ``redis-server``.

A malformed request answers ``invalid_request`` with no connection made (a listening socket sees none); one
client per (url, cluster, timeout), kept across calls and closed with the host functions (the server sees the
connection go); a wrong password (``WRONGPASS``) and no password (``NOAUTH``) answer ``auth`` (ABI 9), a write on a
read-only replica (``READONLY``) ``unavailable``, never quoting the password; error replies keep their code (``ERR``),
inside an array too; keys and arguments reach the server as UTF-8 bytes. The binary form (ABI 11): raw bytes
both ways (every byte value, 4 MiB), a timeout dropping its connection, its error codes, cluster routing.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_resume._hostfuncs import HostFunctions

from conftest import RedisServer, _start
from test_handles_redis import connections, wait_connections


@pytest.fixture
def server(redis_server: Any) -> Any:
    redis_server.flush()
    return redis_server


@pytest.fixture
def funcs() -> Iterator[HostFunctions]:
    f = HostFunctions(logging.getLogger("mcp_resume.test.eval"))
    yield f
    f.close()


def ev(funcs: HostFunctions, url: Any, **request: Any) -> dict[str, Any]:
    """One ``mcp_resume_eval`` call (keys, args and a 2 s timeout unless given; ``_url`` in ``request``
    replaces ``url``): the parsed answer."""
    doc = {"url": request.pop("_url", url), "keys": [], "args": [], "timeout_ms": 2000, **request}
    return dict(json.loads(funcs.call("mcp_resume_eval", json.dumps(doc).encode())))


def code(answer: dict[str, Any]) -> str | None:
    return answer["error"]["code"] if answer.get("error") else None


def test_invalid_requests_make_no_connection(funcs: HostFunctions) -> None:
    """Each malformed request answers invalid_request at once, and the server's port never sees a connection."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    bad: list[dict[str, Any]] = [
        {"sha1": "0" * 40, "script": "return 1"}, {}, {"script": "return 1", "timeout_ms": 0},
        {"script": "return 1", "timeout_ms": 60001}, {"script": "return 1", "timeout_ms": 5.0},
        {"script": "return 1", "timeout_ms": True}, {"script": "return 1", "keys": [1]},
        {"script": "return 1", "keys": "k"}, {"script": "return 1", "args": None},
        {"script": "return 1", "keys": ["\ud800"]}, {"sha1": "0" * 39}, {"sha1": "A" * 40},
        {"script": 7}, {"script": "return 1", "cluster": "yes"}, {"script": "return 1", "_url": 7},
        {"script": "return 1", "_url": "http://127.0.0.1:1/0"}, {"script": "return 1", "_url": None},
    ]
    try:
        for req in bad:
            t0 = time.monotonic()
            answer = ev(funcs, url, **req)
            assert code(answer) == "invalid_request", (req, answer)
            assert time.monotonic() - t0 < 0.1
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
    raw = funcs.call("mcp_resume_eval", b"not json")
    assert json.loads(raw)["error"]["code"] == "invalid_request"


def test_one_client_per_url_reused_and_closed(server: Any) -> None:
    """Calls with one (url, cluster, timeout) reuse one client and one connection; another timeout gets its
    own client; close() closes them all (the server sees the connections go) and later calls answer
    invalid_request."""
    before = connections(server)
    funcs = HostFunctions(logging.getLogger("mcp_resume.test.eval"))
    try:
        for _ in range(20):
            assert ev(funcs, server.url, script="return 1") == {"reply": 1}
        assert len(funcs._evals._clients) == 1 and connections(server) == before + 1
        assert ev(funcs, server.url, script="return 2", timeout_ms=3000) == {"reply": 2}
        assert len(funcs._evals._clients) == 2
    finally:
        funcs.close()
    assert wait_connections(server, before) == before
    assert code(ev(funcs, server.url, script="return 1")) == "invalid_request"


def test_auth_failures_are_auth(server: Any, funcs: HostFunctions) -> None:
    """An ACL user: the right password runs the script; a wrong one (WRONGPASS) answers auth without the
    password in the message."""
    server.client.execute_command("ACL", "SETUSER", "evaluser", "on", ">right-pw", "~*", "+@all")
    host = f"127.0.0.1:{server.port}"
    assert ev(funcs, f"redis://evaluser:right-pw@{host}/0", script="return 1") == {"reply": 1}
    answer = ev(funcs, f"redis://evaluser:wr0ng-s3cret@{host}/0", script="return 1")
    assert code(answer) == "auth", answer
    assert "wr0ng-s3cret" not in json.dumps(answer) and "evaluser" not in answer["error"]["message"]


def test_noauth_is_auth_and_readonly_unavailable(redis_server: Any, funcs: HostFunctions, tmp_path: Path) -> None:
    """A server of its own with requirepass: no password (NOAUTH) answers auth; the same server made a
    replica (of a port nothing listens on): a script that writes (READONLY) answers unavailable, one that
    reads runs."""
    own: RedisServer = _start(tmp_path)  # redis_server: skipped, or failed, as without redis-server
    try:
        own.client.config_set("requirepass", "pw-of-its-own")
        url = f"redis://127.0.0.1:{own.port}/0"
        answer = ev(funcs, url, script="return 1")
        assert code(answer) == "auth", answer
        assert answer["error"]["message"].startswith("NOAUTH"), answer
        own.client.execute_command("AUTH", "pw-of-its-own")
        own.client.execute_command("REPLICAOF", "127.0.0.1", "1")
        with_pw = f"redis://:pw-of-its-own@127.0.0.1:{own.port}/0"
        answer = ev(funcs, with_pw, script="return redis.call('SET', KEYS[1], 'x')", keys=["k"])
        assert code(answer) == "unavailable", answer
        assert "pw-of-its-own" not in json.dumps(answer)
        assert ev(funcs, with_pw, script="return redis.call('GET', KEYS[1])", keys=["k"]) == {"reply": None}
    finally:
        own.stop()


def test_busy_is_unavailable(redis_server: Any, funcs: HostFunctions, tmp_path: Path) -> None:
    """While another client's script holds a server past its busy threshold (50 ms here), it answers BUSY
    without running the script: unavailable, as in every host (README, mcp_resume_eval, Errors), not script."""
    own: RedisServer = _start(tmp_path)  # redis_server: skipped, or failed, as without redis-server
    try:
        own.client.config_set("lua-time-limit", 50)
        url = f"redis://127.0.0.1:{own.port}/0"
        loop = ("local t = redis.call('TIME') local s = t[1]*1000000 + t[2] while true do local n = redis.call('TIME') "
                "if n[1]*1000000 + n[2] - s > 800000 then break end end return 1")
        assert code(ev(funcs, url, script=loop, timeout_ms=150)) == "timeout"
        answer = ev(funcs, url, script="return 2")
        assert code(answer) == "unavailable" and "BUSY" in answer["error"]["message"], answer
    finally:
        own.stop()


def test_error_replies_keep_their_code(server: Any, funcs: HostFunctions) -> None:
    """A Lua error and an unknown command answer script with the server's text from its code (``ERR``); an
    error inside an array is {"err"} with its code too."""
    answer = ev(funcs, server.url, script="error('boom')")
    assert code(answer) == "script" and answer["error"]["message"].startswith("ERR "), answer
    answer = ev(funcs, server.url, script="return redis.call('NO-SUCH-COMMAND')")
    assert code(answer) == "script" and answer["error"]["message"].startswith("ERR "), answer
    server.client.set("s", "text")
    answer = ev(funcs, server.url, script="return {1, redis.pcall('INCR', KEYS[1]), redis.error_reply('MINE x')}",
                keys=["s"])
    reply = answer["reply"]
    assert reply[0] == 1 and reply[2] == {"err": "MINE x"}, answer
    assert reply[1]["err"].startswith("ERR value is not an integer"), answer


def test_utf8_keys_and_args(server: Any, funcs: HostFunctions) -> None:
    """Keys and arguments arrive as their UTF-8 bytes; a reply's bytes that are not UTF-8 come back as U+FFFD."""
    answer = ev(funcs, server.url, script="redis.call('SET', KEYS[1], ARGV[1]) return redis.call('GET', KEYS[1])",
                keys=["clé"], args=["été ☃"])
    assert answer == {"reply": "été ☃"}
    assert server.client.get("clé".encode()) == "été ☃".encode()
    assert ev(funcs, server.url, script="return 'a\\255b'") == {"reply": "a\ufffdb"}


# --- The binary form (ABI 11) -------------------------------------------------------------------------------


def binreq(url: str | bytes, script: str | bytes | None = None, sha1: str | None = None,
           keys: tuple[bytes, ...] = (), args: tuple[bytes, ...] = (), timeout_ms: int = 2000,
           cluster: bool = False) -> bytes:
    """A binary ``mcp_resume_eval`` request as the README lays it out (written here from the table, not from the
    binding's decoder): 0x01, the flags, timeout_ms, the script (``script``'s source, else ``sha1``), the keys
    and the args, the URL last."""
    code = script if script is not None else sha1 or ""
    raw = code.encode() if isinstance(code, str) else code
    out = struct.pack(">BBII", 1, (1 if cluster else 0) | (2 if script is not None else 0), timeout_ms, len(raw)) + raw
    for strings in (keys, args):
        out += struct.pack(">H", len(strings)) + b"".join(struct.pack(">I", len(s)) + s for s in strings)
    return out + (url.encode() if isinstance(url, str) else url)


def binary_reply(raw: bytes) -> Any:
    """A binary answer read: the JSON error object as a dict, else the reply (nil ``None``, an int, ``bytes``,
    a list, an error inside an array ``{"err": bytes}``), which must fill the answer exactly."""
    if raw[:1] == b"{":
        return json.loads(raw)
    assert raw[:1] == b"\x00", raw[:16]

    def read(pos: int) -> tuple[Any, int]:
        kind, pos = raw[pos:pos + 1], pos + 1
        if kind == b"n":
            return None, pos
        if kind == b"i":
            return struct.unpack_from(">q", raw, pos)[0], pos + 8
        (n,) = struct.unpack_from(">I", raw, pos)
        pos += 4
        if kind in (b"s", b"e"):
            text = raw[pos:pos + n]
            assert len(text) == n, "a string cut short"
            return (text if kind == b"s" else {"err": text}), pos + n
        assert kind == b"a", f"unknown reply kind {kind!r}"
        items = []
        for _ in range(n):
            item, pos = read(pos)
            items.append(item)
        return items, pos

    reply, end = read(1)
    assert end == len(raw), f"{len(raw) - end} bytes after the reply"
    return reply


def bev(funcs: HostFunctions, url: str | bytes, **request: Any) -> Any:
    """One binary ``mcp_resume_eval`` call (:func:`binreq`'s arguments): :func:`binary_reply` of its answer."""
    return binary_reply(funcs.call("mcp_resume_eval", binreq(url, **request)))


SET_GET = "redis.call('SET', KEYS[1], ARGV[1]) return {redis.call('GET', KEYS[1]), redis.call('STRLEN', KEYS[1])}"


def test_binary_raw_bytes_round_trip(server: Any, funcs: HostFunctions) -> None:
    """Keys and values holding every byte value, and a 4 MiB value of random bytes, reach Redis as those bytes
    and come back exactly; a status reply is its text; the binary and JSON forms share one client and one
    connection."""
    before = connections(server)
    every = bytes(range(256))
    for key, value in ((every, every * 3), (b"big\xff", os.urandom(4 << 20)), (b"", b"")):
        assert bev(funcs, server.url, script=SET_GET, keys=(key,), args=(value,)) == [value, len(value)]
        assert server.client.get(key) == value
    assert bev(funcs, server.url, script="return redis.call('SET', KEYS[1], 'x')", keys=(b"k",)) == b"OK"
    assert ev(funcs, server.url, script="return redis.call('GET', KEYS[1])", keys=["k"]) == {"reply": "x"}
    assert len(funcs._evals._clients) == 1 and connections(server) == before + 1


def test_binary_timeout_drops_connection(server: Any, funcs: HostFunctions) -> None:
    """A binary call that times out drops its connection: the script's late reply never answers the next call
    on the same client (same url and timeout_ms), which gets its own."""
    busy = ("local t = redis.call('TIME') local s = t[1]*1000000 + t[2] while true do local n = redis.call('TIME') "
            "if n[1]*1000000 + n[2] - s > 500000 then break end end return 'late'")
    t0 = time.monotonic()
    answer = bev(funcs, server.url, script=busy, timeout_ms=200)
    assert code(answer) == "timeout" and time.monotonic() - t0 < 0.45, answer
    time.sleep(0.6)  # the script has replied by now, onto the dropped connection
    assert bev(funcs, server.url, script="return 'next'", timeout_ms=200) == b"next"
    assert len(funcs._evals._clients) == 1


def test_binary_errors(server: Any, funcs: HostFunctions) -> None:
    """Binary requests without a usable URL (none, not UTF-8, not redis://) or breaking the layout answer
    invalid_request at once and connect nowhere; then the JSON form's codes: noscript, script (with its code),
    an error inside an array as kind e, auth (never quoting the password), unavailable, and invalid_request
    once the store is closed."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
    bad = [binreq("", script="return 1"), binreq(b"redis://127.0.0.1\xff:1/0", script="return 1"),
           binreq(url.replace("redis", "http", 1), script="return 1"), binreq(url, script=""),
           binreq(url, sha1="0" * 39), binreq(url, script="return 1", timeout_ms=0), b"\x01",
           binreq(url, script="return 1")[:14], b"\x01\x06" + binreq(url, script="return 1")[2:]]
    try:
        for req in bad:
            answer = json.loads(funcs.call("mcp_resume_eval", req))
            assert code(answer) == "invalid_request", (req, answer)
        with pytest.raises(BlockingIOError):
            listener.accept()
    finally:
        listener.close()
    assert code(bev(funcs, server.url, sha1="0" * 40)) == "noscript"
    answer = bev(funcs, server.url, script="error('boom')")
    assert code(answer) == "script" and answer["error"]["message"].startswith("ERR "), answer
    assert bev(funcs, server.url, script="return {1, redis.error_reply('MINE x')}") == [1, {"err": b"MINE x"}]
    server.client.execute_command("ACL", "SETUSER", "binuser", "on", ">right-pw", "~*", "+@all")
    answer = bev(funcs, f"redis://binuser:wr0ng-s3cret@127.0.0.1:{server.port}/0", script="return 1")
    assert code(answer) == "auth" and "wr0ng-s3cret" not in json.dumps(answer), answer
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nobody = f"redis://127.0.0.1:{s.getsockname()[1]}/0"  # bound, not listening: refused
        assert code(bev(funcs, nobody, script="return 1")) == "unavailable"
    funcs.close()
    assert code(bev(funcs, server.url, script="return 1")) == "invalid_request"


def test_binary_cluster_routes_raw_keys(redis_cluster: Any, funcs: HostFunctions) -> None:
    """With the cluster flag, keys that are not UTF-8 go to the node owning keys[0]'s slot (hash tags of raw
    bytes, spread over the masters) and come back as their bytes."""
    for i in range(12):
        tag = b"{\xff" + bytes([i]) + b"}"
        value = bytes([i, 0x80, 0])
        answer = bev(funcs, redis_cluster.nodes[0].url, script=SET_GET, keys=(tag + b"a",), args=(value,),
                     cluster=True, timeout_ms=3000)
        assert answer == [value, 3], answer
    owners = {n.port for n in redis_cluster.nodes if any(True for _ in n.client.scan_iter(match=b"{\xff*"))}
    assert len(owners) >= 2, "the raw hash tags did not spread over the masters"
