"""Exceptions of :mod:`mcp_resume`, all :class:`ResumeStoreError`; the plugin's export error codes map to them."""

from __future__ import annotations

__all__ = ["InvalidAppError", "InvalidOptionError", "InvalidTokenError", "PluginError", "ResumeStoreError", "from_code"]


class ResumeStoreError(Exception):
    """Base class of every exception this package raises."""


class InvalidAppError(ResumeStoreError, ValueError):
    """``open`` refused the app name (code ``invalid_app``): the plugin's rule is 1-64 of
    ``[A-Za-z0-9._-]`` starting with a letter or digit."""


class InvalidOptionError(ResumeStoreError, ValueError):
    """``open`` refused an option (code ``invalid_option``)."""


class InvalidTokenError(ResumeStoreError, ValueError):
    """``store`` refused the token (code ``invalid_token``): not a ``str`` of 1-4096 bytes of visible
    ASCII (0x21-0x7E). Nothing was written; the message never quotes the token."""


class PluginError(ResumeStoreError, RuntimeError):
    """The plugin cannot be loaded or instantiated (message ``"mcp-resume plugin unusable: ..."``), speaks
    another ABI version (the message names both), trapped, or failed ``list``/``prune``/``whoami``.
    A server should carry on without resume."""


def from_code(code: str, message: str) -> ResumeStoreError:
    """The exception for an export's error ``{"code", "message"}`` (hostfuncs/README.md, "Plugin exports");
    codes other than ``invalid_app``/``invalid_option``/``invalid_token`` give :class:`PluginError`."""
    return {"invalid_app": InvalidAppError, "invalid_option": InvalidOptionError,
            "invalid_token": InvalidTokenError}.get(code, PluginError)(message)
