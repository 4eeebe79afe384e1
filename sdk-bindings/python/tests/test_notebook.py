"""The example server's notebook tools over a real MCP client: the official SDK's stdio client launches
examples/python-server/server.py (a real process on the real plugin) and calls the tools.

Pinned: the four tools' JSON (structured content, and the same JSON as text), tool errors with the handle
store's codes (``isError``), the policy in ``notebook_create``'s description, a notebook outliving its
server process, an idle TTL from ``MCP_RESUME_STATE_IDLE_TTL`` expiring a handle, ``MCP_RESUME=off``
leaving the notebooks on, and an unusable handle directory answering ``store_unavailable`` while the
broker tools keep working (a real Go broker). stdout carries nothing but JSON-RPC.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from test_e2e import SERVER, Broker, broker, broker_bin  # noqa: F401 - pytest fixtures

sys.path.insert(0, str(SERVER.parent))
from notebook import go_duration  # noqa: E402

DEAD_BROKER = "http://127.0.0.1:9"  # nothing listens: the broker tools fail, the notebook tools need none


def run_server(tmp_path: Path, calls: list[tuple[str, dict[str, Any]]], env: dict[str, str] | None = None,
               broker_url: str = DEAD_BROKER) -> dict[str, Any]:
    """Launch the example server with the SDK's stdio client, list its tools, make ``calls`` in order (a
    ``("sleep", {"s": x})`` pauses), shut it down. Returns ``{"tools": {name: description}, "results":
    [{"structured", "text", "is_error"}...]}`` (an argument ``"$h"``: the handle the last ``notebook_create``
    answered); fails on anything on stdout that is not JSON-RPC."""
    full_env = {**os.environ, "MCP_RESUME_STATE_DIR": str(tmp_path / "state"), "MCP_EXAMPLE_BROKER_URL": broker_url,
                **(env or {})}
    stream_errors: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            stream_errors.append(f"{type(message).__name__}: {message}")

    async def main() -> dict[str, Any]:
        with anyio.fail_after(120):
            return await session_calls()

    async def session_calls() -> dict[str, Any]:
        params = StdioServerParameters(command=sys.executable, args=[str(SERVER)], env=full_env)
        with open(tmp_path / "server.log", "a", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, message_handler=on_message) as session:
                    await session.initialize()
                    tools = {t.name: t.description for t in (await session.list_tools()).tools}
                    results: list[dict[str, Any]] = []
                    handle = ""  # "$h" in arguments: the handle the last notebook_create answered
                    for name, args in calls:
                        args = {k: handle if v == "$h" else v for k, v in args.items()}
                        if name == "sleep":
                            await anyio.sleep(args["s"])
                            continue
                        r = await session.call_tool(name, args)
                        text = "".join(getattr(c, "text", "") for c in r.content)
                        results.append({"structured": r.structured_content, "text": text, "is_error": bool(r.is_error)})
                        if name == "notebook_create" and not r.is_error and r.structured_content:
                            handle = r.structured_content["handle"]
        return {"tools": tools, "results": results}

    out = anyio.run(main)
    assert not stream_errors, f"the server wrote something other than JSON-RPC to stdout: {stream_errors}"
    return out


def ok(r: dict[str, Any]) -> dict[str, Any]:
    """The structured content of a successful call, checked to equal its text."""
    assert not r["is_error"], r
    assert json.loads(r["text"]) == r["structured"], r
    return dict(r["structured"])


def err(r: dict[str, Any]) -> dict[str, Any]:
    """The structured content of a tool error, checked to equal its text."""
    assert r["is_error"], r
    assert r["structured"] is not None and json.loads(r["text"]) == r["structured"], r
    return dict(r["structured"])


def test_go_duration_as_go_writes_it() -> None:
    import datetime as dt

    cases = {dt.timedelta(hours=24): "24h0m0s", dt.timedelta(days=30): "720h0m0s", dt.timedelta(seconds=90): "1m30s",
             dt.timedelta(seconds=2): "2s", dt.timedelta(seconds=1.5): "1.5s", dt.timedelta(milliseconds=500): "500ms",
             dt.timedelta(0): "0s", dt.timedelta(hours=1, seconds=0.25): "1h0m0.25s"}
    assert {k: go_duration(k) for k in cases} == cases


def test_notebook_tools(tmp_path: Path) -> None:
    out = run_server(tmp_path, [("notebook_create", {})])
    assert {"notebook_create", "notebook_add", "notebook_read", "notebook_delete"} <= set(out["tools"])
    assert ("The notebook expires after 24h0m0s idle and 720h0m0s after creation at the latest; an expired handle "
            "answers handle_expired.") in out["tools"]["notebook_create"]
    created = ok(out["results"][0])
    assert set(created) == {"handle", "generation", "idle_ttl_seconds", "max_age_seconds"}
    assert created["generation"] == 1 and created["idle_ttl_seconds"] == 86400 and created["max_age_seconds"] == 2592000
    h = created["handle"]
    results = run_server(tmp_path, [  # another server process: the notebook outlived the first
        ("notebook_add", {"handle": h, "note": "one"}),
        ("notebook_add", {"handle": h, "note": "two", "generation": 2}),
        ("notebook_read", {"handle": h}),
        ("notebook_add", {"handle": h, "note": "stale", "generation": 2}),
        ("notebook_delete", {"handle": h, "generation": 1}),
        ("notebook_read", {"handle": h}),
        ("notebook_delete", {"handle": h, "generation": 3}),
        ("notebook_read", {"handle": h}),
        ("notebook_add", {"handle": "mrh1_nope", "note": "x"}),
        ("notebook_read", {"handle": "mrh1_" + "A" * 32}),
    ])["results"]
    assert ok(results[0]) == {"generation": 2} and ok(results[1]) == {"generation": 3}
    assert ok(results[2]) == {"notes": ["one", "two"], "generation": 3}
    conflict = err(results[3])
    assert conflict["error"] == "conflict" and conflict["generation"] == 3 and conflict["message"]
    assert err(results[4])["error"] == "conflict"
    assert ok(results[5]) == {"notes": ["one", "two"], "generation": 3}, "a conflict changed the notebook"
    assert ok(results[6]) == {}
    assert err(results[7])["error"] == "handle_not_found"
    assert err(results[8])["error"] == "invalid_handle"
    assert err(results[9])["error"] == "handle_not_found"
    log = (tmp_path / "server.log").read_text()
    assert h not in log and h[5:] not in log, "a handle reached the server's log"


def test_idle_ttl_from_the_environment_expires_a_notebook(tmp_path: Path) -> None:
    env = {"MCP_RESUME_STATE_IDLE_TTL": "2s", "MCP_RESUME": "off"}
    out = run_server(tmp_path, [("notebook_create", {})], env)
    assert "expires after 2s idle" in out["tools"]["notebook_create"]
    created = ok(out["results"][0])
    assert created["idle_ttl_seconds"] == 2
    # One process: a server start on this shared machine may take longer than 2 s.
    calls = [("notebook_create", {}), ("notebook_add", {"handle": "$h", "note": "in time"}), ("sleep", {"s": 3}),
             ("notebook_read", {"handle": "$h"})]
    results = run_server(tmp_path, calls, env)["results"]
    assert ok(results[1]) == {"generation": 2}
    expired = err(results[2])
    assert expired["error"] == "handle_expired" and expired["reason"] == "idle"


def test_unusable_handle_directory_only_affects_the_notebooks(tmp_path: Path, broker: Broker) -> None:  # noqa: F811
    """The handle directory's place is a file: every notebook tool answers store_unavailable, the broker tools
    work (resume's state directory is the app's, next to it)."""
    app_dir = tmp_path / "state" / "example-python"
    app_dir.mkdir(parents=True, mode=0o700)
    (app_dir / "handles").write_text("not a directory")
    results = run_server(tmp_path, [("notebook_create", {}), ("notebook_read", {"handle": "mrh1_" + "A" * 32}),
                                    ("remember", {"note": "still here"}), ("recall", {})],
                         broker_url=broker.url)["results"]
    for r in results[:2]:
        e = err(r)
        assert e["error"] == "store_unavailable" and e["message"], e
    assert not results[2]["is_error"] and not results[3]["is_error"], results
    assert json.loads(results[3]["text"]) == {"notes": ["still here"]}
    assert (app_dir / "handles").read_text() == "not a directory"


def test_concurrent_adds_retry_lost_races(tmp_path: Path) -> None:
    """Two server processes add to one notebook at once without a generation: every note lands (the lost
    races are retried) and the generation counts them all."""
    h = ok(run_server(tmp_path, [("notebook_create", {})])["results"][0])["handle"]
    n = 8

    def adds(tag: str) -> None:
        rs = run_server(tmp_path, [("notebook_add", {"handle": h, "note": f"{tag}{i}"}) for i in range(n)])["results"]
        assert all(not r["is_error"] for r in rs), rs

    async def both() -> None:
        async with anyio.create_task_group() as tg:
            for tag in "ab":
                tg.start_soon(anyio.to_thread.run_sync, adds, tag)

    t0 = time.monotonic()
    anyio.run(both)
    final = ok(run_server(tmp_path, [("notebook_read", {"handle": h})])["results"][0])
    assert sorted(final["notes"]) == sorted([f"{t}{i}" for t in "ab" for i in range(n)])
    assert final["generation"] == 1 + 2 * n, (final, time.monotonic() - t0)
