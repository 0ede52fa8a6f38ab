"""A headless command waits for the workspace lock another process holds for a bounded time,
saying once which process it waits for (past LOCK_QUIET_SECONDS), then is refused (IO_ERROR,
reason BUSY) with nothing read or changed. A process stopped while it held the lock (Ctrl-Z)
made every later command, `history` and `read` too, hang for ever without a word."""

from __future__ import annotations

import asyncio
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine import files
from lsp_server.engine.errors import EditError
from lsp_server.engine.results import wire
from lsp_server.engine.state import state_dir


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setattr(headless, "LOCK_WAIT_SECONDS", 0.2)
    monkeypatch.setattr(files, "LOCK_QUIET_SECONDS", 0.0)
    return tmp_path / "state"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "a.txt").write_text("one\n")
    return tmp_path / "ws"


@pytest.fixture
def held(ws: Path) -> Iterator[int]:
    """The workspace lock, held as another process would hold it (its own open file), with
    that process's pid written in it."""
    fd = os.open(os.path.join(state_dir(str(ws)), "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.pwrite(fd, b"4242", 0)
    try:
        yield fd
    finally:
        os.close(fd)


def run(root: Path, name: str, args: Any, notify: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root), notify=notify) as ctx:
            return wire(await actions.run(ctx, name, args))

    return asyncio.run(go())


def test_a_held_lock_is_said_then_refused_busy(ws: Path, held: int) -> None:
    said: list[str] = []
    for name, args in (
        ("history", {}),
        ("replace", {"path": "a.txt", "oldText": "one", "newText": "1"}),
    ):
        with pytest.raises(EditError) as exc:
            run(ws, name, args, said.append)
        err = exc.value.to_result()
        assert err["code"] == "IO_ERROR" and err["details"]["reason"] == "BUSY", err
        assert err["details"]["pid"] == 4242 and "(pid 4242)" in err["message"]
    assert len(said) == 2 and all("waiting" in s and "(pid 4242)" in s for s in said), said
    assert (ws / "a.txt").read_text() == "one\n"


def test_a_lock_released_while_waiting_is_taken(ws: Path, held: int) -> None:
    def release(text: str) -> None:  # the holder ends while this one waits
        fcntl.flock(held, fcntl.LOCK_UN)

    res = run(ws, "replace", {"path": "a.txt", "oldText": "one", "newText": "1"}, release)
    assert res["ok"], res
    assert (ws / "a.txt").read_text() == "1\n"
    assert os.pread(held, 32, 0) == str(os.getpid()).encode()  # the new holder's pid
