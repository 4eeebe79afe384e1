"""The shared conformance cases of hostfuncs/conformance, run against the real plugin.

Each ``cases/*.json`` runs exactly as ``hostfuncs/conformance/README.md``
says: a fresh root, the case's system (facts, a fixture ``/proc`` tree under
``root/proc`` read by the real ``mcp_resume_inspect``, pinned answers for the
other operations), the state directory and files before, ``open`` with the
case's object, the calls straight into the plugin exports (bytes and error
codes, not the API's translation of them), then the files, the state
directory and every log line above debug, captured from before ``open`` (which
logs ``resume_off``). A ``host_call`` calls the store's own host function
directly (the instance the plugin uses) and checks its JSON answer; a
``host_call`` want's ``min_ms``/``max_ms`` bound how long the call took (wall clock); a
``hold_socket`` binds an abstract Unix socket in Node's padded form with a
plain socket of the runner's (Linux only: elsewhere the case is skipped). The
binary ``mcp_resume_crypto`` and the binary form of ``mcp_resume_eval`` take
``request_hex`` instead of ``request`` (``$REDIS_URL`` there is the hex of the
URL) and their wants add ``response_hex`` and ``response_prefix_hex``; an export call may
give ``input_hex`` (the input's bytes; a ``$<var>`` in it is the hex of a saved
value's text), its wants adding ``output_hex`` and ``output_prefix_hex``. A
call of any other form fails the case. A host function the case lists in
``no_answer`` is not run at all (``pinned.py``). Real ``plugin.wasm``, real Extism
runtime, real host functions on real files; the same cases the Go and
TypeScript hosts run.

A case with ``"store": "handles"`` runs on a handle store instead (the
README's handle-store additions): one plugin instance opened with
``handles_open`` (the case's ``open`` object), its state directory
``root/state/conformance/handles``; export inputs are JSON objects, a call's
``save`` keeps members of its output for later ``$<var>`` inputs, and the
wants add ``error_json_subset``, ``files_after_count``, ``files_exclude`` and
the ``corrupt_files`` action.

Redis (the README's "Redis: the same cases on the second backend"): one
``redis-server`` for the session (``conftest.redis_server``), ``$REDIS_URL``
substituted, ``FLUSHALL`` and ``SCRIPT FLUSH`` before each case run on it. A
handle case without ``backends`` runs twice, ``[file]`` as written and
``[redis]`` with ``"state_url": "$REDIS_URL"`` added to its ``open`` and its
file checks skipped; ``backends`` restricts (the ``host_eval_*`` resume-store
cases are ``["redis"]``). The ``redis`` action sends a command with
redis-py (``each_key``: once per key matching the glob, ``$KEY`` replaced),
never through the host function; ``message_excludes`` (a want) and
``logs_exclude`` (a case: every captured line, debug included) pin that a
URL's password reaches no message and no log line.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import stat
import sys
import time
from pathlib import Path
from typing import Any

import extism
import pytest

from mcp_resume import MCPResumeError, MCPResumeError, ResumeTokenStore
from mcp_resume._handles import _Instance
from mcp_resume._hostfuncs import HostFunctions

from pinned import hold_abstract_socket, load_system, pinned_functions
from system import CONFORMANCE, check_files, content_bytes, make_files, substitute

CASES = sorted((CONFORMANCE / "cases").glob("*.json"))


def _runs(path: Path) -> list[str]:
    """The backends a case runs on: ``backends`` as given, else both for a handle case, else the files only."""
    case = json.loads(path.read_text())
    if "backends" in case:
        return list(case["backends"])
    return ["file", "redis"] if case.get("store") == "handles" else ["file"]


RUNS = [(p, b) for p in CASES for b in _runs(p)]
#: The checks of files a Redis run skips (the README: the calls, wants and logs must come out the same).
FILE_CHECKS = ("files_before", "files_after", "files_after_count", "files_exclude", "state_dir_after")
_LEVELS = {logging.INFO: "info", logging.WARNING: "warn", logging.ERROR: "error"}


def test_cases_present() -> None:
    """The suite must not pass vacuously: the shared cases are there."""
    assert len(CASES) >= 33, f"expected the shared conformance cases in {CONFORMANCE / 'cases'}, found {len(CASES)}"
    handles = [p for p in CASES if json.loads(p.read_text()).get("store") == "handles"]
    assert len(handles) >= 20, f"expected the handle store's cases (handles_*.json), found {len(handles)}"


class Capture(logging.Handler):
    """Records every log line above debug as a conformance log entry."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[dict[str, str]] = []
        self.every: list[str] = []  # every line's text, debug included (logs_exclude)

    def emit(self, record: logging.LogRecord) -> None:
        # The printed text is the message, then ": <detail>" when there is one; cases compare the message only.
        detail = str(getattr(record, "detail", "") or "")
        message = record.getMessage()
        self.every.append(f"{message} {detail}")
        if record.levelno < logging.INFO:
            return
        if detail:
            assert message.endswith(": " + detail), f"the detail is not printed: {message!r}"
            message = message[: -len(detail) - 2]
        self.lines.append({"level": _LEVELS.get(record.levelno, record.levelname.lower()),
                           "event": getattr(record, "event", ""), "message": message, "detail": detail})


def subset(got: Any, want: Any) -> bool:
    """``output_json_subset``: every key of ``want`` in ``got`` with an equal value (recursively for objects)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and subset(got[k], v) for k, v in want.items())
    return bool(got == want)


def excludes(where: str, want: dict[str, Any], text: str | None) -> list[str]:
    """``message_excludes``: the error (its message, or the whole error string) does not hold this text."""
    bad = want.get("message_excludes")
    return [f"{where}: the error {text!r} holds {bad!r}"] if bad and text and bad in text else []


def check(where: str, want: dict[str, Any], out: bytes, err: str | None) -> list[str]:
    """Compare one export's result (output bytes, error string or ``None``) with a ``want``."""
    if "message_excludes" in want:
        return excludes(where, want, err) + check(where, {k: v for k, v in want.items() if k != "message_excludes"},
                                                 out, err)
    if "error_json_subset" in want:
        try:
            doc = json.loads(err or "")
        except ValueError:
            doc = None
        ok = err is not None and subset(doc, want["error_json_subset"])
        return [] if ok else [f"{where}: error {err!r} (output {out[:80]!r}), want {json.dumps(want)}"]
    if "error_code" in want:
        try:
            code = json.loads(err or "")["code"]
        except (ValueError, KeyError, TypeError):
            code = None
        return [] if code == want["error_code"] else [f"{where}: error {err!r}, want code {want['error_code']!r}"]
    if err is not None:
        return [f"{where}: unexpected error {err!r}"]
    if "output_json" in want or "output_json_subset" in want:
        try:
            doc = json.loads(out)
        except ValueError:
            return [f"{where}: output {out[:80]!r} is not JSON"]
        if "output_json" in want:
            if isinstance(doc, dict) and isinstance(doc.get("files"), list):
                for f in doc["files"]:
                    if isinstance(f, dict):
                        f.pop("age_seconds", None)
            ok = doc == want["output_json"]
        else:
            ok = subset(doc, want["output_json_subset"])
        return [] if ok else [f"{where}: output {out.decode(errors='replace')}, want {json.dumps(want)}"]
    if "output_hex" in want:
        return [] if out.hex() == want["output_hex"].lower() else [f"{where}: output {out.hex()}, want {want['output_hex']}"]
    if "output_prefix_hex" in want:
        ok = out.hex().startswith(want["output_prefix_hex"].lower())
        return [] if ok else [f"{where}: output {out.hex()}, want it to start with {want['output_prefix_hex']}"]
    expect = b"" if want.get("output") is None else content_bytes(want["output"])
    return [] if out == expect else [f"{where}: output {out[:60]!r}, want {expect[:60]!r}"]


def check_host(where: str, want: dict[str, Any], raw: bytes) -> list[str]:
    """Compare a host function's own answer (JSON, space padding allowed) with a host ``want``
    (the conformance README, "host_call"); a binary answer (``mcp_resume_crypto``, ``mcp_resume_eval``'s binary
    form) is compared as bytes with
    ``response_hex`` or ``response_prefix_hex``. An unknown ``want`` form fails the case loudly."""
    if "response_hex" in want:
        ok = raw.hex() == want["response_hex"].lower()
        return [] if ok else [f"{where}: answer {raw.hex()}, want {want['response_hex']}"]
    if "response_prefix_hex" in want:
        ok = raw.hex().startswith(want["response_prefix_hex"].lower())
        return [] if ok else [f"{where}: answer {raw.hex()}, want it to start with {want['response_prefix_hex']}"]
    try:
        doc = json.loads(raw)
    except ValueError:
        return [f"{where}: answer {raw[:80]!r} is not JSON"]
    if not isinstance(doc, dict):
        return [f"{where}: answer {doc!r} is not a JSON object"]
    err = doc.get("error")
    if "message_excludes" in want:
        errors = excludes(where, want, json.dumps(err) if err is not None else None)
        return errors + check_host(where, {k: v for k, v in want.items() if k != "message_excludes"}, raw)
    if "error_code" in want:
        code = err.get("code") if isinstance(err, dict) else None
        return [] if code == want["error_code"] else [f"{where}: answer {doc}, want error code {want['error_code']!r}"]
    if err is not None:
        return [f"{where}: unexpected error {err}"]
    if want == {"ok": True}:
        return []
    if "response_subset" in want:
        return [] if subset(doc, want["response_subset"]) else [f"{where}: answer {doc}, want {json.dumps(want)}"]
    if "result_codes" in want:
        results = doc.get("results")
        if not isinstance(results, list) or len(results) != len(want["result_codes"]):
            return [f"{where}: results {results}, want codes {want['result_codes']}"]
        got = [r["error"].get("code") if isinstance(r, dict) and isinstance(r.get("error"), dict) else None
               for r in results]
        return [] if got == want["result_codes"] else [f"{where}: result codes {got} ({results}), want {want['result_codes']}"]
    pytest.fail(f"{where}: unknown host want {want!r}")


def call_export(store: ResumeTokenStore | _Instance, export: str, data: bytes) -> tuple[bytes, str | None]:
    """Call a plugin export directly: (output bytes, error string or None)."""
    try:
        if isinstance(store, _Instance):
            return store.call(export, data), None
        return store._call(export, data), None
    except extism.Error as e:
        return b"", str(e)


def is_handle_export(export: str) -> bool:
    """A handle store's export (``handles_open``, ``handle_*``), whose input is a JSON value."""
    return export == "handles_open" or export.startswith("handle_")


def fill_vars(doc: Any, saved: dict[str, Any]) -> Any:
    """``doc`` with each string exactly ``"$<var>"`` of a saved var replaced by its value (its JSON type) and
    each ``$<var>`` inside a longer string by its text (longest names first, so ``$h`` never eats ``$h2``)."""
    if isinstance(doc, dict):
        return {k: fill_vars(v, saved) for k, v in doc.items()}
    if isinstance(doc, list):
        return [fill_vars(v, saved) for v in doc]
    if isinstance(doc, str):
        if doc.startswith("$") and doc[1:] in saved:
            return saved[doc[1:]]
        for name in sorted(saved, key=len, reverse=True):
            doc = doc.replace("$" + name, str(saved[name]))
    return doc


def fill_hex(text: str, saved: dict[str, Any]) -> bytes:
    """An ``input_hex``'s bytes: ``text`` with each ``$<var>`` of a saved var replaced by the hex of its text
    (UTF-8; longest names first), spaces ignored."""
    for name in sorted(saved, key=len, reverse=True):
        text = text.replace("$" + name, str(saved[name]).encode().hex())
    return bytes.fromhex(text.replace(" ", ""))


def corrupt_files(state: Path, root: Path, prefix: str, mode: str) -> int:
    """The ``corrupt_files`` action on every regular file of ``state`` whose name starts with ``prefix``:
    ``truncate`` to half its size, ``flip`` its last byte, or ``symlink``: replace it by a symbolic link to a
    file outside (in ``root``) holding the same bytes; ``save`` copies it to ``root/saved-<name>``, unchanged,
    and ``restore`` writes that copy back over it (an older record put back; no copy fails). Returns how many
    files it matched."""
    n = 0
    for p in sorted(state.iterdir()):
        if not p.name.startswith(prefix) or not stat.S_ISREG(os.lstat(p).st_mode):
            continue
        data = p.read_bytes()
        if mode == "truncate":
            p.write_bytes(data[: len(data) // 2])
        elif mode == "flip":
            p.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]) if data else b"")
        elif mode == "symlink":
            outside = root / f"outside-{p.name}"
            outside.write_bytes(data)
            p.unlink()
            os.symlink(outside, p)
        elif mode == "save":
            (root / f"saved-{p.name}").write_bytes(data)
        elif mode == "restore":
            p.write_bytes((root / f"saved-{p.name}").read_bytes())
        else:
            pytest.fail(f"corrupt_files: unknown mode {mode!r}")
        n += 1
    return n


def check_counts(state: Path, counts: dict[str, int], exclude: str | None) -> list[str]:
    """``files_after_count`` (regular files per name prefix) and ``files_exclude`` (no file of the state
    directory holds these bytes)."""
    errors: list[str] = []
    files = [p for p in state.iterdir() if stat.S_ISREG(os.lstat(p).st_mode)] if state.is_dir() else []
    for prefix, want in counts.items():
        got = sum(p.name.startswith(prefix) for p in files)
        if got != want:
            errors.append(f"{got} files start with {prefix!r}, want {want} ({sorted(p.name for p in files)})")
    if exclude is not None:
        needle = exclude.encode()
        errors += [f"{p.name} holds the bytes {exclude!r}" for p in files if needle in p.read_bytes()]
    return errors


def open_handles(system: Any, logger: logging.Logger, open_req: Any) -> tuple[_Instance | None, tuple[bytes, str | None]]:
    """A handle store as the runner needs it: one plugin instance on the pinned system, ABI checked, then
    ``handles_open`` with the case's object as it is. Returns the instance (``None`` when open failed) and
    open's raw result; the state directory is fixed from a successful open's ``state_dir``."""
    inst = _Instance(pinned_functions(system)(logger), None)
    result = call_export(inst, "handles_open", json.dumps(open_req).encode())
    if result[1] is not None:
        inst.close()
        return None, result
    inst.funcs.set_state_dir(json.loads(result[0])["state_dir"])
    return inst, result


def redis_action(server: Any, call: dict[str, Any]) -> list[str]:
    """The ``redis`` action: ``command`` sent with the runner's own client, its reply ignored; with ``each_key``,
    once per key matching the glob (``SCAN``), each ``$KEY`` argument replaced by the key."""
    command = call["command"]
    if "each_key" not in call:
        server.client.execute_command(*command)
        return []
    keys = list(server.client.scan_iter(match=call["each_key"]))
    for key in keys:
        server.client.execute_command(*[key if a == "$KEY" else a for a in command])
    return [] if keys else [f"redis action: no key matches {call['each_key']!r}"]


def with_redis_url(doc: Any, url: str, port: int) -> Any:
    """``doc`` with ``$REDIS_URL`` in every string replaced by ``url``, ``$REDIS_ADDR`` by ``127.0.0.1:<port>``;
    in a ``request_hex`` (a binary request, whose URL comes last) ``$REDIS_URL`` is the hex of the URL's UTF-8."""
    if isinstance(doc, dict):
        return {with_redis_url(k, url, port): v.replace("$REDIS_URL", url.encode().hex())
                if k == "request_hex" and isinstance(v, str) else with_redis_url(v, url, port)
                for k, v in doc.items()}
    if isinstance(doc, list):
        return [with_redis_url(v, url, port) for v in doc]
    if isinstance(doc, str):
        return doc.replace("$REDIS_URL", url).replace("$REDIS_ADDR", f"127.0.0.1:{port}")
    return doc


@pytest.mark.parametrize(("path", "backend"), RUNS, ids=[f"{p.stem}[{b}]" for p, b in RUNS])
def test_conformance(path: Path, backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    root = tmp_path.resolve()
    case = substitute(json.loads(path.read_text()), root)
    server = None
    if backend == "redis":
        server = request.getfixturevalue("redis_server")
        server.flush()
        if case.get("store") == "handles" and "backends" not in case:
            for key in FILE_CHECKS:
                case.pop(key, None)
        # The server goes into open unless the case names it itself (in open, or as MCP_RESUME_STATE_URL in
        # its facts): some ["redis"] cases (garbage records, NOSCRIPT) rely on the runner for it too.
        if case.get("store") == "handles" and "$REDIS_URL" not in path.read_text():
            case["open"] = dict(case.get("open", {"app": "conformance", "state_root": f"{root}/state"}))
            case["open"].setdefault("state_url", "$REDIS_URL")
        case = with_redis_url(case, server.url, server.port)
    if any(c.get("action") == "hold_socket" for c in case.get("calls", [])) and not sys.platform.startswith("linux"):
        pytest.skip("hold_socket: abstract Unix sockets are a Linux rule")
    system = load_system(case.get("system"), root)
    handles = case.get("store") == "handles"
    app_dir = root / "state" / "conformance"  # the state directory of app "conformance" under the root root/state
    state = app_dir / "handles" if handles else app_dir  # "the state directory" of the case
    sd = case.get("state_dir", {})
    if sd.get("create", True):
        mode = int(sd.get("mode", "0700"), 8)
        os.mkdir(app_dir.parent, 0o700)
        os.mkdir(app_dir, mode)
        os.chmod(app_dir, mode)
    if handles and "files_before" in case:
        os.mkdir(state, 0o700)
    make_files(root, case.get("outside_before", {}))
    make_files(state, case.get("files_before", {}))

    capture = Capture()
    logger = logging.getLogger(f"mcp_resume.conformance.{path.stem}")
    logger.handlers[:] = [capture]
    logger.setLevel(logging.DEBUG)
    logger.propagate = False

    open_req = case.get("open", {"app": "conformance", "state_root": f"{root}/state"})
    opened: list[tuple[bytes, str | None]] = []

    class Store(ResumeTokenStore):
        """The binding's store on the pinned system, whose ``open`` sends the case's object as is."""

        _host_functions = pinned_functions(system)

        def _export(self, export: str, data: bytes = b"") -> bytes:
            if export != "open":
                return super()._export(export, data)
            opened.append(call_export(self, "open", json.dumps(open_req).encode()))
            if opened[0][1] is not None:
                raise MCPResumeError(f"open: {opened[0][1]}")
            return opened[0][0]

    errors: list[str] = []
    others: list[HostFunctions] = []  # other instances holding locks until the case ends
    held: list[socket.socket] = []  # sockets of hold_socket, closed when the case ends
    store: ResumeTokenStore | _Instance | None = None
    saved: dict[str, Any] = {}  # the calls' "save"d members
    try:
        if handles:
            store, result = open_handles(system, logger, open_req)
            opened.append(result)
        else:
            try:
                store = Store("conformance", logger=logger)
            except MCPResumeError as e:
                if not opened or opened[0][1] is None:
                    errors.append(f"open: {e}")
        assert opened, "open was never called"
        if backend == "redis" and handles and opened[0][1] is None and json.loads(opened[0][0]).get("backend") != "redis":
            errors.append(f"open: a Redis run opened the {json.loads(opened[0][0]).get('backend')!r} backend")
        if "open_want" in case:
            errors += check("open", case["open_want"], *opened[0])
        elif opened[0][1] is not None:
            errors.append(f"open failed: {opened[0][1]}")
        funcs = None if store is None else store.funcs if isinstance(store, _Instance) else store._funcs
        for i, call in enumerate(case.get("calls", []) if store is not None else []):
            assert store is not None and funcs is not None  # for the type checker: no calls run without a store
            if call.get("action") == "put_file":
                (state / call["name"]).write_bytes(content_bytes(call["content"]))
            elif call.get("action") == "corrupt_files":
                if not corrupt_files(state, root, call["prefix"], call["mode"]):
                    errors.append(f"call {i} corrupt_files: no file starts with {call['prefix']!r}")
            elif call.get("action") == "hold_lock":
                # A second, independent instance confined to the state directory directly (no prepare_dir).
                other = HostFunctions(logging.getLogger("mcp_resume.conformance.other"))
                others.append(other)
                other.set_state_dir(str(state))
                names = {} if handles else json.loads(call_export(store, "names", b"")[0] or b"{}")
                socket = names.get("lock_socket", "") if names.get("lock") == call["name"] else ""
                req = {"name": call["name"], "socket": socket} if socket else {"name": call["name"]}
                resp = json.loads(other.call("mcp_resume_lock", json.dumps(req).encode()))
                assert not resp.get("error"), f"hold_lock {call['name']}: {resp}"
            elif call.get("action") == "hold_socket":
                held.append(hold_abstract_socket(call["socket"]))
            elif call.get("action") == "redis":
                if server is None:
                    pytest.fail(f"{path.name}: call {i}: a redis action in a run without Redis")
                errors += [f"call {i} {e}" for e in redis_action(server, call)]
            elif "host_call" in call and "action" not in call and "export" not in call:
                # The store's own host functions, the instance the plugin calls (state directory fixed by open).
                t0 = time.monotonic()
                req = (bytes.fromhex(call["request_hex"]) if "request_hex" in call
                       else json.dumps(call["request"]).encode())
                raw = funcs.call(call["host_call"], req)
                took_ms = (time.monotonic() - t0) * 1000
                want = dict(call["want"])
                where = f"call {i} host_call {call['host_call']}"
                lo, hi = want.pop("min_ms", None), want.pop("max_ms", None)
                if (lo is not None and took_ms < lo) or (hi is not None and took_ms > hi):
                    errors.append(f"{where}: took {took_ms:.0f} ms, want {lo if lo is not None else 0}..{hi if hi is not None else '∞'} ms")
                errors += check_host(where, want, raw)
            elif "export" in call and "action" not in call:
                if "input_hex" in call:
                    data = fill_hex(call["input_hex"], saved)
                elif "input" not in call:
                    data = b""
                elif is_handle_export(call["export"]) and not isinstance(call["input"], str):
                    # A JSON value the runner encodes; a plain string stays a content (bytes that are no object).
                    data = json.dumps(fill_vars(call["input"], saved)).encode()
                else:
                    data = content_bytes(call["input"])
                out, err = call_export(store, call["export"], data)
                errors += check(f"call {i} {call['export']}", call["want"], out, err)
                if "save" in call and err is None:
                    doc = json.loads(out)
                    for var, member in call["save"].items():
                        if member not in doc:
                            errors.append(f"call {i} {call['export']}: save {var}: no member {member!r} in {doc}")
                        saved[var] = doc.get(member)
            else:
                pytest.fail(f"{path.name}: call {i} has an unknown form: {call!r}")
    finally:
        if store is not None:
            store.close()
        for other in others:
            other.close()
        for sock in held:
            sock.close()

    # A handle store's directory holds names a case cannot know (records named by key hashes, lock files): its
    # files_after is checked only when given (then exactly, as for a resume store); counts check the rest.
    if not handles or "files_after" in case:
        errors += check_files(state, case.get("files_after", {}), exact=True)
    errors += check_counts(state, case.get("files_after_count", {}), case.get("files_exclude"))
    errors += check_files(root, case.get("outside_after", {}), exact=False)
    after = case.get("state_dir_after")
    if after is not None:
        exists = state.exists()
        if "exists" in after and exists != after["exists"]:
            errors.append(f"state directory exists = {exists}, want {after['exists']}")
        if exists and "mode" in after and stat.S_IMODE(os.stat(state).st_mode) != int(after["mode"], 8):
            errors.append(f"state directory mode = {stat.S_IMODE(os.stat(state).st_mode):04o}, want {after['mode']}")

    want_logs, got = case.get("logs", []), capture.lines
    if len(got) != len(want_logs):
        errors.append(f"logs: got {len(got)} lines {got}, want {len(want_logs)} lines {want_logs}")
    else:
        for i, (g, w) in enumerate(zip(got, want_logs)):
            msg_ok = g["message"].startswith(w["message_prefix"]) if "message_prefix" in w else g["message"] == w.get("message")
            detail_ok = "detail" not in w or g["detail"] == w["detail"]
            if not (g["level"] == w["level"] and g["event"] == w["event"] and msg_ok and detail_ok):
                errors.append(f"log line {i} = {g}, want {w}")
    if exclude := case.get("logs_exclude"):
        errors += [f"a log line holds {exclude!r}: {line!r}" for line in capture.every if exclude in line]
    assert not errors, f"{path.name} ({case.get('spec', '')}):\n  " + "\n  ".join(errors)
