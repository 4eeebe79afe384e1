"""Exceptions of the handle store (:class:`mcp_resume.HandleStore`), all :class:`HandleStoreError`.

Each is one error code of the plugin's ``handle_*`` exports (hostfuncs/README.md, "Plugin exports", the
handle store's error table): the export's error JSON ``{"code", "message", "reason"?, "generation"?}``
becomes the exception of its code (:func:`handle_error`). Messages never contain a handle, a value or a
principal (the plugin words them).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["Conflict", "HandleEvicted", "HandleExpired", "HandleNotFound", "HandleStoreError", "InvalidHandle",
           "InvalidHandleOption", "InvalidPrincipal", "InvalidValue", "StoreUnavailable", "ValueTooLarge",
           "handle_error"]


class HandleStoreError(Exception):
    """Base class of every exception the handle store raises. ``code`` is the plugin's error code (for
    example ``"handle_not_found"``), ``message`` its human text; ``str(e)`` is the message."""

    code = "handle_store_error"

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def to_json(self) -> dict[str, Any]:
        """``{"error": code, "message": message}`` plus ``reason``/``generation`` where the class has them: the
        structured content the example servers answer a failed tool call with."""
        return {"error": self.code, "message": self.message}


class InvalidHandle(HandleStoreError, ValueError):
    """``invalid_handle``: not the handle syntax (``mrh1_`` and 32 base64url characters, 37 ASCII in all);
    checked before any I/O."""


class InvalidPrincipal(HandleStoreError, ValueError):
    """``invalid_principal``: the principal is not a string, is over 1024 bytes of UTF-8, or is not valid
    UTF-8 (a Python ``str`` holding a lone surrogate is refused here, before the plugin)."""


class InvalidValue(HandleStoreError, TypeError):
    """``invalid_value``: the value is not bytes-like (``bytes``, ``bytearray``, ``memoryview``)."""


class ValueTooLarge(HandleStoreError, ValueError):
    """``value_too_large``: the value is over the store's ``max_value_bytes``; nothing was written."""


class InvalidHandleOption(HandleStoreError, ValueError):
    """``invalid_option``: a bad option of the store or of one call (a wrong type, a TTL longer than the
    store's, a bad generation, a bad ``MCP_RESUME_STATE_IDLE_TTL``/``MCP_RESUME_STATE_MAX_AGE``); also
    ``invalid_app``, an app name outside the plugin's rule (1-64 of ``[A-Za-z0-9._-]``, starting with a letter
    or digit), with that code."""


class HandleNotFound(HandleStoreError, LookupError):
    """``handle_not_found``: unknown, deleted, used with another principal (answered exactly as an unknown
    handle, so handles cannot be probed), past its tombstone period, or its record was corrupt (removed)."""


class HandleExpired(HandleStoreError, LookupError):
    """``handle_expired``: the idle TTL (``reason == "idle"``) or the maximum age (``reason == "max_age"``)
    passed, within the tombstone period (after it: :class:`HandleNotFound`)."""

    def __init__(self, code: str, message: str, reason: str = "") -> None:
        super().__init__(code, message)
        self.reason = reason

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "reason": self.reason}


class HandleEvicted(HandleStoreError, LookupError):
    """``handle_evicted``: evicted, least recently used, when a create found its shard at the capacity cap;
    within the tombstone period (after it: :class:`HandleNotFound`)."""


class Conflict(HandleStoreError):
    """``conflict``: the expected generation given to ``put``/``delete`` is not the current one, which is
    ``generation``; nothing changed (compare-and-set)."""

    def __init__(self, code: str, message: str, generation: int = 0) -> None:
        super().__init__(code, message)
        self.generation = generation

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "generation": self.generation}


class StoreUnavailable(HandleStoreError, OSError):
    """``store_unavailable``: the directory cannot be used (an I/O error, a full disk, a shard lock another
    process held for longer than ``lock_wait``), the plugin cannot be loaded, or the store is closed; the
    message says what and what to do."""


_CLASSES: dict[str, type[HandleStoreError]] = {
    "invalid_handle": InvalidHandle, "invalid_principal": InvalidPrincipal, "invalid_value": InvalidValue,
    "value_too_large": ValueTooLarge, "invalid_option": InvalidHandleOption, "invalid_app": InvalidHandleOption,
    "handle_not_found": HandleNotFound,
    "handle_expired": HandleExpired, "handle_evicted": HandleEvicted, "conflict": Conflict,
    "store_unavailable": StoreUnavailable}


def handle_error(raw: str) -> HandleStoreError:
    """The exception for an export's error string: JSON ``{"code", "message", "reason"?, "generation"?}`` of
    the handle store's table; an unknown code (``not_open``) gives the base class with that code; a string
    that is not such JSON (a trap) gives :class:`StoreUnavailable` quoting it."""
    try:
        doc = json.loads(raw)
        code, message = str(doc["code"]), str(doc["message"])
    except (ValueError, KeyError, TypeError):
        return StoreUnavailable("store_unavailable", f"mcp-resume plugin failed: {raw}")
    cls = _CLASSES.get(code)
    if cls is HandleExpired:
        return HandleExpired(code, message, str(doc.get("reason") or ""))
    if cls is Conflict:
        gen = doc.get("generation")
        return Conflict(code, message, gen if isinstance(gen, int) else 0)
    return (cls or HandleStoreError)(code, message)
