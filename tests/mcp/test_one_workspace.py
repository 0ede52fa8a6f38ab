"""One workspace, several processes (issue 14 item 5): the CLI and a second language server never
write on disk a file another live server's editor holds open: the CLI routes its edit and undo to
that server (the buffer changes, verified), or refuses naming the editor; a second server
refuses. The history never says "undone" before the buffer shows it."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server import discovery
from tests.editor_client import Editor, server_config, start_session
from tests.mcp.mcp_helpers import mcp_env


def cli(root: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        capture_output=True,
        text=True,
        env=mcp_env(),
        cwd=str(root),
        input=stdin,
        timeout=120,
    )


async def acli(
    root: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI, while this event loop keeps answering for the editor (its applyEdit)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lsp_server",
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=mcp_env(),
        cwd=str(root),
    )
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin else None), 120)
    assert proc.returncode is not None
    return subprocess.CompletedProcess(list(args), proc.returncode, out.decode(), err.decode())


@pytest.mark.asyncio
async def test_cli_replace_of_an_open_dirty_file_goes_through_the_editor(vscode: Editor):
    vscode.write_file("a.py", "x = 1\ny = 2\n")
    vscode.open("a.py")
    vscode.type("a.py", 1, 5, "  # unsaved")
    await vscode.command("agentEdit.history", {})
    out = await acli(
        vscode.root, "replace", "--json", "--root", str(vscode.root), "a.py", "x = 1", "x = 5"
    )
    assert out.returncode == 0, out
    result = json.loads(out.stdout)
    assert result["ok"] and result["via"] == "editor"
    assert vscode.text("a.py") == "x = 5\ny = 2  # unsaved\n"
    assert (vscode.root / "a.py").read_text() == "x = 1\ny = 2\n"  # the buffer, not the disk
    # A replace computed against the disk's text ("y = 2" alone) no longer matches the buffer.
    out = await acli(
        vscode.root, "replace", "--root", str(vscode.root), "a.py", "y = 2\n", "y = 9\n"
    )
    assert out.returncode == 1 and "NO_MATCH" in out.stderr, out
    assert vscode.text("a.py") == "x = 5\ny = 2  # unsaved\n"


@pytest.mark.asyncio
async def test_cli_undo_goes_through_the_editor_and_says_undone_only_once_shown(vscode: Editor):
    vscode.write_file("a.py", "x = 1\ny = 2\n")
    vscode.open("a.py")
    got = await vscode.command(
        "agentEdit.replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
    )
    assert got["ok"], got
    vscode.type("a.py", 1, 5, "  # unsaved")
    await vscode.command("agentEdit.history", {})
    out = await acli(vscode.root, "undo", "--json", "--root", str(vscode.root), str(got["editId"]))
    assert out.returncode == 0, out
    assert json.loads(out.stdout)["via"] == "editor"
    assert vscode.text("a.py") == "x = 1\ny = 2  # unsaved\n"  # shown in the buffer
    assert (vscode.root / "a.py").read_text() == "x = 1\ny = 2\n"
    hist = await vscode.command("agentEdit.history", {})
    undo = hist["entries"][-1]
    assert undo["action"] == "undo" and undo["outcome"] == "applied"
    # The editor's own undo of the same edit is refused as already undone: one truth.
    again = await vscode.command("agentEdit.undo", {"editId": got["editId"]})
    assert again["ok"] is False


@pytest.mark.asyncio
async def test_cli_under_a_subfolder_refuses_a_file_the_editor_holds_open(vscode: Editor):
    sub = vscode.root / "sub"
    vscode.write_file("sub/a.py", "x = 1\n")
    vscode.write_file("sub/b.py", "b = 1\n")
    vscode.open("sub/a.py")
    vscode.type("sub/a.py", 0, 5, "  # unsaved")
    await vscode.command("agentEdit.history", {})
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
    out = await acli(sub, "apply-patch", "--root", str(sub), "-", stdin=patch)
    assert out.returncode == 1, out
    assert "CONFLICT" in out.stderr and "Visual Studio Code" in out.stderr, out.stderr
    assert (sub / "a.py").read_text() == "x = 1\n"
    out = await acli(sub, "replace", "--root", str(sub), "a.py", "x = 1", "x = 2")
    assert out.returncode == 1 and "Visual Studio Code" in out.stderr, out
    # A file it does not hold is the disk's: that lands.
    out = await acli(sub, "replace", "--root", str(sub), "b.py", "b = 1", "b = 2")
    assert out.returncode == 0, out
    assert (sub / "b.py").read_text() == "b = 2\n"


@pytest.mark.asyncio
async def test_second_server_refuses_to_write_a_file_the_first_editor_holds(vscode: Editor):
    vscode.write_file("a.py", "x = 1\n")
    vscode.open("a.py")
    vscode.type("a.py", 0, 5, "  # unsaved")
    await vscode.command("agentEdit.history", {})
    second = await server_config().start()
    try:
        other = await start_session(second, "neovim", vscode.root)
        got = await other.command(
            "agentEdit.replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
        )
        assert got["code"] == "CONFLICT", got
        assert got["details"]["reason"] == "OPEN_IN_OTHER_EDITOR"
        assert "Visual Studio Code" in got["message"]
        assert (vscode.root / "a.py").read_text() == "x = 1\n"
        undo_target = await vscode.command(
            "agentEdit.replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 3"}
        )
        assert undo_target["ok"], undo_target
        # Its undo of the first editor's edit (same journal) is refused too, not done on disk.
        got = await other.command("agentEdit.undo", {"editId": undo_target["editId"]})
        assert got["ok"] is False and got["code"] == "CONFLICT", got
        assert vscode.text("a.py") == "x = 3  # unsaved\n"
        hist = await vscode.command("agentEdit.history", {})
        assert not [
            e for e in hist["entries"] if e["action"] == "undo" and e["outcome"] == "applied"
        ]
    finally:
        await second.shutdown_session()
        await second.stop()


def test_cli_ignores_a_dead_servers_announcement(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    _, name = discovery.announce([str(tmp_path)], {"unix": "x.sock"}, "t" * 64, "Neovim")
    path = Path(discovery.runtime_dir()) / name
    raw = json.loads(path.read_text())
    raw["pid"], raw["start"] = child.pid, None
    path.write_text(json.dumps(raw))
    (tmp_path / "a.py").write_text("x = 1\n")
    out = cli(tmp_path, "replace", "--root", str(tmp_path), "a.py", "x = 1", "x = 2")
    assert out.returncode == 0, out
    assert (tmp_path / "a.py").read_text() == "x = 2\n"
    assert not path.exists()
