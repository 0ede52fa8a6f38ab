"""Syntax diagnostics end to end: edit results, publishDiagnostics and refresh, through the server.

The real server (the shared `client` fixture) with an editor-like client per editor preset.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as t
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, capabilities, start_session

PUBLISH = t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS


async def _session_with_refresh(client: LanguageClient, root: Path) -> Editor:
    caps = capabilities("visual-studio-code")
    caps.workspace = caps.workspace or t.WorkspaceClientCapabilities()
    caps.workspace.diagnostics = t.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    ed = Editor(client, "visual-studio-code", root)
    await client.initialize_session(
        t.InitializeParams(
            capabilities=caps,
            root_uri=from_fs_path(str(root)),
            workspace_folders=[t.WorkspaceFolder(uri=from_fs_path(str(root)) or "", name="ws")],
            initialization_options={"verifyTimeoutMs": 1000},
        )
    )
    return ed


async def edit_and_collect(
    editor: Editor, rel: str, old: str, new: str
) -> tuple[dict[str, Any], t.PublishDiagnosticsParams]:
    """Run a replace; the result and the publishDiagnostics it produced for `rel`."""
    uri = editor.uri(rel)
    waiting = asyncio.ensure_future(_next_publish(editor.client, uri))
    await editor.command("agentEdit.read", {"path": rel})
    result = await editor.command(
        "agentEdit.replace", {"path": rel, "oldText": old, "newText": new}
    )
    assert result["ok"], result
    return result, await asyncio.wait_for(waiting, 10)


async def edit(editor: Editor, rel: str, old: str, new: str) -> dict[str, Any]:
    await editor.command("agentEdit.read", {"path": rel})
    result = await editor.command(
        "agentEdit.replace", {"path": rel, "oldText": old, "newText": new}
    )
    assert result["ok"], result
    return result


async def _next_publish(client: LanguageClient, uri: str) -> t.PublishDiagnosticsParams:
    while True:
        params: t.PublishDiagnosticsParams = await client.wait_for_notification(PUBLISH)
        if params.uri == uri:
            return params


CASES = [
    (
        "python",
        "app.py",
        "def f(a):\n    return g(a)\n\n\ndef h():\n    pass\n",
        "    return g(a)\n",
        "    return g(a\n",
        2,
        "missing ')' to close '(' opened at 2:13",
    ),
    (
        "typescript",
        "app.ts",
        "export function f(a: number): number {\n  return g(a);\n}\n",
        "f(a: number)",
        "f(a: number",
        1,
        "missing ')' to close '(' opened at 1:18",
    ),
    (
        "rust",
        "main.rs",
        'fn main() {\n    let x = (1 + 2);\n    println!("{}", x);\n}\n',
        "(1 + 2);",
        "(1 + 2;",
        2,
        "missing ')' to close '(' opened at 2:13",
    ),
]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("language_id", "rel", "text", "good", "bad", "line", "message"),
    CASES,
    ids=[c[0] for c in CASES],
)
async def test_breaking_edit_is_reported_and_published_and_the_fix_clears_it(
    editor: Editor,
    language_id: str,
    rel: str,
    text: str,
    good: str,
    bad: str,
    line: int,
    message: str,
):
    editor.write_file(rel, text)
    editor.open(rel, language_id=language_id)

    result, published = await edit_and_collect(editor, rel, good, bad)
    assert result["diagnostics"] == [
        {
            "path": rel,
            "line": line,
            "column": result["diagnostics"][0]["column"],
            "endLine": line,
            "endColumn": result["diagnostics"][0]["endColumn"],
            "message": message,
            "kind": result["diagnostics"][0]["kind"],
        }
    ]
    assert published.version == result["files"][0]["version"] == editor.docs[published.uri].version
    assert len(published.diagnostics) == 1
    d = published.diagnostics[0]
    assert d.source == "agent-edit"
    assert d.severity == t.DiagnosticSeverity.Error
    assert d.message == message
    assert d.range.start.line == line - 1

    result, published = await edit_and_collect(editor, rel, bad, good)
    assert result["diagnostics"] == []
    assert list(published.diagnostics) == []
    assert published.version == editor.docs[published.uri].version


@pytest.mark.asyncio
async def test_plain_text_and_unknown_languages_get_no_diagnostics(editor: Editor):
    editor.write_file("notes.txt", "a\nb\n")
    editor.open("notes.txt")  # languageId plaintext
    result = await edit(editor, "notes.txt", "b", "def f(:\n  (((")
    assert result["diagnostics"] == []
    editor.write_file("data.zzz", "a\n")
    editor.open("data.zzz", language_id="zzz")
    result = await edit(editor, "data.zzz", "a", "{{{")
    assert result["diagnostics"] == []
    await editor.command("agentEdit.read", {"path": "notes.txt"})  # a round trip after the edits
    assert not editor.client.diagnostics.get(editor.uri("notes.txt"))
    assert not editor.client.diagnostics.get(editor.uri("data.zzz"))


@pytest.mark.asyncio
async def test_clean_edit_of_a_clean_file_sends_nothing_to_clear(editor: Editor):
    editor.write_file("ok.py", "x = 1\n")
    editor.open("ok.py", language_id="python")
    result = await edit(editor, "ok.py", "x = 1", "x = 2")
    assert result["diagnostics"] == []
    await editor.command("agentEdit.read", {"path": "ok.py"})
    assert editor.uri("ok.py") not in editor.client.diagnostics


@pytest.mark.asyncio
async def test_already_broken_file_does_not_blame_the_edit(editor: Editor):
    body = "x = [1, 2\n" + "".join(f"def f{i}():\n    return {i}\n\n" for i in range(40))
    editor.write_file("broken.py", body)
    editor.open("broken.py", language_id="python")
    result, published = await edit_and_collect(editor, "broken.py", "return 30", "return 31")
    assert result["diagnostics"] == []
    # The editor still shows the file's existing error.
    assert [d.range.start.line for d in published.diagnostics] == [0]
    assert published.diagnostics[0].message == "missing ']' to close '[' opened at 1:5"


@pytest.mark.asyncio
async def test_positions_follow_the_negotiated_encoding(client: LanguageClient, tmp_path):
    editor = await start_session(client, "neovim", tmp_path, encoding="utf-8")
    assert editor.encoding == "utf-8"
    editor.write_file("u.py", "s = 'é😀' + (1)\n")
    editor.open("u.py", language_id="python")
    result, published = await edit_and_collect(editor, "u.py", "(1)", "(1")
    # '(' is the 12th code point, at UTF-8 byte 15.
    assert result["diagnostics"][0]["column"] == 12
    assert published.diagnostics[0].range.start.character == 15


@pytest.mark.asyncio
async def test_refresh_is_requested_only_when_supported(client: LanguageClient, tmp_path):
    editor = await _session_with_refresh(client, tmp_path)
    editor.write_file("a.py", "x = 1\n")
    editor.open("a.py", language_id="python")
    await edit(editor, "a.py", "x = 1", "x = 2")
    for _ in range(100):
        if client.diagnostic_refresh_count:
            break
        await asyncio.sleep(0.02)
    assert client.diagnostic_refresh_count == 1


@pytest.mark.asyncio
async def test_no_refresh_request_without_support(editor: Editor):
    editor.write_file("a.py", "x = 1\n")
    editor.open("a.py", language_id="python")
    await edit(editor, "a.py", "x = 1", "x = 2")
    await editor.command("agentEdit.read", {"path": "a.py"})  # a round trip after the edit
    assert editor.client.diagnostic_refresh_count == 0


@pytest.mark.asyncio
async def test_the_users_typed_fix_clears_published_errors(editor: Editor):
    editor.write_file("t.py", "def f(a):\n    return g(a)\n")
    editor.open("t.py", language_id="python")
    _, published = await edit_and_collect(editor, "t.py", "g(a)", "g(a")
    assert published.diagnostics
    waiting = asyncio.ensure_future(_next_publish(editor.client, editor.uri("t.py")))
    editor.type("t.py", 1, 14, ")")  # the user closes the parenthesis
    published = await asyncio.wait_for(waiting, 10)
    assert list(published.diagnostics) == []
    assert published.version == editor.docs[editor.uri("t.py")].version


def _big_python(functions: int = 1200) -> str:
    # ~100 KiB: above REGION_ABOVE_BYTES, so edits get region checks, not whole reparses.
    return "".join(
        f"def f{i}(a, b):\n    x = [a, b, {i}]\n    return g(x, a) + {i}\n\n"
        for i in range(functions)
    )


async def _until_region_checked(editor: Editor, rel: str) -> None:
    """Clean edits until one is region-checked: the parse started by didOpen (or by the first
    edit, when it came first) has finished. Each try is a round trip, no sleeping."""
    value = "100"
    for _ in range(500):
        new = value[1:] if value.startswith("-") else "-" + value
        result = await edit(editor, rel, f"[a, b, {value}]", f"[a, b, {new}]")
        value = new
        assert result["diagnostics"] == []
        if "diagnosticsPending" not in result:
            return
    raise AssertionError("the whole parse never finished")


@pytest.mark.asyncio
async def test_large_file_breaking_edit_is_reported_now_and_published_after_the_whole_check(
    vscode: Editor,
):
    vscode.write_file("big.py", _big_python())
    vscode.open("big.py", language_id="python")
    uri = vscode.uri("big.py")
    await _until_region_checked(vscode, "big.py")
    # A clean edit: the region check says so, nothing pending, nothing published.
    result = await edit(vscode, "big.py", "[a, b, 600]", "[a, b, -600]")
    assert result["diagnostics"] == [] and "diagnosticsPending" not in result
    # A breaking edit: the region's error now, the whole file's list published after.
    waiting = asyncio.ensure_future(_next_publish(vscode.client, uri))
    result = await edit(vscode, "big.py", "[a, b, 700]", "[a, b, 700")
    assert result["diagnosticsPending"] == ["big.py"]
    assert [(d["line"], d["message"]) for d in result["diagnostics"]] == [
        (2802, "missing ']' to close '[' opened at 2802:9")
    ]
    published = await asyncio.wait_for(waiting, 20)
    assert [(d.range.start.line, d.message) for d in published.diagnostics] == [
        (2801, "missing ']' to close '[' opened at 2802:9")
    ]
    assert published.version == vscode.docs[uri].version
    # The fix: the file was broken, so the whole check decides, and clears the error.
    waiting = asyncio.ensure_future(_next_publish(vscode.client, uri))
    result = await edit(vscode, "big.py", "[a, b, 700", "[a, b, 700]")
    assert result["diagnostics"] == [] and result["diagnosticsPending"] == ["big.py"]
    published = await asyncio.wait_for(waiting, 20)
    assert list(published.diagnostics) == []
    # Clean again: the next clean edit is a region check again.
    result = await edit(vscode, "big.py", "[a, b, 800]", "[a, b, 801]")
    assert result["diagnostics"] == [] and "diagnosticsPending" not in result


class _FakeDoc:
    def __init__(self, uri: str, path: str, text: str, version: int) -> None:
        self.uri, self.path, self.text, self.version = uri, path, text, version
        self.language_id = "python"


class _FakeServer:
    """What diagnostics.py uses of the server: the store, the encoding, the publish call."""

    encoding = "utf-16"
    client_capabilities = None

    def __init__(self, doc: _FakeDoc) -> None:
        self.doc = doc
        self.published: list[t.PublishDiagnosticsParams] = []
        self.store = self

    def by_path(self, path: str) -> _FakeDoc | None:
        return self.doc if path == self.doc.path else None

    def get(self, uri: str) -> _FakeDoc | None:
        return self.doc if uri == self.doc.uri else None

    def text_document_publish_diagnostics(self, params: t.PublishDiagnosticsParams) -> None:
        self.published.append(params)


@pytest.mark.asyncio
async def test_large_file_whole_check_is_not_published_for_a_text_the_user_typed_over():
    from lsp_server.engine.planner import plan_replace
    from lsp_server.engine.text import Snapshot
    from lsp_server.lsp import diagnostics

    text = _big_python()
    doc = _FakeDoc("file:///w/big.py", "/w/big.py", text, 1)
    server = _FakeServer(doc)
    change = plan_replace(Snapshot("big.py", text, "buffer", 1), "[a, b, 700]", "[a, b, 700")
    loc = type("Loc", (), {"abs_path": doc.path, "uri": doc.uri})()
    pending_publish = diagnostics.publish_after_edit(
        server, [change], {"big.py": loc}, {"big.py": 2}
    )
    out = await pending_publish
    assert out.pending == ["big.py"]
    st = diagnostics.state(server)
    task = st._parsing[doc.path]
    # The user typed the fix before the whole check finished: version 3, the text fixed again.
    doc.version, doc.text = 3, text
    await task
    assert server.published == []  # nothing for version 2: the editor shows version 3
    republish = st._pending.pop(doc.uri)  # a check of what the user sees is scheduled instead
    republish.cancel()


@pytest.mark.asyncio
async def test_large_file_typed_in_by_the_user_still_gets_a_region_check(vscode: Editor):
    vscode.write_file("big.py", _big_python())
    vscode.open("big.py", language_id="python")
    await _until_region_checked(vscode, "big.py")
    vscode.type("big.py", 2001, 4, "z = 1\n    ")  # the user adds a line in f500
    result = await edit(vscode, "big.py", "[a, b, 900]", "[a, b, -900]")
    assert result["diagnostics"] == [] and "diagnosticsPending" not in result
    # The user breaks a line; the agent's next edit is not blamed for it, and the whole check
    # publishes the user's error.
    vscode.type("big.py", 2002, 18, "(")
    uri = vscode.uri("big.py")
    waiting = asyncio.ensure_future(_next_publish(vscode.client, uri))
    result = await edit(vscode, "big.py", "[a, b, -900]", "[a, b, 900]")
    assert result["diagnostics"] == []
    published = await asyncio.wait_for(waiting, 20)
    assert [d.range.start.line for d in published.diagnostics] == [2002]
