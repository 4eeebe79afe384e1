"""A real MCP host for the end-to-end tests: the official Python SDK client, in its own process.

The test starts this script as a separate process, so it is the MCP host the
server's identity walk must find (its pid and start time name the token file).
It prints ``{"pid": <its pid>}`` first, then serves one JSON command per stdin
line and answers one JSON line on stdout each:

    {"command": "/path/python", "args": [...], "env": {...}, "cwd": "...",
     "stderr": "/path/server.log", "calls": [["remember", {"note": "x"}], ...]}

launches the server with ``mcp.client.stdio.stdio_client`` (the server's
stderr appended to ``stderr``), initializes a ``ClientSession``, makes the tool
calls in order and shuts the server down (the SDK closes its stdin, then
terminates it). The answer is ``{"results": [{"text", "is_error"}...],
"stream_errors": [...]}``; ``stream_errors`` lists every item of the server's
stdout the SDK could not parse as JSON-RPC (it must stay empty: stdout is
the protocol's), or ``{"error": "..."}`` when the launch failed.

``{"servers": [<command>, <command>, ...]}`` runs several servers **at the
same time**, as real hosts do with several entries of one server: each is
launched, initialized and makes its calls while the ones before it keep
running; then all are shut down, the last launched first. The answer is
``{"runs": [<answer of each command>...]}``.
"""

from __future__ import annotations

import json
import sys
import traceback
from contextlib import AsyncExitStack
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

LAUNCH_TIMEOUT_S = 60.0


async def start(stack: AsyncExitStack, cmd: dict[str, Any]) -> dict[str, Any]:
    """Launch one server inside ``stack`` (which shuts it down), initialize, make its calls."""
    stream_errors: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            stream_errors.append(f"{type(message).__name__}: {message}")

    params = StdioServerParameters(
        command=cmd["command"], args=cmd.get("args", []), env=cmd.get("env"), cwd=cmd.get("cwd")
    )
    results: list[dict[str, Any]] = []
    errlog = stack.enter_context(open(cmd["stderr"], "a", encoding="utf-8"))
    read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
    session = await stack.enter_async_context(ClientSession(read, write, message_handler=on_message))
    await session.initialize()
    for name, arguments in cmd.get("calls", []):
        r = await session.call_tool(name, arguments)
        text = "".join(getattr(c, "text", "") for c in r.content)
        results.append({"text": text, "is_error": bool(r.is_error)})
    # Filled in as the server runs; read after the stack has shut it down.
    return {"results": results, "stream_errors": stream_errors}


async def launch(cmd: dict[str, Any]) -> dict[str, Any]:
    """One server, or with ``servers`` several at once (the last launched is shut down first)."""
    cmds = cmd["servers"] if "servers" in cmd else [cmd]
    with anyio.fail_after(LAUNCH_TIMEOUT_S * len(cmds)):
        async with AsyncExitStack() as stack:
            answers = [await start(stack, c) for c in cmds]
    return {"runs": answers} if "servers" in cmd else answers[0]


def main() -> int:
    import os

    print(json.dumps({"pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = anyio.run(launch, json.loads(line))
        except BaseException as e:  # noqa: BLE001 - report, keep serving
            answer = {"error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}
        print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
