"""`execute` records an edit once whatever its applier does: an attempt whose `apply` raises
(an EditError from a rollback's re-read) instead of returning
`Applied(error)` must finish the entry it began, not leave it unfinished and have the refusal
recorder add a second one (actions/execute.py, actions/__init__.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.results import wire


class Raising:
    """An attempt whose `apply` raises `exc` (the inner attempt otherwise)."""

    def __init__(self, inner: Any, exc: BaseException) -> None:
        self.inner = inner
        self.exc = exc

    async def apply(self, edit_id: int, meanwhile: Any = None) -> Any:
        raise self.exc

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class RaisingApplier:
    def __init__(self, inner: Any, exc: BaseException) -> None:
        self.inner = inner
        self.exc = exc

    def start(self, plan: Any, where: Any) -> Raising:
        return Raising(self.inner.start(plan, where), self.exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.asyncio
async def test_an_apply_that_raises_is_recorded_once_and_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exc = EditError(Code.IO_ERROR, "the rollback could not read a.txt.", "Check it.", {})
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    async with headless.open(str(root)) as ctx:
        ctx.applier = RaisingApplier(ctx.applier, exc)  # type: ignore[assignment]
        args = {"path": "a.txt", "oldText": "one", "newText": "1"}
        result = wire(await actions.run(ctx, "replace", args))
    assert result["ok"] is False and result["code"] == str(Code.IO_ERROR), result
    async with headless.open(str(root)) as ctx:
        entries = ctx.history.unfinished()
        listed = wire(await actions.run(ctx, "history", {}))
    assert entries == []
    replaces = [e for e in listed["entries"] if e["action"] == "replace"]
    assert len(replaces) == 1, listed["entries"]
    assert replaces[0]["id"] == result["details"]["editId"], (replaces, result)
    assert (root / "a.txt").read_text() == "one\n"
