"""The code cache (startup.cache_dataclass_code) never runs what a workspace ships. A state base
inside the workspace (AGENT_EDIT_STATE_DIR=.agent-state, relative, with the CLI run from the
repository) is refused for the journal (DENIED), but the cache is read before the arguments
are parsed: a cloned repository could carry `.agent-state/code/dataclasses-<tag>.bin`, a file
the user owns (every cloned file is), with a matching digest and planted code objects. Such a
file is not read: a cache inside the folder given by --root or the current one is not used,
and only a file as private as the cache writes it (0600) is trusted."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server import startup

REPO = Path(__file__).resolve().parents[2]
TAG = sys.implementation.cache_tag
PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 10\n*** End Patch\n"


def _cli(cwd: Path, state: str, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENT_EDIT_CRASH_AFTER")}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": state}
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *argv],
        input=PATCH,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


def _planted_cache(tmp_path: Path, marker: Path) -> bytes:
    """A cache file whose every entry, run, leaves `marker` (then does what the method's source
    does): made from a real run's table, with a digest that matches."""
    good = tmp_path / "good-state"
    ws = tmp_path / "scratch"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    assert _cli(ws, str(good), "apply-patch", "-").returncode == 0
    data = (good / "code" / f"dataclasses-{TAG}.bin").read_bytes()
    magic = startup._magic()
    table = marshal.loads(data[len(magic) + 32 :])
    assert len(table) > 30
    touch = f"import os as _o; _o.close(_o.open({str(marker)!r}, _o.O_CREAT | _o.O_WRONLY))\n"
    evil = {k: compile(touch + k, "<string>", "exec", dont_inherit=True) for k in table}
    body = marshal.dumps(evil)
    return magic + startup._digest(body) + body


@pytest.mark.parametrize("mode", [0o644, 0o600])  # as cloned: umask 022, or a private 077
@pytest.mark.parametrize("how", ["cwd", "root"])
def test_a_cache_file_the_workspace_ships_is_not_run(tmp_path: Path, mode: int, how: str) -> None:
    marker = tmp_path / "planted-code-ran"
    planted = _planted_cache(tmp_path, marker)
    ws = tmp_path / "repo"
    (ws / ".agent-state" / "code").mkdir(parents=True)
    cache = ws / ".agent-state" / "code" / f"dataclasses-{TAG}.bin"
    cache.write_bytes(planted)
    cache.chmod(mode)
    (ws / "a.py").write_text("x = 1\n")
    if how == "cwd":  # a relative state base, the CLI run from the repository
        proc = _cli(ws, ".agent-state", "apply-patch", "-")
    else:
        proc = _cli(tmp_path, str(ws / ".agent-state"), "apply-patch", "--root", str(ws), "-")
    assert not marker.exists(), "code from the workspace's cache file ran"
    assert proc.returncode == 1 and "DENIED" in proc.stderr, proc.stdout + proc.stderr
    assert (ws / "a.py").read_text() == "x = 1\n"
    assert cache.read_bytes() == planted  # not rewritten either (inside the workspace)


def test_a_cache_readable_by_others_is_not_trusted(tmp_path: Path) -> None:
    """Outside any workspace, a 0644 cache file (not one the cache wrote) is ignored."""
    marker = tmp_path / "planted-code-ran"
    planted = _planted_cache(tmp_path, marker)
    path = tmp_path / "elsewhere.bin"
    path.write_bytes(planted)
    path.chmod(0o644)
    assert startup._load_code(str(path)) == {}
    path.chmod(0o600)
    assert len(startup._load_code(str(path))) > 30
