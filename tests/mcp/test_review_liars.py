"""Review attacks on `agent-edit mcp` and the CLI against an editor's server whose answer is not
usable after it got the request (not JSON, not an object): it may have acted on it, so an edit is
UNVERIFIED, never redone on disk (which would apply it twice) and never "nothing was changed"."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server import discovery
from tests.mcp.mcp_helpers import call, mcp_env, mcp_session


class ActingLiar:
    """An announced 'server' (this test process) that answers `holds` truthfully (nothing open),
    and answers an edit by doing it on disk and then sending `reply` (not a usable answer)."""

    def __init__(self, root: Path, reply: bytes) -> None:
        self.root = root
        self.reply = reply
        self.edits = 0
        self.server: asyncio.AbstractServer | None = None
        self.announced: tuple[str, str] | None = None

    async def __aenter__(self) -> ActingLiar:
        folder = discovery.runtime_dir()
        discovery.open_dir(folder, create=True)
        name = f"{discovery.PREFIX}{os.getpid()}-liar"
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
        if self.server is not None:
            self.server.close()
        if self.announced:
            discovery.remove(*self.announced)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        msg = json.loads(await reader.readline())
        if msg.get("action") == "holds":
            writer.write(b'{"ok": true, "held": []}\n')
        else:
            # The edit lands (an insertion: doing it twice would show), then a bad answer.
            self.edits += 1
            f = self.root / "a.py"
            f.write_text(f.read_text().replace("x = 1\n", "x = 1\ny = 2\n"))
            writer.write(self.reply)
        await writer.drain()
        writer.close()


REPLIES = [b"not json\n", b"[1, 2]\n", b'"ok"\n']


@pytest.mark.asyncio
@pytest.mark.parametrize("reply", REPLIES)
async def test_mcp_edit_with_an_unusable_answer_is_unverified_not_redone_on_disk(tmp_path, reply):
    (tmp_path / "a.py").write_text("x = 1\n")
    args = {"path": "a.py", "oldText": "x = 1\n", "newText": "x = 1\ny = 2\n"}
    async with ActingLiar(tmp_path, reply) as liar, mcp_session(tmp_path) as s:
        got, text = await call(s, "replace", args)
        assert liar.edits == 1
    assert got["code"] == "UNVERIFIED" and got["via"] == "editor", got
    assert "may or may not have landed" in text
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 2\n"  # once, not twice


@pytest.mark.asyncio
@pytest.mark.parametrize("reply", REPLIES)
async def test_cli_edit_with_an_unusable_answer_is_unverified_not_nothing_changed(tmp_path, reply):
    (tmp_path / "a.py").write_text("x = 1\n")
    async with ActingLiar(tmp_path, reply) as liar:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "lsp_server",
            "replace",
            "--root",
            str(tmp_path),
            "--json",
            "a.py",
            "x = 1\n",
            "x = 1\ny = 2\n",
            env=mcp_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        out, err = await proc.communicate()
        assert liar.edits == 1, err
    got = json.loads(out)
    assert got["code"] == "UNVERIFIED", got
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 2\n"
