"""Review (rtrust): an exception that is neither an EditError nor an OSError (a UnicodeError, a
MemoryError, Ctrl-C's KeyboardInterrupt) raised at a step of the disk writer after the history
entry began. Before the fix it escaped `execute`: at "renamed" one file of a two-file patch was
left changed and the other not (all or nothing broken until the next start), the writer's
temporary file and journal stayed, and the entry stayed unfinished. Now what the writer left is
rolled back under the lock still held, the entry is finished from what the files show, and the
result never says "ok" (an interrupt still goes on up, settled)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine import files
from lsp_server.engine.results import wire

PATCH = """*** Begin Patch
*** Update File: a.txt
@@
-two
+TWO
*** Update File: b.txt
@@
-two
+TWO
*** End Patch
"""

KINDS: dict[str, Callable[[], BaseException]] = {
    "unicode": lambda: UnicodeDecodeError("utf-8", b"\xff", 0, 1, "injected"),
    "memory": MemoryError,
    "interrupt": KeyboardInterrupt,
}


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def run(root: Path, name: str, args: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, name, args))

    return asyncio.run(go())


def unfinished(root: Path) -> list[int]:
    from lsp_server.engine.history import open_history

    async def go() -> list[int]:
        return [e.id for e in open_history(str(root)).unfinished()]

    return asyncio.run(go())


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("point", ["resolved", "written", "renamed"])
def test_a_non_os_error_at_a_writer_step_is_settled_now(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch, kind: str, point: str
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in ("a.txt", "b.txt"):
        (ws / name).write_text("one\ntwo\n")
    fired: list[str] = []

    def hook(at: str, _path: str) -> None:
        if at == point and not fired:
            fired.append(at)
            raise KINDS[kind]()

    monkeypatch.setattr(files, "TEST_HOOK", hook)
    if kind == "interrupt":
        with pytest.raises(KeyboardInterrupt):
            run(ws, "applyPatch", {"patch": PATCH})
    else:
        result = run(ws, "applyPatch", {"patch": PATCH})
        assert result["ok"] is False and result["code"] == "IO_ERROR", result
        assert "nothing was changed" in result["message"], result
        assert result["committed"] == []
    monkeypatch.setattr(files, "TEST_HOOK", None)
    assert fired == [point]
    # All or nothing holds now, not only after the next start's recovery.
    assert (ws / "a.txt").read_text() == (ws / "b.txt").read_text() == "one\ntwo\n"
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt", "b.txt"]  # no temporary file
    assert [p.name for p in state.rglob(files.JOURNAL + "*") if p.name != "journal.jsonl"] == []
    assert unfinished(ws) == []
    listed = run(ws, "history", {})
    assert [e["outcome"] for e in listed["entries"]] == ["IO_ERROR"], listed
