"""Real answers of the server match the result schemas the contract exports (the MCP server will
give them as outputSchema): successes and refusals of every action, buffer and disk, dry runs."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from lsp_server import contract
from tests.editor_client import Editor

PATCH = "*** Begin Patch\n*** Update File: b.txt\n@@\n-bee\n+BEE\n*** End Patch\n"
REQUESTS: list[tuple[str, dict[str, Any], bool]] = [
    ("read", {"path": "a.txt"}, True),
    ("read", {"path": "b.txt", "startLine": 1, "endLine": 1}, True),
    ("read", {"path": "missing.txt"}, False),
    ("read", {"path": "../outside.txt"}, False),
    ("replace", {"path": "a.txt", "oldText": "alpha", "newText": "ALPHA", "dryRun": True}, True),
    ("replace", {"path": "a.txt", "oldText": "alpha", "newText": "ALPHA"}, True),
    ("replace", {"path": "a.txt", "oldText": "nowhere", "newText": "x"}, False),
    (
        "replace",
        {"path": "a.txt", "oldText": "x", "newText": "y", "expect": {"version": 99}},
        False,
    ),
    ("write", {"path": "new.txt", "text": "fresh\n"}, True),
    ("write", {"path": "d.txt", "text": "never read\n"}, False),
    ("write", {"path": "c.txt", "text": "x\0"}, False),
    ("applyPatch", {"patch": PATCH, "dryRun": True}, True),
    ("applyPatch", {"patch": PATCH}, True),
    ("applyPatch", {"patch": "not a patch"}, False),
    ("history", {}, True),
    ("history", {"format": "diff"}, True),
    ("history", {"texts": True, "editId": 2}, True),
    ("undo", {"editId": 2, "dryRun": True}, True),
    ("undo", {"editId": 2}, True),
    ("undo", {"editId": 999}, False),
]


@pytest.mark.asyncio
async def test_answers_match_the_exported_result_schemas(vscode: Editor) -> None:
    vscode.write_file("a.txt", "alpha\nbeta\n")
    vscode.write_file("b.txt", "bee\n")
    vscode.write_file("d.txt", "dee\n")
    vscode.open("a.txt")  # one buffer, the others on disk
    seen = []
    for name, arg, ok in REQUESTS:
        answer = await vscode.command(f"agentEdit.{name}", arg)
        assert answer["ok"] is ok, (name, arg, answer)
        errors = sorted(
            e.message
            for e in jsonschema.Draft202012Validator(contract.result_schema(name)).iter_errors(
                answer
            )
        )
        assert errors == [], (name, arg, answer)
        seen.append((name, answer.get("status") or answer.get("code")))
    # the table reached both shapes of every action
    assert {n for n, _ in seen} == set(contract.ACTIONS)


def test_result_schemas_refuse_what_no_answer_looks_like() -> None:
    v = jsonschema.Draft202012Validator(contract.result_schema("replace"))
    assert not v.is_valid({"ok": True})
    assert not v.is_valid(
        {"ok": False, "code": "NOPE", "message": "", "hint": "", "details": {}, "committed": []}
    )
    assert v.is_valid(
        {"ok": False, "code": "STALE", "message": "m", "hint": "h", "details": {}, "committed": []}
    )
