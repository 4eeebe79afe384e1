"""Shared fixtures of the mcp-resume Python tests."""

from __future__ import annotations

import sys
from pathlib import Path

#: The repository root (sdk-bindings/python/tests -> ../../..).
REPO_ROOT = Path(__file__).resolve().parents[3]

sys.path.insert(0, str(Path(__file__).resolve().parent))
