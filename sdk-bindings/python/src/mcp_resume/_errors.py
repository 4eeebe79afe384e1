"""Exceptions of :mod:`mcp_resume`. All derive from :class:`ResumeStoreError`."""

from __future__ import annotations

__all__ = ["InvalidAppError", "InvalidTokenError", "PluginError", "ResumeStoreError"]


class ResumeStoreError(Exception):
    """Base class of every exception this package raises."""


class InvalidAppError(ResumeStoreError, ValueError):
    """The app name is not 1-64 of ``[A-Za-z0-9._-]`` starting with a letter or digit.

    Raised by :class:`mcp_resume.ResumeTokenStore`; the message starts with
    ``"invalid app name"`` (the Go host's ``ErrInvalidApp``).
    """


class InvalidTokenError(ResumeStoreError, ValueError):
    """The token passed to ``store`` is not 1-4096 bytes of visible ASCII (0x21-0x7E).

    The message starts with ``"invalid token"`` and says what is wrong without
    quoting the token. Nothing was written (hostfuncs/README.md, "Plugin exports").
    """


class PluginError(ResumeStoreError, RuntimeError):
    """The plugin cannot be loaded, compiled or instantiated, speaks another ABI
    version than this host (message names both), or failed a ``list`` call.

    The message starts with ``"mcp-resume plugin unusable"`` for load failures
    (the Go host's ``ErrPlugin``); a server should carry on without resume.
    """
