"""A large headless apply whose temporary files are written by the writer's worker thread while
the history's `begin` runs (files.start_plan / WritingApply, DiskAttempt.prepare).

Attacked here, each while the worker is writing: a file saved by the user (STALE, nothing
changed, their save kept), the disk filling up (a real loop-mounted ext4: IO_ERROR, nothing
changed), the history's `begin` failing or Ctrl-C in it (nothing changed, no temporary file,
no `TEMPS`, no thread left), and SIGKILL after the worker finished or after the journal was
written while `TEMPS` was still there (the next open rolls back, no temporary file left). The
SIGKILL points inside the worker and around `begin` are tests/actions/test_recorded_apply.py's.
"""

from __future__ import annotations

import asyncio
import errno
import threading
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine import files
from lsp_server.engine.history import History, open_history
from lsp_server.engine.results import wire
from tests.actions.test_recorded_apply import killed, make_tree, sdir_of, tree
from tests.engine.test_writer_disk import _need_root, _small_ext4, mounts

__all__ = ["mounts"]  # the loop-mount fixture, used by name below


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def apply(ws: Path, patch: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(ws)) as ctx:
            return wire(await actions.run(ctx, "applyPatch", {"patch": patch}))

    return asyncio.run(go())


def left_behind(ws: Path) -> list[str]:
    """Temporary files in the workspace, `TEMPS` or a journal in its state folder."""
    sdir = sdir_of(ws)
    temps = [p for p in tree(ws) if p.endswith(".tmp")]
    return temps + [n for n in (files.JOURNAL, files.TEMPS) if (sdir / n).exists()]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def test_the_plan_takes_the_overlapped_path(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plans below are written by the worker (else they would test the old order)."""
    old, patch = make_tree(ws)
    threads: list[str] = []
    real = files._write_temps

    def spy(prepared: Any) -> None:
        threads.append(threading.current_thread().name)
        real(prepared)

    monkeypatch.setattr(files, "_write_temps", spy)
    assert apply(ws, patch)["ok"]
    assert threads and threads[0] != threading.main_thread().name
    assert all(tree(ws)[p] != old[p] for p in old) and left_behind(ws) == []


def test_a_file_saved_while_the_worker_writes_is_stale(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old, patch = make_tree(ws)
    real = files._write_temp
    calls: list[int] = []

    def saving(folders: Any, step: Any, *args: Any) -> None:
        calls.append(1)
        if len(calls) == 5:  # the user saves another file of the plan meanwhile
            (ws / "pkg/m10.py").write_bytes(b"the user's save\n")
        real(folders, step, *args)

    monkeypatch.setattr(files, "_write_temp", saving)
    result = apply(ws, patch)
    assert not result["ok"] and result["code"] == "STALE", result
    assert result["details"]["path"] == "pkg/m10.py"
    assert tree(ws) == old | {"pkg/m10.py": b"the user's save\n"}
    assert left_behind(ws) == []
    assert open_history(str(ws)).unfinished() == []


@pytest.mark.parametrize("how", ["oserror", "interrupt"])
def test_begin_failing_while_the_worker_writes(
    ws: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The history's `begin` fails (its journal refused: the edit is not sent) or Ctrl-C
    stops it, with the worker part-way through the temporary files: the worker is joined,
    they are removed with `TEMPS`, no file changed, no thread left."""
    old, patch = make_tree(ws)
    started, release = threading.Event(), threading.Event()
    real = files._write_temp

    def slow(*args: Any) -> None:
        started.set()
        assert release.wait(30)
        real(*args)

    def failing(self: History, *args: Any, **kwargs: Any) -> int:
        assert started.wait(30)  # the worker has begun
        release.set()
        if how == "interrupt":
            raise KeyboardInterrupt
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(files, "_write_temp", slow)
    monkeypatch.setattr(History, "_begin", failing)
    before = threading.active_count()
    if how == "interrupt":
        with pytest.raises(KeyboardInterrupt):
            apply(ws, patch)
    else:
        result = apply(ws, patch)
        assert not result["ok"] and result["code"] == "IO_ERROR", result
        assert "not sent" in result["message"]
    assert threading.active_count() == before
    assert tree(ws) == old
    assert left_behind(ws) == []


def test_a_full_disk_while_the_worker_writes(
    tmp_path: Path, state: Path, mounts: list[str]
) -> None:
    """ENOSPC on a real (loop-mounted) ext4 in the worker: IO_ERROR saying nothing was
    changed, every file as it was, no temporary file, no `TEMPS`, the entry finished."""
    _need_root()
    root = _small_ext4(tmp_path, mounts, "8M") / "ws"
    root.mkdir()
    old, patch = make_tree(root)
    big = "".join(f"+{'x' * 60} {i}\n" for i in range(120_000))  # ~7.5 MB: more than is free
    patch = patch.replace("*** End Patch\n", f"*** Add File: pkg/big.txt\n{big}*** End Patch\n")
    result = apply(root, patch)
    assert not result["ok"] and result["code"] == "IO_ERROR", result
    assert "No space left on device" in result["message"]
    assert "nothing was changed" in result["message"]
    assert {k: v for k, v in tree(root).items() if not k.startswith("lost+found")} == old
    assert left_behind(root) == []
    assert open_history(str(root)).unfinished() == []


@pytest.mark.parametrize("mode", ["temps-written", "journalled"])
def test_sigkill_around_the_journal_of_an_overlapped_apply(
    ws: Path, state: Path, mode: str
) -> None:
    """Killed once the worker wrote every temporary file (the journal not written yet:
    `TEMPS` only), or once the journal is written with `TEMPS` still there (both name the
    same temporary files): the next open rolls back once, leaves no temporary file, and the
    edit (if its `begin` was written) is settled as not applied."""
    old, patch = make_tree(ws)
    killed(ws, state, patch, mode)
    sdir = sdir_of(ws)
    assert (sdir / files.TEMPS).exists()
    assert (sdir / files.JOURNAL).exists() == (mode == "journalled")
    said: list[str] = []

    async def history() -> dict[str, Any]:
        async with headless.open(str(ws), notify=said.append) as ctx:
            return wire(await actions.run(ctx, "history", {}))

    hist = asyncio.run(history())
    assert sum("rolled back an interrupted apply" in s for s in said) == 1, said
    assert tree(ws) == old
    assert left_behind(ws) == []
    assert open_history(str(ws)).unfinished() == []
    entries = [e for e in hist["entries"] if e["action"] == "applyPatch"]
    if mode == "journalled" or entries:
        (entry,) = entries
        assert entry["outcome"] == "NOT_APPLIED", entry


def test_ctrl_c_while_waiting_for_the_worker(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C arrives while `finish` waits for the worker, which is still writing: the rollback
    must wait for it too, or the temporary files it writes afterwards stay behind with nothing
    naming them (`TEMPS` already removed by the rollback)."""
    old, patch = make_tree(ws)
    release = threading.Event()
    real_temp, real_join = files._write_temp, files.WritingApply.join
    joins: list[int] = []

    def slow(*args: Any) -> None:
        assert release.wait(30)
        real_temp(*args)

    def join(self: files.WritingApply) -> BaseException | None:
        joins.append(1)
        if len(joins) == 1:
            raise KeyboardInterrupt  # in `finish`, the worker not done
        release.set()
        return real_join(self)

    monkeypatch.setattr(files, "_write_temp", slow)
    monkeypatch.setattr(files.WritingApply, "join", join)
    with pytest.raises(KeyboardInterrupt):
        apply(ws, patch)
    release.set()
    for t in threading.enumerate():
        if t is not threading.main_thread():
            t.join(30)
    assert tree(ws) == old
    assert left_behind(ws) == []
