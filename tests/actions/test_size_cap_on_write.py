"""The size cap for edits holds for what an edit writes, not only for what it reads: an Add
File or a `write` over the cap landed, and then its own undo (a delete reads the file first)
was refused TOO_LARGE while the history called the edit undoable."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.policy.resolution import DEFAULT_MAX_BYTES
from lsp_server.engine.results import wire

LINE = "x" * 99 + "\n"
OVER = LINE * (DEFAULT_MAX_BYTES // len(LINE) + 1)  # just over the cap


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


def run(root: Path, name: str, args: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, name, args))

    return asyncio.run(go())


def _refused(res: dict[str, Any], path: str) -> None:
    assert res["ok"] is False and res["code"] == "TOO_LARGE", {
        k: v for k, v in res.items() if k != "diff"
    }
    assert res["details"]["path"] == path
    assert res["details"]["size"] > res["details"]["cap"] == DEFAULT_MAX_BYTES


def test_an_add_file_over_the_cap_is_refused(ws: Path) -> None:
    body = "".join("+" + line for line in OVER.splitlines(keepends=True))
    patch = f"*** Begin Patch\n*** Add File: big.txt\n{body}*** End Patch\n"
    for dry in (True, False):
        _refused(run(ws, "applyPatch", {"patch": patch, "dryRun": dry}), "big.txt")
    assert not (ws / "big.txt").exists()


def test_a_write_over_the_cap_is_refused(ws: Path) -> None:
    _refused(run(ws, "write", {"path": "big.txt", "text": OVER}), "big.txt")
    assert not (ws / "big.txt").exists()


def test_a_replace_that_grows_a_file_over_the_cap_is_refused(ws: Path) -> None:
    (ws / "a.txt").write_text("head\nMARK\n")
    res = run(ws, "replace", {"path": "a.txt", "oldText": "MARK", "newText": OVER})
    _refused(res, "a.txt")
    assert (ws / "a.txt").read_text() == "head\nMARK\n"


def test_an_edit_up_to_the_cap_lands_and_undoes(ws: Path) -> None:
    text = OVER[: DEFAULT_MAX_BYTES - 1] + "\n"  # exactly the cap
    made = run(ws, "write", {"path": "big.txt", "text": text})
    assert made["ok"], made
    assert (ws / "big.txt").stat().st_size == DEFAULT_MAX_BYTES
    undone = run(ws, "undo", {"editId": made["editId"]})
    assert undone["ok"], {k: v for k, v in undone.items() if k != "diff"}
    assert not (ws / "big.txt").exists()


def test_a_replace_in_a_large_ascii_buffer_is_not_encoded_to_be_measured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The cap's check stays O(edit) for an open buffer well under it: a 4.5 MB ASCII buffer
    (100k lines) was joined and encoded whole at every replace, its bound taken as 4 bytes a
    character. Its new text must not even be built."""
    from lsp_server.actions.execute import check_sizes
    from lsp_server.engine.model import FileChange, LineEdit
    from lsp_server.engine.text import Snapshot

    text = "".join(f"    value_{i} = compute(alpha, beta, gamma) + {i}\n" for i in range(100_000))
    snap = Snapshot("big.py", text, source="buffer", version=3)
    change = FileChange("update", snap, (LineEdit(500, 501, ("x = 1\n",)),))

    def built(self: FileChange) -> str:
        raise AssertionError("the whole new text was built to check the size cap")

    monkeypatch.setattr(FileChange, "new_text", property(built))
    check_sizes([change], 10 * 1024 * 1024)  # under the cap: passes without building it
