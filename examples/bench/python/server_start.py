"""The startup benchmark's stand-in for the Python example server (examples/python-server/server.py): the
same startup, stopped at the point bench_startup.py measures, so the server itself carries no benchmark mode.

    .venv/bin/python examples/bench/python/server_start.py load|baseline

``baseline``: the server's logging setup and its ``MCPServer`` construction (which imports the MCP SDK), then
exit 0. ``load``: the same, then ``mcp_resume`` imported, the synchronous ``ResumeTokenStore`` opened with the
server's app name and its first ``load`` answered, then exit 0 (before any broker call: no broker is needed).
A store that cannot open is logged and the load skipped, as the server serves without resume. Exit status 2
for an unknown mode. Nothing is written to stdout.

The server module is imported from examples/python-server (its top level imports only the standard library;
the SDK is imported by ``new_server``), so the work measured is the server's own code.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python-server"))

import server  # type: ignore[import-not-found]  # noqa: E402 - examples/python-server/server.py, via the path above


def main(argv: list[str]) -> int:
    """Run the startup in mode ``argv[0]`` (``load`` or ``baseline``); return the exit status."""
    mode = argv[0] if len(argv) == 1 else ""
    if mode not in ("load", "baseline"):
        print("usage: server_start.py load|baseline", file=sys.stderr)
        return 2
    server.setup_logging()
    server.new_server()
    if mode == "baseline":
        return 0
    # Imported here, so that the baseline start pays nothing of mcp_resume and the difference is everything
    # resume costs, its import included.
    from mcp_resume import ResumeTokenStore

    try:
        with ResumeTokenStore(server.APP) as store:
            store.load()
    except Exception as e:  # noqa: BLE001 - as the server's open_store: carry on without resume
        server.log.warning("session resume unavailable: %s", e)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
