"""A rollback that cannot revert a file the user typed into says so, and nothing more.

A two-file edit where one file shows neither the old nor the new text (eglot sent the edit and
the user's typing in one didChange) is rolled back where it can be, and reported PARTIAL. The
message said "The editor has not answered the edit itself" although it had (applied: true):
that sentence belongs to a rollback made while the editor's answer is still due."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from tests.editor_client import start_session

PATCH = """*** Begin Patch
*** Update File: f.txt
@@
-two
+2
*** Update File: g.txt
@@
-three
+3
*** End Patch
"""


@pytest.mark.asyncio
async def test_a_partial_edit_after_the_editors_answer_does_not_say_it_is_unanswered(
    client: LanguageClient, tmp_path: Any
) -> None:
    ed = await start_session(client, "emacs", tmp_path, options={"verifyTimeoutMs": 300})
    ed.write_file("f.txt", "one\ntwo\n")
    ed.write_file("g.txt", "three\n")
    ed.open("f.txt")
    ed.open("g.txt")
    apply = ed._apply

    async def apply_then_type_in_the_same_did_change(params: t.ApplyWorkspaceEditParams) -> Any:
        ed._apply = apply  # type: ignore[method-assign] # the rollback is applied plainly
        ed.defer_changes = True
        answer = await apply(params)
        ed.type("f.txt", 0, 0, "X")
        ed.defer_changes = False
        ed.flush()  # one didChange per file: f.txt's holds the edit and the typing
        return answer

    ed._apply = apply_then_type_in_the_same_did_change  # type: ignore[method-assign]
    r = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert ed.view() == {"f.txt": b"Xone\n2\n", "g.txt": b"three\n"}
    assert not r["ok"] and r["code"] == "PARTIAL", r
    assert "has not answered" not in r["message"], r
    states = {f["path"]: f["state"] for f in r["details"]["files"]}
    assert states == {"f.txt": "unknown", "g.txt": "not-applied"}, r
