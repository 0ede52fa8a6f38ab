"""A file that a patch leaves exactly as it is (a chunk of context lines only, `-a` then `+a`,
a Delete and an Add of the same text) is not rewritten, nor reported changed: it was renamed
over with a new inode and mtime (an editor's "changed on disk", a rebuild), and the result said
"M f.txt" over an empty diff. A patch that changes nothing at all is NO_CHANGE, as a replace
or a write of the same text is."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "f.txt").write_text("a\nb\n")
    (root / "g.txt").write_text("x\n")
    return root


def run(root: Path, patch: str) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, "applyPatch", {"patch": patch}))

    return asyncio.run(go())


NO_OPS = [
    "*** Update File: f.txt\n@@\n a\n b\n",
    "*** Update File: f.txt\n@@\n-a\n+a\n",
    "*** Delete File: f.txt\n*** Add File: f.txt\n+a\n+b\n",
]


@pytest.mark.parametrize("section", NO_OPS)
def test_a_patch_that_changes_nothing_is_no_change(ws: Path, section: str) -> None:
    before = (ws / "f.txt").stat()
    res = run(ws, f"*** Begin Patch\n{section}*** End Patch\n")
    assert res["ok"] is False and res["code"] == "INVALID_ARGUMENT", res
    assert res["details"]["reason"] == "NO_CHANGE"
    after = (ws / "f.txt").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.parametrize("section", NO_OPS)
def test_a_file_left_as_it_is_is_neither_rewritten_nor_reported(ws: Path, section: str) -> None:
    before = (ws / "f.txt").stat()
    patch = f"*** Begin Patch\n{section}*** Update File: g.txt\n@@\n-x\n+y\n*** End Patch\n"
    res = run(ws, patch)
    assert res["ok"], res
    assert [f["path"] for f in res["files"]] == ["g.txt"]
    assert "f.txt" not in res["diff"]
    assert (ws / "g.txt").read_text() == "y\n" and (ws / "f.txt").read_text() == "a\nb\n"
    after = (ws / "f.txt").stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_newline_added_at_the_end_is_a_change(ws: Path) -> None:
    (ws / "f.txt").write_text("a\nb")  # the patch's result ends with a newline, as Codex's
    res = run(ws, "*** Begin Patch\n*** Update File: f.txt\n@@\n a\n-b\n+b\n*** End Patch\n")
    assert res["ok"], res
    assert (ws / "f.txt").read_text() == "a\nb\n"


def test_the_no_change_check_does_not_split_a_planned_file_into_lines() -> None:
    """Deciding that a planned file changes is made from the edits' offsets: splitting each
    file of a 1,000-file patch into lines was the cost the history's records had just shed
    (undo/changes.py `_record_hunks_at`). Edits that change nothing still count as none."""
    from lsp_server.actions.apply_patch import _changes_nothing
    from lsp_server.engine.patching import plan_hunks
    from lsp_server.engine.text import Snapshot
    from lsp_server.engine.v4a import parse_patch

    body = "".join(f"line {i}\n" for i in range(40))
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n line 9\n-line 10\n+LINE 10\n line 11\n"
        "*** Update File: b.txt\n@@\n line 9\n-line 10\n+line 10\n line 11\n*** End Patch\n"
    )
    plan = plan_hunks(parse_patch(patch), lambda p: Snapshot(p, body))
    a, b = plan.changes
    assert not _changes_nothing(a)
    assert _changes_nothing(b)
    assert a.before.lines_if_split() is None and b.before.lines_if_split() is None
