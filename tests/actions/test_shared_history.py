"""A language server and a headless run (the CLI's context) on one workspace share one history
journal: each sees the other's edits at once, edit ids never collide, and each undoes the
other's edit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire
from tests.editor_client import STATE_DIR, start_session


async def cli(root: Path, name: str, args: dict[str, Any]) -> dict[str, Any]:
    async with headless.open(str(root)) as ctx:
        return wire(await actions.run(ctx, name, args))


@pytest.mark.asyncio
async def test_server_and_headless_undo_each_others_edits(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", STATE_DIR)  # the server's
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\n")
    (root / "b.txt").write_text("bee\n")
    editor = await start_session(client, "visual-studio-code", root)

    by_cli = await cli(root, "replace", {"path": "a.txt", "oldText": "one", "newText": "1"})
    assert by_cli["ok"], by_cli
    by_server = await editor.command(
        "agentEdit.replace", {"path": "b.txt", "oldText": "bee", "newText": "B"}
    )
    assert by_server["ok"], by_server
    assert by_server["editId"] > by_cli["editId"]
    listed = await editor.command("agentEdit.history", {})
    assert {by_cli["editId"], by_server["editId"]} <= {e["id"] for e in listed["entries"]}

    undone = await editor.command("agentEdit.undo", {"editId": by_cli["editId"]})
    assert undone["ok"], undone
    assert (root / "a.txt").read_text() == "one\n"
    undone = await cli(root, "undo", {"editId": by_server["editId"]})
    assert undone["ok"], undone
    assert (root / "b.txt").read_text() == "bee\n"

    ids = [e["id"] for e in (await cli(root, "history", {}))["entries"]]
    assert len(ids) == len(set(ids)) == 4, ids
