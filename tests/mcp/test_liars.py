"""`agent-edit mcp` against an editor's server that lies or fails: it hangs up mid-edit, never
answers, or is alive with its endpoint gone. None of these lets an edit run on disk instead
(the editor may hold unsaved text, and the edit may still land there)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from lsp_server import discovery
from tests.mcp.mcp_helpers import call, mcp_session


class FakeServer:
    """An announced 'server' (this test process) whose endpoint misbehaves as told."""

    def __init__(self, root: Path, mode: str) -> None:
        self.root = root
        self.mode = mode  # "hang-up", "silent", "no-socket"
        self.requests: list[bytes] = []
        self.release = asyncio.Event()
        self.server: asyncio.AbstractServer | None = None
        self.announced: tuple[str, str] | None = None

    async def __aenter__(self) -> FakeServer:
        folder = discovery.runtime_dir()
        discovery.open_dir(folder, create=True)
        name = f"{discovery.PREFIX}{os.getpid()}-fake{self.mode}"
        if self.mode != "no-socket":
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
        self.release.set()
        if self.server is not None:
            self.server.close()
        if self.announced:
            discovery.remove(*self.announced)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        line = await reader.readline()
        self.requests.append(line)
        if self.mode == "silent":
            await self.release.wait()
        writer.close()  # hang up without an answer


@pytest.fixture
def short_timeout(monkeypatch):
    monkeypatch.setenv("AGENT_EDIT_MCP_TIMEOUT_S", "1")


@pytest.mark.asyncio
async def test_hang_up_mid_edit_is_unverified_and_never_redone_on_disk(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    async with FakeServer(tmp_path, "hang-up") as fake, mcp_session(tmp_path) as s:
        got, text = await call(
            s, "replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
        )
        assert got["code"] == "UNVERIFIED", got
        assert "may or may not have landed" in text and "Nothing was written on disk" in text
        assert fake.requests  # it was sent
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


@pytest.mark.asyncio
async def test_silent_server_times_out_and_nothing_runs_on_disk(tmp_path, short_timeout):
    (tmp_path / "a.py").write_text("x = 1\n")
    async with FakeServer(tmp_path, "silent"), mcp_session(tmp_path) as s:
        got, text = await call(
            s, "replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
        )
        assert got["code"] == "TIMEOUT" and "nothing was written on disk" in text, got
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


@pytest.mark.asyncio
async def test_live_server_with_no_endpoint_blocks_disk_edits(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    async with FakeServer(tmp_path, "no-socket"), mcp_session(tmp_path) as s:
        got, _ = await call(s, "read", {"path": "a.py"})
        assert got["ok"] and got["via"] == "disk"  # a read of the disk changes nothing
        got, text = await call(
            s, "replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 2"}
        )
        assert got["code"] == "CONFLICT" and got["details"]["reason"] == "PEER_UNREACHABLE", got
        assert "Neovim" in text
    assert (tmp_path / "a.py").read_text() == "x = 1\n"
