"""The actions over the headless (disk-only) context: every action, recovery at open, and the
refusals recorded once, in the same history the server keeps."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine import files
from lsp_server.engine.history import open_history
from lsp_server.engine.results import wire
from tests.editor_client import REPO


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


def run(root: Path, name: str, args: Any, **kw: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root), **kw) as ctx:
            return wire(await actions.run(ctx, name, args))

    return asyncio.run(go())


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_every_action_on_disk_is_in_the_history(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\ntwo\n")
    read = run(ws, "read", {"path": "a.txt"})
    assert read["ok"] and read["source"] == "disk" and read["version"] is None
    rep = run(ws, "replace", {"path": "a.txt", "oldText": "two", "newText": "TWO"})
    assert rep["status"] == "applied" and rep["saved"] is True
    assert (ws / "a.txt").read_text() == "one\nTWO\n"
    made = run(ws, "write", {"path": "new.txt", "text": "x\n"})
    assert made["files"][0]["change"] == "add"
    # An overwrite needs a precondition: a fresh session has read nothing.
    over = run(ws, "write", {"path": "new.txt", "text": "y\n"})
    assert over["ok"] is False and over["code"] == "STALE", over
    ok = run(ws, "write", {"path": "new.txt", "text": "y\n", "expect": {"sha256": sha(b"x\n")}})
    assert ok["ok"], ok
    hist = run(ws, "history", {})
    outcomes = [(e["action"], e["outcome"]) for e in hist["entries"]]
    assert ("replace", "applied") in outcomes and ("write", "STALE") in outcomes
    undo = run(ws, "undo", {"editId": rep["editId"]})
    assert undo["ok"], undo
    assert (ws / "a.txt").read_text() == "one\ntwo\n"
    # The server's history is the same journal.
    assert open_history(str(ws)).entry(undo["editId"]).action == "undo"


def test_malformed_arguments_raise_and_record_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(actions.InvalidArguments, match="no field 'pth'"):
        run(ws, "replace", {"pth": "a", "oldText": "", "newText": ""})
    assert run(ws, "history", {})["entries"] == []


KILLED = """
import asyncio, sys
from lsp_server import actions
from lsp_server.actions import headless
async def go():
    async with headless.open(sys.argv[1]) as ctx:
        await actions.run(ctx, "applyPatch", {"patch": sys.argv[2]})
asyncio.run(go())
"""

PATCH = (
    "*** Begin Patch\n*** Update File: a.txt\n-old\n+new\n"
    "*** Update File: b.txt\n-old\n+new\n*** End Patch\n"
)


@pytest.mark.parametrize("crash_after", [1, 2, 3, 4])
def test_open_rolls_back_an_apply_killed_mid_way_and_settles_its_entry(
    tmp_path: Path, state: Path, crash_after: int
) -> None:
    """An apply SIGKILLed at each step (2 writes, 2 renames) is rolled back when the next
    context opens, said through `notify`, recorded; the dead edit's entry is settled (never
    left pending for ever), and the files are as they were."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("old\n")
    (ws / "b.txt").write_text("old\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state)) | {
        files.CRASH_ENV: str(crash_after)
    }
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(ws), PATCH], env=env, capture_output=True, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    said: list[str] = []
    hist = run(ws, "history", {}, notify=said.append)
    assert any("rolled back an interrupted apply" in s for s in said), said
    assert (ws / "a.txt").read_text() == (ws / "b.txt").read_text() == "old\n"
    outcomes = {e["action"]: e["outcome"] for e in hist["entries"]}
    assert outcomes.get("recover") == "rolled-back", hist["entries"]
    assert outcomes.get("applyPatch") == "NOT_APPLIED", hist["entries"]
    assert open_history(str(ws)).unfinished() == []


def test_a_default_context_never_forks_even_for_a_large_patch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What an MCP server's disk context and the tests open: fork_plans is the CLI's alone
    # (split_plan.py: forking a process that runs threads or an event loop is unsafe).
    from lsp_server import split_plan
    from tests.cli.test_cli_split_plan import make_patch, make_tree, plain_sections

    seen: list[str] = []
    monkeypatch.setattr(split_plan, "TEST_HOOK", lambda point, detail: seen.append(point))
    ws = tmp_path / "ws"
    ws.mkdir()
    make_tree(ws)
    patch = make_patch(plain_sections())
    assert len(patch) >= headless.SPLIT_PLAN_FROM_CHARS
    result = run(ws, "applyPatch", {"patch": patch})
    assert result["ok"] is True, result
    assert seen == []


def test_a_read_does_not_replay_the_history(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read records nothing: opening the history (which replays the whole journal, large
    edits' change records included) made every read of a file pay for the workspace's past."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\ntwo\n")
    opened: list[str] = []
    real = headless.open_history

    def counted(root: str) -> Any:
        opened.append(root)
        return real(root)

    monkeypatch.setattr(headless, "open_history", counted)
    assert run(ws, "read", {"path": "a.txt"})["ok"]
    assert run(ws, "read", {"path": "missing.txt"})["code"] == "NOT_FOUND"
    assert opened == []
    rep = run(ws, "replace", {"path": "a.txt", "oldText": "two", "newText": "TWO"})
    assert rep["status"] == "applied" and len(opened) == 1
    # The history still has every edit, and reads none.
    hist = run(ws, "history", {})
    assert [e["action"] for e in hist["entries"]] == ["replace"]


def test_a_read_after_a_killed_apply_still_records_the_rollback(
    tmp_path: Path, state: Path
) -> None:
    """The history is not opened for a read, except to record a rollback the read's context
    made: that one is in the history (and the dead edit settled) as for any other action."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("old\n")
    (ws / "b.txt").write_text("old\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state)) | {
        files.CRASH_ENV: "3"
    }
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(ws), PATCH], env=env, capture_output=True, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    said: list[str] = []
    read = run(ws, "read", {"path": "a.txt"}, notify=said.append)
    assert read["ok"] and read["text"] == "old\n"
    assert any("rolled back an interrupted apply" in s for s in said), said
    history = open_history(str(ws))
    outcomes = {e.action: e.outcome for e in history.entries}
    assert outcomes.get("recover") == "rolled-back", outcomes
    assert outcomes.get("applyPatch") == "NOT_APPLIED", outcomes
    assert history.unfinished() == []
