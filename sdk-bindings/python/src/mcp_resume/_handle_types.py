"""The values the handle store returns (:class:`mcp_resume.HandleStore`): plain frozen dataclasses built from the
plugin's ``handle_*`` outputs (hostfuncs/README.md, "Plugin exports"). Durations are ``datetime.timedelta``,
instants aware UTC ``datetime``, both to the millisecond the plugin counts in."""

from __future__ import annotations

import builtins
import datetime as dt
from dataclasses import dataclass
from typing import Any

__all__ = ["Created", "GCResult", "HandleInfo", "HandleList", "Touched", "Value", "td", "when"]


def td(ms: Any) -> dt.timedelta:
    """A plugin's milliseconds as a ``timedelta``."""
    return dt.timedelta(milliseconds=int(ms))


def when(ms: Any) -> dt.datetime:
    """A plugin's Unix milliseconds as an aware UTC ``datetime``."""
    return dt.datetime.fromtimestamp(int(ms) / 1000, tz=dt.timezone.utc)


@dataclass(frozen=True)
class Created:
    """What :meth:`HandleStore.create` returns: the new ``handle`` (a bearer secret: ``mrh1_`` and 32 base64url
    characters; never log it), its ``generation`` (1), its ``idle_ttl`` and ``max_age`` and when it was
    ``created`` (UTC, millisecond resolution)."""

    handle: str
    generation: int
    idle_ttl: dt.timedelta
    max_age: dt.timedelta
    created: dt.datetime

    def __repr__(self) -> str:  # the handle is a secret: keep it out of logs and tracebacks
        return f"Created(handle='mrh1_…', generation={self.generation}, idle_ttl={self.idle_ttl!r}, max_age={self.max_age!r})"


@dataclass(frozen=True)
class Value:
    """What :meth:`HandleStore.get` returns: the stored bytes ``data``, their ``generation`` (1 at create, +1
    per put), when the handle was ``created`` (UTC) and its lifetimes ``idle_ttl`` and ``max_age``."""

    data: bytes
    generation: int
    created: dt.datetime
    idle_ttl: dt.timedelta
    max_age: dt.timedelta


@dataclass(frozen=True)
class Touched:
    """What :meth:`HandleStore.touch` returns: the current ``generation`` (unchanged) and the lifetimes."""

    generation: int
    idle_ttl: dt.timedelta
    max_age: dt.timedelta


@dataclass(frozen=True)
class HandleInfo:
    """One entry of :meth:`HandleStore.list`, never its handle, value or principal: ``key`` (12 hex digits of
    the key hash, the name log lines use), ``state`` (``"live"``, ``"expired_idle"``, ``"expired_max_age"``,
    ``"evicted"``; the others are tombstones), ``generation`` and ``size`` (value bytes; ``None`` for a
    tombstone), ``age`` (since creation) and ``idle`` (since last use; for a tombstone, since it died)."""

    key: str
    state: str
    generation: int | None
    size: int | None
    age: dt.timedelta
    idle: dt.timedelta


@dataclass(frozen=True)
class HandleList:
    """What :meth:`HandleStore.list` returns: ``handles`` (live entries and tombstones), the counts ``live`` and
    ``tombstones``, the store's ``shards`` and ``bytes`` (the size of the live records on disk)."""

    handles: builtins.list[HandleInfo]
    live: int
    tombstones: int
    shards: int
    bytes: int


@dataclass(frozen=True)
class GCResult:
    """What :meth:`HandleStore.gc` did, in numbers: handles that ``expired_idle`` or ``expired_max_age`` now,
    ``tombstones_dropped`` (past the tombstone period), ``orphans_removed`` (records without an index
    entry), ``temps_removed`` (temporary files of killed writers), and the ``live`` handles left."""

    expired_idle: int
    expired_max_age: int
    tombstones_dropped: int
    orphans_removed: int
    temps_removed: int
    live: int
