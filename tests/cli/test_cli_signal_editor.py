"""A signal while the CLI waits for an editor's server to answer an edit it was sent: the editor
applies the edit whatever becomes of the command, so the signal cannot stop it. The command
waits a little longer for the answer and reports the edit's own result (exit 0, a line on
stderr saying the signal came too late to stop it); a second signal, or no answer in time,
reports UNVERIFIED ("may or may not have landed", see history), never "interrupted" alone.

It exited 130 with "interrupted; see agent-edit history" while the editor had applied the edit:
an agent took it for an edit that had not landed and sent it again. A signal before the request
goes out still stops the command, and nothing reaches the editor.

The editor's server here is this test process, announced as one (lsp_server/discovery.py) on
the same transport (a Unix socket, one JSON line each way); it applies the edit on disk, then
signals the CLI, and answers only once the CLI has said on stderr that it is waiting (no sleeps).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server import discovery
from tests.editor_client import REPO

OLD, NEW = "x = 1\n", "x = 1\ny = 2\n"


class Editor:
    """An announced editor's server (this process) that applies an edit on disk, then lets
    `script(self)` signal the CLI and answer (or not)."""

    def __init__(self, root: Path, script: Any) -> None:
        self.root = root
        self.script = script
        self.edits = 0
        self.proc: asyncio.subprocess.Process | None = None
        self.server: asyncio.AbstractServer | None = None
        self.announced: tuple[str, str] | None = None
        self.done = asyncio.Event()
        self.err: list[str] = []
        self.more = asyncio.Event()
        self.ended = False
        self.failure: BaseException | None = None

    async def __aenter__(self) -> Editor:
        folder = discovery.runtime_dir()
        discovery.open_dir(folder, create=True)
        name = f"{discovery.PREFIX}{os.getpid()}-sig-{os.urandom(4).hex()}"
        self.server = await asyncio.start_unix_server(
            self._connection, os.path.join(folder, name + ".sock")
        )
        self.announced = discovery.announce(
            [str(self.root)],
            {"unix": name + ".sock"},
            "f" * 64,
            "Neovim",
            os.getpid(),
            name=name + ".json",
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        if self.server is not None:
            self.server.close()
        if self.announced:
            discovery.remove(*self.announced)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        msg = json.loads(await reader.readline())
        if msg.get("action") == "holds":
            writer.write(b'{"ok": true, "held": []}\n')
            await writer.drain()
            writer.close()
            return
        try:
            self.edits += 1
            f = self.root / "a.py"
            f.write_text(f.read_text().replace(OLD, NEW))
            answer = await self.script(self)
            if answer is not None:
                writer.write(json.dumps(answer).encode() + b"\n")
                await writer.drain()
        except BaseException as exc:
            self.failure = exc
            raise
        finally:
            writer.close()
            self.done.set()

    def signal(self, sig: int = signal.SIGINT) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    async def pump(self) -> None:
        """Collect the CLI's stderr, line by line, for `stderr_line`."""
        assert self.proc is not None and self.proc.stderr is not None
        while line := await self.proc.stderr.readline():
            self.err.append(line.decode())
            self.more.set()
        self.ended = True
        self.more.set()

    async def stderr_line(self, part: str) -> str:
        """The CLI's stderr line holding `part`, once it has been written."""
        while True:
            for line in self.err:
                if part in line:
                    return line
            assert not self.ended, f"the CLI's stderr ended before {part!r}: {self.err}"
            self.more.clear()
            await asyncio.wait_for(self.more.wait(), 60)


APPLIED = {
    "ok": True,
    "status": "applied",
    "editId": 7,
    "files": [{"path": "a.py", "change": "update"}],
    "diff": "--- a/a.py\n+++ b/a.py\n@@ -1 +1,2 @@\n x = 1\n+y = 2\n",
}


async def _run_cli(
    tmp_path: Path, editor: Editor, code: str | None = None, as_json: bool = True
) -> tuple[int, dict[str, Any], str]:
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        AGENT_EDIT_STATE_DIR=str(tmp_path / "state"),
        AGENT_EDIT_RUNTIME_DIR=discovery.runtime_dir(),
    )
    start = ["-c", code] if code else ["-m", "lsp_server"]
    editor.proc = await asyncio.create_subprocess_exec(
        sys.executable,
        *start,
        "replace",
        "--root",
        str(editor.root),
        *["--json"] * as_json,
        "a.py",
        OLD,
        NEW,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert editor.proc.stdout is not None
    pump = asyncio.ensure_future(editor.pump())
    out = await asyncio.wait_for(editor.proc.stdout.read(), 60)
    await asyncio.wait_for(editor.proc.wait(), 60)
    await asyncio.wait_for(pump, 60)
    assert editor.proc.returncode is not None
    err = "".join(editor.err)
    if not as_json:
        return editor.proc.returncode, {"stdout": out.decode()}, err
    return editor.proc.returncode, json.loads(out) if out.strip() else {}, err


@pytest.fixture
def root(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text(OLD)
    return ws


@pytest.mark.asyncio
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_after_the_edit_was_sent_reports_the_editors_answer(
    tmp_path: Path, root: Path, sig: int
) -> None:
    async def script(editor: Editor) -> dict[str, Any]:
        editor.signal(sig)
        await editor.stderr_line("waiting up to")
        return APPLIED

    async with Editor(root, script) as editor:
        status, result, err = await _run_cli(tmp_path, editor)
    assert editor.edits == 1 and editor.failure is None, editor.failure
    assert status == 0, err
    assert result["ok"] and result["status"] == "applied" and result["via"] == "editor", result
    assert "came after the edit was sent to Neovim" in err and "did not stop the edit" in err, err
    assert "interrupted" not in err and "Traceback" not in err
    assert (root / "a.py").read_text() == NEW  # once, not twice


@pytest.mark.asyncio
async def test_a_second_signal_stops_waiting_and_says_unverified(
    tmp_path: Path, root: Path
) -> None:
    async def script(editor: Editor) -> None:
        editor.signal()
        await editor.stderr_line("waiting up to")
        editor.signal(signal.SIGTERM)
        assert editor.proc is not None
        await editor.proc.wait()  # no answer: the CLI left without one

    async with Editor(root, script) as editor:
        status, result, err = await _run_cli(tmp_path, editor)
        await asyncio.wait_for(editor.done.wait(), 60)
    assert editor.edits == 1 and editor.failure is None, editor.failure
    assert status == 1, err
    assert result["code"] == "UNVERIFIED" and result["via"] == "editor", result
    assert "after the edit was sent to Neovim" in result["message"], result
    assert "may or may not have landed" in result["message"], result
    assert "agent-edit history" in result["hint"], result
    assert "did not stop the edit" not in err and "Traceback" not in err, err
    assert (root / "a.py").read_text() == NEW


# The CLI with a shorter wait for the editor's answer once a signal came.
SHORT_WAIT = """
import sys
from lsp_server import cli, cli_signals
cli_signals.EDITOR_GRACE_S = 0.05
sys.argv = ["agent-edit", *sys.argv[1:]]
cli.program()
"""


@pytest.mark.asyncio
async def test_no_answer_within_the_wait_says_unverified(tmp_path: Path, root: Path) -> None:
    async def script(editor: Editor) -> None:
        editor.signal()
        assert editor.proc is not None
        await editor.proc.wait()

    async with Editor(root, script) as editor:
        status, result, err = await _run_cli(tmp_path, editor, SHORT_WAIT)
        await asyncio.wait_for(editor.done.wait(), 60)
    assert status == 1, err
    assert editor.failure is None, editor.failure
    assert result["code"] == "UNVERIFIED", result
    assert "no answer came within 0.05 s" in result["message"], result
    assert "Ctrl-C (SIGINT)" in result["message"], result


# The CLI, sending itself Ctrl-C as it is about to send the edit to the editor.
SIGNAL_FIRST = """
import os, signal, sys
from lsp_server import cli, discovery
request = discovery.request

def interrupted_request(entry, payload, *args, **kwargs):
    if payload.get("action") != "holds":
        os.kill(os.getpid(), signal.SIGINT)
    return request(entry, payload, *args, **kwargs)

discovery.request = interrupted_request
sys.argv = ["agent-edit", *sys.argv[1:]]
cli.program()
"""


@pytest.mark.asyncio
async def test_a_signal_before_the_edit_is_sent_stops_the_command(
    tmp_path: Path, root: Path
) -> None:
    async def script(editor: Editor) -> None:
        raise AssertionError("the edit reached the editor")

    async with Editor(root, script) as editor:
        status, result, err = await _run_cli(tmp_path, editor, SIGNAL_FIRST)
    assert status == 130, err
    assert "interrupted" in err and "Traceback" not in err, err
    assert editor.edits == 0 and (root / "a.py").read_text() == OLD


@pytest.mark.asyncio
async def test_unverified_is_never_printed_as_no_files_changed(tmp_path: Path, root: Path) -> None:
    """Without --json: the refusal on stderr, and not "No files were changed." after it (said
    after any refusal that did not commit, UNVERIFIED and the editor going away included)."""

    async def script(editor: Editor) -> None:
        editor.signal()
        await editor.stderr_line("waiting up to")
        editor.signal()
        assert editor.proc is not None
        await editor.proc.wait()

    async with Editor(root, script) as editor:
        status, _, err = await _run_cli(tmp_path, editor, as_json=False)
        await asyncio.wait_for(editor.done.wait(), 60)
    assert status == 1, err
    assert "agent-edit: UNVERIFIED: " in err and "may or may not have landed" in err, err
    assert "No files were changed" not in err, err
