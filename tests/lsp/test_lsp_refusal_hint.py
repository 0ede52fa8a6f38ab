"""A refusal's hint sends the agent to the editor's reason, not to a guess.

Emacs refuses an edit of a read-only buffer (read-only-mode), and one of a buffer the user
closed meanwhile, with the reason in `failureReason`. The hint said "The file probably changed
in the editor: read it again and recompute the edit": the agent re-read an unchanged file and
sent the same edit again, refused again, where only the user can help (C-x C-q)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.editor_client import start_session

READ_ONLY = "Emacs could not apply it (Buffer is read-only: #<buffer a.txt>); nothing was applied"


@pytest.mark.asyncio
async def test_a_refusal_for_a_read_only_buffer_points_at_its_reason(
    client: LanguageClient, tmp_path: Path
) -> None:
    ed = await start_session(client, "emacs", tmp_path)
    ed.write_file("a.txt", "one\n")
    ed.open("a.txt")
    await ed.command("agentEdit.read", {"path": "a.txt"})
    ed.reject_all, ed.reject_reason = True, READ_ONLY
    result = await ed.command(
        "agentEdit.replace", {"path": "a.txt", "oldText": "one", "newText": "1"}
    )
    assert result["code"] == "CLIENT_REJECTED" and READ_ONLY in result["message"], result
    hint = result["hint"]
    assert hint.startswith("Nothing was changed."), hint
    assert "probably changed" not in hint, hint
    assert "reason" in hint and "read-only" in hint and "ask the user" in hint, hint
