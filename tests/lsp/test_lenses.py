"""Code lenses are the LSP layer's presentation: the engine says where the undoable agent edits
sit (`History.lenses`, no titles), lsp/lenses.py titles them and names their commands."""

from __future__ import annotations

import pytest
from lsprotocol import types as t

from lsp_server.engine.history import History
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_replace
from lsp_server.lsp.lenses import code_lenses, lens_title
from tests.editor_client import Editor
from tests.history_helpers import apply_plan, snap


def test_each_span_gets_a_titled_lens_an_undo_and_a_diff_on_its_lines() -> None:
    spans = [
        {"line": 2, "endLine": 3, "editId": 7, "action": "replace"},
        {"line": 9, "endLine": 11, "editId": 4, "action": "applyPatch"},
    ]
    got = [
        (x.range.start.line, x.range.end.line, x.command.title, x.command.command,
         x.command.arguments)
        for x in code_lenses(spans)
        if x.command is not None
    ]  # fmt: skip
    diff7, diff4 = {"format": "diff", "editId": 7}, {"format": "diff", "editId": 4}
    assert got == [
        (2, 3, "agent edit #7", "agentEdit.history", [diff7]),
        (2, 3, "undo", "agentEdit.undo", [{"editId": 7}]),
        (2, 3, "diff", "agentEdit.history", [diff7]),
        (9, 11, "agent edit #4", "agentEdit.history", [diff4]),
        (9, 11, "undo", "agentEdit.undo", [{"editId": 4}]),
        (9, 11, "diff", "agentEdit.history", [diff4]),
    ]
    assert code_lenses([]) == []


def test_the_engine_gives_places_not_titles() -> None:
    fs = {"f.py": "a\nb\nc\n"}
    history = History()
    plan = Plan("replace", (plan_replace(snap(fs, "f.py"), "b\n", "B\n"),))
    entry_id = history.begin(plan, {"path": "f.py"})
    fs = apply_plan(fs, plan)
    history.finish(entry_id, "applied")
    (span,) = history.lenses("f.py", snap(fs, "f.py"))
    assert span == {"line": 1, "endLine": 2, "editId": entry_id, "action": "replace"}
    assert lens_title(entry_id) == f"agent edit #{entry_id}"


@pytest.mark.asyncio
async def test_the_server_serves_the_titled_lenses_over_an_agent_edit(vscode: Editor) -> None:
    vscode.write_file("h.txt", "one\ntwo\nthree\n")
    vscode.open("h.txt")
    done = await vscode.command(
        "agentEdit.replace", {"path": "h.txt", "oldText": "two", "newText": "2"}
    )
    assert done["ok"], done
    lenses = await vscode.client.text_document_code_lens_async(
        t.CodeLensParams(text_document=t.TextDocumentIdentifier(uri=vscode.uri("h.txt")))
    )
    titles = [(x.range.start.line, x.command.title) for x in lenses if x.command is not None]
    assert titles == [(1, f"agent edit #{done['editId']}"), (1, "undo"), (1, "diff")]
