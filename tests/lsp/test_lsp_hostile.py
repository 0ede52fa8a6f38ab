"""Protocol hostility through the real server: bad input refused, and the server keeps serving.

Every registered command gets wrong types, missing and unknown fields, non-object arguments, deep
nesting and over-long strings (JSON-RPC InvalidParams each time); unknown commands, raw garbage
and JSON nested past any parser's depth; notifications about documents that are not open or with
positions out of range; requests before `initialize`; two edits racing on one file. After each
the server must still answer, and its copy of every open document must equal the editor's.

The path policy through the server is checked at the end: containment, deny rules, settings.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import pytest
from lsprotocol import types as t
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from lsp_server.lsp.server import create_server
from tests.editor_client import Editor, start_session

# One valid argument object per command (dry runs, so nothing changes), as product.md 2 defines
# them; fields: name -> (kind, required).
VALID: dict[str, dict[str, Any]] = {
    "agentEdit.read": {"path": "a.txt"},
    "agentEdit.replace": {"path": "a.txt", "oldText": "hello", "newText": "bye", "dryRun": True},
    "agentEdit.write": {"path": "a.txt", "text": "x\n", "dryRun": True},
    "agentEdit.applyPatch": {"patch": "*** Begin Patch\n*** End Patch\n", "dryRun": True},
    "agentEdit.history": {"format": "json"},
    "agentEdit.undo": {"editId": 1, "dryRun": True},
}
FIELDS: dict[str, dict[str, tuple[str, bool]]] = {
    "agentEdit.read": {
        "path": ("str", True),
        "startLine": ("int", False),
        "endLine": ("int", False),
        "lineNumbers": ("bool", False),
    },
    "agentEdit.replace": {
        "path": ("str", True),
        "oldText": ("str", True),
        "newText": ("str", True),
        "replaceAll": ("bool", False),
        "expect": ("expect", False),
        "dryRun": ("bool", False),
        "match": ("match", False),
    },
    "agentEdit.write": {
        "path": ("str", True),
        "text": ("str", True),
        "expect": ("expect", False),
        "dryRun": ("bool", False),
    },
    "agentEdit.applyPatch": {
        "patch": ("str", True),
        "expect": ("expect-per-path", False),
        "dryRun": ("bool", False),
    },
    "agentEdit.history": {"format": ("format", False), "editId": ("int", False)},
    "agentEdit.undo": {"editId": ("int", True), "dryRun": ("bool", False)},
}


def nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


_STR = [5, 1.5, True, ["a"], {"a": "b"}, nested(200)]
WRONG: dict[str, list[Any]] = {
    "str": _STR,
    "int": ["1", 1.5, True, [1], {"n": 1}, 2**60],
    "bool": ["true", 1, 0, [True], {"b": True}],
    "expect": ["x", 1, [1], True, {"version": "1"}, {"sha256": 5}, {"bogus": 1}, {}],
    "expect-per-path": [
        "x",
        1,
        [1],
        {"a.txt": "sha"},
        {"a.txt": {}},
        {"a.txt": {"version": "1"}},
        {"a.txt": {"bogus": 1}},
    ],
    "match": [*_STR, "fuzzy", ""],
    "format": [*_STR, "xml"],
}


def malformed_cases(command: str) -> list[tuple[str, list[Any]]]:
    """(label, arguments list) pairs that must each be InvalidParams."""
    valid = VALID[command]
    cases: list[tuple[str, list[Any]]] = [
        ("no argument", []),
        ("two arguments", [valid, {}]),
        ("string argument", ["a.txt"]),
        ("number argument", [42]),
        ("null argument", [None]),
        ("list argument", [[valid]]),
        ("unknown field", [{**valid, "bogus": 1}]),
        ("unknown field, huge name", [{**valid, "x" * 100_000: 1}]),
    ]
    for name, (kind, required) in FIELDS[command].items():
        if required:
            cases.append((f"missing {name}", [{k: v for k, v in valid.items() if k != name}]))
        for bad in WRONG[kind]:
            cases.append((f"{name}={json.dumps(bad)[:40]}", [{**valid, name: bad}]))
    return cases


def registered_commands() -> list[str]:
    return sorted(create_server().protocol.fm.commands)


async def still_serving(ed: Editor) -> None:
    ok = await ed.command("agentEdit.read", {"path": "a.txt"})
    assert ok["ok"] and ok["text"] == "hello\n", ok
    for uri, doc in ed.docs.items():
        rel = os.path.relpath(uri.removeprefix("file://"), ed.root)
        got = await ed.command("agentEdit.read", {"path": rel})
        assert got["text"] == doc.text, f"server copy of {rel} differs from the editor's"


@pytest.mark.asyncio
@pytest.mark.parametrize("command", registered_commands())
async def test_malformed_arguments_are_invalid_params(
    client: LanguageClient, tmp_path, command: str
) -> None:
    assert command in VALID, f"new command {command}: add it to VALID and FIELDS"
    ed = await start_session(client, "visual-studio-code", tmp_path)
    ed.write_file("a.txt", "hello\n")
    failures = []
    for label, args in malformed_cases(command):
        try:
            answer = await ed.command(command, *args)
        except JsonRpcInvalidParams:
            pass
        else:
            failures.append((label, answer))
        await still_serving(ed)
    assert failures == []
    # The valid object really is valid, so each refusal above was about the one broken part.
    answer = await ed.command(command, VALID[command])
    assert isinstance(answer, dict)


@pytest.mark.asyncio
async def test_over_long_string_is_invalid_params(vscode: Editor) -> None:
    vscode.write_file("a.txt", "hello\n")
    with pytest.raises(JsonRpcInvalidParams):
        await vscode.command(
            "agentEdit.replace",
            {"path": "a.txt", "oldText": "hello", "newText": "x" * (64 * 1024 * 1024 + 1)},
        )
    await still_serving(vscode)


@pytest.mark.asyncio
async def test_huge_but_legal_strings_get_answers(vscode: Editor) -> None:
    vscode.write_file("a.txt", "hello\n")
    await vscode.command("agentEdit.read", {"path": "a.txt"})
    big = await vscode.command(
        "agentEdit.replace", {"path": "a.txt", "oldText": "y" * 5_000_000, "newText": "z"}
    )
    assert big["ok"] is False and big["code"] == "NO_MATCH"
    long_path = await vscode.command("agentEdit.read", {"path": "d/" * 100_000 + "a.txt"})
    assert long_path["ok"] is False
    await still_serving(vscode)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "command", ["agentEdit.nope", "", "agentEdit.READ", "agentEdit.read ", "workbench.action.quit"]
)
async def test_unknown_commands_are_errors(vscode: Editor, command: str) -> None:
    vscode.write_file("a.txt", "hello\n")
    with pytest.raises(JsonRpcException):
        await vscode.command(command, {"path": "a.txt"})
    await still_serving(vscode)


def _raw(client: LanguageClient, body: bytes) -> None:
    # What no well-behaved client library would send: bytes straight onto the server's stdin.
    writer = client.protocol.writer
    assert writer is not None
    res = writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    if asyncio.iscoroutine(res):
        asyncio.ensure_future(res)


@pytest.mark.asyncio
async def test_raw_garbage_and_deep_nesting_do_not_stop_the_server(vscode: Editor) -> None:
    vscode.write_file("a.txt", "hello\n")
    deep = "[" * 200_000 + "]" * 200_000
    for body in [
        b"{not json",
        b"[]",
        b"null",
        b'{"jsonrpc": "2.0"}',
        b'{"jsonrpc": "2.0", "id": 9001, "method": 5}',
        b'{"jsonrpc":"2.0","id":9002,"method":"workspace/executeCommand","params":'
        + b'{"command":"agentEdit.read","arguments":['
        + deep.encode()
        + b"]}}",
        b'{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":'
        b'{"uri":"file:///x","version":1},"contentChanges":[{"range":{"start":{"line":-1,'
        b'"character":-5},"end":{"line":-1,"character":0}},"text":"x"}]}}',
        "\udcff".encode("utf-8", "surrogatepass"),
    ]:
        _raw(vscode.client, body)
        await still_serving(vscode)


@pytest.mark.asyncio
async def test_notifications_about_unknown_documents_and_bad_positions(vscode: Editor) -> None:
    ed = vscode
    ed.write_file("a.txt", "hello\n")
    ed.write_file("b.txt", "one\ntwo\r\nthree\rfour")
    ed.open("b.txt")
    client = ed.client
    ghost = ed.uri("ghost.txt")
    rng = t.Range(start=t.Position(line=3, character=0), end=t.Position(line=3, character=2))
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=ghost, version=7),
            content_changes=[t.TextDocumentContentChangePartial(range=rng, text="x")],
        )
    )
    client.text_document_did_close(
        t.DidCloseTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=ghost))
    )
    client.text_document_did_save(
        t.DidSaveTextDocumentParams(text_document=t.TextDocumentIdentifier(uri=ghost))
    )
    await still_serving(ed)
    # Positions past the end of a line or of the document clamp (LSP rule), on both sides.
    ed.type("b.txt", 0, 999, "!")
    ed.type("b.txt", 999, 0, "tail")
    ed.type("b.txt", 1, 2, "X", end=(999, 999))
    ed.type("b.txt", 0, 0, "😀", end=(0, 1))
    await still_serving(ed)
    # A full-text change and a version going backwards are taken as the editor says.
    doc = ed.docs[ed.uri("b.txt")]
    doc.text = "reset\n"
    doc.version -= 3
    client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=doc.uri, version=doc.version),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text="reset\n")],
        )
    )
    # didOpen of an already open document replaces it.
    ed.open("b.txt", "reopened\r\n")
    await still_serving(ed)


@pytest.mark.asyncio
async def test_requests_before_initialize_touch_nothing(client: LanguageClient, tmp_path) -> None:
    # pytest-lsp refuses to send before initialize, so these go raw. The answers (an error or a
    # refusal) go to ids the client does not know; what matters is that nothing is touched.
    probe = tmp_path / "probe.txt"
    probe.write_text("untouched\n")
    for i, (method, params) in enumerate(
        [
            (
                "workspace/executeCommand",
                {
                    "command": "agentEdit.write",
                    "arguments": [{"path": str(probe), "text": "written\n"}],
                },
            ),
            (
                "workspace/executeCommand",
                {"command": "agentEdit.read", "arguments": [{"path": str(probe)}]},
            ),
            ("textDocument/hover", {"textDocument": {"uri": probe.as_uri()}, "position": {}}),
        ]
    ):
        msg = {"jsonrpc": "2.0", "id": 7000 + i, "method": method, "params": params}
        _raw(client, json.dumps(msg).encode())
    _raw(
        client,
        json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "textDocument/didOpen",
                "params": {
                    "textDocument": {
                        "uri": probe.as_uri(),
                        "languageId": "plaintext",
                        "version": 1,
                        "text": "opened early\n",
                    }
                },
            }
        ).encode(),
    )
    ed = await start_session(client, "visual-studio-code", tmp_path)
    ed.write_file("a.txt", "hello\n")
    await still_serving(ed)
    assert probe.read_text() == "untouched\n"


@pytest.mark.asyncio
@pytest.mark.parametrize("with_expect", [False, True])
async def test_two_edits_racing_on_one_file(editor: Editor, with_expect: bool) -> None:
    ed = editor
    ed.write_file("a.txt", "hello\n")
    ed.write_file("r.txt", "alpha\nbeta\ngamma\n")
    ed.open("r.txt")
    read = await ed.command("agentEdit.read", {"path": "r.txt"})
    expect = {"expect": {"sha256": read["sha256"]}} if with_expect else {}
    first, second = await asyncio.gather(
        ed.command(
            "agentEdit.replace", {"path": "r.txt", "oldText": "alpha", "newText": "A"} | expect
        ),
        ed.command(
            "agentEdit.replace", {"path": "r.txt", "oldText": "gamma", "newText": "G"} | expect
        ),
    )
    outcomes = sorted(
        [
            first.get("code", "ok") if not first["ok"] else "ok",
            second.get("code", "ok") if not second["ok"] else "ok",
        ]
    )
    assert outcomes == ["STALE", "ok"], (first, second)
    loser = first if not first["ok"] else second
    assert loser["details"]["current"]["sha256"] != read["sha256"]
    assert ed.text("r.txt") in ("A\nbeta\ngamma\n", "alpha\nbeta\nG\n")
    # After reading again the second edit goes through.
    again = await ed.command("agentEdit.read", {"path": "r.txt"})
    retry = await ed.command(
        "agentEdit.replace",
        {
            "path": "r.txt",
            "oldText": "gamma" if "gamma" in again["text"] else "alpha",
            "newText": "Z",
            "expect": {"sha256": again["sha256"]},
        },
    )
    assert retry["ok"], retry
    await still_serving(ed)


# --- the path policy through the server --------------------------------------------------------


async def _policy_session(
    client: LanguageClient, tmp_path, options: dict[str, Any] | None = None
) -> Editor:
    ws = tmp_path / "ws"
    out = tmp_path / "outside"
    ws.mkdir()
    out.mkdir()
    (out / "secret.txt").write_text("TOP SECRET\n")
    (ws / "link").symlink_to(out / "secret.txt")
    (ws / "dirlink").symlink_to(out)
    ed = await start_session(client, "visual-studio-code", ws, options=options)
    ed.write_file("a.txt", "hello\n")
    ed.write_file(".env", "KEY=1\n")
    ed.write_file(".git/config", "[core]\n")
    ed.write_file("secret/x.txt", "x\n")
    return ed


@pytest.mark.asyncio
async def test_policy_containment_through_the_server(client: LanguageClient, tmp_path) -> None:
    ed = await _policy_session(client, tmp_path)
    for path in [
        "../outside/secret.txt",
        str(tmp_path / "outside/secret.txt"),
        "link",
        "dirlink/secret.txt",
        "file:///etc/passwd",
        "https://example.com/x",
    ]:
        for command, args in [
            ("agentEdit.read", {"path": path}),
            ("agentEdit.write", {"path": path, "text": "pwned\n"}),
            ("agentEdit.replace", {"path": path, "oldText": "TOP", "newText": "NOT"}),
        ]:
            answer = await ed.command(command, args)
            assert answer["ok"] is False and answer["code"] == "OUTSIDE_WORKSPACE", (path, answer)
            assert "TOP SECRET" not in json.dumps(answer)
    assert (tmp_path / "outside/secret.txt").read_text() == "TOP SECRET\n"
    await still_serving(ed)


@pytest.mark.asyncio
async def test_policy_deny_rules_through_the_server(client: LanguageClient, tmp_path) -> None:
    ed = await _policy_session(client, tmp_path, {"agentEdit": {"deny": ["secret/**"]}})
    for path, rule in [
        (".env", "**/.env"),
        (".git/config", "**/.git/**"),
        ("secret/x.txt", "secret/**"),
        ("new.pem", "**/*.pem"),
    ]:
        for command, args in [
            ("agentEdit.read", {"path": path}),
            ("agentEdit.write", {"path": path, "text": "pwned\n"}),
        ]:
            answer = await ed.command(command, args)
            assert answer["ok"] is False, (path, answer)
            assert (answer["code"], answer["details"]["rule"]) == ("DENIED", rule)
    link = await ed.command("agentEdit.read", {"path": "link"})
    assert link["details"]["rule"] == "symlink-outside"
    long_path = await ed.command("agentEdit.read", {"path": "d/" * 100_000 + "a.txt"})
    assert long_path["details"]["rule"] == "path-too-long"
    assert len(json.dumps(long_path)) < 5_000  # a refusal does not echo 200 KB back
    # The editor's configuration may tighten the rules; it cannot loosen them mid-session.
    ed.client.workspace_did_change_configuration(
        t.DidChangeConfigurationParams(settings={"agentEdit": {"deny": [], "defaultDeny": False}})
    )
    answer = await ed.command("agentEdit.read", {"path": ".env"})
    assert answer["code"] == "DENIED"
    assert (tmp_path / "ws/.env").read_text() == "KEY=1\n"


@pytest.mark.asyncio
async def test_workspace_folders_added_and_removed(client: LanguageClient, tmp_path) -> None:
    """A folder the user closes stops being editable at once; one they add becomes editable."""
    ed = await _policy_session(client, tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.txt").write_text("bee\n")
    b = str(other / "b.txt")
    refused = await ed.command("agentEdit.replace", {"path": b, "oldText": "bee", "newText": "B"})
    assert refused["code"] == "OUTSIDE_WORKSPACE"

    def change(added: list[Any], removed: list[Any]) -> None:
        ed.client.workspace_did_change_workspace_folders(
            t.DidChangeWorkspaceFoldersParams(
                event=t.WorkspaceFoldersChangeEvent(added=added, removed=removed)
            )
        )

    folder = t.WorkspaceFolder(uri=from_fs_path(str(other)) or "", name="other")
    change([folder], [])
    await still_serving(ed)
    done = await ed.command("agentEdit.replace", {"path": b, "oldText": "bee", "newText": "B"})
    assert done["ok"] is True, done
    # Not open: written by the server's disk writer in that folder, no tab opened.
    assert (other / "b.txt").read_text() == "B\n" and from_fs_path(b) not in ed.docs

    first = t.WorkspaceFolder(uri=ed.uri(""), name="ws")
    change([], [first])
    gone = await ed.command("agentEdit.write", {"path": str(ed.root / "a.txt"), "text": "x\n"})
    assert gone["ok"] is False and gone["code"] == "OUTSIDE_WORKSPACE", gone
    assert (ed.root / "a.txt").read_text() == "hello\n"
    # A malformed folder in the event is ignored, not a crash.
    change([t.WorkspaceFolder(uri="not a uri", name="bad")], [])
    again = await ed.command("agentEdit.read", {"path": b})
    assert again["ok"] is True and again["text"] == "B\n"
