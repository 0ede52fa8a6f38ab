"""The CLI runs every action, `write` and `--match` included, and its edits are the server's:
recorded in the same history, undone from the editor."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.editor_client import REPO, STATE_DIR, start_session


def cli(root: Path, state: Path | str, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args, "--root", str(root)],
        capture_output=True,
        env=env,
        timeout=60,
    )


def result(proc: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(proc.stdout.decode("utf-8"))  # strict: valid UTF-8 only
    return out


def test_write_creates_then_overwrites_only_what_it_saw(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    made = cli(root, state, "write", "--json", "notes.txt", "first\n")
    assert made.returncode == 0, made.stderr
    assert result(made)["files"] == [
        {"path": "notes.txt", "change": "add", "sha256": hashlib.sha256(b"first\n").hexdigest()}
    ]
    # An overwrite of text this run never saw is STALE (exit 1), the file untouched.
    blind = cli(root, state, "write", "notes.txt", "second\n")
    assert blind.returncode == 1 and b"STALE" in blind.stderr
    assert (root / "notes.txt").read_text() == "first\n"
    # With the sha256 a read gave, it lands; TEXT may come from a file.
    sha = result(cli(root, state, "read", "--json", "notes.txt"))["sha256"]
    (tmp_path / "new.txt").write_text("second\n")
    over = cli(
        root, state, "write", "--expect-sha256", sha, "notes.txt", f"@{tmp_path / 'new.txt'}"
    )
    assert over.returncode == 0, over.stderr
    assert (root / "notes.txt").read_text() == "second\n"
    # Writing what the file already holds changes nothing and says so.
    same = cli(
        root,
        state,
        "write",
        "--json",
        "--expect-sha256",
        hashlib.sha256(b"second\n").hexdigest(),
        "notes.txt",
        "second\n",
    )
    assert same.returncode == 1 and result(same)["details"]["reason"] == "NO_CHANGE"


def test_replace_match_lenient_finds_what_exact_does_not(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "a.py").write_text("def f():\n    return 1   \n")
    exact = cli(root, state, "replace", "--json", "a.py", "    return 1\n", "    return 2\n")
    assert exact.returncode == 1 and result(exact)["code"] == "NO_MATCH"
    lenient = cli(
        root,
        state,
        "replace",
        "--json",
        "--match",
        "lenient",
        "a.py",
        "    return 1\n",
        "    return 2\n",
    )
    assert lenient.returncode == 0, lenient.stdout
    assert (root / "a.py").read_text() == "def f():\n    return 2\n"
    bogus = cli(root, state, "replace", "--match", "fuzzy", "a.py", "x", "y")
    assert bogus.returncode == 2 and b"invalid choice" in bogus.stderr


def test_hostile_bytes_in_an_argument_are_a_result_and_json_stays_utf8(tmp_path: Path) -> None:
    """A byte that is no UTF-8 (argv's surrogate escape: a lone surrogate) is refused as
    INVALID_ARGUMENT, recorded, and every --json output (the history's record of it too) is
    valid UTF-8 JSON."""
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    (root / "a.txt").write_text("x\n")
    bad = cli(root, state, "replace", "--json", "a.txt", "x", b"\xff")
    assert bad.returncode == 1
    assert result(bad)["details"]["reason"] == "LONE_SURROGATE"
    hist = cli(root, state, "history", "--json")
    assert hist.returncode == 0
    (entry,) = result(hist)["entries"]
    assert entry["outcome"] == "INVALID_ARGUMENT"
    assert (root / "a.txt").read_text() == "x\n"


def test_malformed_arguments_are_a_usage_error(tmp_path: Path) -> None:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    proc = cli(root, state, "undo", str(2**60))
    assert proc.returncode == 2 and b"editId is out of range" in proc.stderr
    assert proc.stdout == b""


@pytest.mark.asyncio
async def test_a_cli_edit_is_in_the_servers_history_and_undone_from_the_editor(
    client: Any, tmp_path: Path
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    applied = cli(root, STATE_DIR, "replace", "--json", "a.txt", "two", "TWO")
    assert applied.returncode == 0, applied.stderr
    edit_id = result(applied)["editId"]
    assert isinstance(edit_id, int)
    editor = await start_session(client, "visual-studio-code", root)
    history = await editor.command("agentEdit.history", {})
    assert [(e["id"], e["action"], e["outcome"]) for e in history["entries"]] == [
        (edit_id, "replace", "applied")
    ]
    undone = await editor.command("agentEdit.undo", {"editId": edit_id})
    assert undone["ok"], undone
    assert (root / "a.txt").read_text() == "one\ntwo\n"
    # And the CLI sees the server's undo.
    listed = result(cli(root, STATE_DIR, "history", "--json"))["entries"]
    assert [(e["action"], e["outcome"]) for e in listed] == [
        ("replace", "applied"),
        ("undo", "applied"),
    ]
