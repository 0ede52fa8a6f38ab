"""A Delete File, or the source of a Move, named by a symbolic link removes the link itself,
never the file it points to (cli.py, actions/headless.py `_on_links`). That rule lives in the
headless context only: the language server follows the link and deletes (or moves) the file it
points to, and reports that file. Same request, two fronts, two outcomes on disk."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire
from tests.editor_client import start_session

DELETE = "*** Begin Patch\n*** Delete File: l.txt\n*** End Patch\n"
MOVE = "*** Begin Patch\n*** Update File: l.txt\n*** Move to: m.txt\n-one\n+1\n*** End Patch\n"


def workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "a.txt").write_text("one\n")
    os.symlink("a.txt", root / "l.txt")
    return root


def after(root: Path) -> dict[str, Any]:
    return {
        "a.txt": (root / "a.txt").read_text() if (root / "a.txt").exists() else None,
        "l.txt is a link": (root / "l.txt").is_symlink(),
        "m.txt": (root / "m.txt").read_text() if (root / "m.txt").exists() else None,
    }


@pytest.mark.asyncio
@pytest.mark.parametrize("patch", [DELETE, MOVE], ids=["delete", "move"])
async def test_a_patch_on_a_symlink_changes_the_same_files_through_the_server_and_headless(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patch: str
) -> None:
    editor = await start_session(client, "visual-studio-code", workspace(tmp_path / "l" / "ws"))
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    root = workspace(tmp_path / "h" / "ws")
    async with headless.open(str(root)) as ctx:
        direct = wire(await actions.run(ctx, "applyPatch", {"patch": patch}))
    served = await editor.command("agentEdit.applyPatch", {"patch": patch})
    assert direct["ok"] and served["ok"], (direct, served)
    assert after(root)["a.txt"] == "one\n"  # headless: the link went, its target stayed
    assert after(editor.root) == after(root)
    # The per-file `saved` is the server's own (it asks the editor to save buffers; headless, the
    # result's `saved` says it), as in test_fronts.py.
    assert [{k: v for k, v in f.items() if k != "saved"} for f in served["files"]] == direct[
        "files"
    ]
