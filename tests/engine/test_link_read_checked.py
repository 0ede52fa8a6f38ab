"""A Delete File of a symbolic link is checked against the link as it was seen: a link put in its
place since (a new link can reuse the old one's inode number, and `touch -h` sets its mtime back)
that points elsewhere is STALE, never removed, and the rollback would not be told a wrong target."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from lsp_server.engine import files
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.model import FileChange, Plan
from lsp_server.engine.text import LinkRead


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state"
    monkeypatch.setenv(files.STATE_DIR_ENV, str(path))
    return path


def _delete_link_plan(root: Path, seen: LinkRead) -> Plan:
    snap = files.read_snapshot(str(root), "old.txt")
    return Plan("applyPatch", (FileChange("delete", replace(snap, path="lnk", link=seen)),))


def test_a_link_that_now_points_elsewhere_is_stale(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "old.txt").write_text("old\n")
    (root / "new.txt").write_text("new\n")
    os.symlink("new.txt", root / "lnk")
    now = files.note_link(str(root), "lnk")
    assert now is not None
    # What was seen: a link to old.txt with this very inode and mtime (the swap reused both).
    seen = LinkRead(now.ino, now.mtime_ns, "old.txt")
    with pytest.raises(EditError) as err:
        files.apply_plan(str(root), _delete_link_plan(root, seen))
    assert err.value.code == Code.STALE
    assert os.readlink(root / "lnk") == "new.txt"


def test_an_unchanged_link_is_removed_as_a_link(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "old.txt").write_text("old\n")
    os.symlink("old.txt", root / "lnk")
    seen = files.note_link(str(root), "lnk")
    assert seen is not None
    files.apply_plan(str(root), _delete_link_plan(root, seen))
    assert sorted(os.listdir(root)) == ["old.txt"]
