"""End to end through the real server over stdio, with an editor-like client per editor preset."""

from __future__ import annotations

import hashlib

import pytest
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, start_session


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.asyncio
async def test_stale_replace_is_refused_and_user_text_intact(editor: Editor):
    editor.write_file("config.ts", "export const port = 8080;\nexport const host = 'x';\n")
    editor.open("config.ts", language_id="typescript")
    read = await editor.command("agentEdit.read", {"path": "config.ts"})
    assert read["ok"] and read["source"] == "buffer"
    # The user types into the buffer after the agent read it.
    editor.type("config.ts", 1, 0, "// typed by the user\n")
    result = await editor.command(
        "agentEdit.replace", {"path": "config.ts", "oldText": "8080", "newText": "9090"}
    )
    assert result["ok"] is False and result["code"] == "STALE"
    assert result["details"]["expected"]["version"] == read["version"]
    assert "read" in result["hint"].lower()
    assert editor.text("config.ts") == (
        "export const port = 8080;\n// typed by the user\nexport const host = 'x';\n"
    )
    assert editor.apply_requests == []


@pytest.mark.asyncio
async def test_stale_expect_version_sent_to_editor_is_caught(editor: Editor):
    """Even if the server's check passes, each editor's stale reply is turned into a refusal."""
    editor.write_file("a.txt", "one\ntwo\n")
    editor.open("a.txt")
    # A first keystroke: Neovim's didOpen version 0 would disable its own version check.
    editor.type("a.txt", 0, 0, "zero\n")
    read = await editor.command("agentEdit.read", {"path": "a.txt"})
    # The applyEdit goes out with the current version; the editor then has a newer one.
    editor.docs[editor.uri("a.txt")].version += 5  # simulate a change the server has not seen yet
    result = await editor.command(
        "agentEdit.replace",
        {"path": "a.txt", "oldText": "two", "newText": "2", "expect": {"version": read["version"]}},
    )
    assert result["ok"] is False
    expected = {
        "visual-studio-code": "CLIENT_REJECTED",
        "emacs": "CLIENT_REJECTED",
        # Neovim skips it yet answers applied: true; with its didChange debounced that looks
        # like a late report until the buffer shows otherwise, so it is unconfirmed, never
        # "nothing was changed".
        "neovim": "UNVERIFIED",
    }
    assert result["code"] == expected[editor.kind]
    assert editor.text("a.txt") == "zero\none\ntwo\n"
    assert result["committed"] == []


@pytest.mark.asyncio
async def test_ambiguous_replace_lists_both_lines(editor: Editor):
    editor.write_file("m.py", "x = 1\ny = 2\nx = 1\n")
    editor.open("m.py", language_id="python")
    await editor.command("agentEdit.read", {"path": "m.py"})
    result = await editor.command(
        "agentEdit.replace", {"path": "m.py", "oldText": "x = 1", "newText": "x = 3"}
    )
    assert result["code"] == "AMBIGUOUS"
    assert result["details"]["lines"] == [1, 3]
    assert "1, 3" in result["message"]
    assert editor.text("m.py") == "x = 1\ny = 2\nx = 1\n"


@pytest.mark.asyncio
async def test_unique_replace_applies_verified_with_exact_diff(editor: Editor):
    body = "".join(f"line {i}\n" for i in range(1, 11))
    editor.write_file("f.txt", body)
    editor.open("f.txt")
    await editor.command("agentEdit.read", {"path": "f.txt"})
    result = await editor.command(
        "agentEdit.replace", {"path": "f.txt", "oldText": "line 5\n", "newText": "line five\n"}
    )
    assert result["ok"] is True, result
    assert result["status"] == "applied"
    want = body.replace("line 5\n", "line five\n")
    assert editor.text("f.txt") == want
    f = result["files"][0]
    assert f["path"] == "f.txt" and f["change"] == "update" and f["sha256"] == sha(want)
    assert f["version"] == editor.docs[editor.uri("f.txt")].version
    assert result["diff"] == (
        "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n"
        "@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n"
        " line 6\n line 7\n line 8\n"
    )
    # Only the changed line went to the editor, with the buffer's version.
    (tde,) = editor.apply_requests[0].edit.document_changes
    assert tde.text_document.version is not None
    assert [(e.range.start.line, e.range.end.line, e.new_text) for e in tde.edits] == [
        (4, 5, "line five\n")
    ]
    # A second edit right after needs no new read: the agent knows what its own edit left.
    again = await editor.command(
        "agentEdit.replace", {"path": "f.txt", "oldText": "line five", "newText": "5"}
    )
    assert again["ok"] is True and again["editId"] == result["editId"] + 1


@pytest.mark.asyncio
async def test_crlf_file_keeps_crlf(editor: Editor):
    editor.write_file("w.txt", "alpha\r\nbeta\r\ngamma\r\n")
    editor.open("w.txt")
    await editor.command("agentEdit.read", {"path": "w.txt"})
    result = await editor.command(
        "agentEdit.replace", {"path": "w.txt", "oldText": "beta\ngamma", "newText": "b\nc\nd"}
    )
    assert result["ok"], result
    assert editor.text("w.txt") == "alpha\r\nb\r\nc\r\nd\r\n"


@pytest.mark.asyncio
@pytest.mark.parametrize("encoding", ["utf-16", "utf-8"])
async def test_emoji_line_edited_exactly(client: LanguageClient, tmp_path, encoding):
    ed = await start_session(client, "visual-studio-code", tmp_path, encoding=encoding)
    assert ed.encoding == encoding
    ed.write_file("e.md", "start\n😀 smile 👍🏽 and more 😀 end\nlast\n")
    ed.open("e.md")
    # The user types after an astral character: the server must track it at the same place.
    ed.type(
        "e.md",
        1,
        len("😀 smile 👍🏽".encode("utf-16-le")) // 2
        if encoding == "utf-16"
        else len("😀 smile 👍🏽".encode()),
        "!",
    )
    await ed.command("agentEdit.read", {"path": "e.md"})
    result = await ed.command(
        "agentEdit.replace", {"path": "e.md", "oldText": "more 😀 end", "newText": "less 🎉 end"}
    )
    assert result["ok"], result
    assert ed.text("e.md") == "start\n😀 smile 👍🏽! and less 🎉 end\nlast\n"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "command,args",
    [
        ("agentEdit.replace", []),
        ("agentEdit.replace", ["not an object"]),
        ("agentEdit.replace", [{"path": "a.txt"}]),
        ("agentEdit.replace", [{"path": 5, "oldText": "a", "newText": "b"}]),
        (
            "agentEdit.replace",
            [{"path": "a.txt", "oldText": "a", "newText": "b", "replaceAll": "yes"}],
        ),
        ("agentEdit.replace", [{"path": "a.txt", "oldText": "a", "newText": "b", "bogus": 1}]),
        ("agentEdit.replace", [{"path": "a.txt", "oldText": "a", "newText": "b", "expect": {}}]),
        ("agentEdit.read", [{"path": "a.txt", "startLine": True}]),
        ("agentEdit.read", [{"path": ["a"]}]),
        ("agentEdit.write", [{"path": "a.txt", "text": {"nested": [[[[1]]]]}}]),
        ("agentEdit.write", [{"path": "a.txt", "text": "x"}, {"extra": 1}]),
        ("agentEdit.nope", [{}]),
    ],
)
async def test_malformed_arguments_are_invalid_params_and_server_keeps_serving(
    client: LanguageClient, tmp_path, command, args
):
    ed = await start_session(client, "visual-studio-code", tmp_path)
    ed.write_file("a.txt", "hello\n")
    with pytest.raises(JsonRpcInvalidParams):
        await ed.command(command, *args)
    ok = await ed.command("agentEdit.read", {"path": "a.txt"})
    assert ok["ok"] and ok["text"] == "hello\n"
