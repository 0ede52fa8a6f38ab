"""The language server reads a file that is not open with the same disk reader as the CLI and
`actions.run` headless (engine/files.py `read_snapshot`): same answers for hostile files, a FIFO
swapped in after the path check refused (not opened blocking), and what it read carried to the
disk writer, so a file changed on disk between the server's plan and its write is STALE."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.actions.paths import WorkspacePaths
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.planner import plan_replace
from lsp_server.engine.policy import PathPolicy
from lsp_server.engine.results import wire
from lsp_server.lsp import disk_side
from lsp_server.lsp.server import AgentEditServer
from tests.actions.test_fronts import normal
from tests.editor_client import start_session

CAP = 10 * 1024 * 1024  # the default maxFileBytes
CASES: list[tuple[str, dict[str, Any]]] = [
    ("read", {"path": "f.txt/x"}),  # a folder on the path is a file
    ("write", {"path": "f.txt/x", "text": "x"}),
    ("replace", {"path": "f.txt/x", "oldText": "a", "newText": "b"}),
    ("read", {"path": "big.txt"}),  # over the cap: its real size said
    ("replace", {"path": "big.txt", "oldText": "a", "newText": "b"}),
]


def workspace(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "f.txt").write_text("hi\n")
    (root / "big.txt").write_bytes(b"a" * (CAP + 4096))
    return root


@pytest.mark.asyncio
async def test_hostile_disk_files_answer_alike_through_the_server_and_headless(
    client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    editor = await start_session(client, "visual-studio-code", workspace(tmp_path / "l" / "ws"))
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    root = workspace(tmp_path / "h" / "ws")
    for name, args in CASES:
        async with headless.open(str(root)) as ctx:
            direct = wire(await actions.run(ctx, name, args))
        try:
            served = await editor.command(f"agentEdit.{name}", args)
        except JsonRpcException as exc:  # pragma: no cover - a failure's message
            served = ("malformed", exc.message)
        assert normal(json.loads(json.dumps(served))) == normal(direct), (name, args)
        if "big" in args["path"]:
            assert direct["details"]["size"] == CAP + 4096, direct


def server_on(root: Path) -> AgentEditServer:
    server = AgentEditServer()
    server.paths = WorkspacePaths(PathPolicy.from_settings([str(root)]))
    return server


def test_a_fifo_swapped_in_after_the_path_check_is_refused_not_opened(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("x\n")
    server = server_on(root)
    where = server.paths.resolve("a.txt")  # a regular file when the policy looked
    os.unlink(root / "a.txt")
    os.mkfifo(root / "a.txt")
    got: list[Any] = []

    def read() -> None:
        try:
            got.append(server.snapshot(where))
        except EditError as err:
            got.append(err)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(10)  # a hang guard only (the old reader blocked in open() for a writer)
    if reader.is_alive():  # release it: open the write end (a reader waits), then close it
        os.close(os.open(root / "a.txt", os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
        pytest.fail("the server's read of a FIFO blocked (the whole event loop would)")
    assert isinstance(got[0], EditError) and got[0].details.get("reason") == "NOT_REGULAR"


def test_a_file_changed_on_disk_after_the_servers_plan_is_stale_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("one\ntwo\n")
    server = server_on(root)
    snap = server.snapshot(server.paths.resolve("a.txt"))  # the plan's read (not open)
    change = plan_replace(snap, "two", "TWO")
    # Meanwhile (the server waits for the workspace lock a CLI apply holds) the file changes.
    (root / "a.txt").write_text("one\ntwo\nthree, by someone else\n")
    with pytest.raises(EditError) as refused:
        side = disk_side.DiskSide(str(root), [change], "replace")
        side.commit()
    assert refused.value.code == Code.STALE, refused.value
    assert (root / "a.txt").read_text() == "one\ntwo\nthree, by someone else\n"
