"""Honest outcomes on the editor path (issue 14): settings, tokens across reopen, input hygiene,
resource operations by capability, and results that never claim more than the server saw."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, start_session


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# What VS Code's extension sends: its whole `agentEdit` section, client-only keys included.
VSCODE_SECTION: dict[str, Any] = {
    "server": {"python": "python3", "args": []},
    "trace": {"server": "off"},
    "requireRead": True,
    "saveAfterEdit": False,
    "deny": [],
    "allow": [],
}


# -- settings -------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_vscode_payload_with_client_only_keys_keeps_the_deny_rules(
    client: LanguageClient, tmp_path
):
    start = {"agentEdit": {**VSCODE_SECTION, "deny": ["private/**"], "verifyTimeoutMs": 1000}}
    ed = await start_session(client, "visual-studio-code", tmp_path, options=start)
    ed.write_file("private/a.txt", "p\n")
    ed.write_file("notes/b.txt", "n\n")
    first = await ed.command("agentEdit.read", {"path": "private/a.txt"})
    assert first["code"] == "DENIED", first  # the start payload's deny rule holds
    ok = await ed.command("agentEdit.read", {"path": "notes/b.txt"})
    assert ok["ok"], ok
    # The user adds a deny rule at run time; the payload still carries the client-only keys.
    ed.client.workspace_did_change_configuration(
        t.DidChangeConfigurationParams(
            settings={"agentEdit": {**VSCODE_SECTION, "deny": ["private/**", "notes/**"]}}
        )
    )
    edit = await ed.command(
        "agentEdit.replace", {"path": "notes/b.txt", "oldText": "n", "newText": "x"}
    )
    assert edit["code"] == "DENIED" and edit["details"]["rule"] == "notes/**", edit
    assert (tmp_path / "notes/b.txt").read_text() == "n\n"
    assert ed.apply_requests == []


@pytest.mark.asyncio
async def test_runtime_settings_only_tighten_each_key_on_its_own(client: LanguageClient, tmp_path):
    ed = await start_session(
        client, "visual-studio-code", tmp_path, options={"agentEdit": {"deny": ["a/**"]}}
    )
    ed.write_file("a/x.txt", "a\n")
    ed.write_file("b/y.txt", "b\n")
    # Dropping a/** (a widening) is refused, but the b/** added beside it applies at once; a
    # bad value of another key does not block either.
    ed.client.workspace_did_change_configuration(
        t.DidChangeConfigurationParams(
            settings={"agentEdit": {"deny": ["b/**"], "maxFileBytes": "big", "requireRead": False}}
        )
    )
    for path in ("a/x.txt", "b/y.txt"):
        r = await ed.command("agentEdit.read", {"path": path})
        assert r["code"] == "DENIED", (path, r)
    # requireRead cannot be switched off while running either.
    ed.write_file("c.txt", "c\n")
    w = await ed.command("agentEdit.write", {"path": "c.txt", "text": "d\n"})
    assert w["code"] == "STALE", w


# -- tokens across a close and reopen ---------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize("explicit", [False, True])
async def test_version_token_does_not_survive_close_and_reopen(editor: Editor, explicit: bool):
    editor.write_file("r.txt", "one\ntwo\n")
    doc = editor.open("r.txt")
    read = await editor.command("agentEdit.read", {"path": "r.txt"})
    assert read["version"] == doc.version
    editor._close(doc.uri)
    # The file changes on disk while closed, then opens again at the very same version number.
    editor.write_file("r.txt", "one\nnew line\ntwo\n")
    again = editor.open("r.txt")
    assert again.version == read["version"]
    args: dict[str, Any] = {"path": "r.txt", "text": "one\ntwo\nthree\n"}
    if explicit:
        args["expect"] = {"version": read["version"]}
    result = await editor.command("agentEdit.write", args)
    assert result["code"] == "STALE", result
    assert editor.text("r.txt") == "one\nnew line\ntwo\n"
    assert editor.apply_requests == []
    # The sha256 still proves it: a token whose text is unchanged after a reopen is fine.
    fresh = await editor.command("agentEdit.read", {"path": "r.txt"})
    editor._close(again.uri)
    editor.open("r.txt")
    ok = await editor.command(
        "agentEdit.write",
        {
            "path": "r.txt",
            "text": "1\n",
            "expect": {"version": fresh["version"], "sha256": fresh["sha256"]},
        },
    )
    assert ok["ok"], ok


# -- input hygiene --------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_lone_surrogates_and_nul_are_refused_before_the_editor(vscode: Editor):
    vscode.write_file("h.txt", "alpha\nbeta\n")
    vscode.open("h.txt")
    await vscode.command("agentEdit.read", {"path": "h.txt"})
    patch = "*** Begin Patch\n*** Update File: h.txt\n@@\n-beta\n+b\udc80ta\n*** End Patch\n"
    cases = [
        (
            "agentEdit.replace",
            {"path": "h.txt", "oldText": "beta", "newText": "x\ud83dy"},
            "newText",
            1,
        ),
        (
            "agentEdit.replace",
            {"path": "h.txt", "oldText": "be\udfffta", "newText": "x"},
            "oldText",
            2,
        ),
        ("agentEdit.write", {"path": "h.txt", "text": "ok\nno\ud800\n"}, "text", 5),
        ("agentEdit.applyPatch", {"patch": patch}, "patch", patch.index("\udc80")),
        ("agentEdit.read", {"path": "h\ud800.txt"}, "path", 1),
    ]
    for command, args, argument, position in cases:
        r = await vscode.command(command, args)
        assert r["ok"] is False and r["code"] == "INVALID_ARGUMENT", (command, r)
        assert r["details"]["argument"] == argument, r
        assert r["details"]["reason"] == "LONE_SURROGATE" and r["details"]["position"] == position
    # A full pair (an emoji) is fine.
    emoji = await vscode.command(
        "agentEdit.replace", {"path": "h.txt", "oldText": "beta", "newText": "b\U0001f600"}
    )
    assert emoji["ok"], emoji
    for command, args, argument in [
        ("agentEdit.replace", {"path": "h.txt", "oldText": "alpha", "newText": "a\0b"}, "newText"),
        ("agentEdit.write", {"path": "n.txt", "text": "x\0"}, "text"),
    ]:
        r = await vscode.command(command, args)
        assert r["code"] == "INVALID_ARGUMENT" and r["details"]["reason"] == "NUL", r
        assert r["details"]["argument"] == argument and "binary" in r["message"]
    assert len(vscode.apply_requests) == 1  # only the emoji edit reached the editor
    assert vscode.text("h.txt") == "alpha\nb\U0001f600\n"


@pytest.mark.asyncio
async def test_too_large_reports_the_real_size(client: LanguageClient, tmp_path):
    ed = await start_session(
        client, "visual-studio-code", tmp_path, options={"agentEdit": {"maxFileBytes": 1000}}
    )
    ed.write_file("big.txt", "x" * 5000)
    r = await ed.command("agentEdit.read", {"path": "big.txt"})
    assert r["code"] == "TOO_LARGE" and r["details"]["size"] == 5000, r
    assert "5,000 bytes" in r["message"]
