"""Adversarial review of issue 14 (honest outcomes): attacks that broke a guarantee, as tests."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, server_config, start_session
from tests.lsp.test_lsp_honest import _entry, _settled, _Wire


async def _direct(ed: Editor, name: str, arg: dict[str, Any]) -> Any:
    # Not through Editor.command: that sends eglot's held changes first (an agent's request
    # reaches the server whatever the editor's idle timer is doing).
    return await ed.client.workspace_execute_command_async(
        t.ExecuteCommandParams(command=name, arguments=[arg])
    )


@pytest.mark.asyncio
async def test_second_edit_of_a_pending_file_is_not_planned_on_text_the_editor_left(
    client: LanguageClient, tmp_path
):
    ed = await start_session(client, "emacs", tmp_path)
    ed.write_file("p.txt", "one\ntwo\nthree\n")
    ed.open("p.txt")
    await ed.command("agentEdit.read", {"path": "p.txt"})
    ed.defer_changes = True  # eglot: the edit lands, its didChange leaves later
    first = await _direct(
        ed, "agentEdit.replace", {"path": "p.txt", "oldText": "two\n", "newText": "2a\n2b\n"}
    )
    assert first["code"] == "UNVERIFIED", first
    assert ed.text("p.txt") == "one\n2a\n2b\nthree\n"
    # The agent reads again, as the hint says, and edits another line of the file.
    again = await _direct(ed, "agentEdit.read", {"path": "p.txt"})
    second = await _direct(
        ed, "agentEdit.replace", {"path": "p.txt", "oldText": "three", "newText": "3"}
    )
    # Planned on the server's old view, the second edit would land on "2b" (a stale write).
    assert ed.text("p.txt") != "one\n2a\n3\nthree\n", (again, second)
    assert ed.text("p.txt") == "one\n2a\n2b\nthree\n", second
    assert second["code"] == "STALE", second
    assert second["details"]["pendingEditId"] == first["details"]["editId"], second
    # Once the editor shows the file, the edit is settled and the next one goes through.
    ed.flush()
    await _settled(ed, first["details"]["editId"])
    ed.defer_changes = False
    await ed.command("agentEdit.read", {"path": "p.txt"})
    third = await ed.command(
        "agentEdit.replace", {"path": "p.txt", "oldText": "three", "newText": "3"}
    )
    assert third["ok"], third
    assert ed.text("p.txt") == "one\n2a\n2b\n3\n"


@pytest.mark.asyncio
async def test_undo_of_an_earlier_edit_of_a_pending_file_waits(client: LanguageClient, tmp_path):
    ed = await start_session(client, "emacs", tmp_path)
    ed.write_file("u.txt", "one\ntwo\nthree\n")
    ed.open("u.txt")
    await ed.command("agentEdit.read", {"path": "u.txt"})
    done = await ed.command(
        "agentEdit.replace", {"path": "u.txt", "oldText": "three", "newText": "3"}
    )
    assert done["ok"], done
    ed.defer_changes = True
    first = await _direct(
        ed, "agentEdit.replace", {"path": "u.txt", "oldText": "one\n", "newText": "1a\n1b\n"}
    )
    assert first["code"] == "UNVERIFIED", first
    # The pending edit's own undo waits for it to finish (it did already).
    own = await _direct(ed, "agentEdit.undo", {"editId": first["details"]["editId"]})
    assert not own["ok"], own
    # The earlier edit's undo, planned on the server's old view, would hit "two", not "3".
    undo = await _direct(ed, "agentEdit.undo", {"editId": done["editId"]})
    assert ed.text("u.txt") == "1a\n1b\ntwo\n3\n", undo
    assert undo["code"] == "STALE", undo


@pytest.mark.asyncio
async def test_nul_in_a_path_is_an_invalid_argument(client: LanguageClient, tmp_path):
    ed = await start_session(client, "visual-studio-code", tmp_path)
    ed.write_file("n.txt", "n\n")
    for name, arg in (
        ("agentEdit.read", {"path": "n.txt\0x"}),
        ("agentEdit.replace", {"path": "n\0.txt", "oldText": "n", "newText": "m"}),
        ("agentEdit.write", {"path": "new\0.txt", "text": "m\n"}),
        (
            "agentEdit.applyPatch",
            {"patch": "*** Begin Patch\n*** Add File: a\0b\n+x\n*** End Patch\n"},
        ),
    ):
        result = await ed.command(name, arg)
        assert result["code"] == "INVALID_ARGUMENT", (name, result)
    assert (tmp_path / "n.txt").read_text() == "n\n"


@pytest.mark.asyncio
async def test_an_edit_applied_after_the_timeout_is_not_recorded_as_nothing(
    client: LanguageClient, tmp_path
):
    ed = await start_session(
        client, "visual-studio-code", tmp_path, options={"applyTimeoutMs": 300}
    )
    ed.write_file("t.txt", "one\ntwo\n")
    ed.open("t.txt")
    await ed.command("agentEdit.read", {"path": "t.txt"})
    ed.never_answer = True  # a confirmation dialog, a busy editor: the answer comes late
    silent = await ed.command(
        "agentEdit.replace", {"path": "t.txt", "oldText": "two", "newText": "2"}
    )
    assert silent["code"] == "TIMEOUT", silent
    edit_id = silent["details"]["editId"]
    # While the editor may still apply it, nothing else may be planned on the file.
    retry = await _direct(
        ed, "agentEdit.replace", {"path": "t.txt", "oldText": "one", "newText": "1"}
    )
    assert retry["code"] == "STALE", retry
    # The editor gets to the request after all and applies it.
    ed.type("t.txt", 1, 0, "2", end=(1, 3))
    settled = await _settled(ed, edit_id)
    assert settled["outcome"] == "applied", settled
    ed.release()
    undo = await ed.command("agentEdit.undo", {"editId": edit_id})
    assert undo["ok"], undo
    assert ed.text("t.txt") == "one\ntwo\n"


@pytest.mark.asyncio
async def test_a_late_refusal_after_the_timeout_settles_at_once(client: LanguageClient, tmp_path):
    ed = await start_session(
        client, "visual-studio-code", tmp_path, options={"applyTimeoutMs": 300}
    )
    ed.write_file("r.txt", "one\n")
    ed.open("r.txt")
    await ed.command("agentEdit.read", {"path": "r.txt"})
    ed.never_answer = True
    silent = await ed.command(
        "agentEdit.replace", {"path": "r.txt", "oldText": "one", "newText": "1"}
    )
    assert silent["code"] == "TIMEOUT", silent
    ed.release()  # the late answer: applied false
    settled = await _settled(ed, silent["details"]["editId"])
    assert settled["outcome"] == "NOT_APPLIED", settled
    after = await ed.command(
        "agentEdit.replace", {"path": "r.txt", "oldText": "one", "newText": "1"}
    )
    assert after["ok"] and ed.text("r.txt") == "1\n", after


@pytest.mark.asyncio
async def test_one_bad_deny_glob_does_not_drop_the_others(client: LanguageClient, tmp_path):
    start = {"agentEdit": {"deny": ["start/**", 7], "verifyTimeoutMs": 1000}}
    ed = await start_session(client, "visual-studio-code", tmp_path, options=start)
    ed.write_file("start/a.txt", "a\n")
    ed.write_file("later/b.txt", "b\n")
    first = await ed.command("agentEdit.read", {"path": "start/a.txt"})
    assert first["code"] == "DENIED", first
    ed.client.workspace_did_change_configuration(
        t.DidChangeConfigurationParams(
            settings={"agentEdit": {"deny": ["start/**", "later/**", {"nested": ["junk"]}, ""]}}
        )
    )
    edit = await ed.command(
        "agentEdit.replace", {"path": "later/b.txt", "oldText": "b", "newText": "x"}
    )
    assert edit["code"] == "DENIED", edit
    assert (tmp_path / "later/b.txt").read_text() == "b\n" and ed.apply_requests == []


@pytest.mark.asyncio
async def test_an_absurd_content_length_does_not_swallow_every_later_message(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\n")
    config = server_config()
    proc = await asyncio.create_subprocess_exec(
        *config.server_command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env=config.server_env,
    )
    wire = _Wire(proc)
    read = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "workspace/executeCommand",
        "params": {"command": "agentEdit.read", "arguments": [{"path": "a.txt"}]},
    }
    try:
        init = {"capabilities": {}, "rootUri": tmp_path.as_uri()}
        wire.send_json({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        assert (await wire.reply())["id"] == 1
        wire.send_json({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        assert proc.stdin is not None
        # A petabyte that never comes: waiting for it would leave every later request unserved.
        proc.stdin.write(b"Content-Length: 999999999999999\r\n\r\n")
        wire.send_json(read)
        first = await wire.reply()
        assert first["error"]["code"] == -32600 and first["id"] is None, first
        served = await wire.reply()
        assert served["id"] == 3 and served["result"]["text"] == "alpha\n", served
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


@pytest.mark.asyncio
async def test_a_late_refusal_from_eglot_waits_for_the_files_it_may_have_changed(
    client: LanguageClient, tmp_path
):
    ed = await start_session(
        client, "emacs", tmp_path, options={"applyTimeoutMs": 300, "verifyTimeoutMs": 500}
    )
    ed.write_file("a.txt", "a\n")
    ed.write_file("b.txt", "b\n")
    ed.open("a.txt")
    ed.open("b.txt")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
        "*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n"
    )
    ed.defer_changes = True  # a.txt changes unseen, then eglot stalls on b.txt
    ed.fail_at, ed.fail_mode = 1, "hold"
    silent = await _direct(ed, "agentEdit.applyPatch", {"patch": patch})
    assert silent["code"] == "TIMEOUT" and silent["details"]["unconfirmed"], silent
    edit_id = silent["details"]["editId"]
    ed.release()  # its late answer: applied false, after a.txt was changed
    # Two round trips: the answer is written before the second request, so the server has
    # read it (and run what it triggers) before it answers that one.
    await _entry(ed, edit_id)
    entry = await _entry(ed, edit_id)
    assert entry["outcome"] == "pending", entry  # not "did not land" while a.txt is unseen
    ed.flush()  # the idle timer fires
    settled = await _settled(ed, edit_id)
    assert ed.text("a.txt") == "A\n"
    # Not "did not land": a.txt did.
    assert settled["outcome"] == "PARTIAL", settled
