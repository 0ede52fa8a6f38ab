"""An edit does not give a file the ACL its folder's default ACL hands new files.

The disk writer replaces a file by a new one, which inherits its folder's default ACL: a 0640
file without an ACL, in a folder whose default ACL names `user:nobody:rw-`, came out of an
edit with that entry (masked to r--): nobody could now read it. The replacement (and a moved
file, as a rename would) keeps the file's own ACL or lack of one; a new file still gets the
folder's default, as any new file does.
"""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

import pytest

from tests.cli.test_cli_atomic import cli

ACL = "system.posix_acl_access"
UNDEFINED = 0xFFFFFFFF


def _acl(*entries: tuple[int, int, int]) -> bytes:
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


# default: user::rwx user:65534:rw- group::r-x mask::rwx other::r-x
DEFAULT = _acl(
    (0x01, 7, UNDEFINED),
    (0x02, 6, 65534),
    (0x04, 5, UNDEFINED),
    (0x10, 7, UNDEFINED),
    (0x20, 5, UNDEFINED),
)


def _plain_file(tmp_path: Path, dest: Path, data: bytes, mode: int) -> None:
    """`dest` made outside the folder and renamed in: no inherited ACL."""
    made = tmp_path / "made"
    made.write_bytes(data)
    made.chmod(mode)
    dest.parent.mkdir(parents=True, exist_ok=True)
    made.rename(dest)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "shared").mkdir(parents=True)
    try:
        os.setxattr(root / "shared", "system.posix_acl_default", DEFAULT)
    except OSError as exc:
        if os.environ.get("CI"):  # CI runs on ext4 as root: there the guarantee must be tested
            pytest.fail(f"no POSIX ACLs on the test folder's file system: {exc}")
        pytest.skip(f"no POSIX ACLs here: {exc}")
    return root


def _apply(tmp_path: Path, root: Path, patch: str) -> None:
    proc = cli("apply-patch", "--root", str(root), "--json", "-", state=tmp_path / "s", stdin=patch)
    assert proc.returncode == 0, proc.stdout


def test_an_edited_file_gets_no_acl_from_its_folder(tmp_path: Path, ws: Path) -> None:
    target = ws / "shared/a.txt"
    _plain_file(tmp_path, target, b"hi\n", 0o640)
    _apply(
        tmp_path,
        ws,
        "*** Begin Patch\n*** Update File: shared/a.txt\n@@\n-hi\n+HI\n*** End Patch\n",
    )
    assert target.read_bytes() == b"HI\n"
    assert ACL not in os.listxattr(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_file_moved_into_the_folder_gets_none_either(tmp_path: Path, ws: Path) -> None:
    _plain_file(tmp_path, ws / "private/a.txt", b"hi\n", 0o600)
    _apply(
        tmp_path,
        ws,
        "*** Begin Patch\n*** Update File: private/a.txt\n*** Move to: shared/a.txt\n"
        "@@\n-hi\n+HI\n*** End Patch\n",
    )
    moved = ws / "shared/a.txt"
    assert ACL not in os.listxattr(moved)
    assert stat.S_IMODE(moved.stat().st_mode) == 0o600


def test_a_new_file_still_gets_the_default(tmp_path: Path, ws: Path) -> None:
    _apply(tmp_path, ws, "*** Begin Patch\n*** Add File: shared/new.txt\n+x\n*** End Patch\n")
    assert ACL in os.listxattr(ws / "shared/new.txt")


def test_a_rolled_back_file_gets_none_either(
    tmp_path: Path, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lsp_server.engine import files
    from lsp_server.engine.errors import Code, EditError
    from tests.cli.test_cli_atomic import headless_apply_patch

    monkeypatch.setenv(files.STATE_DIR_ENV, str(tmp_path / "s"))
    target = ws / "shared/a.txt"
    _plain_file(tmp_path, target, b"a\n", 0o640)
    (ws / "b.txt").write_bytes(b"b\n")

    def hook(point: str, path: str) -> None:
        if point == "renamed" and path == "shared/a.txt":
            (ws / "b.txt").write_bytes(b"saved\n")  # STALE: shared/a.txt is put back

    monkeypatch.setattr(files, "TEST_HOOK", hook)
    patch = (
        "*** Begin Patch\n*** Update File: shared/a.txt\n@@\n-a\n+A\n"
        "*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n"
    )
    with pytest.raises(EditError) as info:
        headless_apply_patch(str(ws), patch)
    assert info.value.code == Code.STALE
    assert target.read_bytes() == b"a\n"
    assert ACL not in os.listxattr(target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
