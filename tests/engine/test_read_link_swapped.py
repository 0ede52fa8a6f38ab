"""`read` shows only the file the path policy checked: a symbolic link swapped in after the check
(for the file itself, or for one of its folders) is refused OUTSIDE_WORKSPACE, never followed.

The policy resolves the path (links followed, the result checked inside the workspace), then the
reader opens it by name: a folder renamed away and replaced by a link to outside in between had
`agent-edit read` print a file from outside the workspace (and a dry run's diff, or a NO_MATCH
candidate, would show its lines too). Each race is made deterministic by a hook run between the
check and the open (`files.read_snapshot` wrapped), or right after the open (`os.open` wrapped).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lsp_server import cli
from lsp_server.engine import files
from lsp_server.engine.errors import Code, EditError

SECRET = "secret from outside the workspace\n"


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv(files.STATE_DIR_ENV, str(tmp_path / "state"))
    root, outside = tmp_path / "ws", tmp_path / "outside"
    for d in (root, outside):
        (d / "sub").mkdir(parents=True)
    (root / "sub" / "f.txt").write_text("inside\n")
    (root / "g.txt").write_text("inside\n")
    (outside / "sub" / "f.txt").write_text(SECRET)
    (outside / "g.txt").write_text(SECRET)
    return root, outside


def _swap(root: Path, outside: Path, name: str) -> None:
    """`name` (a file or folder in the workspace) renamed away, a link to outside in its place."""
    os.rename(root / name, root.parent / "aside")
    os.symlink(outside / name, root / name)


def _before_open(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """`swap` runs after the path policy checked the path, right before the reader opens it."""
    real = files.read_snapshot

    def hooked(root: str, rel: str, *args: object) -> object:
        swap()
        return real(root, rel, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(files, "read_snapshot", hooked)


def _cli_read(root: Path, path: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict]:
    code = cli.main(["read", "--root", str(root), "--json", path])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("name", "path"), [("g.txt", "g.txt"), ("sub", "sub/f.txt")])
def test_cli_read_refuses_a_link_swapped_in_after_the_check(
    ws: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    path: str,
) -> None:
    root, outside = ws
    _before_open(monkeypatch, lambda: _swap(root, outside, name))
    code, result = _cli_read(root, path, capsys)
    assert code == cli.EXIT_FAILED
    assert result["code"] == "OUTSIDE_WORKSPACE", result
    assert result["details"]["rule"] == "symlink-swapped"
    assert "secret" not in json.dumps(result)


@pytest.mark.parametrize(("name", "path"), [("g.txt", "g.txt"), ("sub", "sub/f.txt")])
def test_dry_run_shows_no_line_of_a_swapped_in_link(
    ws: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    name: str,
    path: str,
) -> None:
    """An edit's plan reads through the same reader: its diff shows nothing from outside."""
    root, outside = ws
    _before_open(monkeypatch, lambda: _swap(root, outside, name))
    code = cli.main(["replace", "--root", str(root), "--json", "--dry-run", path, "secret", "x"])
    result = json.loads(capsys.readouterr().out)
    assert code == cli.EXIT_FAILED
    assert result["code"] == "OUTSIDE_WORKSPACE", result
    assert "secret" not in json.dumps(result)


def test_without_proc_the_walk_finds_the_swapped_folder(
    ws: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the kernel cannot name the open file (no /proc: macOS), the path is walked again
    without following links: a folder now a link is refused; an untouched file is read."""
    root, outside = ws
    real_readlink = os.readlink

    def no_proc(path: str, *args: object, **kwargs: object) -> str:
        if str(path).startswith("/proc/self/fd/"):
            raise FileNotFoundError(path)
        return real_readlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "readlink", no_proc)
    assert files.read_snapshot(str(root), "sub/f.txt").text == "inside\n"
    _swap(root, outside, "sub")
    with pytest.raises(EditError) as err:
        files.read_snapshot(str(root), "sub/f.txt")
    assert err.value.code == Code.OUTSIDE_WORKSPACE


def _after_open(monkeypatch: pytest.MonkeyPatch, target: str, then: Callable[[], None]) -> None:
    """`then` runs right after the reader opened `target` (and before it reads)."""
    real_open = os.open

    def hooked(path: object, flags: int, *args: object, **kwargs: object) -> int:
        fd = real_open(path, flags, *args, **kwargs)  # type: ignore[arg-type]
        if path == target:
            then()
        return fd

    monkeypatch.setattr(os, "open", hooked)


def test_a_folder_swapped_in_and_back_around_the_open_is_refused(
    ws: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Opened through a link to outside, the link then swapped back for the real folder: the
    path shows no link any more, but the file opened is not the one there."""
    root, outside = ws
    _swap(root, outside, "sub")

    def back() -> None:
        os.unlink(root / "sub")
        os.rename(root.parent / "aside", root / "sub")

    _after_open(monkeypatch, str(root / "sub" / "f.txt"), back)
    with pytest.raises(EditError) as err:
        files.read_snapshot(str(root), "sub/f.txt")
    assert err.value.code == Code.IO_ERROR
    assert err.value.details["reason"] == "CHANGED_WHILE_READ"
    assert "secret" not in err.value.message


def test_a_legitimate_link_inside_the_workspace_is_still_read(
    ws: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The policy resolves links inside the workspace: the reader opens the real path."""
    root, _ = ws
    os.symlink("sub", root / "dirlink")
    os.symlink("g.txt", root / "filelink")
    for path in ("dirlink/f.txt", "filelink"):
        code, result = _cli_read(root, path, capsys)
        assert code == 0 and result["text"] == "inside\n", result


def test_a_hard_link_swapped_in_after_the_check_is_refused(
    ws: tuple[Path, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The policy refuses a hard link (DENIED, rule hard-link); one put in the file's place
    after the check had `read` show the bytes of the file it shares, outside the workspace."""
    root, outside = ws

    def swap() -> None:
        os.unlink(root / "g.txt")
        os.link(outside / "g.txt", root / "g.txt")

    _before_open(monkeypatch, swap)
    code, result = _cli_read(root, "g.txt", capsys)
    assert code == cli.EXIT_FAILED
    assert result["code"] == "DENIED" and result["details"]["rule"] == "hard-link", result
    assert "secret" not in json.dumps(result)
