"""Through the language server as headless (tests/actions/test_link_twice.py): a patch that
removes a symbolic link in one section and names the file it points to in another is refused
whole, with the file open in the editor or not; nothing is sent to the editor and the link, the
file and its buffer stay as they were (actions/links.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.actions.test_link_twice import TWICE, tree, workspace
from tests.editor_client import Editor


@pytest.mark.asyncio
@pytest.mark.parametrize("opened", [False, True], ids=["closed", "open"])
@pytest.mark.parametrize("patch", list(TWICE.values()), ids=list(TWICE))
async def test_a_link_and_its_target_in_one_patch_are_refused_by_the_server(
    editor: Editor, patch: str, opened: bool
) -> None:
    root = workspace(Path(editor.root))
    if opened:
        editor.open("target")
    result = await editor.command("agentEdit.applyPatch", {"patch": patch})
    assert result["ok"] is False and result["code"] == "INVALID_ARGUMENT", result
    assert "link" in result["message"] and "nothing was changed" in result["message"]
    assert editor.apply_requests == []
    assert tree(root) == {"lnk": "-> target", "target": "old\n"}
    if opened:
        assert editor.text("target") == "old\n"
