"""An OS error that an applier raises instead of returning its result (an `OSError`, not an
`EditError`) is settled at once: rolled back where the writer can, the history entry finished
now (not at the next start), and the result a clear refusal that says "nothing was changed"
only when every file was seen unchanged (actions/execute.py, actions/headless.py).

The error is injected with the disk writer's test hook at each of its steps, and after the files
changed with an attempt that raises once its inner apply has landed."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Iterator
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


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    for name in ("a.txt", "b.txt"):
        (root / name).write_text("one\ntwo\n")
    return root


@pytest.fixture
def raise_at(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Set a point name in the list: the writer raises OSError(EIO) there, once."""
    points: list[str] = []

    def hook(point: str, path: str) -> None:
        if points and point == points[0]:
            points.clear()
            raise OSError(errno.EIO, "Input/output error (injected)")

    monkeypatch.setattr(files, "TEST_HOOK", hook)
    yield points


def run(root: Path, name: str, args: Any, applier: Any = None) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            if applier is not None:
                ctx.applier = applier(ctx.applier)
            return wire(await actions.run(ctx, name, args))

    return asyncio.run(go())


def unfinished(root: Path) -> list[int]:
    async def go() -> list[int]:
        # Opened without settling: what the failed run left unfinished, as it left it.
        from lsp_server.engine.history import open_history

        return [e.id for e in open_history(str(root)).unfinished()]

    return asyncio.run(go())


def leftovers(root: Path, state: Path) -> list[str]:
    temps = [p.name for p in root.rglob("*") if ".agent-edit-" in p.name]
    journals = [p.name for p in state.rglob(files.JOURNAL + "*") if p.name != "journal.jsonl"]
    return temps + journals


@pytest.mark.parametrize("point", ["resolved", "checked", "written", "renamed"])
def test_an_os_error_at_each_writer_step_is_settled_now(
    ws: Path, state: Path, raise_at: list[str], point: str
) -> None:
    raise_at.append(point)
    result = run(ws, "applyPatch", {"patch": PATCH})
    assert raise_at == []  # the error was raised at that step
    assert result["ok"] is False and result["code"] == "IO_ERROR", result
    # (At "renamed" the writer catches it itself and says what its rollback did.)
    said = "put back as it was" if point == "renamed" else "nothing was changed"
    assert said in result["message"], result
    assert result["committed"] == []
    assert (ws / "a.txt").read_text() == (ws / "b.txt").read_text() == "one\ntwo\n"
    # Rolled back now, and the entry finished now: nothing waits for the next start.
    assert leftovers(ws, state) == []
    assert unfinished(ws) == []
    listed = run(ws, "history", {})
    (entry,) = [e for e in listed["entries"] if e["action"] == "applyPatch"]
    assert entry["id"] == result["details"]["editId"]
    assert entry["outcome"] == "IO_ERROR", entry


class LandsThenRaises:
    """An attempt whose apply lands (the inner one) and then raises an OSError."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def apply(self, edit_id: int, meanwhile: Any = None) -> Any:
        await self.inner.apply(edit_id, meanwhile)
        raise OSError(errno.EIO, "Input/output error (injected)")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Landing:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def start(self, plan: Any, where: Any) -> LandsThenRaises:
        return LandsThenRaises(self.inner.start(plan, where))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_an_os_error_after_the_files_changed_never_says_nothing_changed(ws: Path) -> None:
    result = run(ws, "applyPatch", {"patch": PATCH}, applier=Landing)
    assert result["ok"] is False and result["code"] == "UNVERIFIED", result
    assert "nothing was changed" not in result["message"]
    assert {c["path"] for c in result["committed"]} == {"a.txt", "b.txt"}, result
    assert "a.txt" in result["message"] and "b.txt" in result["message"]
    assert (ws / "a.txt").read_text() == "one\nTWO\n"
    assert unfinished(ws) == []
    listed = run(ws, "history", {})
    (entry,) = [e for e in listed["entries"] if e["action"] == "applyPatch"]
    assert entry["outcome"] == "UNVERIFIED", entry
    # What landed can be undone from the history.
    undo = run(ws, "undo", {"editId": result["details"]["editId"]})
    assert undo["ok"], undo
    assert (ws / "a.txt").read_text() == (ws / "b.txt").read_text() == "one\ntwo\n"
