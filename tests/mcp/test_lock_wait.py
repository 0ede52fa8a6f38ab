"""A disk call that waits for the workspace lock another process holds (a CLI apply; a command
stopped with Ctrl-Z or SIGSTOP while it held it) must not stop the MCP server: pings and the
client's other requests are answered meanwhile, and a call the client cancels stops waiting,
with nothing changed (it says so on stderr; MCP sends no answer to a cancelled call).

Found: the wait slept in the event loop for up to 30 s. A ping got no answer until then, the
cancel was not even read, and the cancelled edit went on to change the file once the lock came
free. The test waits for the server's own "waiting" line (said once it has waited a second), so
the ping goes out while the call is known to be waiting; no sleeps.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import anyio
import pytest

from lsp_server.engine import files
from lsp_server.engine.state import state_dir
from tests.editor_client import STATE_DIR
from tests.mcp.mcp_helpers import call, mcp_session


@contextmanager
def _held_lock(root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The workspace lock, held by this process as another agent-edit command would hold it."""
    monkeypatch.setenv(files.STATE_DIR_ENV, STATE_DIR)  # the server's state folder
    fd = os.open(os.path.join(state_dir(str(root)), "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


async def _line_with(stream: IO[str], text: str) -> str:
    """The first line of the server's stderr that holds `text` (the bound ends a failing case)."""
    with anyio.fail_after(60):
        while True:
            line = await anyio.to_thread.run_sync(stream.readline, abandon_on_cancel=True)
            assert line, f"the server's stderr ended without {text!r}"
            if text in line:
                return line


@pytest.mark.asyncio
async def test_a_call_waiting_for_the_lock_leaves_pings_answered_and_a_cancel_honoured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    target = root / "a.txt"
    target.write_text("hello\n")
    read_end, write_end = os.pipe()
    with os.fdopen(read_end) as stderr, os.fdopen(write_end, "w") as errlog:
        async with mcp_session(root, errlog=errlog) as s:
            errlog.close()  # the server's copy only: its end is this stream's end
            with _held_lock(root, monkeypatch):
                async with anyio.create_task_group() as tg:
                    edit = anyio.CancelScope()

                    async def replace() -> None:
                        with edit:
                            await s.call_tool(
                                "replace", {"path": "a.txt", "oldText": "hello", "newText": "bye"}
                            )

                    tg.start_soon(replace)
                    await _line_with(stderr, "waiting (up to")
                    with anyio.fail_after(10):  # the lock wait is 30 s: no answer before
                        await s.send_ping()
                    edit.cancel()  # the client sends notifications/cancelled
                    said = await _line_with(stderr, "cancelled a replace call")
                    assert "while it waited for the workspace lock" in said, said
                    assert "nothing was read or changed" in said, said
            # The lock is free now: the cancelled call must not go on to edit.
            out, _ = await call(s, "history", {})
            assert out["entries"] == [], out
            out, _ = await call(s, "read", {"path": "a.txt"})
            assert out["text"] == "hello\n", out
    assert target.read_text() == "hello\n"
