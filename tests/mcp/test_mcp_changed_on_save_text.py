"""The MCP tool text (what the model reads) says when the editor's save changed the edit's
text (`changedOnSave`): the structured result alone was not shown to every model."""

from __future__ import annotations

from lsp_server.mcp.tools import BY_NAME, model_text


def test_the_models_text_names_what_the_save_changed() -> None:
    result = {
        "ok": True,
        "editId": 3,
        "status": "applied",
        "files": [
            {
                "path": "t.py",
                "change": "update",
                "sha256": "a" * 64,
                "saved": False,
                "changedOnSave": {"sha256": "b" * 64, "diff": "-p = 1   \n+p = 1\n"},
            }
        ],
        "diff": "-p = 0\n+p = 1   \n",
        "diagnostics": [],
        "saved": False,
        "via": "editor",
    }
    text = model_text(BY_NAME["replace"], result)
    assert "+p = 1   \n" in text
    assert (
        f"The editor's save then changed t.py (sha256 {'b' * 64} now):\n-p = 1   \n+p = 1\n" in text
    )
