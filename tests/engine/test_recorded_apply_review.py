"""Review attacks on the recorded headless apply (the pre-image pack both journals name).

Each test here with a fix was seen failing before it (see the commit that added it); the
SIGKILL-in-the-rollback test held.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.engine import files
from lsp_server.engine.history import History, open_history
from lsp_server.engine.journal import Journal
from tests.actions.test_recorded_apply import killed, make_tree, run, sdir_of
from tests.editor_client import REPO


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def compact(ws: Path) -> None:
    """Enough small records through a history with a tiny budget that it compacts."""
    history = History.load(Journal(ws, max_bytes=2 * 1024))
    for i in range(3):
        history.record("replace", {"path": "x", "note": "y" * 1024, "i": i}, outcome="dry-run")


def test_a_journal_kept_for_a_human_keeps_its_pack(tmp_path: Path, state: Path) -> None:
    """Killed mid-rename, then the folder it renamed in is replaced (moved away, made again):
    the rollback cannot reach those files and keeps the apply journal for a human
    (`journal.json.unreached-*`). Its pre-images are the pack: a later compaction, with the
    history's entry settled, must not remove them, or the kept journal names bytes that are
    gone and those files can never be put back."""
    ws = tmp_path / "ws"
    ws.mkdir()
    old, patch = make_tree(ws)
    killed(ws, state, patch, "25")  # 20 temporaries, then 5 renames
    sdir = sdir_of(ws)
    header = json.loads((sdir / files.JOURNAL).read_bytes().split(b"\n", 1)[0])
    assert header["version"] == 3
    os.rename(ws / "pkg", tmp_path / "pkg-moved")
    (ws / "pkg").mkdir()
    said: list[str] = []
    run(ws, "history", {}, notify=said.append)
    assert any("NOT put back" in s for s in said), said
    kept = [n for n in os.listdir(sdir) if n.startswith(files.JOURNAL + ".unreached-")]
    assert kept, os.listdir(sdir)
    compact(ws)
    assert header["pack"].encode() not in (sdir / "journal.jsonl").read_bytes()
    pack = sdir / "blobs" / header["pack"]
    assert pack.exists(), "the kept journal's pre-images were collected"
    # What the human is told to do works: every pre-image is there to put back.
    data = pack.read_bytes()
    for entry in header["files"]:
        offset, size = entry["pre"]
        assert data[offset : offset + size] == old[entry["path"]]
    shutil.rmtree(tmp_path / "pkg-moved")


def test_an_entry_is_not_settled_while_its_rollback_is_pending(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed mid-rename; the next run's rollback fails for one file (an I/O error: the apply
    journal stays, "retried on the next run"). Settling the history's entry from that half-
    rolled-back disk would record PARTIAL with files "applied", and the run after, which puts
    them back, would leave that report false for ever. The entry waits for the rollback: once
    it is done the entry says NOT_APPLIED, which is what the disk shows."""
    ws = tmp_path / "ws"
    ws.mkdir()
    old, patch = make_tree(ws)
    killed(ws, state, patch, "25")  # 20 temporaries, then 5 renames
    real = files._restore_at
    calls = [0]

    def fail_once(*args: object, **kwargs: object) -> bool:
        calls[0] += 1
        if calls[0] == 1:
            raise OSError(5, "Input/output error")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(files, "_restore_at", fail_once)
    said: list[str] = []
    first = run(ws, "history", {}, notify=said.append)
    assert any("NOT put back yet" in s for s in said), said
    assert (sdir_of(ws) / files.JOURNAL).exists()
    (entry,) = [e for e in first["entries"] if e["action"] == "applyPatch"]
    assert entry["outcome"] != "PARTIAL", entry  # not settled from a half-rolled-back disk
    monkeypatch.setattr(files, "_restore_at", real)
    second = run(ws, "history", {})
    assert not (sdir_of(ws) / files.JOURNAL).exists()
    assert {p: (ws / p).read_bytes() for p in old} == old
    (entry,) = [e for e in second["entries"] if e["action"] == "applyPatch"]
    assert entry["outcome"] == "NOT_APPLIED", entry


def test_a_lost_pack_loses_the_net_diff_not_the_edit(tmp_path: Path, state: Path) -> None:
    """Killed mid-rename, then the pack is lost (deleted by hand, a disk error). The rollback
    cannot run (its pre-images are gone: the journal is set aside, said so), so the files stay
    half-applied. The edit itself must still be in the history, settled from what the disk
    shows (PARTIAL), and undoable: its change records are in its own line; only the net diff's
    baselines were in the pack. Dropping the whole record hid the edit and its undo."""
    ws = tmp_path / "ws"
    ws.mkdir()
    old, patch = make_tree(ws)
    killed(ws, state, patch, "25")  # 20 temporaries, then 5 renames
    sdir = sdir_of(ws)
    header = json.loads((sdir / files.JOURNAL).read_bytes().split(b"\n", 1)[0])
    (sdir / "blobs" / header["pack"]).unlink()
    said: list[str] = []
    hist = run(ws, "history", {}, notify=said.append)
    assert any("unreadable" in s for s in said), said
    now = {p: (ws / p).read_bytes() for p in old}
    landed = {p for p in old if now[p] != old[p]}
    assert 0 < len(landed) < len(old)  # threaded renames: some of them
    (entry,) = [e for e in hist["entries"] if e["action"] == "applyPatch"]
    assert entry["outcome"] == "PARTIAL", entry
    assert "pre-image pack" in hist.get("skippedNote", ""), hist.get("skippedNote")
    undo = run(ws, "undo", {"editId": entry["id"]})
    assert undo["ok"], undo
    assert {p: (ws / p).read_bytes() for p in old} == old


KILLED_IN_ROLLBACK = """
import asyncio, os, signal, sys
from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine import files

seen = [0]
def hook(point, path):
    if point == "recovery":
        seen[0] += 1
        if seen[0] == int(sys.argv[2]):
            os.kill(os.getpid(), signal.SIGKILL)
files.TEST_HOOK = hook

async def go():
    async with headless.open(sys.argv[1]) as ctx:
        await actions.run(ctx, "history", {})

asyncio.run(go())
"""


@pytest.mark.parametrize("at", [1, 7, 20])
def test_sigkill_in_the_rollback_of_a_recorded_apply(tmp_path: Path, state: Path, at: int) -> None:
    """Killed mid-rename, then the next run is killed too, in the middle of its rollback
    (before its `at`-th file): the run after finishes the rollback from the same pack, every
    file is old, and the history says so (one rollback, the edit NOT_APPLIED, nothing
    pending)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    old, patch = make_tree(ws)
    killed(ws, state, patch, "25")
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    env.pop(files.CRASH_ENV, None)
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_IN_ROLLBACK, str(ws), str(at)],
        env=env,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert (sdir_of(ws) / files.JOURNAL).exists()
    hist = run(ws, "history", {})
    assert {p: (ws / p).read_bytes() for p in old} == old
    assert not (sdir_of(ws) / files.JOURNAL).exists()
    assert open_history(str(ws)).unfinished() == []
    outcomes = [(e["action"], e["outcome"]) for e in hist["entries"]]
    assert outcomes == [("applyPatch", "NOT_APPLIED"), ("recover", "rolled-back")], outcomes
    assert hist["net"] == []
