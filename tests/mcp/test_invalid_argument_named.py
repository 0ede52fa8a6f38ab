"""A malformed call's refusal names the argument at fault in `details.argument` (product.md 2.1:
stable field names an agent can rely on), through the disk front and the editor's alike.

The MCP server and the editor's endpoint used to guess it from the message: the first quoted
word, so `match: "fuzzy"` named the argument `fuzzy`, `format: "xml"` named `xml`, and
"startLine is out of range" named none. The check that refuses the call knows the argument
(arguments.ContractError); InvalidArguments now carries it to every front.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lsp_server.mcp.router import Router
from tests.editor_client import Editor

CASES: list[tuple[str, dict[str, Any], str]] = [
    ("replace", {"path": "a.txt", "oldText": "a", "newText": "b", "match": "fuzzy"}, "match"),
    ("history", {"format": "xml"}, "format"),
    ("read", {"path": "a.txt", "startLine": 10**30}, "startLine"),
    ("history", {"editId": 2**60}, "editId"),
    (
        "replace",
        {"path": "a.txt", "oldText": "a", "newText": "b", "expect": {"version": "1"}},
        "expect.version",
    ),
    ("read", {"path": "a.txt", "extra": 1}, "extra"),
    ("undo", {}, "editId"),
]


def _check(got: dict[str, Any], argument: str) -> None:
    assert got["ok"] is False and got["code"] == "INVALID_ARGUMENT", got
    assert got["details"]["argument"] == argument, got


@pytest.mark.asyncio
@pytest.mark.parametrize(("action", "args", "argument"), CASES)
async def test_on_disk(tmp_path: Path, action: str, args: dict[str, Any], argument: str) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    got = await Router(str(tmp_path)).call(action, args)
    assert got["via"] == "disk", got
    _check(got, argument)


@pytest.mark.asyncio
async def test_through_the_editor(vscode: Editor) -> None:
    vscode.write_file("a.txt", "a\n")
    vscode.open("a.txt")
    await vscode.command("agentEdit.history", {})
    router = Router(str(vscode.root))
    for action, args, argument in CASES:
        got = await router.call(action, args)
        assert got["via"] == "editor", got
        _check(got, argument)
