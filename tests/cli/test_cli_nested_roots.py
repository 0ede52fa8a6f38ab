"""Nested workspace roots (`--root w` and `--root w/sub`) share files, so they share the lock
and the rollback of an interrupted apply: a command under one takes the locks of the roots
above and below it that have state, and rolls back what an apply killed under one of them left
half-done before it reads a file.

Found: the lock and the journal were per root. An apply under `--root w/sub` killed after its
first rename left `sub/a.txt` new and `sub/b.txt` old; `agent-edit read --root w` then showed
that half-applied tree, and an edit under `--root w` was planned and applied on it (and the
next `--root w/sub` command rolled `a.txt` back under it). Applies under both could also run
at once (tests/engine/test_nested_roots_lock.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.editor_client import REPO

PATCH = """*** Begin Patch
*** Update File: {a}
@@
-a old
+a new
*** Update File: {b}
@@
-b old
+b new
*** End Patch
"""


def _cli(
    state: Path, *args: str, stdin: str = "", crash: int = 0
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), AGENT_EDIT_STATE_DIR=str(state))
    env.pop("AGENT_EDIT_CRASH_AFTER", None)
    if crash:
        env["AGENT_EDIT_CRASH_AFTER"] = str(crash)
    return subprocess.run(
        [sys.executable, "-m", "lsp_server", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Path, Path]:
    w = tmp_path / "w"
    (w / "sub").mkdir(parents=True)
    (w / "sub" / "a.txt").write_text("a old\n")
    (w / "sub" / "b.txt").write_text("b old\n")
    return w, tmp_path / "state"


def _crash_half_way(state: Path, root: Path, a: str, b: str) -> None:
    """An apply-patch under `root` killed right after its first rename (two temporary files
    written, then one rename): `a` new, `b` old."""
    run = _cli(
        state, "apply-patch", "--root", str(root), "-", stdin=PATCH.format(a=a, b=b), crash=3
    )
    assert run.returncode != 0
    assert [(root / p).read_text() for p in (a, b)] == ["a new\n", "b old\n"]


@pytest.mark.parametrize("outer_state_first", [True, False])
def test_a_command_on_the_outer_root_rolls_back_the_inner_roots_apply(
    tree: tuple[Path, Path], outer_state_first: bool
) -> None:
    w, state = tree
    if outer_state_first:  # `w` was used before (it has a state folder), or not
        assert _cli(state, "history", "--root", str(w)).returncode == 0
    _crash_half_way(state, w / "sub", "a.txt", "b.txt")
    run = _cli(state, "read", "--root", str(w), "--json", "sub/a.txt")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["text"] == "a old\n"  # not the half-applied "a new"
    assert f"under the workspace folder {w / 'sub'}" in run.stderr
    assert (w / "sub" / "b.txt").read_text() == "b old\n"
    # The inner root's own history settles its edit from what the files show: nothing applied.
    run = _cli(state, "history", "--root", str(w / "sub"), "--json")
    entries = json.loads(run.stdout)["entries"]
    assert [e["outcome"] for e in entries] == ["NOT_APPLIED"], entries


def test_a_command_on_the_inner_root_rolls_back_the_outer_roots_apply(
    tree: tuple[Path, Path],
) -> None:
    w, state = tree
    assert _cli(state, "history", "--root", str(w / "sub")).returncode == 0
    _crash_half_way(state, w, "sub/a.txt", "sub/b.txt")
    run = _cli(state, "replace", "--root", str(w / "sub"), "--json", "b.txt", "b old", "b mine")
    assert run.returncode == 0, run.stderr
    assert f"under the workspace folder {w}" in run.stderr
    # Planned on the rolled-back tree: a.txt old again, b.txt edited from its old text.
    assert (w / "sub" / "a.txt").read_text() == "a old\n"
    assert (w / "sub" / "b.txt").read_text() == "b mine\n"


def test_a_sibling_root_is_not_touched(tree: tuple[Path, Path], tmp_path: Path) -> None:
    """Only roots nested in or around each other share files: `w/sub` and `w/other` do not."""
    w, state = tree
    (w / "other").mkdir()
    (w / "other" / "c.txt").write_text("c\n")
    _crash_half_way(state, w / "sub", "a.txt", "b.txt")
    run = _cli(state, "read", "--root", str(w / "other"), "c.txt")
    assert run.returncode == 0 and run.stdout == "c\n", run.stderr
    assert "rolled back" not in run.stderr
    assert (w / "sub" / "a.txt").read_text() == "a new\n"  # left for its own root's next run


def test_a_server_start_on_the_outer_root_rolls_back_the_inner_roots_apply(
    tree: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The language server's start (`recover(root, wait=False)`): rolled back when no apply
    holds a lock, `busy` (nothing touched) while one holds the inner root's."""
    import fcntl

    from lsp_server.engine import recovery
    from lsp_server.engine.state import state_dir

    w, state = tree
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(state))
    _crash_half_way(state, w / "sub", "a.txt", "b.txt")
    fd = os.open(os.path.join(state_dir(str(w / "sub")), "lock"), os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        done = recovery.recover(str(w), wait=False)
        assert done.busy and not done.reports
        assert (w / "sub" / "a.txt").read_text() == "a new\n"
    finally:
        os.close(fd)
    done = recovery.recover(str(w), wait=False)
    assert not done.busy and done.error is None
    assert [r["root"] for r in done.reports] == [str(w / "sub")]
    assert (w / "sub" / "a.txt").read_text() == "a old\n"
