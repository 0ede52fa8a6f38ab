"""Undoing a Delete gives the file back as private as it was.

The history kept a deleted file's text but not its permission bits, and the undo created it
with the umask's: a 0600 secret (`.env`, a key) came back 0644, readable by every user on the
machine; a 0755 script came back not executable. The delete's record now keeps the bits the
file was read with (set-id bits aside), and the undo creates the file with them."""

from __future__ import annotations

import asyncio
import json
import os
import stat
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


def run(root: Path, action: str, args: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, action, args))

    return asyncio.run(go())


@pytest.mark.parametrize("mode", [0o600, 0o755, 0o640, 0o4755])
def test_an_undone_delete_has_the_mode_it_had(tmp_path: Path, mode: int) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "secret.env"
    f.write_text("TOKEN=1\n")
    os.chmod(f, mode)
    old = os.umask(0o022)
    try:
        r = run(
            ws,
            "applyPatch",
            {"patch": "*** Begin Patch\n*** Delete File: secret.env\n*** End Patch\n"},
        )
        assert r["ok"], r
        assert not f.exists()
        u = run(ws, "undo", {"editId": r["editId"]})
    finally:
        os.umask(old)
    assert u["ok"], u
    assert f.read_text() == "TOKEN=1\n"
    assert stat.S_IMODE(f.stat().st_mode) == mode & 0o777  # set-id bits are not given back


def test_a_journal_without_the_mode_still_undoes_with_the_umask(
    tmp_path: Path, state: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "a.txt"
    f.write_text("a\n")
    os.chmod(f, 0o600)
    r = run(ws, "applyPatch", {"patch": "*** Begin Patch\n*** Delete File: a.txt\n*** End Patch\n"})
    assert r["ok"], r
    # A journal written before the mode was kept: its records have none.
    (journal,) = state.rglob("journal.jsonl")
    lines = journal.read_text().splitlines()
    assert any('"mode":384' in line for line in lines), lines
    journal.write_text("".join(line.replace('"mode":384', '"x":0') + "\n" for line in lines))
    old = os.umask(0o022)
    try:
        u = run(ws, "undo", {"editId": r["editId"]})
    finally:
        os.umask(old)
    assert u["ok"], u
    assert stat.S_IMODE(f.stat().st_mode) == 0o644


def test_the_record_keeps_the_mode_and_ignores_a_bad_one() -> None:
    from lsp_server.engine.undo.changes import ChangeRecord

    rec = ChangeRecord.from_json({"path": "a", "change": "delete", "mode": 0o600})
    assert rec.mode == 0o600 and json.loads(json.dumps(rec.to_json()))["mode"] == 0o600
    for bad in (-1, 0o10000, "0600", 1.5, True, None):
        assert ChangeRecord.from_json({"path": "a", "change": "delete", "mode": bad}).mode is None
