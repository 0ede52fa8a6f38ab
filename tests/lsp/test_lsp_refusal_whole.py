"""A client that vouches that its `applied: false` means it applied nothing
(`experimental.agentEdit.refusalAppliesNothing`, the Neovim plugin): its refusal of a multi-file
edit is CLIENT_REJECTED at once, with the user's typing named as such, never PARTIAL ("some
changes landed") nor UNVERIFIED while nothing was applied. An error answer is still not trusted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, start_session

VOUCHES = {"agentEdit": {"refusalAppliesNothing": True}}
PATCH = (
    "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n"
    "*** Update File: b.txt\n@@\n-one\n+ONE\n*** End Patch\n"
)


async def two_open_files(
    client: LanguageClient, tmp_path: Path, experimental: Any = VOUCHES
) -> Editor:
    ed = await start_session(
        client,
        "neovim",
        tmp_path,
        options={"verifyTimeoutMs": 3000},
        experimental=experimental,
    )
    ed.write_file("a.txt", "alpha\nbeta\n")
    ed.write_file("b.txt", "one\ntwo\n")
    ed.open("a.txt")
    ed.open("b.txt")
    return ed


@pytest.mark.asyncio
@pytest.mark.parametrize("typed", [False, True])
async def test_refusal_that_applied_nothing_is_client_rejected(
    client: LanguageClient, tmp_path: Path, typed: bool
) -> None:
    ed = await two_open_files(client, tmp_path)
    ed.fail_at, ed.fail_mode = 0, "reject"
    if typed:
        # The user typed in b.txt while the edit was on its way: that is why it was refused.
        ed.before_change = lambda index: ed.type("b.txt", 1, 3, " typed")
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert result["ok"] is False and result["code"] == "CLIENT_REJECTED", result
    assert result["committed"] == [], result
    assert ed.text("a.txt") == "alpha\nbeta\n"
    assert ed.text("b.txt") == ("one\ntwo typed\n" if typed else "one\ntwo\n")
    history = await ed.command("agentEdit.history", {"format": "json"})
    assert [e["outcome"] for e in history["entries"]] == ["CLIENT_REJECTED"], history
    # Nothing is held pending: the next edit of those files goes through.
    again = await ed.command(
        "agentEdit.replace", {"path": "a.txt", "oldText": "beta", "newText": "BETA"}
    )
    assert again["ok"] is True, again


@pytest.mark.asyncio
async def test_error_answer_after_part_applied_is_still_checked(
    client: LanguageClient, tmp_path: Path
) -> None:
    ed = await two_open_files(client, tmp_path)
    # a.txt is applied, then the editor fails with an error: never "nothing was changed".
    ed.fail_at, ed.fail_mode = 1, "error"
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert result["ok"] is False and result["code"] != "CLIENT_REJECTED", result
    assert result["code"] in ("PARTIAL_ROLLED_BACK", "PARTIAL", "UNVERIFIED"), result


@pytest.mark.asyncio
async def test_a_refusal_naming_the_first_change_is_client_rejected_at_once(
    client: LanguageClient, tmp_path: Path
) -> None:
    """`failedChange: 0` (the VS Code extension's refusal of a delete of a dirty document, made
    before anything is applied): nothing came before the first change and it did not apply.
    From a client once seen reporting late, such a refusal was waited on and answered
    UNVERIFIED ("some may have changed"), although nothing was."""
    from lsprotocol import types as t

    ed = await start_session(client, "emacs", tmp_path, options={"verifyTimeoutMs": 1500})
    ed.write_file("a.txt", "alpha\nbeta\n")
    ed.write_file("b.txt", "one\ntwo\n")
    ed.open("a.txt")
    ed.open("b.txt")
    # An edit whose didChange leaves after the command's answer: the server learns that this
    # client reports late.
    ed.defer_changes = True
    late = await ed.client.workspace_execute_command_async(
        t.ExecuteCommandParams(
            command="agentEdit.replace",
            arguments=[{"path": "a.txt", "oldText": "beta", "newText": "BETA"}],
        )
    )
    assert late["code"] == "UNVERIFIED", late
    ed.defer_changes = False
    ed.flush()
    ed.fail_at, ed.fail_mode = 0, "reject"  # answers applied: false, failedChange: 0
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert result["ok"] is False and result["code"] == "CLIENT_REJECTED", result
    assert result["committed"] == [], result
    assert ed.text("a.txt") == "alpha\nBETA\n" and ed.text("b.txt") == "one\ntwo\n"
