"""A file removed by someone else after an apply was interrupted is not brought back.

A write replaces its file in one rename and never leaves it absent, so a written file that is
gone when the rollback looks at it was removed by someone else since. The rollback put it back
anyway, and said "restored", even when the apply had never reached that file (killed after
writing the first temporary file): a file the user deleted came back.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_server.engine import files
from tests.cli.test_cli_atomic import apply_killed_after, cli, make, tree

PATCH = (
    "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
    "*** Update File: d/b.txt\n@@\n-b\n+B\n*** End Patch\n"
)


@pytest.mark.parametrize(
    ("steps", "removed", "left"),
    [
        (1, "d/b.txt", {"a.txt": b"a\n"}),  # d/b.txt never reached: its temporary file unmade
        (3, "a.txt", {"d/b.txt": b"b\n"}),  # a.txt renamed into place, then removed
        (3, "d", {"a.txt": b"a\n"}),  # a.txt put back; d/b.txt's whole folder removed
    ],
)
def test_a_file_removed_after_the_crash_stays_removed(
    tmp_path: Path, steps: int, removed: str, left: dict[str, bytes]
) -> None:
    state = tmp_path / "state"
    root = tmp_path / "ws"
    make(root, {"a.txt": b"a\n", "d/b.txt": b"b\n"})
    assert apply_killed_after(steps, root, PATCH, state).returncode == -9
    target = root / removed
    if target.is_dir():
        for p in target.iterdir():
            p.unlink()
        target.rmdir()
    else:
        target.unlink()
    proc = cli("history", "--root", str(root), "--json", state=state)
    assert proc.returncode == 0, proc.stderr
    assert tree(root) == left, proc.stderr
    assert not (root / removed).exists()
    (report,) = json.loads(proc.stdout)["recovered"]
    gone = "d/b.txt" if removed == "d" else removed
    assert gone not in report["restored"], report
    assert [c["path"] for c in report["conflicts"]] == [gone], report
    assert not list(state.rglob(files.JOURNAL))


def test_a_file_to_delete_removed_by_hand_before_the_deletes_stays_removed(
    tmp_path: Path,
) -> None:
    """Killed before its deletes (a.txt's temporary file still there): gone.txt, which the
    patch deletes, was removed by the user since; the rollback does not bring it back."""
    state = tmp_path / "state"
    root = tmp_path / "ws"
    make(root, {"a.txt": b"a\n", "gone.txt": b"g\n"})
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
        "*** Delete File: gone.txt\n*** End Patch\n"
    )
    assert apply_killed_after(1, root, patch, state).returncode == -9
    (root / "gone.txt").unlink()
    proc = cli("history", "--root", str(root), "--json", state=state)
    assert proc.returncode == 0, proc.stderr
    assert tree(root) == {"a.txt": b"a\n"}, proc.stderr
    (report,) = json.loads(proc.stdout)["recovered"]
    assert report["restored"] == [] and [c["path"] for c in report["conflicts"]] == ["gone.txt"]
