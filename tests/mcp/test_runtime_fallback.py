"""A runtime folder another user made first (/tmp/agent-edit-UID, no XDG_RUNTIME_DIR): before,
the editors' servers could not announce, and `agent-edit mcp` and the CLI edited the disk under a
possibly dirty buffer with only a warning. Now both sides use the same private fallback (`run`
in agent-edit's user state folder, 0700), so the CLI still goes through the editor; and when no
trusted folder exists at all, disk edits from the CLI and MCP are refused with the reason and
what to set, while reads still work (lsp_server/discovery.py, peers.py).

Another user's folder is made with chown: these tests need root (CI runs as root)."""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from lsp_server import discovery
from tests.editor_client import REPO, start_session

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 and not os.environ.get("CI"),  # CI runs as root: there it must run
    reason="needs root to make another user's folder",
)

OTHER_UID = 12345
TOKEN = "t" * 64

# The server's environment: no runtime folder set, a temporary folder where another user got
# first (made in each test, before the server announces at initialize), its own state folder.
TMP = tempfile.mkdtemp(prefix="agent-edit-hijacked-tmp-")
STATE = tempfile.mkdtemp(prefix="agent-edit-fallback-state-")
atexit.register(shutil.rmtree, TMP, True)
atexit.register(shutil.rmtree, STATE, True)


def _env(tmp: str, state: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (discovery.ENV_DIR, "XDG_RUNTIME_DIR")}
    env.update(PYTHONPATH=str(REPO), TMPDIR=tmp, AGENT_EDIT_STATE_DIR=state)
    return env


def hijack(tmp: str) -> Path:
    """/tmp/agent-edit-UID as another user would have made it first."""
    d = Path(tmp) / f"agent-edit-{os.geteuid()}"
    d.mkdir(mode=0o700, exist_ok=True)
    os.chown(d, OTHER_UID, OTHER_UID)
    return d


@pytest.fixture
def hijacked_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """This process's environment like the server's: the temporary folder hijacked."""
    tmp, state = tmp_path / "tmp", tmp_path / "state"
    tmp.mkdir()
    for k, v in _env(str(tmp), str(state)).items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv(discovery.ENV_DIR, raising=False)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    yield hijack(str(tmp))


def test_a_hijacked_tmp_folder_falls_back_to_a_private_one_on_both_sides(
    hijacked_env: Path, tmp_path: Path
) -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        folder, name = discovery.announce([str(tmp_path)], {"unix": "x.sock"}, TOKEN, "Neovim")
        assert folder != str(hijacked_env)
        mode = os.stat(folder, follow_symlinks=False).st_mode
        assert stat.S_ISDIR(mode) and stat.S_IMODE(mode) == 0o700
        assert os.stat(folder).st_uid == os.geteuid()
        path = os.path.join(folder, name)
        raw = json.loads(Path(path).read_text())
        raw["pid"], raw["start"] = child.pid, discovery._start_time(child.pid)
        Path(path).write_text(json.dumps(raw))
        found = discovery.find(str(tmp_path))
        assert found is not None and found.pid == child.pid
        assert list(hijacked_env.iterdir()) == []  # nothing of ours in the other user's folder
    finally:
        child.kill()
        child.wait()


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


async def _acli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI, while this event loop keeps answering for the editor (its applyEdit)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lsp_server",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode is not None
    return subprocess.CompletedProcess(list(args), proc.returncode, out.decode(), err.decode())


@pytest_lsp.fixture(
    config=ClientServerConfig(
        server_command=[sys.executable, "-m", "lsp_server", "serve"], server_env=_env(TMP, STATE)
    )
)
async def hijacked_server(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_the_cli_still_goes_through_the_editor_when_tmp_is_hijacked(
    hijacked_server: LanguageClient, tmp_path: Path
) -> None:
    taken = hijack(TMP)
    ed = await start_session(hijacked_server, "visual-studio-code", tmp_path)
    ed.write_file("a.py", "x = 1\ny = 2\n")
    ed.open("a.py")
    ed.type("a.py", 1, 5, "  # unsaved")
    await ed.command("agentEdit.history", {})
    out = await _acli(
        _env(TMP, STATE), "replace", "--json", "--root", str(tmp_path), "a.py", "x = 1", "x = 5"
    )
    assert out.returncode == 0, out
    result = json.loads(out.stdout)
    assert result["ok"] and result["via"] == "editor", result
    assert ed.text("a.py") == "x = 5\ny = 2  # unsaved\n"
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 2\n"  # the buffer, not the disk
    assert list(taken.iterdir()) == []


@pytest.fixture
def nowhere(hijacked_env: Path, tmp_path: Path) -> dict[str, str]:
    """The fallback is another user's too: no trusted runtime folder at all."""
    fallback = Path(os.environ["AGENT_EDIT_STATE_DIR"]) / "run"
    fallback.mkdir(parents=True, mode=0o700)
    os.chown(fallback, OTHER_UID, OTHER_UID)
    return _env(os.environ["TMPDIR"], os.environ["AGENT_EDIT_STATE_DIR"])


def test_with_no_trusted_folder_cli_edits_are_refused_and_reads_work(
    nowhere: dict[str, str], tmp_path: Path
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    out = _cli(nowhere, "replace", "--json", "--root", str(ws), "a.py", "x = 1", "x = 5")
    assert out.returncode == 1, out
    result = json.loads(out.stdout)
    assert result["code"] == "IO_ERROR", result
    assert result["details"]["reason"] == "RUNTIME_DIR_UNTRUSTED", result
    assert "AGENT_EDIT_RUNTIME_DIR" in result["hint"] and "XDG_RUNTIME_DIR" in result["hint"]
    assert "Traceback" not in out.stderr
    assert (ws / "a.py").read_text() == "x = 1\n"
    read = _cli(nowhere, "read", "--root", str(ws), "a.py")
    assert read.returncode == 0 and "x = 1" in read.stdout, read


@pytest.mark.asyncio
async def test_with_no_trusted_folder_mcp_edits_are_refused_and_reads_work(
    nowhere: dict[str, str], tmp_path: Path
) -> None:
    from lsp_server.mcp.router import Router

    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    router = Router(str(ws))
    read: dict[str, Any] = await router.call("read", {"path": "a.py"})
    assert read["ok"] and read["text"].endswith("x = 1\n"), read
    got = await router.call("replace", {"path": "a.py", "oldText": "x = 1", "newText": "x = 5"})
    assert got["ok"] is False and got["code"] == "IO_ERROR", got
    assert got["details"]["reason"] == "RUNTIME_DIR_UNTRUSTED", got
    assert (ws / "a.py").read_text() == "x = 1\n"
