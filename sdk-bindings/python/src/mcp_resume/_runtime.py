"""Loading the mcp-resume plugin in Extism's Python SDK.

* The module (``plugin.wasm``, copied from the repository's ``plugin/plugin.wasm``
  at build time) is compiled **once per process** into an
  ``extism.extism.CompiledPlugin`` kept in a module-level cache; every
  :class:`mcp_resume.ResumeTokenStore` instantiates its own ``extism.Plugin``
  from it.
* The nine host functions are registered **once** (``extism.host_fn`` keeps a
  process-global registry) and find the store they serve through Extism's
  per-call host context, so any number of stores share one compiled plugin.
* Compilation cache: the Extism runtime (extism-sys) reads the environment
  variable ``EXTISM_CACHE_CONFIG``, the path of a wasmtime cache TOML. If the
  user has not set it, this module writes ``<user cache dir>/wasmtime.toml``
  (``platformdirs.user_cache_dir("mcp-resume")``) pointing wasmtime's cache at
  ``<user cache dir>/wasmtime`` and sets the variable for the duration of the
  compile only. A relaunched server then loads the compiled code instead of
  running Cranelift over the 3 MB module again.
* ``EXTISM_ENABLE_WASI_OUTPUT`` would connect the guest's stdout to the
  process's stdout, which belongs to the MCP protocol; it is hidden from the
  runtime while a plugin instance is created (hostfuncs/README.md, "Loading
  the plugin").
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
import os
import threading
from typing import Any
from collections.abc import Iterator

import extism
from extism import ValType
from extism.extism import CompiledPlugin

from ._errors import PluginError
from ._hostfuncs import FUNCTIONS, NAMESPACE, HostFunctions

__all__ = ["CACHE_ENV", "cache_config_path", "compiled_plugin", "new_plugin", "plugin_bytes"]

#: The Extism runtime's variable naming the wasmtime cache TOML ("" disables the cache).
CACHE_ENV = "EXTISM_CACHE_CONFIG"

#: The Extism runtime's variable that sends guest stdout/stderr to the process's.
WASI_OUTPUT_ENV = "EXTISM_ENABLE_WASI_OUTPUT"

_log = logging.getLogger("mcp_resume")


def plugin_bytes() -> bytes:
    """Return the bytes of the shipped ``plugin.wasm``.

    Raises :class:`PluginError` when the package was built without it.
    """
    try:
        return importlib.resources.files("mcp_resume").joinpath("plugin.wasm").read_bytes()
    except OSError as e:
        raise PluginError(
            f"mcp-resume plugin unusable: plugin.wasm is missing from the mcp_resume package ({e}); "
            "reinstall the package (pip install ./sdk-bindings/python)"
        ) from e


def _toml_string(s: str) -> str:
    """A TOML basic string for ``s``."""
    out = []
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def cache_config_path() -> str | None:
    """Write (if needed) and return the wasmtime cache TOML of mcp-resume.

    Output: ``<user_cache_dir("mcp-resume")>/wasmtime.toml``, whose ``[cache]``
    section points ``directory`` at ``<user_cache_dir("mcp-resume")>/wasmtime``.
    The wasmtime in extism-sys >= 1.41 rejects the older ``enabled`` key, so
    the file has only ``directory``. Returns ``None`` (no cache, every start
    compiles) when the directory cannot be created or the file written; raises
    nothing.
    """
    try:
        import platformdirs

        base = platformdirs.user_cache_dir("mcp-resume")
        os.makedirs(base, 0o700, exist_ok=True)
        path = os.path.join(base, "wasmtime.toml")
        text = (
            "# Written by mcp-resume (Python): wasmtime's compilation cache for the\n"
            "# mcp-resume plugin, read by the Extism runtime through EXTISM_CACHE_CONFIG.\n"
            "[cache]\n"
            f"directory = {_toml_string(os.path.join(base, 'wasmtime'))}\n"
        )
        try:
            with open(path, encoding="utf-8") as f:
                if f.read() == text:
                    return path
        except OSError:
            pass
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        return path
    except Exception as e:  # noqa: BLE001 - a missing cache only costs time
        _log.debug("mcp-resume: no compilation cache: %s", e, extra={"event": "cache_unavailable", "detail": str(e)})
        return None


@contextlib.contextmanager
def _env(name: str, value: str | None) -> Iterator[None]:
    """Set (``value``) or unset (``None``) one environment variable for the block, then restore it."""
    old = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


# --- host functions ---------------------------------------------------------------


def _make_host_function(name: str) -> Any:
    """One Extism host function ``(i64) -> i64`` that dispatches to the store's HostFunctions.

    The store passes its :class:`HostFunctions` as the call's host context. The
    body never raises: an unreachable context or a memory failure returns
    offset 0, which the plugin reads as an ``io`` error.
    """

    def fn(current: extism.CurrentPlugin, params: list[extism.Val], results: list[extism.Val], *_: Any) -> None:
        try:
            results[0].value = 0
            funcs = current.host_context()
            if not isinstance(funcs, HostFunctions):
                resp = b'{"error":{"code":"io","message":"mcp-resume host context missing"}}'
            else:
                resp = funcs.call(name, current.input_bytes(params[0]))
            current.return_bytes(results[0], resp)
        except BaseException:  # noqa: BLE001 - never raise into Extism (the contract)
            try:
                results[0].value = 0
            except BaseException:  # noqa: BLE001
                pass

    return extism.host_fn(name=name, namespace=NAMESPACE, signature=([ValType.PTR], [ValType.PTR]))(fn)


_lock = threading.Lock()
_functions: list[Any] | None = None
_compiled: CompiledPlugin | None = None


def _host_functions() -> list[Any]:
    global _functions
    if _functions is None:
        _functions = [_make_host_function(n) for n in FUNCTIONS]
    return _functions


def _compile(wasm: bytes, functions: list[Any]) -> CompiledPlugin:
    """Compile with the compilation cache; if the cache configuration breaks the compile, retry without it."""
    user_set = CACHE_ENV in os.environ
    config = None if user_set else cache_config_path()
    try:
        if config is None:
            return CompiledPlugin(wasm, wasi=True, functions=functions)
        with _env(CACHE_ENV, config):
            return CompiledPlugin(wasm, wasi=True, functions=functions)
    except extism.Error as first:
        if not user_set and config is None:
            raise
        _log.warning(
            "mcp-resume: compiling with the wasmtime cache failed, compiling without it",
            extra={"event": "cache_unavailable", "detail": str(first)},
        )
        with _env(CACHE_ENV, ""):
            return CompiledPlugin(wasm, wasi=True, functions=functions)


def compiled_plugin(wasm: bytes | None = None) -> CompiledPlugin:
    """Return the process-wide compiled plugin, compiling it on first use.

    Input: ``wasm`` (tests pass other modules; ``None`` is the shipped
    plugin, which is the one cached). Raises :class:`PluginError` when the
    module cannot be compiled.
    """
    global _compiled
    with _lock:
        functions = _host_functions()
        if wasm is not None:
            try:
                return _compile(wasm, functions)
            except extism.Error as e:
                raise PluginError(f"mcp-resume plugin unusable: compiling: {e}") from e
        if _compiled is None:
            data = plugin_bytes()
            try:
                _compiled = _compile(data, functions)
            except extism.Error as e:
                raise PluginError(f"mcp-resume plugin unusable: compiling: {e}") from e
        return _compiled


def new_plugin(wasm: bytes | None = None) -> extism.Plugin:
    """Instantiate the plugin (one instance per store) from the compiled module.

    The guest's stdout is never connected to the process's stdout:
    ``EXTISM_ENABLE_WASI_OUTPUT`` is hidden while the instance (and its WASI
    context) is created. Raises :class:`PluginError`.
    """
    compiled = compiled_plugin(wasm)
    with _lock:
        if os.environ.get(WASI_OUTPUT_ENV) is not None:
            _log.warning(
                "mcp-resume: ignoring %s for the plugin: its output would corrupt the MCP stream on stdout",
                WASI_OUTPUT_ENV,
                extra={"event": "wasi_output_ignored", "detail": ""},
            )
        try:
            with _env(WASI_OUTPUT_ENV, None):
                return extism.Plugin(compiled)
        except extism.Error as e:
            raise PluginError(f"mcp-resume plugin unusable: instantiating: {e}") from e
