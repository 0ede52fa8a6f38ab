"""How the VS Code extension finds its server (src/server.ts `findServer`), run in Node against a
stand-in `vscode` module with real programs to check: the order (settings, the workspace's .venv,
the Python extension's interpreter, `agent-edit` and `python3` on PATH), that a configured
interpreter is the only one tried, and that every failure says why.

Needs Node and the extension's npm dependencies (esbuild), as `bash .ci/setup-vscode.sh` installs
them; without them these tests fail, they never skip.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
EXT = REPO / "editor_clients" / "vscode"
HERE = REPO / "tests" / "vscode" / "discovery"
TOOLS = Path(os.environ.get("AGENT_EDIT_VSCODE_TOOLS", "/opt/agent-edit-vscode"))


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    esbuild = EXT / "node_modules" / ".bin" / "esbuild"
    if not esbuild.exists() or _node() is None:
        pytest.fail("node or esbuild missing: run `bash .ci/setup-vscode.sh` first")
    out = tmp_path_factory.mktemp("discovery")
    subprocess.run(
        [
            str(esbuild),
            str(EXT / "src" / "server.ts"),
            "--bundle",
            "--platform=node",
            "--format=cjs",
            "--external:vscode",
            f"--outfile={out / 'server.js'}",
            "--log-level=warning",
        ],
        check=True,
        timeout=60,
    )
    (out / "node_modules" / "vscode").mkdir(parents=True)
    shutil.copy(HERE / "fake_vscode.js", out / "node_modules" / "vscode" / "index.js")
    return out / "server.js"


def _node() -> str | None:
    node = TOOLS / "node-bin" / "node"
    return str(node) if node.exists() else shutil.which("node")


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _good_python(path: Path) -> Path:
    return _script(path, f'PYTHONPATH="{REPO}" exec "{sys.executable}" "$@"')


def _bare_python(path: Path) -> Path:
    """A Python without agent-edit: no site-packages, no PYTHONPATH (Debian's python3)."""
    return _script(path, f'unset PYTHONPATH\nexec "{sys.executable}" -S "$@"')


def _find(bundle: Path, tmp: Path, path_dirs: list[Path], **fake: Any) -> dict[str, Any]:
    env = {
        "PATH": os.pathsep.join(str(p) for p in path_dirs),
        "FAKE_VSCODE": json.dumps(fake),
        "HOME": str(tmp),
    }
    out = subprocess.run(
        [_node() or "node", str(HERE / "run.js"), str(bundle)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_workspace_venv_comes_first(bundle: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    venv_python = _good_python(ws / ".venv" / "bin" / "python")
    bin_dir = tmp_path / "bin"
    _good_python(bin_dir / "python3")
    got = _find(
        bundle, tmp_path, [bin_dir], folder=str(ws), pythonExtension=str(bin_dir / "python3")
    )
    found = got["found"]
    assert found["source"] == "the workspace's .venv"
    assert found["command"] == str(venv_python)
    assert found["args"] == ["-m", "lsp_server", "serve"]
    assert found["version"].startswith("agent-edit 0.1.0 (Python ")


def test_falls_through_to_the_python_extension_then_path(bundle: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _bare_python(ws / ".venv" / "bin" / "python")
    selected = _good_python(tmp_path / "selected" / "python")
    bin_dir = tmp_path / "bin"
    _good_python(bin_dir / "python3")
    got = _find(bundle, tmp_path, [bin_dir], folder=str(ws), pythonExtension=str(selected))
    assert got["found"]["source"] == "the Python extension's interpreter", got
    assert any("agent-edit is not installed for" in line for line in got["logs"]), got["logs"]
    # Without the Python extension: agent-edit on PATH.
    _script(
        bin_dir / "agent-edit", f'PYTHONPATH="{REPO}" exec "{sys.executable}" -m lsp_server "$@"'
    )
    got = _find(bundle, tmp_path, [bin_dir], folder=str(ws))
    assert got["found"]["source"] == "agent-edit on PATH", got
    assert got["found"]["args"] == ["serve"]


def test_nothing_works_every_attempt_says_why(bundle: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _bare_python(ws / ".venv" / "bin" / "python")
    empty = tmp_path / "empty"
    empty.mkdir()
    got = _find(bundle, tmp_path, [empty], folder=str(ws))
    attempts = {a["source"]: a["error"] for a in got["found"]}
    assert list(attempts) == ["the workspace's .venv", "agent-edit on PATH", "python3 on PATH"]
    assert attempts["the workspace's .venv"].startswith("agent-edit is not installed for ")
    assert attempts["agent-edit on PATH"] == "agent-edit was not found"
    assert attempts["python3 on PATH"] == "python3 was not found"
    assert sum(line.startswith("error ") for line in got["logs"]) == 3


def test_a_configured_interpreter_is_the_only_one_tried(bundle: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    _good_python(ws / ".venv" / "bin" / "python")
    wrong = _bare_python(tmp_path / "system" / "python3")
    got = _find(
        bundle, tmp_path, [tmp_path], folder=str(ws), config={"agentEdit.server.python": str(wrong)}
    )
    # The user asked for this one: it fails and says so, rather than silently using another.
    (attempt,) = got["found"]
    assert attempt["source"] == "agentEdit.server.python"
    assert attempt["error"] == f"agent-edit is not installed for {wrong}"


def test_python_without_pygls_is_refused_with_what_to_install(bundle: Path, tmp_path: Path) -> None:
    # agent-edit importable (a checkout on PYTHONPATH) but none of its dependencies.
    python = _script(
        tmp_path / "py" / "python3", f'PYTHONPATH="{REPO}" exec "{sys.executable}" -S "$@"'
    )
    got = _find(bundle, tmp_path, [tmp_path], config={"agentEdit.server.python": str(python)})
    (attempt,) = got["found"]
    assert "not pygls" in attempt["error"] and "virtual environment" in attempt["error"], attempt


def test_custom_command_not_ending_in_serve_is_started_unchecked(
    bundle: Path, tmp_path: Path
) -> None:
    got = _find(
        bundle, tmp_path, [tmp_path], config={"agentEdit.server.command": ["/opt/wrapper.sh"]}
    )
    assert got["found"]["command"] == "/opt/wrapper.sh" and got["found"]["args"] == []
    assert got["found"]["version"].startswith("not checked")
