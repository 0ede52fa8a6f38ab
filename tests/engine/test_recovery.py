"""Recovery everywhere: an apply killed half-way is rolled back by whichever entry point opens the
workspace next (`history`, `undo`, `replace`, `apply-patch`, a server start), with one message,
recorded in the history; an unusable state folder is a clear IO_ERROR, never a traceback.

A 400-file CLI apply is SIGKILLed by the `AGENT_EDIT_CRASH_AFTER` hook at a step chosen at
random (seeded, so a failure reproduces) among its renames, where the tree is half-applied.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as t

from tests.cli.test_cli_atomic import apply_killed_after, cli, make, tree
from tests.editor_client import STATE_DIR, server_config, start_session

FILES = 400
OLD = {f"pkg{i % 7}/m{i:03d}.py": f"value = {i}\nkeep = True\n".encode() for i in range(FILES)}
NEW = {p: data.replace(b"value =", b"value :=") for p, data in OLD.items()}
PATCH = (
    "*** Begin Patch\n"
    + "".join(
        f"*** Update File: {p}\n@@\n-value = {i}\n+value := {i}\n"
        for i, p in enumerate(sorted(OLD, key=lambda p: int(p[-6:-3])))
    )
    + "*** End Patch\n"
)
# 400 temporary files written, then 400 renames: a kill after step 401..799 is half-applied.
RNG = random.Random(int(os.environ.get("AGENT_EDIT_RECOVERY_SEED", "13")))
MESSAGE = "rolled back an interrupted apply"


def killed(root: Path, state: Path) -> set[str]:
    """Build the tree, kill an apply of it between two renames; the files that were new then
    (the renames run in threads: a few more than the step count may have landed)."""
    root.mkdir()
    make(root, OLD)
    step = RNG.randrange(FILES + 1, 2 * FILES)
    proc = apply_killed_after(step, root, PATCH, state)
    assert proc.returncode == -9, proc.stderr
    now = tree(root)
    landed = {p for p in OLD if now[p] == NEW[p]}
    assert landed and len(landed) < FILES, step
    assert all(now[p] == OLD[p] for p in OLD if p not in landed)
    return landed


def recoveries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history's recovery entries. The killed CLI apply is in the history too (it journals
    its plan first, as the server does): settled, or still unfinished while the server waits for
    the editor's buffers, never applied (everything was rolled back)."""
    assert all(e["outcome"] != "applied" for e in entries if e["action"] == "applyPatch")
    return [e for e in entries if e["action"] != "applyPatch"]


def tree_files(root: Path) -> dict[str, bytes]:
    return {p: data for p, data in tree(root).items() if "agent-edit" not in p}


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


def test_history_rolls_back_a_killed_apply_and_shows_it(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    landed = killed(root, state)
    proc = cli("history", "--root", str(root), state=state)
    assert proc.returncode == 0, proc.stderr
    assert tree(root) == OLD
    assert MESSAGE in proc.stderr and "restored" in proc.stderr
    assert "no agent edits recorded" not in proc.stdout
    assert "recover" in proc.stdout and "rolled-back" in proc.stdout
    # Said once: the next look finds nothing to roll back, and the entry is in the journal.
    again = cli("history", "--root", str(root), "--json", state=state)
    assert MESSAGE not in again.stderr
    (entry,) = recoveries(json.loads(again.stdout)["entries"])
    assert entry["action"] == "recover" and {f["path"] for f in entry["files"]} == landed


def test_history_after_a_kill_among_the_temporary_files_cleans_them(
    tmp_path: Path, state: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make(root, OLD)
    step = RNG.randrange(1, FILES)  # some temporary files written, no rename yet
    assert apply_killed_after(step, root, PATCH, state).returncode == -9
    assert tree(root) != OLD  # the temporaries are there
    proc = cli("history", "--root", str(root), "--json", state=state)
    assert proc.returncode == 0, proc.stderr
    assert tree(root) == OLD, step
    assert "nothing had changed yet" in proc.stderr
    (entry,) = recoveries(json.loads(proc.stdout)["entries"])
    assert entry["action"] == "recover" and entry["files"] == []


def test_undo_rolls_back_first(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    killed(root, state)
    proc = cli("undo", "--root", str(root), "--json", "1", state=state)
    assert tree(root) == OLD
    assert MESSAGE in proc.stderr
    # The only entry is the recovery itself, which changed nothing an undo could revert.
    assert proc.returncode == 1 and json.loads(proc.stdout)["code"] == "INVALID_ARGUMENT"


def test_replace_rolls_back_first(tmp_path: Path, state: Path) -> None:
    root = tmp_path / "ws"
    killed(root, state)
    path = "pkg1/m001.py"
    proc = cli("replace", "--root", str(root), path, "keep = True", "keep = 1", state=state)
    assert proc.returncode == 0, proc.stderr
    assert MESSAGE in proc.stderr
    want = dict(OLD, **{path: b"value = 1\nkeep = 1\n"})
    assert tree(root) == want


@pytest.mark.asyncio
async def test_a_server_start_rolls_back_says_it_and_records_it(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    killed(root, Path(STATE_DIR))
    client = await server_config().start()
    try:
        ed = await start_session(client, "visual-studio-code", root)
        shown = await asyncio.wait_for(client.wait_for_notification(t.WINDOW_SHOW_MESSAGE), 10)
        assert MESSAGE in shown.message and "restored" in shown.message
        assert tree(root) == OLD
        hist = await ed.command("agentEdit.history", {"format": "json"})
        (entry,) = recoveries(hist["entries"])
        # The same message (cut, as every argument in the history is, past 200 characters).
        assert (
            entry["action"] == "recover" and entry["args"]["message"][:200] == shown.message[:200]
        )
    finally:
        await client.shutdown_session()
        await client.stop()


@pytest.mark.parametrize("command", ["history", "undo", "replace", "apply-patch"])
@pytest.mark.parametrize("how", ["file-in-the-way", "unwritable"])
def test_an_unusable_state_folder_is_an_io_error(tmp_path: Path, command: str, how: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make(root, {"a.txt": b"a\n"})
    if how == "file-in-the-way":
        state = tmp_path / "blocker"
        state.write_text("not a folder")
    elif os.geteuid() == 0:
        state = Path("/proc/agent-edit-state")  # root writes anywhere, but nothing is made here
    else:
        state = tmp_path / "ro"
        state.mkdir()
        state.chmod(0o500)
    patch = tmp_path / "p.patch"
    patch.write_text("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\n")
    argv = {
        "history": ["history"],
        "undo": ["undo", "1"],
        "replace": ["replace", "a.txt", "a", "b"],
        "apply-patch": ["apply-patch", str(patch)],
    }[command]
    try:
        proc = cli(argv[0], "--root", str(root), "--json", *argv[1:], state=state)
    finally:
        if how == "unwritable" and os.geteuid() != 0:
            state.chmod(0o700)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    result = json.loads(proc.stdout)
    assert result["code"] == "IO_ERROR" and "state folder" in result["message"]
    assert "AGENT_EDIT_STATE_DIR" in result["hint"]
    assert tree(root) == {"a.txt": b"a\n"}


@pytest.mark.asyncio
async def test_a_server_starts_with_an_unusable_state_folder_and_says_so_once(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a folder")
    config = server_config()
    config.server_env = dict(config.server_env or {}, AGENT_EDIT_STATE_DIR=str(blocker))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    client = await config.start()
    try:
        ed = await start_session(client, "visual-studio-code", root)
        shown = await asyncio.wait_for(client.wait_for_notification(t.WINDOW_SHOW_MESSAGE), 10)
        assert "IO_ERROR" in shown.message and "state folder" in shown.message
        ed.open("a.txt", "a\n")
        done = await ed.command(
            "agentEdit.replace", {"path": "a.txt", "oldText": "a", "newText": "b"}
        )
        assert done["ok"], done
        messages = [m for m in client.messages if "state folder" in m.message]
        assert len(messages) == 1
    finally:
        await client.shutdown_session()
        await client.stop()


@pytest.mark.parametrize("command", ["history", "apply-patch"])
def test_a_state_folder_inside_the_workspace_is_refused(tmp_path: Path, command: str) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make(root, {"a.txt": b"a\n"})
    patch = tmp_path / "p.patch"
    patch.write_text("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch\n")
    argv = ["history"] if command == "history" else ["apply-patch", str(patch)]
    proc = cli(argv[0], "--root", str(root), "--json", *argv[1:], state=root / ".state")
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1 and json.loads(proc.stdout)["code"] == "DENIED"
    assert tree(root) == {"a.txt": b"a\n"}
