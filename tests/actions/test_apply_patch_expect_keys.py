"""applyPatch's `expect` is a precondition the caller asked for: none is dropped unchecked.
An `expect` keyed by a path no section of the patch updates, deletes or moves was ignored and
the patch applied (a misspelt key, `F.txt` for `f.txt`, let a patch computed from stale text
land; one for a file the patch adds was ignored when that file had gone since it was read).
Such a key is now checked against the file it names as it is now."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire

UPDATE = "*** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+ONE\n*** End Patch\n"


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def run(root: Path, args: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, "applyPatch", args))

    return asyncio.run(go())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_text("one\nTWO\n")  # the user changed line 2 since the agent's read
    return ws


def test_an_expect_for_a_missing_file_the_patch_does_not_change_is_stale(
    tmp_path: Path,
) -> None:
    ws = _ws(tmp_path)
    res = run(ws, {"patch": UPDATE, "expect": {"F.txt": {"sha256": sha(b"one\ntwo\n")}}})
    assert res["ok"] is False and res["code"] == "STALE", res
    assert res["details"]["path"] == "F.txt" and res["details"]["current"] is None
    assert "F.txt does not exist" in res["message"]
    assert (ws / "f.txt").read_text() == "one\nTWO\n"


def test_an_expect_for_another_file_holds_only_while_that_file_is_as_expected(
    tmp_path: Path,
) -> None:
    ws = _ws(tmp_path)
    (ws / "other.txt").write_text("changed\n")
    res = run(ws, {"patch": UPDATE, "expect": {"other.txt": {"sha256": sha(b"seen\n")}}})
    assert res["ok"] is False and res["code"] == "STALE", res
    assert res["details"]["path"] == "other.txt"
    assert (ws / "f.txt").read_text() == "one\nTWO\n"
    now = {"other.txt": {"sha256": sha(b"changed\n")}}
    assert run(ws, {"patch": UPDATE, "expect": now})["ok"]
    assert (ws / "f.txt").read_text() == "ONE\nTWO\n"


def test_an_expect_spelt_another_way_for_a_changed_path_is_still_checked(
    tmp_path: Path,
) -> None:
    ws = _ws(tmp_path)
    res = run(ws, {"patch": UPDATE, "expect": {"./f.txt": {"sha256": sha(b"one\ntwo\n")}}})
    assert res["code"] == "STALE", res
    now = sha(b"one\nTWO\n")
    ok = run(ws, {"patch": UPDATE, "expect": {"./f.txt": {"sha256": now}}})
    assert ok["ok"], ok
    assert (ws / "f.txt").read_text() == "ONE\nTWO\n"


def test_an_expect_for_a_file_the_patch_adds_is_stale_when_it_is_absent(
    tmp_path: Path,
) -> None:
    ws = _ws(tmp_path)
    add = "*** Begin Patch\n*** Add File: n.txt\n+x\n*** End Patch\n"
    res = run(ws, {"patch": add, "expect": {"n.txt": {"sha256": sha(b"old\n")}}})
    assert res["ok"] is False and res["code"] == "STALE", res
    assert res["details"]["current"] is None
    assert not (ws / "n.txt").exists()
