"""Codex's 25 golden apply_patch scenarios, through the engine and through the CLI process.

Each scenario: copy `input/`, apply `patch.txt`, compare the whole tree byte for byte with
`expected/`. Except 010, 011 and 015, where agent-edit is deliberately safer than Codex: the tree
must stay equal to `input/` and the result must carry ALREADY_EXISTS / NOT_FOUND.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.engine.errors import EditError
from lsp_server.engine.files import apply_plan, read_snapshot
from lsp_server.engine.patching import plan_patch

REPO = Path(__file__).resolve().parents[2]


def _scenarios_dir() -> Path:
    candidates = [
        os.environ.get("AGENT_EDIT_SCENARIOS", ""),
        str(REPO.parent / "shared" / "conformance" / "codex-scenarios"),
        "/work/shared/conformance/codex-scenarios",
    ]
    for c in candidates:
        if c and (Path(c) / "001_add_file").is_dir():
            return Path(c)
    raise RuntimeError(
        "codex-scenarios not found: set AGENT_EDIT_SCENARIOS or put ../shared beside the repo "
        f"(looked in {candidates})"
    )


SCENARIOS = _scenarios_dir()
NAMES = sorted(p.name for p in SCENARIOS.iterdir() if (p / "patch.txt").is_file())
# Where agent-edit refuses what Codex does: the tree stays as input/, with this code.
SAFER = {
    "010_move_overwrites_existing_destination": "ALREADY_EXISTS",
    "011_add_overwrites_existing_file": "ALREADY_EXISTS",
    "015_failure_after_partial_success_leaves_changes": "NOT_FOUND",
}


def test_all_scenarios_present() -> None:
    assert len(NAMES) == 25, NAMES


def tree(root: Path) -> dict[str, bytes]:
    if not root.is_dir():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def copy_input(name: str, dest: Path) -> None:
    # Written afresh (not copytree): the shared scenario files are read-only.
    dest.mkdir(parents=True, exist_ok=True)
    for rel, data in tree(SCENARIOS / name / "input").items():
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def expected_tree(name: str) -> dict[str, bytes]:
    folder = "input" if name in SAFER else "expected"
    return tree(SCENARIOS / name / folder)


def expect_failure(name: str) -> bool:
    return tree(SCENARIOS / name / "input") == tree(SCENARIOS / name / "expected")


@pytest.fixture(autouse=True)
def _state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))


@pytest.mark.parametrize("name", NAMES)
def test_engine(name: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    copy_input(name, work)
    patch = (SCENARIOS / name / "patch.txt").read_text(encoding="utf-8")
    root = str(work)
    try:
        plan = plan_patch(patch, lambda p: read_snapshot(root, p))
        apply_plan(root, plan)
        outcome = None
    except EditError as err:
        outcome = err.code
    assert tree(work) == expected_tree(name)
    if name in SAFER:
        assert outcome == SAFER[name]
    elif expect_failure(name):
        assert outcome is not None
        if name == "012_delete_directory_fails":
            assert outcome == "NOT_FOUND"
    else:
        assert outcome is None


def _cli(
    args: list[str], cwd: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("name", NAMES)
def test_cli(name: str, tmp_path: Path) -> None:
    work = tmp_path / "work"
    copy_input(name, work)
    patch = (SCENARIOS / name / "patch.txt").read_bytes()
    proc = _cli(["apply-patch", "--root", str(work), "--json", "-"], tmp_path, patch)
    assert tree(work) == expected_tree(name), proc.stderr.decode()
    result = json.loads(proc.stdout)
    if name in SAFER:
        assert proc.returncode == 1
        assert result["ok"] is False and result["code"] == SAFER[name]
    elif expect_failure(name):
        assert proc.returncode == 1, result
        assert result["ok"] is False
    else:
        assert proc.returncode == 0, result
        assert result["ok"] is True and result["status"] == "applied"
