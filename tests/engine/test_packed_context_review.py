"""Review of branch rpipeline's change records written without their context lines
(undo/changes.py `CONTEXT_IN_PACK`): read back, in the same process right after the apply
(as an editor's server would load the journal the CLI just wrote), they are the records the
apply made, for hunks at a file's start, end (with and without a final newline), beside each
other and in the middle, CRLF and lone-CR files, a BOM; and `with_context` over random edits
gives the hunks `_record_hunks` made, or the bare ones, never other context lines.
"""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.history import open_history
from lsp_server.engine.model import EditedLines, LineEdit
from lsp_server.engine.undo.changes import (
    CONTEXT_IN_PACK,
    ChangeRecord,
    _record_hunks,
    with_context,
)


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def _file(i: int) -> tuple[bytes, list[str]]:
    eol = ["\n", "\r\n", "\r"][i % 3]
    lines = [f"v{i}_{j} = {j}  # padding padding padding padding" for j in range(200)]
    data = eol.join(lines).encode() + (eol.encode() if i % 4 else b"")
    return (b"\xef\xbb\xbf" + data if i == 5 else data), lines


def test_records_read_back_in_process_are_the_ones_made(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    patch = ["*** Begin Patch"]
    for i in range(20):
        data, lines = _file(i)
        (ws / f"f{i}.txt").write_bytes(data)
        patch.append(f"*** Update File: f{i}.txt")
        # the first line, two hunks close together, the middle, the last line
        for at in (0, 60, 66, 100, 199):
            patch += ["@@", *(f" {x}" for x in lines[max(0, at - 3) : at])]
            patch += [f"-{lines[at]}", f"+new {i} {at}"]
            patch += [f" {x}" for x in lines[at + 1 : at + 3]]
    patch.append("*** End Patch")
    text = "\n".join(patch) + "\n"

    async def go() -> dict[int, Any]:
        async with headless.open(str(ws)) as ctx:
            result = await actions.run(ctx, "applyPatch", {"patch": text})
            assert result.ok, result
            return {e.id: e.changes for e in ctx.history.entries}

    made = asyncio.run(go())
    journal = (Path(open_history(str(ws)).journal.path)).read_bytes()  # type: ignore[union-attr]
    begin = json.loads(journal.splitlines()[0])
    assert begin["t"] == "begin" and begin.get("pack")
    assert sum(c.get("context") == CONTEXT_IN_PACK for c in begin["changes"]) == 20
    read = {e.id: e.changes for e in open_history(str(ws)).entries}
    assert read == made


def test_with_context_is_the_recorded_hunks_or_none() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(5000):
        n = rng.choice([0, 1, 2, 3, 5, 8, 12, 30])
        words = ["a", "b", "", "x" * 40]
        old = [rng.choice(words) + str(rng.randint(0, 3)) for _ in range(n)]
        if rng.random() < 0.6:
            old.append("")  # a final newline: LSP's last line is empty
        edits: list[LineEdit] = []
        pos = 0
        for _ in range(rng.randint(1, 4)):
            start = pos + rng.choice([0, 0, 1, 2, 3, 4, 6, 9])
            if start > len(old):
                break
            end = min(len(old), start + rng.choice([0, 1, 1, 2, 3]))
            new = tuple(f"N{rng.randint(0, 9)}" for _ in range(rng.choice([0, 1, 2])))
            edits.append(LineEdit(start, end, new or (("ins",) if start == end else ())))
            pos = end
        if not edits:
            continue
        hunks = _record_hunks(old, EditedLines(old, edits), edits)
        rec = ChangeRecord("f", "update", None, False, False, None, None, len(old), hunks)
        lean = json.loads(json.dumps(rec.to_json(False)))
        if lean.get("context") != CONTEXT_IN_PACK:
            continue
        got = with_context(lean, old).hunks
        bare = tuple(h._replace(ctx_before=(), ctx_after=()) for h in hunks)
        assert got in (hunks, bare), (old, edits)
        checked += 1
    assert checked > 2000
