"""A multi-user agent service for the fault suite (examples/faults, rows
30d-30f): the shape of a LangChain agent backend that serves several people
from one process and gives its model the tools of a stdio MCP server through
langchain-mcp-adapters.

Its MultiServerMCPClient has one stdio connection, the example server under
test (FAULTS_ARGV, a JSON array: program and arguments; FAULTS_SERVER_ENV, a
JSON object of the variables the server gets besides the MCP SDK's default
environment). The tools come from get_tools(), so each tool call starts a
new server process, a child of this service (the adapters' documented
behaviour without an explicit session): the service is the MCP host of
every server, whichever user the call is for.

Requests are JSON objects, one per line on stdin (the service run as a
daemon behind a pipe), or, with FAULTS_LISTEN=<address>, also the body of
an HTTP POST to that address on a port the kernel picks (the service as a
network endpoint; the first stdout line is then {"port": N}):

    {"user": "alice", "calls": [["session_info", {}], ["remember", {"note": "x"}]]}

With "tenant_key": true the server of each call gets
MCP_RESUME_INSTANCE=<user>, a per-tenant instance key the service sets for
each of its users. The answer is {"results": [<text of each call's result>]}
or {"error": "..."}; on stdin it is one stdout line per request. The service
writes nothing else to stdout; the servers' stderr is its stderr.
"""

import asyncio
import json
import os
import sys
import traceback
from typing import Any, Awaitable, Callable

import anyio

from langchain_mcp_adapters.client import MultiServerMCPClient


def _text(result: Any) -> str:
    """The text of a tool result as the adapters return it: a string, or a
    list of content blocks (strings or {"type": "text", "text": ...})."""
    if isinstance(result, str):
        return result
    parts = []
    for block in result:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(block.get("text", ""))
    return "".join(parts)


def _closed_early(e: BaseException) -> bool:
    """Whether e is (or holds only) anyio's BrokenResourceError."""
    while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
        e = e.exceptions[0]
    return isinstance(e, anyio.BrokenResourceError)


async def _retry(step: Callable[[], Awaitable[Any]]) -> Any:
    """Runs step (one MCP session: a server process) up to three times
    while it fails with BrokenResourceError. The example servers announce
    notifications/tools/list_changed once their handle store is open; when
    that lands while the adapters close the session, the MCP SDK's stdout
    reader (mcp 1.x) fails the whole session, result and all. Any other
    error is not retried."""
    for attempt in range(3):
        try:
            return await step()
        except Exception as e:
            if attempt == 2 or not _closed_early(e):
                raise
    raise AssertionError("unreachable")


class Service:
    """One process serving every user: one MultiServerMCPClient per
    configuration (shared, or one per tenant key)."""

    def __init__(self) -> None:
        self.argv = json.loads(os.environ["FAULTS_ARGV"])
        self.env = json.loads(os.environ.get("FAULTS_SERVER_ENV", "{}"))
        self.tools: dict[str, dict[str, Any]] = {}

    async def _tools(self, key: str, env: dict[str, str]) -> dict[str, Any]:
        if key not in self.tools:
            client = MultiServerMCPClient(
                {
                    "notes": {
                        "transport": "stdio",
                        "command": self.argv[0],
                        "args": self.argv[1:],
                        "env": env,
                    }
                }
            )
            tools = await _retry(client.get_tools)
            self.tools[key] = {t.name: t for t in tools}
        return self.tools[key]

    async def handle(self, req: dict[str, Any]) -> dict[str, Any]:
        try:
            env, key = dict(self.env), ""
            if req.get("tenant_key"):
                key = str(req["user"])
                env["MCP_RESUME_INSTANCE"] = key
            tools = await self._tools(key, env)
            results = []
            for name, args in req["calls"]:
                tool = tools[name]
                results.append(_text(await _retry(lambda: tool.ainvoke(args))))
            return {"results": results}
        except Exception as e:  # the test reads the error from the answer
            while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
                e = e.exceptions[0]
            traceback.print_exception(e, file=sys.stderr)
            return {"error": f"{type(e).__name__}: {e}"}


async def _serve_http(service: Service, address: str) -> None:
    """A minimal HTTP/1.1 endpoint: POST with a JSON body, JSON answer."""

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            body = await reader.readexactly(length)
            answer = json.dumps(await service.handle(json.loads(body))).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                + b"Content-Length: " + str(len(answer)).encode() + b"\r\n\r\n" + answer
            )
            await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(on_client, address, 0)
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write(json.dumps({"port": port}) + "\n")
    sys.stdout.flush()
    await server.serve_forever()


async def main() -> None:
    service = Service()
    listen = os.environ.get("FAULTS_LISTEN")
    if listen:
        asyncio.ensure_future(_serve_http(service, listen))
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        answer = await service.handle(json.loads(line))
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    asyncio.run(main())
