"""startup.cache_dataclass_code: the dataclasses' generated methods compiled once, kept in the
state base, and never a method other than the one `exec` would have made.

Each run is a fresh interpreter (the cache is only set up in one: a process that made
dataclasses already keeps dataclasses as it is), applying a patch through `cli.main`; the probe
reports what the cache did and a fingerprint of every generated method of every dataclass the
run loaded.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server import startup

REPO = Path(__file__).resolve().parents[2]
TAG = sys.implementation.cache_tag

PROBE = r"""
import json, marshal, sys
if sys.argv[1] == "plain":  # dataclasses made the usual way: imported before the CLI runs
    import dataclasses
from lsp_server import startup
from lsp_server.cli import main
compiled = []  # main's `finally` saves the cache (which resets the count): read it there
save = startup.save_dataclass_code
def counting_save(root):
    cache = startup._code_cache
    compiled.append(None if cache is None else cache.compiled)
    save(root)
startup.save_dataclass_code = counting_save
rc = main(sys.argv[2:])
methods = {}
for name, module in sorted(sys.modules.items()):
    if not name.startswith("lsp_server"):
        continue
    for cls in list(vars(module).values()):
        if not isinstance(cls, type) or "__dataclass_fields__" not in vars(cls):
            continue
        for attr, fn in sorted(vars(cls).items()):
            code = getattr(fn, "__code__", None)
            if code is None or code.co_filename != "<string>":
                continue  # not a generated method
            methods[cls.__module__ + "." + cls.__qualname__ + "." + attr] = [
                marshal.dumps(code).hex(), code.co_filename, code.co_firstlineno,
                fn.__qualname__, fn.__module__, repr(fn.__defaults__),
                repr(fn.__kwdefaults__), repr(fn.__annotations__),
                fn.__globals__ is vars(sys.modules[cls.__module__]),
            ]
report = {"rc": rc, "compiled": compiled[0], "methods": methods}
sys.stdout.flush()
sys.stderr.write("\nREPORT " + json.dumps(report) + "\n")
"""

PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 10\n*** End Patch\n"


def _run(tmp_path: Path, state: Path, mode: str = "cached") -> dict[str, Any]:
    """One apply in a fresh interpreter: its exit status, how many sources it compiled (None:
    no cache; 0: every method came from it) and its dataclasses' generated methods."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "a.py").write_text("x = 1\n")
    (tmp_path / "p").write_text(PATCH)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENT_EDIT_CRASH_AFTER")}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(state)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, mode, "apply-patch", "--root", "ws", "p"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    marker = proc.stderr.rfind("\nREPORT ")
    assert marker >= 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stderr[marker + len("\nREPORT ") :])
    assert report["rc"] == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "cache" not in proc.stderr, proc.stderr
    assert (ws / "a.py").read_text() == "x = 10\n"
    return report


def _compiled_this_run(tmp_path: Path, state: Path) -> int:
    compiled = _run(tmp_path, state)["compiled"]
    assert isinstance(compiled, int)
    return compiled


def _cache_file(state: Path) -> Path:
    return state / "code" / f"dataclasses-{TAG}.bin"


def test_the_second_run_compiles_nothing_and_the_file_is_private(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert _compiled_this_run(tmp_path, state) > 30  # ~36 dataclasses, several methods each
    cache = _cache_file(state)
    mode = cache.stat().st_mode
    assert stat.S_ISREG(mode) and stat.S_IMODE(mode) == 0o600
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    assert _compiled_this_run(tmp_path, state) == 0
    assert sorted(p.name for p in cache.parent.iterdir()) == [cache.name]  # no temporary left


def test_cached_methods_are_the_ones_exec_makes(tmp_path: Path) -> None:
    """Every generated method of every dataclass of an apply, from a warm cache, is the method
    dataclasses makes without the cache: the same code object, file name and line, qualified
    name, defaults, annotations and globals."""
    state = tmp_path / "state"
    plain = _run(tmp_path, tmp_path / "other-state", mode="plain")
    assert plain["compiled"] is None  # no cache: dataclasses compiled with its own exec
    _run(tmp_path, state)  # fills the cache
    warm = _run(tmp_path, state)
    assert warm["compiled"] == 0
    methods = plain["methods"]
    assert isinstance(methods, dict) and len(methods) > 60
    assert warm["methods"] == methods


def _rewrite(cache: Path, body: bytes | None = None, magic: bytes | None = None) -> None:
    """The cache file with its table replaced (and its digest made to match)."""
    data = cache.read_bytes()
    header_len = len(startup._CODE_HEADER) + 4
    head = data[:header_len] if magic is None else startup._CODE_HEADER + magic
    body = data[header_len + 32 :] if body is None else body
    cache.write_bytes(head + startup._digest(body) + body)


@pytest.mark.parametrize(
    "spoil",
    [
        "flip a byte",
        "truncate",
        "group-writable",
        "another bytecode version",
        "not a table",
        "a symlink to a good one",
        "a directory",
    ],
)
def test_a_cache_not_to_trust_is_ignored_and_replaced(tmp_path: Path, spoil: str) -> None:
    """A torn, altered, foreign or shared cache file is never run: the run compiles everything
    (and is right), then writes a good file in its place (a link itself, not its target)."""
    import marshal

    state = tmp_path / "state"
    _run(tmp_path, state)
    cache = _cache_file(state)
    good = cache.read_bytes()
    elsewhere = tmp_path / "elsewhere.bin"
    if spoil == "flip a byte":
        data = bytearray(good)
        data[len(data) // 2] ^= 0x40
        cache.write_bytes(bytes(data))
    elif spoil == "truncate":
        cache.write_bytes(good[: len(good) // 2])
    elif spoil == "group-writable":
        cache.chmod(0o620)
    elif spoil == "another bytecode version":
        _rewrite(cache, magic=b"\x00\x00\r\n")
    elif spoil == "not a table":
        _rewrite(cache, body=marshal.dumps(["not", "a", "dict"]))
    elif spoil == "a symlink to a good one":
        elsewhere.write_bytes(good)
        elsewhere.chmod(0o600)
        cache.unlink()
        cache.symlink_to(elsewhere)
    elif spoil == "a directory":
        cache.unlink()
        cache.mkdir()
    assert _compiled_this_run(tmp_path, state) > 30
    if spoil == "a directory":
        assert cache.is_dir()  # left alone; the run was right without it
        return
    assert not cache.is_symlink() and cache.read_bytes() == good
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    if spoil == "a symlink to a good one":
        assert elsewhere.read_bytes() == good
    assert _compiled_this_run(tmp_path, state) == 0


def test_a_planted_method_in_a_file_someone_else_can_write_is_not_run(tmp_path: Path) -> None:
    """A table whose digest matches but which maps a real method's source to other code runs
    only if the file is the user's own and private: group-writable, the planted code is not run."""
    import marshal

    state = tmp_path / "state"
    _run(tmp_path, state)
    cache = _cache_file(state)
    header_len = len(b"agent-edit dataclass code 1\n") + 4
    table = marshal.loads(cache.read_bytes()[header_len + 32 :])
    evil = compile("import os\nos._exit(99)\n", "<string>", "exec", dont_inherit=True)
    _rewrite(cache, body=marshal.dumps(dict.fromkeys(table, evil)))
    cache.chmod(0o666)
    assert _compiled_this_run(tmp_path, state) > 30  # ran (rc 0, the edit made), all compiled


def test_a_cache_that_cannot_be_written_costs_only_its_compiles(tmp_path: Path) -> None:
    """A file where the cache folder should be: every run compiles, and is right, and says
    nothing about it (a cache is no part of the result)."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "code").write_text("not a folder\n")
    for _ in range(2):
        assert _compiled_this_run(tmp_path, state) > 30
    assert (state / "code").read_text() == "not a folder\n"


def test_stale_entries_do_not_pile_up(tmp_path: Path) -> None:
    """Past its bound, the file keeps only what a run used: methods of old versions go."""
    import marshal

    state = tmp_path / "state"
    _run(tmp_path, state)
    cache = _cache_file(state)
    header_len = len(b"agent-edit dataclass code 1\n") + 4
    code = compile("x = 1\n", "<string>", "exec", dont_inherit=True)
    stale = {
        f"def __create_fn__():\n def old_{i}(): pass\n return old_{i}": code for i in range(600)
    }
    _rewrite(cache, body=marshal.dumps(stale))
    assert _compiled_this_run(tmp_path, state) > 30
    table = marshal.loads(cache.read_bytes()[header_len + 32 :])
    assert table and not set(table) & set(stale)
    assert _compiled_this_run(tmp_path, state) == 0


def test_no_cache_inside_the_workspace_nor_without_a_state_base(tmp_path: Path) -> None:
    """A state base inside the workspace is refused (DENIED) and gets no cache folder; a command
    that makes no state base (a usage error) makes none for the cache either."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENT_EDIT_CRASH_AFTER")}
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    (tmp_path / "p").write_text(PATCH)
    inside = ws / "state"
    inside.mkdir()  # a base that exists: only the workspace check keeps the cache out
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "apply-patch", "--root", "ws", "p"],
        capture_output=True,
        text=True,
        env=env | {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(inside)},
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 1 and "inside the workspace" in proc.stderr, proc.stderr
    assert not (inside / "code").exists()
    assert (ws / "a.py").read_text() == "x = 1\n"
    missing = tmp_path / "never-made"
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "apply-patch", "--root", "no-such-dir", "p"],
        capture_output=True,
        text=True,
        env=env | {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(missing)},
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert not missing.exists()
