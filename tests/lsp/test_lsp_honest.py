"""Honest outcomes on the editor path (issue 14): settings, tokens across reopen, input hygiene,
resource operations by capability, and results that never claim more than the server saw."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

import pytest
from lsprotocol import types as t
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, server_config, start_session


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


# -- outcomes that never lie ------------------------------------------------------------------


async def _settled(ed: Editor, edit_id: int, timeout: float = 10.0) -> dict[str, Any]:
    """The agentEdit/historyChanged notification that finishes edit `edit_id`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        for change in ed.history_changes:
            got = {k: getattr(change, k, None) for k in ("editId", "action", "outcome")}
            if got["editId"] == edit_id and got["outcome"] != "pending":
                return got
        assert loop.time() < deadline, ed.history_changes
        await ed.client.wait_for_notification("agentEdit/historyChanged")


def _no_false_nothing(result: dict[str, Any]) -> None:
    assert "nothing was changed" not in (result.get("hint", "") + result["message"]).lower()


async def _entry(ed: Editor, edit_id: int) -> dict[str, Any]:
    # Straight through the client: Editor.command would send eglot's held changes first.
    hist = await ed.client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="agentEdit.history", arguments=[{"format": "json"}])
    )
    (entry,) = [e for e in hist["entries"] if e["id"] == edit_id]
    return entry


@pytest.mark.asyncio
async def test_late_didchange_is_unverified_then_settled_applied(client: LanguageClient, tmp_path):
    ed = await start_session(client, "emacs", tmp_path)
    ed.write_file("e.txt", "one\ntwo\n")
    ed.open("e.txt")
    await ed.command("agentEdit.read", {"path": "e.txt"})
    ed.defer_changes = True  # eglot: the edit's didChange leaves after the command's answer
    result = await ed.client.workspace_execute_command_async(
        t.ExecuteCommandParams(
            command="agentEdit.replace",
            arguments=[{"path": "e.txt", "oldText": "two", "newText": "2"}],
        )
    )
    assert result["code"] == "UNVERIFIED", result
    _no_false_nothing(result)
    assert result["details"]["unconfirmed"] == ["e.txt"] and result["committed"] == []
    assert ed.text("e.txt") == "one\n2\n"  # it did land, unseen
    edit_id = result["details"]["editId"]
    assert (await _entry(ed, edit_id))["outcome"] == "pending"
    ed.flush()  # the idle timer fires
    assert (await _settled(ed, edit_id))["outcome"] == "applied"
    entry = await _entry(ed, edit_id)
    assert entry["outcome"] == "applied" and "+2" in entry["diff"]
    ed.defer_changes = False  # from here an eglot whose idle timer fires in time
    undo = await ed.command("agentEdit.undo", {"editId": edit_id})
    assert undo["ok"], undo
    assert ed.text("e.txt") == "one\ntwo\n"


@pytest.mark.asyncio
async def test_lagging_version_lands_off_and_is_reported(client: LanguageClient, tmp_path):
    ed = await start_session(client, "emacs", tmp_path)
    ed.write_file("l.txt", "one\ntwo\nthree\n")
    ed.open("l.txt")
    await ed.command("agentEdit.read", {"path": "l.txt"})
    ed.defer_changes = True
    ed.type("l.txt", 0, 0, "typed\n")  # not sent, and eglot's version does not move
    result = await ed.client.workspace_execute_command_async(
        t.ExecuteCommandParams(
            command="agentEdit.replace",
            arguments=[{"path": "l.txt", "oldText": "two\n", "newText": "2\n"}],
        )
    )
    # eglot applied the "versioned" edit one line off, over the typing it had not sent.
    assert (
        ed.text("l.txt") == "typed\none\n2\nthree\n" or ed.text("l.txt") == "typed\n2\ntwo\nthree\n"
    )
    assert result["code"] == "UNVERIFIED", result
    _no_false_nothing(result)
    edit_id = result["details"]["editId"]
    ed.flush()
    settled = await _settled(ed, edit_id)
    assert settled["outcome"] == "PARTIAL", settled
    entry = await _entry(ed, edit_id)
    assert [c["state"] for c in entry["committed"]] == ["unknown"], entry
    assert "agentEdit.undo" in entry["error"]["hint"]


@pytest.mark.asyncio
async def test_first_file_applied_second_refused_is_said(client: LanguageClient, tmp_path):
    ed = await start_session(client, "emacs", tmp_path)
    ed.write_file("a.txt", "a\n")
    ed.write_file("b.txt", "b\n")
    ed.open("a.txt")
    ed.open("b.txt")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
        "*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n"
    )
    ed.defer_changes = True
    ed.fail_at, ed.fail_mode = 1, "error"
    result = await ed.client.workspace_execute_command_async(
        t.ExecuteCommandParams(command="agentEdit.applyPatch", arguments=[{"patch": patch}])
    )
    assert ed.text("a.txt") == "A\n" and ed.text("b.txt") == "b\n"
    assert result["code"] == "UNVERIFIED", result
    _no_false_nothing(result)
    assert result["committed"] == []  # nothing seen land yet, and it says so
    edit_id = result["details"]["editId"]
    ed.flush()
    settled = await _settled(ed, edit_id)
    assert settled["outcome"] == "PARTIAL", settled
    entry = await _entry(ed, edit_id)
    states = {c["path"]: c["state"] for c in entry["committed"]}
    assert states == {"a.txt": "applied", "b.txt": "not-applied"}, entry
    # The way back is offered for what landed.
    ed.defer_changes = False
    undo = await ed.command("agentEdit.undo", {"editId": edit_id})
    assert undo["ok"], undo
    assert ed.text("a.txt") == "a\n"


@pytest.mark.asyncio
async def test_prompt_client_first_applied_second_refused(client: LanguageClient, tmp_path):
    ed = await start_session(client, "emacs", tmp_path)
    ed.write_file("a.txt", "a\n")
    ed.write_file("b.txt", "b\n")
    ed.open("a.txt")
    ed.open("b.txt")
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
        "*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n"
    )
    ed.fail_at, ed.fail_mode = 1, "error"
    result = await ed.command("agentEdit.applyPatch", {"patch": patch})
    # It saw a.txt land, so it rolled it back and says what it did.
    assert result["code"] == "PARTIAL_ROLLED_BACK", result
    assert "a.txt" in result["message"]
    assert ed.text("a.txt") == "a\n" and ed.text("b.txt") == "b\n"


@pytest.mark.asyncio
async def test_typing_into_a_file_mid_patch_is_never_rolled_back_as_if_untouched(
    client: LanguageClient, tmp_path
):
    ed = await start_session(client, "neovim", tmp_path)
    for name in ("a", "b", "c"):
        ed.write_file(f"{name}.txt", f"{name}1\n{name}2\n")
        ed.open(f"{name}.txt")
    patch = (
        "*** Begin Patch\n"
        + "".join(
            f"*** Update File: {n}.txt\n@@\n {n}1\n-{n}2\n+{n.upper()}2\n" for n in ("a", "b", "c")
        )
        + "*** End Patch\n"
    )

    def typing(index: int) -> None:
        if index == 1:  # the user types into b.txt just before Neovim applies its edit
            ed.type("b.txt", 0, 0, "user ")

    ed.before_change = typing
    ed.fail_at, ed.fail_mode = 2, "reject"
    result = await ed.command("agentEdit.applyPatch", {"patch": patch})
    ed.before_change = None
    assert ed.text("b.txt") == "user b1\nB2\n"  # overwritten on top of the typing
    assert result["code"] == "PARTIAL", result
    _no_false_nothing(result)
    assert "b.txt" in result["message"] and "as it was" not in result["message"]
    states = {f["path"]: f["state"] for f in result["details"]["files"]}
    assert states["b.txt"] == "unknown", states


# -- resource operations by capability ------------------------------------------------------


MIXED = """*** Begin Patch
*** Add File: pkg/new.py
+x = 1
*** Delete File: gone.txt
*** Update File: old.txt
*** Move to: moved/new.txt
@@
-old
+moved
*** Update File: open.txt
@@
-open
+OPEN
*** End Patch
"""


def _seed_mixed(ed: Editor) -> None:
    ed.write_file("gone.txt", "bye\n")
    ed.write_file("old.txt", "old\n")
    ed.write_file("open.txt", "open\n")
    ed.open("open.txt")


@pytest.mark.asyncio
async def test_no_resource_operations_means_disk_for_files_not_open(
    client: LanguageClient, tmp_path
):
    ed = await start_session(client, "emacs", tmp_path)  # eglot advertises none
    _seed_mixed(ed)
    result = await ed.command("agentEdit.applyPatch", {"patch": MIXED})
    assert result["ok"], result
    sent = [type(c).__name__ for r in ed.apply_requests for c in r.edit.document_changes]
    assert sent == ["TextDocumentEdit"], sent  # only the open buffer went to the editor
    assert ed.text("open.txt") == "OPEN\n"
    assert (tmp_path / "pkg/new.py").read_text() == "x = 1\n"
    assert not (tmp_path / "gone.txt").exists() and not (tmp_path / "old.txt").exists()
    assert (tmp_path / "moved/new.txt").read_text() == "moved\n"
    # One history entry, undoable as a whole.
    undo = await ed.command("agentEdit.undo", {"editId": result["editId"]})
    assert undo["ok"], undo
    assert (tmp_path / "gone.txt").read_text() == "bye\n"
    assert (tmp_path / "old.txt").read_text() == "old\n"
    assert not (tmp_path / "pkg/new.py").exists() and ed.text("open.txt") == "open\n"


@pytest.mark.asyncio
async def test_resource_operation_on_an_open_buffer_is_refused_up_front(
    client: LanguageClient, tmp_path
):
    ed = await start_session(client, "emacs", tmp_path)
    ed.write_file("keep.txt", "k\n")
    ed.open("keep.txt")
    for patch in [
        "*** Begin Patch\n*** Delete File: keep.txt\n*** End Patch\n",
        "*** Begin Patch\n*** Update File: keep.txt\n*** Move to: k2.txt\n@@\n-k\n+K\n"
        "*** End Patch\n",
    ]:
        result = await ed.command("agentEdit.applyPatch", {"patch": patch})
        assert result["code"] == "UNSUPPORTED", result
        assert result["details"]["paths"] == ["keep.txt"] and "close" in result["hint"]
    assert ed.apply_requests == [] and ed.text("keep.txt") == "k\n"
    assert (tmp_path / "keep.txt").read_text() == "k\n" and not (tmp_path / "k2.txt").exists()


@pytest.mark.asyncio
async def test_disk_changed_at_the_moment_of_apply_rolls_the_editor_back(
    client: LanguageClient, tmp_path
):
    ed = await start_session(client, "emacs", tmp_path)
    _seed_mixed(ed)

    def someone_writes(index: int) -> None:
        ed.write_file("gone.txt", "changed meanwhile\n")  # while the editor applies its part

    ed.before_change = someone_writes
    result = await ed.command("agentEdit.applyPatch", {"patch": MIXED})
    ed.before_change = None
    assert result["code"] == "PARTIAL_ROLLED_BACK", result
    assert "gone.txt" in result["message"]
    # Nothing of the plan is left: the stranger's change is kept, the buffer is as it was.
    assert (tmp_path / "gone.txt").read_text() == "changed meanwhile\n"
    assert ed.text("open.txt") == "open\n"
    assert not (tmp_path / "pkg/new.py").exists() and (tmp_path / "old.txt").exists()


# -- hostile JSON-RPC bytes over stdio --------------------------------------------------------


class _Wire:
    """Raw bytes to a real server process over stdio, framed replies back."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc

    def send(self, body: bytes, length: int | None = None) -> None:
        assert self.proc.stdin is not None
        n = len(body) if length is None else length
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % n + body)

    def send_json(self, obj: dict[str, Any]) -> None:
        self.send(json.dumps(obj).encode())

    async def reply(self) -> dict[str, Any]:
        """The next response (notifications and requests from the server are skipped)."""
        assert self.proc.stdout is not None
        while True:
            length = 0
            while True:
                line = await asyncio.wait_for(self.proc.stdout.readline(), 20)
                assert line, "the server closed its output"
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                elif line in (b"\r\n", b"\n"):
                    break
            msg = json.loads(await self.proc.stdout.readexactly(length))
            if "method" not in msg:
                return dict(msg)


@pytest.mark.asyncio
async def test_hostile_jsonrpc_bytes_get_error_replies_and_the_server_keeps_serving(tmp_path):
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

    def read_request(msg_id: int) -> dict[str, Any]:
        return {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": "workspace/executeCommand",
            "params": {"command": "agentEdit.read", "arguments": [{"path": "a.txt"}]},
        }

    try:
        wire.send_json(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"capabilities": {}, "rootUri": tmp_path.as_uri()},
            }
        )
        assert (await wire.reply())["id"] == 1
        wire.send_json({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        hostile: list[tuple[bytes, int, Any]] = [
            (b"[" * 100_000 + b"]" * 100_000, -32700, None),
            (
                b'{"jsonrpc": "2.0", "id": 3, "method": "workspace/executeCommand", "params": '
                b'{"command": "agentEdit.read", "arguments": [{"path": "a.txt", "startLine": '
                + b"9" * 5000
                + b"}]}}",
                -32700,
                None,
            ),
            (b'{"jsonrpc": "2.0", "id": 4, "method": "x", "params": "\xff\xfe"}', -32700, None),
            (b"[1, 2]", -32600, None),
            (b'{"jsonrpc": "2.0", "id": 6, "method": 5}', -32600, 6),
            (b'{"jsonrpc": "1.0", "id": 7, "method": "shutdown"}', -32600, 7),
        ]
        for body, code, msg_id in hostile:
            wire.send(body)
            answer = await wire.reply()
            assert answer["error"]["code"] == code and answer["id"] == msg_id, (body[:40], answer)
            wire.send_json(read_request(100))
            ok = await wire.reply()
            assert ok["id"] == 100 and ok["result"]["text"] == "alpha\n", ok
        # A body shorter than its Content-Length eats the start of the next message: that one
        # is lost, but the reply says why and the one after is served.
        wire.send(b'{"jsonrpc": "2.0", "id": 8', length=60)
        wire.send_json(read_request(9))
        wire.send_json(read_request(10))
        first = await wire.reply()
        assert first["error"]["code"] == -32700 and first["id"] is None, first
        served = await wire.reply()
        assert served["id"] == 10 and served["result"]["ok"], served
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


@pytest.mark.asyncio
async def test_skipped_edit_is_unverified_then_settled_not_applied_by_a_reopen(
    client: LanguageClient, tmp_path
):
    ed = await start_session(client, "neovim", tmp_path)
    ed.write_file("s.txt", "one\ntwo\n")
    ed.open("s.txt")
    ed.type("s.txt", 0, 0, "zero\n")  # Neovim's version check is off at version 0
    await ed.command("agentEdit.read", {"path": "s.txt"})
    ed.docs[ed.uri("s.txt")].version += 1  # a change the server has not seen yet: skipped
    result = await ed.command(
        "agentEdit.replace", {"path": "s.txt", "oldText": "two", "newText": "2"}
    )
    assert result["code"] == "UNVERIFIED", result
    _no_false_nothing(result)
    edit_id = result["details"]["editId"]
    ed._close(ed.uri("s.txt"))
    ed.open("s.txt", "zero\none\ntwo\n")  # the buffer as it is: the old text
    settled = await _settled(ed, edit_id)
    assert settled["outcome"] == "NOT_APPLIED", settled
    undo = await ed.command("agentEdit.undo", {"editId": edit_id})
    assert undo["code"] == "INVALID_ARGUMENT" and "nothing to undo" in undo["message"], undo
