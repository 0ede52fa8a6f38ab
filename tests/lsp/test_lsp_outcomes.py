"""How each outcome is told apart: files not open, creates, refusals, silence, racing edits."""

from __future__ import annotations

import hashlib

import pytest
from pytest_lsp import LanguageClient

from tests.editor_client import Editor, start_session


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.asyncio
async def test_file_not_open_is_written_on_disk_not_sent(editor: Editor):
    """Every editor: a file not open is changed by the disk writer, never by a null-version
    applyEdit (which would land on whatever the disk holds then and open a tab left dirty)."""
    editor.write_file("closed.txt", "alpha\nbeta\n")
    await editor.command("agentEdit.read", {"path": "closed.txt"})
    result = await editor.command(
        "agentEdit.replace", {"path": "closed.txt", "oldText": "beta", "newText": "gamma"}
    )
    assert result["ok"], result
    assert editor.apply_requests == []
    assert editor.docs == {}  # no tab opened (the editor's file watcher sees the new file)
    assert (editor.root / "closed.txt").read_text() == "alpha\ngamma\n"
    assert result["files"][0]["sha256"] == sha("alpha\ngamma\n")
    assert [p.name for p in editor.root.iterdir()] == ["closed.txt"]  # no temporary left


@pytest.mark.asyncio
async def test_write_creates_then_overwrite_needs_a_read(editor: Editor):
    created = await editor.command("agentEdit.write", {"path": "pkg/new.py", "text": "x = 1\n"})
    assert created["ok"], created
    assert created["files"][0]["change"] == "add"
    assert "new file mode" in created["diff"]
    # A file not open (a new one, here) is created on disk by the server, for every editor.
    assert editor.apply_requests == []
    assert (editor.root / "pkg/new.py").read_text() == "x = 1\n"
    again = await editor.command("agentEdit.write", {"path": "pkg/new.py", "text": "x = 2\n"})
    assert again["ok"], again  # the agent knows what it wrote
    editor.write_file("other.py", "old\n")
    refused = await editor.command("agentEdit.write", {"path": "other.py", "text": "new\n"})
    assert refused["code"] == "STALE" and "read" in refused["hint"]
    exists = await editor.command(
        "agentEdit.write", {"path": "other.py", "text": "new\n", "expect": {"sha256": sha("x")}}
    )
    assert exists["code"] == "STALE"


@pytest.mark.asyncio
async def test_rejection_and_silence(client: LanguageClient, tmp_path):
    ed = await start_session(
        client, "visual-studio-code", tmp_path, options={"applyTimeoutMs": 300}
    )
    ed.write_file("a.txt", "one\n")
    ed.open("a.txt")
    await ed.command("agentEdit.read", {"path": "a.txt"})
    ed.reject_all = True
    rejected = await ed.command(
        "agentEdit.replace", {"path": "a.txt", "oldText": "one", "newText": "1"}
    )
    assert rejected["code"] == "CLIENT_REJECTED" and "rejected by test" in rejected["message"]
    assert rejected["committed"] == []
    ed.reject_all = False
    ed.never_answer = True
    silent = await ed.command(
        "agentEdit.replace", {"path": "a.txt", "oldText": "one", "newText": "1"}
    )
    assert silent["code"] == "TIMEOUT"
    # Not refused: it may still land, so it is not called not-applied, and it stays pending.
    assert silent["details"]["files"] == [{"path": "a.txt", "state": "unconfirmed"}]
    assert ed.text("a.txt") == "one\n"
    ed.release()  # the late answer (a refusal) settles it
    while not any(
        getattr(c, "editId", None) == silent["details"]["editId"]
        and getattr(c, "outcome", None) == "NOT_APPLIED"
        for c in ed.history_changes
    ):
        await ed.client.wait_for_notification("agentEdit/historyChanged")
    after = await ed.command(
        "agentEdit.replace", {"path": "a.txt", "oldText": "one", "newText": "1"}
    )
    assert after["ok"] and ed.text("a.txt") == "1\n"


@pytest.mark.asyncio
async def test_dry_run_changes_nothing(vscode: Editor):
    vscode.write_file("d.txt", "keep\n")
    vscode.open("d.txt")
    await vscode.command("agentEdit.read", {"path": "d.txt"})
    result = await vscode.command(
        "agentEdit.replace", {"path": "d.txt", "oldText": "keep", "newText": "drop", "dryRun": True}
    )
    assert result["ok"] and result["status"] == "dry-run" and "+drop" in result["diff"]
    assert vscode.apply_requests == [] and vscode.text("d.txt") == "keep\n"


@pytest.mark.asyncio
async def test_outside_workspace_and_missing_files(vscode: Editor, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_text("s\n")
    for path in [str(outside), "../" + outside.parent.name + "/secret.txt"]:
        r = await vscode.command("agentEdit.read", {"path": path})
        assert r["code"] == "OUTSIDE_WORKSPACE", r
    missing = await vscode.command("agentEdit.read", {"path": "nope.txt"})
    assert missing["code"] == "NOT_FOUND" and "nope.txt" in missing["message"]


@pytest.mark.asyncio
async def test_read_range_with_line_numbers(vscode: Editor):
    vscode.write_file("r.txt", "a\nb\nc\nd\n")
    r = await vscode.command("agentEdit.read", {"path": "r.txt", "startLine": 2, "endLine": 3})
    assert r["text"] == "     2\tb\n     3\tc\n"
    assert r["sha256"] == sha("a\nb\nc\nd\n") and r["lines"] == 4 and r["source"] == "disk"


@pytest.mark.asyncio
async def test_save_after_edit_asks_the_editor(client: LanguageClient, tmp_path):
    asked: list[list[str]] = []

    @client.feature("agentEdit/saveDocuments")
    def save_documents(params):
        uris = list(params.uris)
        asked.append(uris)
        ed.save("s.txt")  # the first, as said: the server looks at the disk after a save
        return {"saved": uris[:1], "skipped": uris[1:]}

    ed = await start_session(
        client, "visual-studio-code", tmp_path, options={"saveAfterEdit": True}
    )
    ed.write_file("s.txt", "a\n")
    ed.open("s.txt")
    await ed.command("agentEdit.read", {"path": "s.txt"})
    r = await ed.command("agentEdit.replace", {"path": "s.txt", "oldText": "a", "newText": "b"})
    assert r["ok"] and asked == [[ed.uri("s.txt")]]
    assert r["saved"] is True and r["files"][0]["saved"] is True


@pytest.mark.asyncio
async def test_big_buffer_hashes_stay_exact(vscode: Editor):
    """Past 256K characters the server resumes hashing from the first edited position."""
    text = "".join(f"row {i} = {'x' * (i % 40)}\n" for i in range(30_000))
    vscode.write_file("big.txt", text)
    vscode.open("big.txt")
    read = await vscode.command("agentEdit.read", {"path": "big.txt"})
    assert read["sha256"] == sha(text)
    for i in [25_000, 3, 12_345, 29_999, 0]:
        r = await vscode.command(
            "agentEdit.replace",
            {"path": "big.txt", "oldText": f"row {i} =", "newText": f"ROW {i} ="},
        )
        assert r["ok"], r
        assert r["files"][0]["sha256"] == sha(vscode.text("big.txt"))
    vscode.type("big.txt", 20_000, 0, "typed ")
    again = await vscode.command("agentEdit.read", {"path": "big.txt"})
    assert again["sha256"] == sha(vscode.text("big.txt"))
