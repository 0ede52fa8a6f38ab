"""What a disk read saw travels with its snapshot: no table of every file read (issue 15 item 4).

A module-level cache keyed by path (the old `_READ_STATS` / `_READ_BYTES`) kept every file a
long-lived process ever read, and a second read of a path replaced what the first one's plan
was checked against: a plan made from the first read then overwrote a save that came between.
"""

from __future__ import annotations

import gc
import os
import weakref
from pathlib import Path

import pytest

from lsp_server.engine import files
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_replace


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))


def test_a_plan_is_checked_against_its_own_read_not_a_later_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every save here is within a timestamp tick of the reads, which makes the apply compare
    # bytes as well; as if the save were older, only the read's stat is compared.
    monkeypatch.setattr(files, "_CTIME_WINDOW_NS", 0)
    root = tmp_path / "ws"
    root.mkdir()
    target = root / "a.txt"
    target.write_text("one\n")
    first = files.read_snapshot(str(root), "a.txt")
    plan = Plan("replace", (plan_replace(first, "one", "uno"),))
    # The user saves meanwhile, and something else (another request) reads the file again.
    target.write_text("two, typed by the user\n")
    os.utime(target, ns=(1_600_000_000_123_456_789, 1_600_000_000_123_456_789))
    second = files.read_snapshot(str(root), "a.txt")
    assert second.text == "two, typed by the user\n"
    with pytest.raises(EditError) as info:
        files.apply_plan(str(root), plan)
    assert info.value.code == Code.STALE
    assert target.read_text() == "two, typed by the user\n"


def test_a_read_is_not_kept_once_its_snapshot_is_dropped(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_bytes(b"x" * 100_000 + b"\n")
    snap = files.read_snapshot(str(tmp_path), "big.txt")
    assert snap.disk is not None and snap.disk.data[:1] == b"x"
    gone = weakref.ref(snap)
    del snap
    gc.collect()
    assert gone() is None, "something still holds the snapshot (a cache of reads)"


def test_the_journal_pre_image_is_the_bytes_of_the_planned_read(tmp_path: Path) -> None:
    # Two snapshots of one path in one process: each plan's pre-image is its own read's bytes.
    (tmp_path / "f.txt").write_bytes(b"\xef\xbb\xbfold\r\n")
    first = files.read_snapshot(str(tmp_path), "f.txt")
    (tmp_path / "f.txt").write_bytes(b"older\n")
    second = files.read_snapshot(str(tmp_path), "f.txt")
    assert first.disk is not None and first.disk.data == b"\xef\xbb\xbfold\r\n"
    assert second.disk is not None and second.disk.data == b"older\n"
    assert first.bom and not second.bom


def test_a_link_seen_is_carried_by_the_snapshot(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("r\n")
    os.symlink("real.txt", tmp_path / "link.txt")
    seen = files.note_link(str(tmp_path), "link.txt")
    assert seen is not None and seen.target == "real.txt"
    assert files.note_link(str(tmp_path), "real.txt") is None
