"""The exceptions of :mod:`mcp_resume`: one family, :class:`MCPResumeError`, for both stores.

Each class is one error code of the plugin's exports (hostfuncs/README.md, "Plugin exports"); both stores
raise the same class for the same fault (a bad app name is :class:`InvalidAppError` from
:class:`~mcp_resume.ResumeTokenStore` and :class:`~mcp_resume.HandleStore` alike). Messages are the plugin's
words and never contain a token, a handle, a value or a principal.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ConflictError", "HandleEvictedError", "HandleExpiredError", "HandleNotFoundError", "InvalidAppError",
           "InvalidHandleError", "InvalidOptionError", "InvalidPrincipalError", "InvalidTokenError", "InvalidValueError",
           "MCPResumeError", "PluginError", "StoreUnavailableError", "ValueTooLargeError", "error_from_json", "from_code"]


class MCPResumeError(Exception):
    """Base class of every exception this package raises.

    ``code`` (str) is the plugin's error code (``"handle_not_found"``, ``"invalid_app"``...; ``"plugin_error"``
    for :class:`PluginError`), ``message`` (str) its human text, also ``str(e)``. :meth:`to_json` is the
    structured form a tool answers with."""

    #: The plugin's error code of this class.
    code = "mcp_resume_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code

    def to_json(self) -> dict[str, Any]:
        """``{"error": code, "message": message}`` plus ``reason``/``generation`` where the class has them: the
        structured content of a failed tool call (:mod:`mcp_resume.mcp`)."""
        return {"error": self.code, "message": self.message}


class InvalidAppError(MCPResumeError, ValueError):
    """``invalid_app``: a store refused the app name; the plugin's rule is 1-64 of ``[A-Za-z0-9._-]`` starting
    with a letter or digit. Raised by the constructor of every store."""

    code = "invalid_app"


class InvalidOptionError(MCPResumeError, ValueError):
    """``invalid_option``: a bad option of a store (a wrong type, a value out of range, a bad
    ``MCP_RESUME_STATE_*`` variable) or of one call (a lifetime longer than the store's, a bad ``expect``),
    in the plugin's words, naming the option as Python spells it."""

    code = "invalid_option"


class PluginError(MCPResumeError, RuntimeError):
    """The plugin cannot be loaded or instantiated (message ``"mcp-resume plugin unusable: ..."``), speaks
    another ABI version (the message names both), trapped, or failed ``list``/``prune``/``whoami``.
    A server should carry on without resume."""

    code = "plugin_error"


class InvalidTokenError(MCPResumeError, ValueError):
    """``invalid_token``: ``store`` refused the token: not a ``str`` of 1-4096 bytes of visible ASCII
    (0x21-0x7E). Nothing was written; the message never quotes the token."""

    code = "invalid_token"


class InvalidHandleError(MCPResumeError, ValueError):
    """``invalid_handle``: not the handle syntax (``mrh1_`` and 32 base64url characters, 37 ASCII in all);
    checked before any I/O."""

    code = "invalid_handle"


class InvalidPrincipalError(MCPResumeError, ValueError):
    """``invalid_principal``: the principal is not a string, is over 1024 bytes of UTF-8, or is not valid
    UTF-8 (a Python ``str`` holding a lone surrogate is refused here, before the plugin)."""

    code = "invalid_principal"


class InvalidValueError(MCPResumeError, TypeError):
    """``invalid_value``: the value is not bytes-like (``bytes``, ``bytearray``, ``memoryview``), or (the JSON
    helpers of :mod:`mcp_resume.mcp`) not the JSON expected."""

    code = "invalid_value"


class ValueTooLargeError(MCPResumeError, ValueError):
    """``value_too_large``: the value is over the store's ``max_value_bytes``; nothing was written."""

    code = "value_too_large"


class HandleNotFoundError(MCPResumeError, LookupError):
    """``handle_not_found``: unknown, deleted, used with another principal (answered exactly as an unknown
    handle, so handles cannot be probed), past its tombstone period, or its record was corrupt (removed)."""

    code = "handle_not_found"


class HandleExpiredError(MCPResumeError, LookupError):
    """``handle_expired``: the idle TTL (``reason == "idle"``) or the maximum age (``reason == "max_age"``)
    passed, within the tombstone period (after it: :class:`HandleNotFoundError`)."""

    code = "handle_expired"

    def __init__(self, message: str, reason: str = "", *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.reason = reason

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "reason": self.reason}


class HandleEvictedError(MCPResumeError, LookupError):
    """``handle_evicted``: evicted, least recently used, when a create found its shard at the capacity cap;
    within the tombstone period (after it: :class:`HandleNotFoundError`)."""

    code = "handle_evicted"


class ConflictError(MCPResumeError):
    """``conflict``: the generation given as ``expect`` to ``put``/``delete`` is not the current one, which is
    ``generation`` (int); nothing changed (compare-and-set)."""

    code = "conflict"

    def __init__(self, message: str, generation: int = 0, *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.generation = generation

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "generation": self.generation}


class StoreUnavailableError(MCPResumeError, OSError):
    """``store_unavailable``: the handle store cannot be used (an I/O error, a full disk, a shard lock another
    process held for longer than ``lock_wait``, an unreachable Redis server), the plugin cannot be loaded, or
    the store is closed; the message says what and what to do. ``reason`` is ``"auth"`` when the Redis
    server refused the credentials, else ``""``."""

    code = "store_unavailable"

    def __init__(self, message: str, reason: str = "", *, code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.reason = reason

    def to_json(self) -> dict[str, Any]:
        doc = super().to_json()
        if self.reason:
            doc["reason"] = self.reason
        return doc


_CLASSES: dict[str, type[MCPResumeError]] = {
    "invalid_app": InvalidAppError, "invalid_option": InvalidOptionError, "invalid_token": InvalidTokenError,
    "invalid_handle": InvalidHandleError, "invalid_principal": InvalidPrincipalError,
    "invalid_value": InvalidValueError, "value_too_large": ValueTooLargeError,
    "handle_not_found": HandleNotFoundError, "handle_expired": HandleExpiredError,
    "handle_evicted": HandleEvictedError, "conflict": ConflictError, "store_unavailable": StoreUnavailableError}


def from_code(code: str, message: str) -> MCPResumeError:
    """The exception of the resume store's exports for an error ``{"code", "message"}``: the class of ``code``;
    a code that is not ``invalid_app``/``invalid_option``/``invalid_token`` gives :class:`PluginError`."""
    if code in ("invalid_app", "invalid_option", "invalid_token"):
        return _CLASSES[code](message)
    return PluginError(message)


def error_from_json(raw: str) -> MCPResumeError:
    """The exception for a handle export's error string: JSON ``{"code", "message", "reason"?, "generation"?}``
    gives the class of its code (an unknown code, such as ``not_open``, the base class with that code); a string
    that is not such JSON (a trap) gives :class:`StoreUnavailableError` quoting it."""
    try:
        doc = json.loads(raw)
        code, message = str(doc["code"]), str(doc["message"])
    except (ValueError, KeyError, TypeError):
        return StoreUnavailableError(f"mcp-resume plugin failed: {raw}")
    cls = _CLASSES.get(code)
    if cls is HandleExpiredError:
        return HandleExpiredError(message, str(doc.get("reason") or ""))
    if cls is StoreUnavailableError:
        return StoreUnavailableError(message, str(doc.get("reason") or ""))
    if cls is ConflictError:
        gen = doc.get("generation")
        return ConflictError(message, gen if isinstance(gen, int) and not isinstance(gen, bool) else 0)
    if cls is None:
        return MCPResumeError(message, code=code)
    return cls(message)
