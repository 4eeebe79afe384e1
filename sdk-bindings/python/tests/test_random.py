"""The guest's random source is real (hostfuncs/README.md, "Loading the plugin", WASI).

The plugin names each temporary file ``.<name>.<16 lowercase hex>.tmp`` from WASI ``random_get`` and sends it
as ``temp`` in its ``mcp_resume_write`` request; a runtime with a fixed random sequence would give two servers
the same temporary names. Two stores (each a fresh plugin instance from the production runtime) on the default
conformance system store twice each, and every ``temp`` they send must be well formed and unique.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mcp_resume import ResumeTokenStore

from pinned import pinned_store


def recording_store(root: Path, writes: list[dict[str, str]]) -> type[ResumeTokenStore]:
    """The pinned store whose host functions append each ``mcp_resume_write`` request to ``writes``."""
    pinned = pinned_store(root)

    class Recording(pinned._host_functions):  # type: ignore[misc,name-defined]  # a class made at run time
        def call(self, fn: str, req: bytes) -> bytes:
            if fn == "mcp_resume_write":
                writes.append(json.loads(req))
            return super().call(fn, req)

    return type("RecordingStore", (pinned,), {"_host_functions": Recording})


def test_temp_names_come_from_a_real_random_source(tmp_path: Path) -> None:
    writes: list[dict[str, str]] = []
    Store = recording_store(tmp_path, writes)
    for app in ("rand-a", "rand-b"):
        with Store(app, state_root=tmp_path / "state") as s:
            s.store("tok-1")
            s.store("tok-2")
    assert len(writes) == 4, writes
    digits = []
    for w in writes:
        m = re.fullmatch(r"\." + re.escape(w["name"]) + r"\.([0-9a-f]{16})\.tmp", w["temp"])
        assert m, f"temp {w['temp']!r} for {w['name']!r} is not .<name>.<16 lowercase hex>.tmp"
        digits.append(m.group(1))
    assert len(set(digits)) == 4, f"random digits drawn twice, the guest's random source is not real: {digits}"
