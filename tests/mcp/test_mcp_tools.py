"""`agent-edit mcp` driven by the MCP SDK's own client over stdio: the tool list and schemas,
every tool through an editor-like client's server on the same workspace, and on disk alone."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from lsp_server import contract
from tests.editor_client import Editor, server_config, start_session
from tests.mcp.mcp_helpers import call, mcp_env, mcp_session

TOOLS = {
    "read": "agentEdit.read",
    "replace": "agentEdit.replace",
    "write": "agentEdit.write",
    "apply_patch": "agentEdit.applyPatch",
    "history": "agentEdit.history",
    "undo": "agentEdit.undo",
}


@pytest.mark.asyncio
async def test_tools_list_schemas_and_hints(tmp_path):
    async with mcp_session(tmp_path) as s:
        listed = {t.name: t for t in (await s.list_tools()).tools}
    assert set(listed) == set(TOOLS)
    for name, command in TOOLS.items():
        tool = listed[name]
        schema = tool.input_schema
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        want = contract.schema(command.removeprefix("agentEdit."))
        assert set(schema["properties"]) == set(want["properties"])
        assert set(schema.get("required", [])) == set(want.get("required", []))
        assert tool.description and len(tool.description) > 100
        read_only = name in ("read", "history")
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is read_only
        assert tool.annotations.destructive_hint is (not read_only)
    assert "STALE" in listed["replace"].description
    assert "apply_patch" in listed["replace"].description
    assert listed["replace"].input_schema["properties"]["match"]["enum"] == ["exact", "lenient"]


@pytest.mark.asyncio
async def test_through_the_editor_every_tool(vscode: Editor):
    vscode.write_file("a.py", "x = 1\ny = 2\n")
    vscode.write_file("b.py", "b = 1\n")
    vscode.open("a.py")
    vscode.type("a.py", 1, 5, "  # unsaved")
    await vscode.command("agentEdit.history", {})  # the didChange is handled
    async with mcp_session(vscode.root) as s:
        got, text = await call(s, "read", {"path": "a.py"})
        assert got["via"] == "editor" and got["source"] == "buffer"
        assert got["text"] == "x = 1\ny = 2  # unsaved\n" and "y = 2  # unsaved" in text
        # A versioned edit lands in the buffer (not on disk), the user's text kept.
        got, text = await call(
            s, "replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 3"}
        )
        assert got["ok"] and got["via"] == "editor", got
        assert "-x = 1\n+x = 3" in text
        assert vscode.text("a.py") == "x = 3\ny = 2  # unsaved\n"
        assert (vscode.root / "a.py").read_text() == "x = 1\ny = 2\n"
        edit_id = got["editId"]
        # The user types: the agent's next edit from its old read is STALE, nothing changes.
        got, _ = await call(s, "read", {"path": "a.py"})
        vscode.type("a.py", 0, 0, "# user\n")
        await vscode.command("agentEdit.history", {})
        got, text = await call(s, "write", {"path": "a.py", "text": "gone\n"})
        assert got["code"] == "STALE", got
        assert text.startswith("STALE: ") and "hint: " in text and "details: " in text
        assert vscode.text("a.py") == "# user\nx = 3\ny = 2  # unsaved\n"
        # A file not open: through the editor's server, by its disk writer.
        patch = "*** Begin Patch\n*** Update File: b.py\n@@\n-b = 1\n+b = 2\n*** End Patch\n"
        got, _ = await call(s, "apply_patch", {"patch": patch})
        assert got["ok"] and got["via"] == "editor", got
        assert (vscode.root / "b.py").read_text() == "b = 2\n"
        # The edits are in the editor's own history, and undo goes through it too.
        hist = await vscode.command("agentEdit.history", {})
        assert edit_id in [e["id"] for e in hist["entries"]]
        got, text = await call(s, "history", {})
        assert got["via"] == "editor" and f"#{edit_id}" in text
        got, _ = await call(s, "undo", {"editId": edit_id})
        assert got["ok"], got
        assert vscode.text("a.py") == "# user\nx = 1\ny = 2  # unsaved\n"
        assert vscode.history_changes  # the editor was told (code lenses, history view)


@pytest.mark.asyncio
async def test_on_disk_when_no_editor_runs(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "c.py").write_text("c = 1\n")
    async with mcp_session(tmp_path) as s:
        got, _ = await call(s, "read", {"path": "a.py"})
        assert got["via"] == "disk" and got["source"] == "disk"
        got, text = await call(
            s, "replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
        )
        assert got["ok"] and got["via"] == "disk", got
        assert (tmp_path / "a.py").read_text() == "x = 2\n"
        got, _ = await call(s, "write", {"path": "new.txt", "text": "hello\n"})
        assert got["ok"], got
        got, _ = await call(s, "write", {"path": "c.py", "text": "blind\n"})
        assert got["ok"] is False, got  # never read in this session: not overwritten blind
        assert (tmp_path / "c.py").read_text() == "c = 1\n"
        got, text = await call(s, "replace", {"path": "../x", "oldText": "a", "newText": "b"})
        assert got["code"] == "OUTSIDE_WORKSPACE" and text.startswith("OUTSIDE_WORKSPACE: ")
        got, text = await call(s, "replace", {"path": "a.py", "oldText": 1})
        assert got["code"] == "INVALID_ARGUMENT" and "oldText" in text
    # The workspace journal holds them: the CLI (and an editor starting later) shows them.
    out = subprocess.run(
        [sys.executable, "-m", "lsp_server", "history", "--json", "--root", str(tmp_path)],
        capture_output=True,
        env=mcp_env(),
        check=True,
    )
    entries = json.loads(out.stdout)["entries"]
    assert [e["outcome"] for e in entries if e["action"] == "replace"][0] == "applied"
    async with mcp_session(tmp_path) as s:
        got, _ = await call(s, "undo", {"editId": entries[0]["id"]})
        assert got["ok"] and got["via"] == "disk", got
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


@pytest.mark.asyncio
async def test_two_mcp_clients_at_once_are_two_sessions(vscode: Editor):
    for i in range(10):
        vscode.write_file(f"f{i}.py", f"v = {i}\n")
    vscode.write_file("shared.py", "s = 0\n")
    vscode.open("shared.py")
    async with mcp_session(vscode.root) as a, mcp_session(vscode.root) as b:
        got, _ = await call(a, "read", {"path": "shared.py"})
        assert got["via"] == "editor"
        # b never read shared.py: a's read does not let b overwrite it.
        got, _ = await call(b, "write", {"path": "shared.py", "text": "b\n"})
        assert got["ok"] is False, got

        async def edits(s, files):
            out = []
            for i in files:
                r, _ = await call(
                    s,
                    "replace",
                    {"path": f"f{i}.py", "oldText": f"v = {i}", "newText": f"v = {i * 10 + 1}"},
                )
                out.append(r)
            return out

        ra, rb = await asyncio.gather(edits(a, range(0, 10, 2)), edits(b, range(1, 10, 2)))
        assert all(r["ok"] and r["via"] == "editor" for r in ra + rb), ra + rb
        ids = [r["editId"] for r in ra + rb]
        assert len(set(ids)) == len(ids)
        got, _ = await call(a, "write", {"path": "shared.py", "text": "a\n"})
        assert got["ok"], got
    assert vscode.text("shared.py") == "a\n"
    for i in range(10):
        assert (vscode.root / f"f{i}.py").read_text() == f"v = {i * 10 + 1}\n"


@pytest.mark.asyncio
async def test_editor_server_killed_between_calls(tmp_path):
    client = await server_config().start()
    try:
        ed = await start_session(client, "neovim", tmp_path)
        ed.write_file("open.py", "o = 1\n")
        ed.write_file("closed.py", "c = 1\n")
        ed.open("open.py")
        ed.type("open.py", 0, 5, "  # unsaved")
        await ed.command("agentEdit.history", {})
        async with mcp_session(tmp_path) as s:
            got, _ = await call(s, "read", {"path": "open.py"})
            assert got["via"] == "editor" and got["text"] == "o = 1  # unsaved\n"
            client._server.kill()  # type: ignore[union-attr]
            await client._server.wait()  # type: ignore[union-attr]
            # The next call says so and runs on disk...
            got, text = await call(s, "read", {"path": "closed.py"})
            assert got["via"] == "disk" and "gone" in got["note"] and "gone" in text
            # ...but never writes a file the editor (still running) had open.
            for tool, args in (
                ("replace", {"path": "open.py", "oldText": "o = 1", "newText": "o = 2"}),
                (
                    "apply_patch",
                    {"patch": "*** Begin Patch\n*** Delete File: open.py\n*** End Patch\n"},
                ),
            ):
                got, text = await call(s, tool, args)
                assert got["code"] == "CONFLICT", got
                assert got["details"]["reason"] == "EDITOR_SERVER_GONE"
                assert "Neovim" in text and "open.py" in text
            assert (tmp_path / "open.py").read_text() == "o = 1\n"
            # A file it did not have open is the disk's: that edit lands.
            got, _ = await call(
                s, "replace", {"path": "closed.py", "oldText": "c = 1", "newText": "c = 2"}
            )
            assert got["ok"] and got["via"] == "disk", got
            assert (tmp_path / "closed.py").read_text() == "c = 2\n"
            # The editor starts agent-edit again: calls go through it once more.
            client2 = await server_config().start()
            try:
                ed2 = await start_session(client2, "neovim", tmp_path)
                ed2.open("open.py", "o = 1  # unsaved\n")
                await ed2.command("agentEdit.history", {})
                got, _ = await call(s, "read", {"path": "open.py"})
                assert got["via"] == "editor" and "again" in got["note"]
                got, _ = await call(
                    s, "replace", {"path": "open.py", "oldText": "o = 1", "newText": "o = 2"}
                )
                assert got["ok"] and got["via"] == "editor", got
                assert ed2.text("open.py") == "o = 2  # unsaved\n"
            finally:
                await client2.shutdown_session()
                await client2.stop()
    finally:
        await client.stop()


@pytest.mark.asyncio
async def test_root_below_the_editors_folder_keeps_paths_relative_to_the_root(vscode: Editor):
    vscode.write_file("a.py", "top = 1\n")
    vscode.write_file("sub/a.py", "sub = 1\n")
    vscode.open("sub/a.py")
    vscode.type("sub/a.py", 0, 7, "  # unsaved")
    await vscode.command("agentEdit.history", {})
    async with mcp_session(vscode.root / "sub") as s:
        got, _ = await call(s, "read", {"path": "a.py"})
        assert got["via"] == "editor" and got["text"] == "sub = 1  # unsaved\n", got
        patch = (
            "*** Begin Patch\n*** Update File: a.py\n@@\n-sub = 1  # unsaved\n+sub = 2\n"
            "*** End Patch\n"
        )
        got, _ = await call(s, "apply_patch", {"patch": patch})
        assert got["ok"] and got["via"] == "editor", got
        assert vscode.text("sub/a.py") == "sub = 2\n"
        assert (vscode.root / "a.py").read_text() == "top = 1\n"
        padded = patch.replace("*** Update File:", "  *** Update File:")
        got, text = await call(s, "apply_patch", {"patch": padded})
        assert got["code"] == "INVALID_ARGUMENT" and "beginning of the line" in text
        assert got["via"] == "editor", got  # refused on the editor's route, before sending


@pytest.mark.asyncio
async def test_apply_patch_on_disk_all_or_nothing(tmp_path):
    (tmp_path / "a.py").write_text("a = 1\n")
    (tmp_path / "b.py").write_text("b = 1\n")
    bad = (
        "*** Begin Patch\n*** Update File: a.py\n@@\n-a = 1\n+a = 2\n"
        "*** Update File: b.py\n@@\n-nope\n+b = 2\n*** End Patch\n"
    )
    async with mcp_session(tmp_path) as s:
        got, text = await call(s, "apply_patch", {"patch": bad})
        assert got["code"] == "NO_MATCH" and got["via"] == "disk", got
        assert (tmp_path / "a.py").read_text() == "a = 1\n"
        good = bad.replace("-nope", "-b = 1")
        got, text = await call(s, "apply_patch", {"patch": good})
        assert got["ok"], got
    assert (tmp_path / "a.py").read_text() == "a = 2\n"
    assert (tmp_path / "b.py").read_text() == "b = 2\n"
