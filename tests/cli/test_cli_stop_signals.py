"""Every signal that stops a command at a terminal or from a harness stops it as Ctrl-C does:
SIGHUP (the terminal closed, an ssh connection dropped) and SIGQUIT (Ctrl-\\) before the edit's
commit point roll the apply back and exit 129 / 131; past it, they stop nothing (the edit's own
result and status, a line on stderr). With their default action the process died mid-apply: the
files renamed so far stayed new on disk, and nothing said so, until the next agent-edit command
rolled them back.

A signal the command was started with ignored (`nohup`, a background job of a script: `cmd &`
ignores SIGINT) stays ignored: catching it anyway had Ctrl-C at the terminal stop a command its
caller had shielded from it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.editor_client import REPO

# The CLI, with a hook that sends this process the signal named in $SEND at $POINT: after the
# second rename ("renamed", before the commit point) or right after the commit point
# ("committed": the apply journal's removal). $IGNORE names a signal to ignore first, as
# `nohup` or a shell's background job leave it when they start the command.
RUN = """
import os, signal, sys
from lsp_server import cli
from lsp_server.engine import files

sig = getattr(signal, os.environ["SEND"])
point = os.environ["POINT"]
if os.environ.get("IGNORE"):
    signal.signal(getattr(signal, os.environ["IGNORE"]), signal.SIG_IGN)
renamed = []

def hook(at, path):
    if at == "renamed":
        renamed.append(path)
        if point == "renamed" and len(renamed) == 2:
            os.kill(os.getpid(), sig)

files.TEST_HOOK = hook
unlink = os.unlink

def unlink_then_send(path, *args, **kwargs):
    unlink(path, *args, **kwargs)
    if point == "committed" and str(path).endswith("journal.json"):
        os.kill(os.getpid(), sig)

os.unlink = unlink_then_send
sys.argv = ["agent-edit", *sys.argv[1:]]
cli.program()
"""

FILES = 4


def _run(
    tmp_path: Path, send: str, point: str, ignore: str = ""
) -> tuple[subprocess.CompletedProcess[str], Path]:
    root, state = tmp_path / "ws", tmp_path / "state"
    root.mkdir()
    sections = []
    for i in range(FILES):
        (root / f"f{i}.txt").write_text(f"old {i}\n")
        sections.append(f"*** Update File: f{i}.txt\n@@\n-old {i}\n+new {i}\n")
    patch = "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        AGENT_EDIT_STATE_DIR=str(state),
        SEND=send,
        POINT=point,
        IGNORE=ignore,
    )
    proc = subprocess.run(
        [sys.executable, "-c", RUN, "apply-patch", "--root", str(root), "--json", "-"],
        input=patch,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return proc, root


def _texts(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.iterdir())}


def _entries(tmp_path: Path, root: Path) -> tuple[list[dict[str, object]], str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(tmp_path / "state"))
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "history", "--root", str(root), "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return json.loads(proc.stdout)["entries"], proc.stderr


@pytest.mark.parametrize(("send", "status"), [("SIGHUP", 129), ("SIGQUIT", 131)])
def test_a_stop_before_the_commit_point_rolls_back(tmp_path: Path, send: str, status: int) -> None:
    proc, root = _run(tmp_path, send, "renamed")
    assert proc.returncode == status, (proc.returncode, proc.stderr)
    assert f"stopped ({send})" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""
    # Every file as it was, right away: not left for the next command to roll back.
    assert _texts(root) == {f"f{i}.txt": f"old {i}\n" for i in range(FILES)}
    assert not list((tmp_path / "state").rglob("journal.json"))
    (entry,), err = _entries(tmp_path, root)
    assert "rolled back an interrupted apply" not in err, err
    assert entry["outcome"] != "applied", entry
    message = entry["error"]["message"]  # type: ignore[index]
    assert message.startswith(f"The edit was stopped ({send})"), message
    assert "nothing was changed" in message


@pytest.mark.parametrize("send", ["SIGHUP", "SIGQUIT"])
def test_a_stop_past_the_commit_point_reports_the_edit_as_applied(
    tmp_path: Path, send: str
) -> None:
    proc, root = _run(tmp_path, send, "committed")
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    result = json.loads(proc.stdout)
    assert result["ok"] and result["status"] == "applied", result
    assert f"{send} came past the edit's commit point" in proc.stderr, proc.stderr
    assert _texts(root) == {f"f{i}.txt": f"new {i}\n" for i in range(FILES)}
    assert [e["outcome"] for e in _entries(tmp_path, root)[0]] == ["applied"]


@pytest.mark.parametrize("send", ["SIGINT", "SIGHUP", "SIGTERM"])
def test_a_signal_ignored_at_the_start_stays_ignored(tmp_path: Path, send: str) -> None:
    proc, root = _run(tmp_path, send, "renamed", ignore=send)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert json.loads(proc.stdout)["status"] == "applied"
    assert proc.stderr == ""
    assert _texts(root) == {f"f{i}.txt": f"new {i}\n" for i in range(FILES)}


def test_the_signals_are_as_they_were_once_the_command_is_done(tmp_path: Path) -> None:
    """`cli.main` run in a process of its own (a test, an embedding program): the command's
    handlers are gone afterwards, the caller's back (an ignored signal still ignored)."""
    code = (
        "import signal, sys\n"
        "from lsp_server import cli\n"
        "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
        "before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]\n"
        "sys.argv = ['agent-edit', 'read', '--root', sys.argv[1], 'a.txt']\n"
        "import atexit\n"
        "atexit.register(lambda: print(before == [signal.getsignal(s) for s in "
        "(signal.SIGINT, signal.SIGTERM, signal.SIGHUP)], file=sys.stderr))\n"
        "cli.program()\n"
    )
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("x\n")
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(tmp_path / "state"))
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "ws")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "x\n" and proc.stderr == "True\n"
