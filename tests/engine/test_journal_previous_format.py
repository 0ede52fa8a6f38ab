"""A history journal written by the previous format (main at 0941b12, before the pre-image pack:
baselines as JSON text, a big one as a `$blob`) is still read: the same entries and net diff,
undo of its edits, and new edits (recorded the new way) on top of it."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.history import History
from lsp_server.engine.journal import Journal
from lsp_server.engine.results import wire

DATA = Path(__file__).parent / "data" / "journal_main_0941b12"


def big(edited: bool) -> str:
    lines = [f"value_{j} = compute({j}, {j * 7})  # line {j}\n" for j in range(2000)]
    if edited:
        lines[7] = "value_seven = 7\n"
    return "".join(lines)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The workspace as make_journal.py left it, its state folder holding that journal."""
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "big.py").write_text(big(edited=True))
    (root / "a.txt").write_text("alpha\nBETA\ngamma\n")
    (root / "b.txt").write_bytes(b"\xef\xbb\xbfone\r\nTWO\r\n")
    (root / "new.txt").write_text("fresh\n")
    sdir = Journal(root).dir
    sdir.mkdir(parents=True)
    shutil.copy(DATA / "journal.jsonl", sdir / "journal.jsonl")
    shutil.copytree(DATA / "blobs", sdir / "blobs")
    return root


def run(root: Path, name: str, args: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, name, args))

    return asyncio.run(go())


def test_its_entries_and_net_diff_read_as_main_showed_them(ws: Path) -> None:
    assert History.load(Journal(ws)).skipped == 0
    assert run(ws, "history", {}) == json.loads((DATA / "history.json").read_text())


def test_its_edits_undo_and_new_ones_go_on_top(ws: Path) -> None:
    undo = run(ws, "undo", {"editId": 2})  # b.txt's replace: BOM and CRLF kept
    assert undo["ok"], undo
    assert (ws / "b.txt").read_bytes() == b"\xef\xbb\xbfone\r\ntwo\r\n"
    undo = run(ws, "undo", {"editId": 1})  # the patch: big.py (its baseline a blob), a.txt, new.txt
    assert undo["ok"], undo
    assert (ws / "big.py").read_text() == big(edited=False)
    assert (ws / "a.txt").read_text() == "alpha\nbeta\ngamma\n"
    assert not (ws / "new.txt").exists()
    # A new edit, 20 files at once (its baselines in a pack), on top of the old journal.
    patch = ["*** Begin Patch\n"]
    for i in range(20):
        (ws / f"m{i}.py").write_text("".join(f"line {i} {j} {'x' * 40}\n" for j in range(80)))
        patch += [f"*** Update File: m{i}.py\n", "@@\n", f"-line {i} 5 {'x' * 40}\n", "+five\n"]
    patch += ["*** Update File: a.txt\n", "@@\n", "-gamma\n", "+GAMMA\n", "*** End Patch\n"]
    result = run(ws, "applyPatch", {"patch": "".join(patch)})
    assert result["ok"], result
    hist = run(ws, "history", {})
    net = {f["path"]: f for f in hist["net"]}
    assert "m19.py" in net and "+five\n" in net["m19.py"]["diff"]
    assert "-beta\n" not in net["a.txt"]["diff"] and "+GAMMA\n" in net["a.txt"]["diff"]
    assert History.load(Journal(ws)).skipped == 0
    undo = run(ws, "undo", {"editId": result["editId"]})
    assert undo["ok"], undo
    assert (ws / "m0.py").read_text().count("five") == 0
