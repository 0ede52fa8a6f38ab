"""The state folder stays bounded by what the kept history needs, blob files included: large
values live in blob files beside the journal, and only a compaction removes the ones nothing
names any more. Compaction used to run only once the journal's line file passed `max_bytes`,
which blob bytes did not count towards: 60 whole-file writes of a 200 KB file with an undo
window of 5 left a 42 KB journal beside 12.4 MB of blobs, growing without bound. The blob bytes
written since the last compaction count now, also for a process that only read the journal
(each CLI run is a new process), and blobs still needed survive those compactions."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lsp_server.engine import files
from lsp_server.engine.blobs import BLOB_DIR
from lsp_server.engine.history import History, budgets
from lsp_server.engine.journal import BLOB_MIN, Journal
from lsp_server.engine.model import Plan
from lsp_server.engine.patching import plan_patch
from lsp_server.engine.planner import plan_write
from tests.history_helpers import FS, apply_plan, snap

SIZE = 100_000  # characters a write: past BLOB_MIN, so each version of the file is a blob
UNDO = 3
DIFFS = 4 * SIZE  # the history's diff budget (DIFF_BUDGET) in these tests
MAX = 2 * 1024 * 1024  # a quarter of it is more than one write adds: the counts add up
WRITES = 24
# What the history keeps: the undo window's removed and added lines (two blobs a write), the
# net diff's baseline, and the entries' diffs its budget keeps (blobs too); then up to a quarter
# of that, or of MAX, is written before the next compaction, plus the write that crosses it.
KEEP = 2 * (UNDO + 2) * SIZE + DIFFS
BOUND = max(MAX, KEEP) * 5 // 4 + 3 * SIZE


@pytest.fixture(autouse=True)
def small_diff_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Diffs are history kept too, up to DIFF_BUDGET (4 M characters): a small one here, so
    that the bound is about the undo window, not about 4 MB of diffs."""
    monkeypatch.setattr(budgets, "DIFF_BUDGET", DIFFS)


def text(i: int) -> str:
    out = "".join(f"version {i} line {j} {'w' * 40}\n" for j in range(SIZE // 60))
    assert len(out) > BLOB_MIN
    return out


def folder_bytes(j: Journal) -> int:
    """The journal's file and its blob files, in bytes."""
    blobs = j.dir / BLOB_DIR
    names = os.listdir(blobs) if blobs.is_dir() else []
    return j.size() + sum(os.stat(blobs / n).st_size for n in names)


def write(h: History, fs: FS, i: int) -> FS:
    plan = Plan("write", (plan_write(snap(fs, "big.txt"), text(i)),))
    entry_id = h.begin(plan, {"path": "big.txt"})
    fs = apply_plan(fs, plan)
    h.finish(entry_id, "applied")
    return fs


def check_history(ws: Path, state: Path, fs: FS, h: History) -> None:
    """The history the bounded folder holds is whole: it reads back with nothing skipped, the
    same net diff, and the undo window's last edit undoes to the text before it."""
    again = History.load(Journal(ws, state_dir=state, max_bytes=MAX), undo_window=UNDO)
    assert again.skipped == 0, again.skipped_note()
    assert again.net() == h.net()
    assert sum(e.undoable for e in again.entries) == UNDO
    last = again.entries[-1]
    undo = again.plan_undo(last.id, {"big.txt": snap(fs, "big.txt")})
    assert apply_plan(fs, undo)["big.txt"] == text(WRITES - 2)


def test_many_large_writes_in_one_process_leave_a_bounded_state_folder(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    j = Journal(ws, state_dir=tmp_path / "state", max_bytes=MAX)
    h = History(j, undo_window=UNDO)
    fs: FS = {"big.txt": text(-1)}
    peak = 0
    for i in range(WRITES):
        fs = write(h, fs, i)
        peak = max(peak, folder_bytes(j))
    assert peak <= BOUND, (peak, BOUND, j.size())
    check_history(ws, tmp_path / "state", fs, h)


def test_many_large_writes_each_by_a_new_process_leave_a_bounded_state_folder(
    tmp_path: Path,
) -> None:
    """Each write by a History loaded afresh, as each CLI run is: what the blobs written since
    the last compaction weigh is known from the journal itself, not from one process's memory."""
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    fs: FS = {"big.txt": text(-1)}
    peak = 0
    for i in range(WRITES):
        j = Journal(ws, state_dir=state, max_bytes=MAX)
        h = History.load(j, undo_window=UNDO)
        fs = write(h, fs, i)
        peak = max(peak, folder_bytes(j))
    assert peak <= BOUND, (peak, BOUND, j.size())
    check_history(ws, state, fs, h)


def test_blobs_still_needed_survive_the_compactions_blob_writes_bring(tmp_path: Path) -> None:
    """While other processes' large writes compact the journal again and again, nothing still
    needed is collected: an unfinished plan's pre-image pack (named by its begin record only
    through `named`), an interrupted disk apply's pack (named by `journal.json` alone), and the
    pack of an apply journal set aside for a human (`journal.json.unreached-*`)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    for i in range(3):  # three 40 kB files: their pre-images are one pack
        (ws / f"f{i}.py").write_text("".join(f"row {i} {k} {'z' * 40}\n" for k in range(800)))
    patch = ["*** Begin Patch\n"]
    for i in range(3):
        patch += [f"*** Update File: f{i}.py\n", "@@\n", f"-row {i} 30 {'z' * 40}\n", "+x\n"]
    plan = plan_patch(
        "".join(patch + ["*** End Patch\n"]), lambda rel: files.read_snapshot(str(ws), rel)
    )
    begun = History(Journal(ws, state_dir=state, max_bytes=MAX), undo_window=UNDO)
    entry_id = begun.begin(plan, {"patch": "..."})
    pack = begun.pack_of(entry_id)
    assert pack is not None
    pre = b"".join(c.before.disk.data for c in plan.changes if c.before.disk is not None)
    blobs = Journal(ws, state_dir=state).blobs
    interrupted = blobs.put(b"an interrupted apply's pre-images " * 4000)
    set_aside = blobs.put(b"pre-images a human restores from " * 4000)
    for name, sha in (("journal.json", interrupted), ("journal.json.unreached-1", set_aside)):
        header = {"version": 3, "pack": sha, "pid": 1, "files": []}
        (state / name).write_text(json.dumps(header) + "\n")

    fs: FS = {"big.txt": text(-1)}
    inodes = set()
    for i in range(WRITES):
        j = Journal(ws, state_dir=state, max_bytes=MAX)
        fs = write(History.load(j, undo_window=UNDO), fs, i)
        inodes.add(j.path.stat().st_ino)
    assert len(inodes) >= 3, "the large writes did not compact the journal"
    assert folder_bytes(j) <= BOUND + 3 * SIZE  # the three packs kept on top

    assert blobs.get(interrupted) and blobs.get(set_aside)
    assert blobs.get(pack.sha) == pre
    again = History.load(Journal(ws, state_dir=state, max_bytes=MAX), undo_window=UNDO)
    assert again.skipped == 0, again.skipped_note()
    entry = again.entry(entry_id)
    assert not entry.finished and entry.pack == pack.sha
    assert sorted(entry._baselines) == ["f0.py", "f1.py", "f2.py"]  # read back from the pack
    begun.finish(entry_id, "applied")
    assert History.load(Journal(ws, state_dir=state)).entry(entry_id).finished


def test_the_counts_are_the_journals_not_the_records(tmp_path: Path) -> None:
    """The bytes an append's blobs took end its line, and a compaction's checkpoint says what
    it kept; neither is part of the record read back."""
    ws = tmp_path / "ws"
    ws.mkdir()
    j = Journal(ws, state_dir=tmp_path / "state")
    rec = {"t": "record", "id": 1, "text": "t" * BLOB_MIN}
    with j.transaction() as (_batch, writer):
        writer.append(rec, sync=False)
    assert j.path.read_bytes().endswith(b',"$new":%d}\n' % BLOB_MIN)
    again = Journal(ws, state_dir=tmp_path / "state")
    assert again.read_all() == [rec] and again.blob_bytes == BLOB_MIN
    checkpoint = {"t": "checkpoint", "nextId": 2, "tracked": []}
    with again.transaction() as (_batch, writer):
        writer.rewrite([rec, checkpoint])
    assert j.path.read_bytes().endswith(b',"$kept":%d}\n' % BLOB_MIN)
    third = Journal(ws, state_dir=tmp_path / "state")
    assert third.read_all() == [rec, checkpoint]
    assert (third.compacted_blobs, third.blob_bytes) == (BLOB_MIN, 0)
