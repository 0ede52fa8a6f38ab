"""What the disk writer makes durable, and when (engine/files.py, `_prepare`'s 1. to 3.): every
pre-image and the journal naming the temporary files before the first rename, the renames before
the journal goes, the journal's removal last; and no flush that makes nothing durable."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lsp_server.engine import files
from lsp_server.engine.patching import plan_patch
from tests.cli.test_cli_atomic import make, tree


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "state"
    monkeypatch.setenv(files.STATE_DIR_ENV, str(path))
    return path


def _events(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every fsync (by the path its descriptor names), rename and unlink, in order."""
    events: list[tuple[str, str]] = []
    real_fsync, real_replace, real_unlink = os.fsync, os.replace, os.unlink

    def fsync(fd: int) -> None:
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: str, dst: str, **kw: int) -> None:
        events.append(("rename", os.path.basename(dst)))
        real_replace(src, dst, **kw)

    def unlink(path: str, **kw: int) -> None:
        events.append(("unlink", os.path.basename(path)))
        real_unlink(path, **kw)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "unlink", unlink)
    return events


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="names descriptors by /proc")
def test_a_small_apply_flushes_each_thing_once_in_order(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    make(root, {"a.txt": b"old\n", "src/b.txt": b"old\n"})
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-old\n+new\n"
        "*** Update File: src/b.txt\n@@\n-old\n+new\n*** End Patch\n"
    )
    plan = plan_patch(patch, lambda p: files.read_snapshot(str(root), p))
    with files.workspace_lock(str(root)) as sdir:
        pass
    events = _events(monkeypatch)
    files.apply_plan(str(root), plan)
    monkeypatch.undo()
    assert tree(root) == {"a.txt": b"new\n", "src/b.txt": b"new\n"}

    renames = [i for i, (what, name) in enumerate(events) if what == "rename"]
    targets = [events[i][1] for i in renames]
    assert targets[0] == files.JOURNAL and sorted(targets[1:]) == ["a.txt", "b.txt"]
    first, last = renames[1], renames[-1]
    (gone,) = [i for i, e in enumerate(events) if e == ("unlink", files.JOURNAL)]
    folders = {str(root), str(root / "src")}

    def synced(lo: int, hi: int) -> list[str]:
        return [name for what, name in events[lo:hi] if what == "fsync"]

    before = synced(renames[0], first)
    # 1./2.: the journal (its bytes and its name), each temporary file and each folder.
    assert os.path.join(sdir, files.JOURNAL) in before and sdir in before
    assert sum(".agent-edit-" in p for p in before) == 2
    assert folders <= set(before)
    # 3.: the renames durable before the journal goes, and nothing else flushed again (the
    # state folder did not change since 2.).
    assert sorted(synced(last, gone)) == sorted(folders)
    # The commit point itself is made durable.
    assert synced(gone, len(events)) == [sdir]
