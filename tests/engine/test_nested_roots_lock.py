"""Nested workspace roots share the lock: while an apply holds the lock of `w/sub`, a command
on `w` waits for it (and the other way round), since both may write the same files; roots that
share no folder do not wait for each other. The lock of each root is its own file in its own
state folder (engine/files.py `workspace_lock`, engine/state.py `related_roots`)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from lsp_server.engine import files
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.state import state_dir


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(files.STATE_DIR_ENV, str(tmp_path / "state"))
    return tmp_path / "state"


@contextmanager
def _held_by_another(root: Path) -> Iterator[None]:
    """`root`'s own lock, held as another process holds it (its own open file)."""
    fd = os.open(os.path.join(state_dir(str(root)), "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        os.close(fd)


def _busy(root: Path) -> bool:
    try:
        with files.workspace_lock(str(root), wait=0.0):
            return False
    except EditError as err:
        assert err.code == Code.IO_ERROR and err.details.get("reason") == "BUSY", err
        return True


@pytest.mark.parametrize("holder", ["w", "w/sub", "w/sub/deeper"])
@pytest.mark.parametrize("taker", ["w", "w/sub", "w/sub/deeper"])
def test_nested_roots_wait_for_each_other(tmp_path: Path, holder: str, taker: str) -> None:
    for name in ("w/sub/deeper", "w/other"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    # Each root used once (listed, with its state folder), in an order that puts the taker's
    # first use before or after the holder's.
    for name in (taker, holder):
        with files.workspace_lock(str(tmp_path / name)):
            pass
    with _held_by_another(tmp_path / holder):
        assert _busy(tmp_path / taker)
        assert not _busy(tmp_path / "w" / "other") or holder == "w"


def test_a_root_used_first_while_the_other_holds_its_lock(tmp_path: Path) -> None:
    """The inner root's first command (no state folder for it yet) still finds the outer one's
    lock held, and the outer root's first command finds the inner one's listed."""
    (tmp_path / "w" / "sub").mkdir(parents=True)
    with files.workspace_lock(str(tmp_path / "w")):
        pass
    with _held_by_another(tmp_path / "w"):
        assert _busy(tmp_path / "w" / "sub")
    (tmp_path / "v" / "sub").mkdir(parents=True)
    with files.workspace_lock(str(tmp_path / "v" / "sub")):
        pass
    with _held_by_another(tmp_path / "v" / "sub"):
        assert _busy(tmp_path / "v")


def test_sibling_roots_do_not_wait(tmp_path: Path) -> None:
    for name in ("w/a", "w/b"):
        (tmp_path / name).mkdir(parents=True)
        with files.workspace_lock(str(tmp_path / name)):
            pass
    with _held_by_another(tmp_path / "w" / "a"):
        assert not _busy(tmp_path / "w" / "b")
