"""Keeping this package's files off fds 0-2 (stdin, stdout, stderr).

A process started with one of its standard descriptors closed (a host that runs ``server 2>&-``) hands
the lowest free number to the next file anyone opens. Had that been a file of ours (the wasmtime memory
image, a sealed memfd, takes it at the first store), the MCP SDK would later point fd 1 at a copy of
"stderr", our memfd, and every write to stdout would fail with ``EPERM``. Go's runtime (``checkfds``) and
Node (``PlatformInit``) open ``/dev/null`` onto a closed fd 0-2 before ``main`` runs; CPython does not,
so this module does the same, first thing at import (``mcp_resume/__init__.py``), and again before each
native step that opens long-lived files (:mod:`mcp_resume._runtime`).

The background compile started at import runs with a private copy of the descriptor table on Linux
(:func:`private_fd_table`), so nothing it opens (wasmtime's cache files, its cache worker's) can take a
number the program frees meanwhile, for example a test that closes fd 0 after importing the package.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import threading

try:
    import fcntl
except ImportError:  # pragma: no cover - not a Unix: nothing to fill
    fcntl = None  # type: ignore[assignment]

__all__ = ["fill_std_fds", "keep_stdio_at_import", "private_fd_table", "release_stdio_at_import", "stdio_at_import"]

#: ``CLONE_FILES`` of ``<linux/sched.h>``: unshare(2) gives the calling thread its own descriptor table.
_CLONE_FILES = 0x00000400


def fill_std_fds() -> list[int]:
    """Open ``/dev/null`` (read-write) onto each of fds 0, 1 and 2 that is closed, lowest first, as Go's
    runtime does at start. Returns the descriptors it opened (``[]`` when all three were open). Never
    raises: without ``/dev/null`` it leaves them closed. Cost: three ``fcntl`` calls when nothing is closed."""
    opened: list[int] = []
    if fcntl is None:  # pragma: no cover
        return opened
    for fd in (0, 1, 2):
        try:
            fcntl.fcntl(fd, fcntl.F_GETFD)
            continue
        except OSError as e:
            if e.errno != errno.EBADF:
                continue
        try:
            got = os.open(os.devnull, os.O_RDWR)
        except OSError:
            return opened
        if got != fd:  # another thread took the number first: that one is not ours to fill
            os.close(got)
            continue
        with contextlib.suppress(OSError):
            os.set_inheritable(got, True)  # a standard descriptor, as a child process expects it
        opened.append(got)
    return opened


#: Close-on-exec copies (fd 3 or above) of fds 0 and 1 as they were when the package was imported, or ``None``
#: (not taken, or released): see :func:`keep_stdio_at_import`.
_stdio_at_import: list[int] | None = None
_stdio_mu = threading.Lock()


def keep_stdio_at_import() -> None:
    """Copy fds 0 and 1 as they are now, at import of the package, before an MCP SDK serves stdio.

    The Python MCP SDK's stdio transport points fds 0 and 1 at ``/dev/null`` and a copy of stderr while it
    serves; a resume store opened after that (in a FastMCP/MCPServer ``lifespan``, in a tool handler) would
    show the plugin's stdio check those instead of the MCP host's pipes, and resume would be off. The copies
    taken here are what such a store reports as ``facts.stdio_fds`` (:func:`stdio_at_import`), so opening
    later answers the same facts as opening at startup. They are held until the first resume store has
    resolved its MCP host (:func:`release_stdio_at_import`). Linux only (the only system whose stdio check
    reads them); a closed or uncopyable fd is left out (no copies at all). Never raises."""
    global _stdio_at_import
    if not sys.platform.startswith("linux") or fcntl is None:
        return
    copies: list[int] = []
    for fd in (0, 1):
        try:
            copies.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3))
        except OSError:
            for c in copies:
                with contextlib.suppress(OSError):
                    os.close(c)
            return
    with _stdio_mu:
        _stdio_at_import = copies


def stdio_at_import() -> list[int] | None:
    """The fds holding the server's stdin and stdout as they were at import (:func:`keep_stdio_at_import`),
    ``None`` once released or when none were taken. The caller copies them (they may be closed later)."""
    with _stdio_mu:
        return None if _stdio_at_import is None else list(_stdio_at_import)


def release_stdio_at_import() -> None:
    """Close the import-time copies: a resume store has resolved its MCP host, and the host should see
    end-of-file on the server's stdout as soon as the server closes fd 1. Idempotent; never raises."""
    global _stdio_at_import
    with _stdio_mu:
        copies, _stdio_at_import = _stdio_at_import, None
    for fd in copies or ():
        with contextlib.suppress(OSError):
            os.close(fd)


def private_fd_table() -> bool:
    """Give the calling thread its own copy of the process's descriptor table (Linux ``unshare(CLONE_FILES)``),
    so that nothing it or the threads it starts open from now on lands in the table the rest of the
    program uses. Returns False where that is not possible (another OS, a seccomp filter that refuses
    ``unshare``): the caller then shares the table as before. Never raises.

    For a thread that opens only short-lived files of its own and hands no descriptor to another thread;
    it must not log (a log handler opening its file lazily there would keep a descriptor the other threads
    cannot see)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        if hasattr(os, "unshare"):  # Python >= 3.12
            os.unshare(_CLONE_FILES)
            return True
        import ctypes  # only here: importing it costs the other platforms and Python >= 3.12 nothing

        # The running program's symbols include libc's; no find_library (it runs ldconfig).
        return bool(ctypes.CDLL(None, use_errno=True).unshare(ctypes.c_int(_CLONE_FILES)) == 0)
    except Exception:  # noqa: BLE001 - no private table only costs the guarantee, never the compile
        return False
