"""A rolled-back file gets its extended attributes back (a POSIX ACL is one).

The apply gives each replacement the replaced file's extended attributes; the rollback wrote
the pre-image to a fresh file without them, so a file "put back as it was" (after a STALE
mid-apply, or by the next run's recovery after a crash) had lost its ACL and labels.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lsp_server.engine import files
from lsp_server.engine.errors import Code, EditError
from tests.cli.test_cli_atomic import apply_killed_after, cli, headless_apply_patch, make, tree

PATCH = (
    "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
    "*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n"
)
ATTRS = {"user.note": b"kept"}


def _attrs(path: Path) -> dict[str, bytes]:
    return {k: os.getxattr(path, k) for k in os.listxattr(path)}


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    state = tmp_path / "state"
    monkeypatch.setenv(files.STATE_DIR_ENV, str(state))
    root = tmp_path / "ws"
    make(root, {"a.txt": b"a\n", "b.txt": b"b\n"})
    for key, value in ATTRS.items():
        os.setxattr(root / "a.txt", key, value)
    return root, state


def test_a_stale_rollback_puts_the_attributes_back(
    ws: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = ws

    def hook(point: str, path: str) -> None:
        if point == "renamed" and path == "a.txt":
            assert _attrs(root / "a.txt") == ATTRS  # the apply kept them
            (root / "b.txt").write_bytes(b"saved\n")

    monkeypatch.setattr(files, "TEST_HOOK", hook)
    with pytest.raises(EditError) as info:
        headless_apply_patch(str(root), PATCH)
    assert info.value.code == Code.STALE
    assert "put back as it was" in info.value.message
    assert tree(root) == {"a.txt": b"a\n", "b.txt": b"saved\n"}
    assert _attrs(root / "a.txt") == ATTRS


def test_recovery_after_a_crash_puts_the_attributes_back(ws: tuple[Path, Path]) -> None:
    root, state = ws
    assert apply_killed_after(3, root, PATCH, state).returncode == -9  # a.txt renamed
    assert tree(root)["a.txt"] == b"A\n"
    proc = cli("history", "--root", str(root), state=state)
    assert "restored 1 file(s): a.txt" in proc.stderr, proc.stderr
    assert tree(root) == {"a.txt": b"a\n", "b.txt": b"b\n"}
    assert _attrs(root / "a.txt") == ATTRS
