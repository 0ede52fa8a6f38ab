"""A server start must not settle an interrupted edit while its disk rollback is pending.

The CLI was killed mid-apply; when the server starts, another agent-edit process holds the
workspace lock (about to roll that apply back), so the server's own recovery finds it busy.
Settling the edit then, from the half-applied disk, would record PARTIAL; the rollback that
follows puts every file back and the history would say "part of it landed" for ever.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types as t

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine import files
from lsp_server.engine.results import wire
from tests.actions.test_recorded_apply import killed, make_tree
from tests.editor_client import STATE_DIR, server_config, start_session


@pytest.mark.asyncio
async def test_a_start_leaves_an_edit_whose_rollback_is_pending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", STATE_DIR)
    ws = tmp_path / "ws"
    ws.mkdir()
    old, patch = make_tree(ws)
    killed(ws, Path(STATE_DIR), patch, "25")  # 20 temporaries, then 5 renames
    with files.workspace_lock(str(ws)):  # another process, about to roll it back
        client = await server_config().start()
        try:
            await start_session(client, "visual-studio-code", ws)
            client.initialized(t.InitializedParams())
            while True:
                message = await asyncio.wait_for(
                    client.wait_for_notification(t.WINDOW_SHOW_MESSAGE), 10
                )
                if "was interrupted" in message.message:
                    break
            assert "PARTIAL" not in message.message, message.message
        finally:
            await client.shutdown_session()
            await client.stop()
    # The rollback, then the edit settled from what it left.
    async with headless.open(str(ws)) as ctx:
        hist = wire(await actions.run(ctx, "history", {}))
    assert {p: (ws / p).read_bytes() for p in old} == old
    (entry,) = [e for e in hist["entries"] if e["action"] == "applyPatch"]
    assert entry["outcome"] == "NOT_APPLIED", entry
