"""Hatchling build hook: copy the one committed plugin into the package.

The repository keeps a single ``plugin/plugin.wasm`` (built by ``make wasm``
and embedded by the Go host). Building this package (wheel, sdist or editable
install) copies it to ``src/mcp_resume/plugin.wasm``, which is gitignored, so
there is never a second committed copy. An sdist carries the copied file, so a
wheel built from the sdist (outside the repository) finds it in place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CopyPluginHook(BuildHookInterface):
    """Copies ``../../plugin/plugin.wasm`` into the package before each build."""

    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        """Copy the plugin; fail the build if neither copy exists.

        Inputs: ``version`` (hatchling's build version), ``build_data`` (unused).
        Raises ``FileNotFoundError`` when the repository plugin is missing and
        no copy is already in the package (an sdist always has one).
        """
        root = Path(self.root)
        source = (root / ".." / ".." / "plugin" / "plugin.wasm").resolve()
        target = root / "src" / "mcp_resume" / "plugin.wasm"
        if source.is_file():
            data = source.read_bytes()
            if not target.is_file() or target.read_bytes() != data:
                tmp = target.with_suffix(".wasm.tmp")
                tmp.write_bytes(data)
                tmp.replace(target)
            return
        if target.is_file():
            return
        raise FileNotFoundError(
            f"mcp-resume: {source} not found and no {target} in the package; "
            "build from the repository checkout (run `make wasm` first) or from an sdist"
        )
