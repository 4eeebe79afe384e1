"""``AsyncResumeTokenStore``: a store for asyncio servers that opens and makes its first ``load`` in the
background, so the MCP handshake never waits for a cold compile. The real plugin in the real runtime; the
flow on the default conformance system (host pid 4242), the timing in a fresh process with an empty
compilation cache (a first start after ``pip install``)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_resume import AsyncResumeTokenStore, InvalidAppError, InvalidOptionError, InvalidTokenError

from pinned import MARKER_NAME, TOKEN_NAME, Capture, logger_for, pinned_store


@pytest.fixture
def PinnedAsync(tmp_path_factory: pytest.TempPathFactory) -> type[AsyncResumeTokenStore]:
    class Async(AsyncResumeTokenStore):
        _store_class = pinned_store(tmp_path_factory.mktemp("system"))

    return Async


def test_flow(tmp_path: Path, PinnedAsync: type[AsyncResumeTokenStore]) -> None:
    """load, store and reject awaited on the default system, as the synchronous store does them: the token
    loaded at construction, filed under the host with the default key's suffix, resumed, rotated, rejected;
    invalid tokens refused."""
    capture = Capture()
    lg = logger_for(capture, "async.flow")

    async def run() -> None:
        async with PinnedAsync("app", state_root=tmp_path, logger=lg) as s:
            assert await s.load() is None
            await s.store("tok-A")
        async with PinnedAsync("app", state_root=tmp_path, logger=lg) as s:
            assert await s.load() == "tok-A"  # the token loaded at construction
            await s.store("tok-B")
            opened = await s.opened()
            assert opened.state_dir == str(tmp_path / "app")  # the app's directory under the root
            assert opened.state_root == str(tmp_path)
        async with PinnedAsync("app", state_root=tmp_path, logger=lg) as s:
            assert await s.load() == "tok-B"
            await s.reject()
            assert await s.load() is None  # later calls load again
            with pytest.raises(InvalidTokenError):
                await s.store("not a token")
            with pytest.raises(InvalidTokenError):
                await s.store(b"tok")  # type: ignore[arg-type]
            await s.store("tok-C")

    asyncio.run(run())
    assert (tmp_path / "app" / TOKEN_NAME).read_text() == "tok-C"
    assert capture.events() == ["token_not_found", "session_resumed", "token_rejected", "token_not_found"]


def test_open_failure_is_resume_off(tmp_path: Path) -> None:
    capture = Capture()

    async def run() -> None:
        s = AsyncResumeTokenStore("../bad app", state_root=tmp_path, logger=logger_for(capture, "async.bad"))
        assert await s.load() is None
        await s.store("tok")
        await s.reject()
        with pytest.raises(InvalidAppError):
            await s.opened()
        await s.aclose()

    asyncio.run(run())
    assert capture.events() == ["open_failed"]
    assert "invalid app name" in capture.records[0].getMessage()
    assert os.listdir(tmp_path) == []


def test_wrong_argument_type(tmp_path: Path) -> None:
    """A value JSON cannot carry is refused at once, by the binding; a value of the wrong JSON type is the
    plugin's to refuse, in the background: the store logs why once and runs with resume off."""
    with pytest.raises(InvalidOptionError, match="instance"):
        AsyncResumeTokenStore("app", state_root=tmp_path, instance=object())  # type: ignore[arg-type]
    capture = Capture()

    async def run() -> None:
        s = AsyncResumeTokenStore("app", state_root=tmp_path, instance=5, logger=logger_for(capture, "async.type"))  # type: ignore[arg-type]
        assert await s.load() is None
        with pytest.raises(InvalidOptionError):
            await s.opened()
        await s.aclose()

    asyncio.run(run())
    assert capture.events() == ["open_failed"]
    assert "instance must be a string, not a number" in capture.records[0].getMessage()


def test_close_during_the_start_releases_the_lock(tmp_path: Path, PinnedAsync: type[AsyncResumeTokenStore]) -> None:
    """Closed before its start ended: the start closes the store when it ends, so the token file's lock is
    free for the next instance."""
    capture = Capture()

    async def run() -> None:
        first = PinnedAsync("app", state_root=tmp_path, logger=logger_for(capture, "async.close"))
        first.close()  # almost certainly before the start ended
        await asyncio.wrap_future(first._started)
        async with PinnedAsync("app", state_root=tmp_path, logger=logger_for(capture, "async.close")) as second:
            await second.load()
            await second.store("tok-2")

    asyncio.run(run())
    assert set(capture.events()) == {"token_not_found"}, "the second found the lock free: not busy, not ambiguous"
    assert (tmp_path / "app" / TOKEN_NAME).read_text() == "tok-2" and not (tmp_path / "app" / MARKER_NAME).exists()


COLD = r"""
import asyncio, json, sys, time
t0 = time.perf_counter()
from mcp_resume import AsyncResumeTokenStore
t_import = time.perf_counter()
store = AsyncResumeTokenStore("app", state_root=sys.argv[1], instance="")  # this test process is the MCP host
t_built = time.perf_counter()
ticks = 0
async def main():
    global ticks
    async def tick():  # the event loop stays free while the store opens
        global ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)
    ticker = asyncio.ensure_future(tick())
    token = await store.load()
    ticker.cancel()
    await store.store("tok-cold")
    await store.aclose()
    return token
token = asyncio.run(main())
t_ready = time.perf_counter()
print(json.dumps({"construct_s": t_built - t_import, "ready_s": t_ready - t_built, "ticks": ticks, "token": token}))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME moves the user cache dir on Linux only")
def test_cold_cache_start_does_not_block(tmp_path: Path) -> None:
    """A first start after pip install (empty cache): constructing returns at once, and the event loop keeps
    running while the plugin compiles."""
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("EXTISM_", "MCP_RESUME"))},
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    p = subprocess.run([sys.executable, "-c", COLD, str(tmp_path / "state")], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    out: dict[str, Any] = json.loads(p.stdout)
    assert out["construct_s"] < 0.5, out
    assert out["ready_s"] > 4 * out["construct_s"], out
    assert out["ticks"] >= 10, f"the event loop was blocked: {out}"
    app_dir = tmp_path / "state" / "app"
    assert (app_dir / [n for n in os.listdir(app_dir) if n.startswith("token-")][0]).read_text() == "tok-cold"
