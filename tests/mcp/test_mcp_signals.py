"""`agent-edit mcp` stopped by a signal at each step of a disk apply of several files
(lsp_server/mcp/signals.py). Before the commit point, the apply is rolled back at once and the
history says the edit was stopped and nothing was changed; past it, the edit's answer is still
written; either way the server then exits 128 + the signal's number, with a line on stderr.
Idle, it exits at once.

Found: SIGTERM and SIGHUP killed the server mid-apply, leaving the files renamed so far new on
disk until the next agent-edit command rolled them back; SIGINT (asyncio's) cancelled the
server, which dropped the landed edit's answer and then did not exit until the client closed
stdin. The signal is sent by the server to itself from the disk writer's test hook at the step
(no sleeps).
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.editor_client import REPO
from tests.mcp.mcp_helpers import mcp_env
from tests.mcp.test_review_surrogates import INIT

# The MCP server with a hook that sends it the signal $SEND at $POINT: the disk writer's hook
# point (its $NTH time), or "committed": right after the apply journal's removal.
RUN = """
import os, signal, sys
from lsp_server import cli
from lsp_server.engine import files

sig = getattr(signal, os.environ["SEND"])
point, nth = os.environ["POINT"], int(os.environ["NTH"])
seen = []

def hook(at, path):
    if at == point:
        seen.append(path)
        if len(seen) == nth:
            os.kill(os.getpid(), sig)

files.TEST_HOOK = hook
unlink = os.unlink

def unlink_then_send(path, *args, **kwargs):
    unlink(path, *args, **kwargs)
    if point == "committed" and str(path).endswith("journal.json"):
        os.kill(os.getpid(), sig)

os.unlink = unlink_then_send
sys.argv = ["agent-edit", "mcp", "--root", sys.argv[1]]
cli.program()
"""

FILES = 4


def _server(root: Path, send: str, point: str, nth: int = 1) -> subprocess.Popen[bytes]:
    env = dict(mcp_env(), SEND=send, POINT=point, NTH=str(nth))
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(REPO),
        bufsize=0,
    )
    _send(proc, INIT)
    assert json.loads(_line(proc))["id"] == 0
    _send(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    return proc


def _send(proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()


def _line(proc: subprocess.Popen[bytes]) -> bytes:
    """The server's next line, b"" once it exited; one that neither answers nor exits fails
    (the bound only ends the failing case; stdout is unbuffered: nothing read ahead)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    assert ready, "the MCP server neither answered nor exited"
    return proc.stdout.readline()


def _ended(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    """The exit status and stderr of a server that must exit by itself (stdin left open: a
    server that waits for it to close fails here instead of hanging the test)."""
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError("the MCP server did not exit on the signal") from None
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
    assert proc.stderr is not None
    return code, proc.stderr.read().decode()


def _workspace(tmp_path: Path) -> tuple[Path, str]:
    root = tmp_path / "ws"
    root.mkdir()
    sections = []
    for i in range(FILES):
        (root / f"f{i}.txt").write_text(f"old {i}\n")
        sections.append(f"*** Update File: f{i}.txt\n@@\n-old {i}\n+new {i}\n")
    return root, "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


def _apply(proc: subprocess.Popen[bytes], patch: str) -> bytes:
    call = {"name": "apply_patch", "arguments": {"patch": patch}}
    _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
    return _line(proc)


def _texts(root: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(root.iterdir())}


def _history(root: Path) -> tuple[list[dict[str, Any]], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", "history", "--root", str(root), "--json"],
        capture_output=True,
        text=True,
        env=mcp_env(),
        timeout=60,
    )
    return json.loads(proc.stdout)["entries"], proc.stderr


@pytest.mark.parametrize(
    ("send", "point", "nth"),
    [
        ("SIGTERM", "checked", 1),  # before the journal is written
        ("SIGHUP", "written", 1),  # journal and temporaries written, nothing renamed yet
        ("SIGTERM", "renamed", 2),  # two files new on disk
        ("SIGINT", "renamed", 2),
    ],
)
def test_a_signal_before_the_commit_point_rolls_back_at_once(
    tmp_path: Path, send: str, point: str, nth: int
) -> None:
    root, patch = _workspace(tmp_path)
    proc = _server(root, send, point, nth)
    assert _apply(proc, patch) == b""  # no answer: the server stopped
    code, err = _ended(proc)
    num = getattr(signal, send)
    assert code == 128 + num, (code, err)
    assert "stopped the call under way" in err and "Traceback" not in err, err
    # Every file as it was, no temporary left, right away: not left to the next command.
    assert _texts(root) == {f"f{i}.txt": f"old {i}\n" for i in range(FILES)}
    (entry,), said = _history(root)
    assert "rolled back an interrupted apply" not in said, said
    assert entry["outcome"] != "applied", entry
    message = entry["error"]["message"]
    assert message.startswith("The edit was stopped ("), message
    assert "nothing was changed" in message, message


@pytest.mark.parametrize("send", ["SIGTERM", "SIGINT"])
def test_a_signal_past_the_commit_point_answers_then_stops(tmp_path: Path, send: str) -> None:
    root, patch = _workspace(tmp_path)
    proc = _server(root, send, "committed")
    answer = json.loads(_apply(proc, patch))
    out = answer["result"]["structuredContent"]
    assert out["ok"] and out["status"] == "applied", answer
    code, err = _ended(proc)
    assert code == 128 + getattr(signal, send), (code, err)
    assert "came past the edit's commit point" in err, err
    assert _texts(root) == {f"f{i}.txt": f"new {i}\n" for i in range(FILES)}
    assert [e["outcome"] for e in _history(root)[0]] == ["applied"]


@pytest.mark.parametrize("send", ["SIGINT", "SIGTERM"])
def test_an_idle_server_stops_at_once(tmp_path: Path, send: str) -> None:
    root, _ = _workspace(tmp_path)
    proc = _server(root, send, "none")
    _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert json.loads(_line(proc))["id"] == 1
    proc.send_signal(getattr(signal, send))
    code, err = _ended(proc)
    assert code == 128 + getattr(signal, send), (code, err)
    assert "nothing was under way" in err, err
