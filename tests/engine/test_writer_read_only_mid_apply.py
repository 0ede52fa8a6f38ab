"""The workspace's file system turned read-only between two renames of a disk apply.

A read-only file system refuses an unlink before it looks the name up (EROFS even for a name
that is not there), so the rollback could not tell a temporary file already renamed over its
target from one still waiting: it took the renamed file's for "still there", skipped its target
as untouched, said "nothing was changed" and removed the journal, leaving the file new for good.
The result must say PARTIAL with that file, keep the journal, and the next command (once the
mount is writable again) must put it back.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.engine import files
from lsp_server.engine.errors import Code, EditError
from tests.cli.test_cli_atomic import apply_journals, cli, headless_apply_patch, make, tree

PATCH = (
    "*** Begin Patch\n"
    "*** Update File: a.txt\n@@\n-a\n+A\n"
    "*** Update File: b.txt\n@@\n-b\n+B\n"
    "*** End Patch\n"
)


def _run(*cmd: str) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode:
        pytest.fail(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")


@pytest.fixture
def bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """A workspace that is its own bind mount (so it can be made read-only), and a state
    folder outside it."""
    if os.geteuid() != 0:
        pytest.fail("this test needs root (CI runs as root): mount")
    state = tmp_path / "state"
    monkeypatch.setenv(files.STATE_DIR_ENV, str(state))
    root = tmp_path / "ws"
    make(root, {"a.txt": b"a\n", "b.txt": b"b\n"})
    _run("mount", "--bind", str(root), str(root))
    try:
        yield root, state
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False, capture_output=True)


def test_read_only_after_the_first_rename_is_partial_and_rolled_back_next_run(
    bound: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, state = bound

    def hook(point: str, path: str) -> None:
        if point == "renamed" and path == "a.txt":
            _run("mount", "-o", "remount,ro,bind", str(root))

    monkeypatch.setattr(files, "TEST_HOOK", hook)
    with pytest.raises(EditError) as info:
        headless_apply_patch(str(root), PATCH)
    monkeypatch.setattr(files, "TEST_HOOK", None)
    err = info.value
    # a.txt holds the new content: never "nothing was changed".
    assert err.code == Code.PARTIAL, (err.code, err.message)
    assert "nothing was changed" not in err.message
    assert err.details["files"] == ["a.txt"]
    assert [f["path"] for f in err.details["rolledBack"]["failed"]] == ["a.txt"]
    # Only b.txt's temporary file is left; a.txt's was renamed into place.
    assert [t.split(".agent-edit-")[0] for t in err.details["rolledBack"]["leftBehind"]] == [
        ".b.txt"
    ]
    assert tree(root)["a.txt"] == b"A\n" and tree(root)["b.txt"] == b"b\n"
    assert apply_journals(state), "the journal must stay for the next run's rollback"

    _run("mount", "-o", "remount,rw,bind", str(root))
    proc = cli("history", "--root", str(root), "--json", state=state)
    assert proc.returncode == 0, proc.stderr
    assert "restored 1 file(s): a.txt" in proc.stderr
    assert tree(root) == {"a.txt": b"a\n", "b.txt": b"b\n"}
    outcomes = [e["outcome"] for e in json.loads(proc.stdout)["entries"]]
    assert outcomes == ["PARTIAL", "rolled-back"], outcomes
