"""Loading the mcp-resume plugin in Extism's Python SDK (hostfuncs/README.md, "Loading the plugin").

``plugin.wasm`` (copied from ``plugin/plugin.wasm`` at build time) is compiled
once per process; every store instantiates its own plugin from it. The nine
host functions are registered once and find the store's :class:`HostFunctions`
through Extism's per-call host context. Unless ``EXTISM_CACHE_CONFIG`` is set,
the compile uses a wasmtime cache under ``platformdirs.user_cache_dir("mcp-resume")``.
``EXTISM_ENABLE_WASI_OUTPUT`` (guest stdout on the MCP stream) is hidden from
the runtime while an instance is created.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import json
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

__all__ = ["CACHE_ENV", "cache_config_path", "compiled_plugin", "new_plugin", "plugin_bytes", "precompile"]

#: The Extism runtime's variable naming the wasmtime cache TOML ("" disables the cache).
CACHE_ENV = "EXTISM_CACHE_CONFIG"
#: The Extism runtime's variable that sends guest stdout/stderr to the process's.
WASI_OUTPUT_ENV = "EXTISM_ENABLE_WASI_OUTPUT"

_log = logging.getLogger("mcp_resume")
_lock = threading.Lock()
_functions: list[Any] | None = None
_compiled: CompiledPlugin | None = None
_started = False


def plugin_bytes() -> bytes:
    """The bytes of the shipped ``plugin.wasm``. Raises :class:`PluginError` when the package lacks it."""
    try:
        return importlib.resources.files("mcp_resume").joinpath("plugin.wasm").read_bytes()
    except OSError as e:
        raise PluginError(f"mcp-resume plugin unusable: plugin.wasm is missing from the mcp_resume package ({e}); "
                          "reinstall the package (pip install ./sdk-bindings/python)") from e


def cache_config_path() -> str | None:
    """Write (if needed) and return ``<user_cache_dir("mcp-resume")>/wasmtime.toml``, whose ``[cache]`` has only
    ``directory`` (extism-sys >= 1.41 rejects ``enabled``); ``None`` (no cache) when it cannot. Never raises."""
    try:
        import platformdirs

        base = platformdirs.user_cache_dir("mcp-resume")
        os.makedirs(base, 0o700, exist_ok=True)
        path = os.path.join(base, "wasmtime.toml")
        # A JSON string without ASCII escaping is a valid TOML basic string.
        text = ("# Written by mcp-resume (Python): wasmtime's compilation cache for the\n"
                "# mcp-resume plugin, read by the Extism runtime through EXTISM_CACHE_CONFIG.\n"
                f"[cache]\ndirectory = {json.dumps(os.path.join(base, 'wasmtime'), ensure_ascii=False)}\n")
        with contextlib.suppress(OSError), open(path, encoding="utf-8") as f:
            if f.read() == text:
                return path
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
    os.environ.pop(name, None) if value is None else os.environ.update({name: value})
    try:
        yield
    finally:
        os.environ.pop(name, None) if old is None else os.environ.update({name: old})


def _host_function(name: str) -> Any:
    """The Extism host function ``(i64) -> i64`` serving ``name`` through the call's HostFunctions. Never raises:
    no host context answers ``io``; an SDK failure leaves offset 0, which the plugin reads as "cannot tell"."""

    def fn(current: extism.CurrentPlugin, params: list[extism.Val], results: list[extism.Val], *_: Any) -> None:
        try:
            results[0].value = 0
            funcs = current.host_context()
            if isinstance(funcs, HostFunctions):
                resp = funcs.call(name, current.input_bytes(params[0]))
            else:
                resp = b'{"error":{"code":"io","message":"mcp-resume host context missing"}}'
            current.return_bytes(results[0], resp)
        except BaseException:  # noqa: BLE001 - never raise into Extism (the contract)
            with contextlib.suppress(BaseException):
                results[0].value = 0

    return extism.host_fn(name=name, namespace=NAMESPACE, signature=([ValType.PTR], [ValType.PTR]))(fn)


def _compile(wasm: bytes) -> CompiledPlugin:
    """Compile with the cache; if the cache configuration breaks the compile, once more without it.
    Raises :class:`PluginError`."""
    global _functions
    if _functions is None:
        _functions = [_host_function(n) for n in FUNCTIONS]
    user_set = CACHE_ENV in os.environ
    config = None if user_set else cache_config_path()
    try:
        try:
            with _env(CACHE_ENV, os.environ.get(CACHE_ENV) if config is None else config):
                return CompiledPlugin(wasm, wasi=True, functions=_functions)
        except extism.Error as first:
            if not user_set and config is None:
                raise
            _log.warning("mcp-resume: compiling with the wasmtime cache failed, compiling without it",
                         extra={"event": "cache_unavailable", "detail": str(first)})
            with _env(CACHE_ENV, ""):
                return CompiledPlugin(wasm, wasi=True, functions=_functions)
    except extism.Error as e:
        raise PluginError(f"mcp-resume plugin unusable: compiling: {e}") from e


def compiled_plugin(wasm: bytes | None = None) -> CompiledPlugin:
    """The process-wide compiled plugin, compiled on first use (``wasm``: another module, tests only,
    not cached). Raises :class:`PluginError` when the module cannot be compiled."""
    global _compiled
    with _lock:
        if wasm is not None:
            return _compile(wasm)
        if _compiled is None:
            _compiled = _compile(plugin_bytes())
        return _compiled


def precompile() -> None:
    """Start compiling the shipped plugin (:func:`compiled_plugin`) in a daemon thread, once per process and not
    with ``MCP_RESUME=off``, so the compile (wasmtime, GIL released) overlaps the importer's startup; importing
    ``mcp_resume`` calls it. Never raises (a failure is raised again when a store opens); never delays exit."""
    global _started
    if not _started and os.environ.get("MCP_RESUME") != "off":
        _started = True
        threading.Thread(target=_compile_quietly, name="mcp-resume-compile", daemon=True).start()


def _compile_quietly() -> None:
    with contextlib.suppress(Exception):
        compiled_plugin()


def new_plugin(wasm: bytes | None = None) -> extism.Plugin:
    """A new plugin instance (one per store) of the compiled module, its stdout never the process's.
    Raises :class:`PluginError`."""
    compiled = compiled_plugin(wasm)
    with _lock:
        if os.environ.get(WASI_OUTPUT_ENV) is not None:
            _log.warning("mcp-resume: ignoring %s for the plugin: its output would corrupt the MCP stream on stdout",
                         WASI_OUTPUT_ENV, extra={"event": "wasi_output_ignored", "detail": ""})
        try:
            with _env(WASI_OUTPUT_ENV, None):
                return extism.Plugin(compiled)
        except extism.Error as e:
            raise PluginError(f"mcp-resume plugin unusable: instantiating: {e}") from e
