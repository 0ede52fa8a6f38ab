"""A moved file keeps its extended attributes and POSIX ACL, as a rename would.

The disk writer moves a file by writing its destination anew and removing the source: the
destination kept the source's mode, but not its ACL. Without the ACL, the group bits of the
mode (the ACL's mask) become the owning group's own permissions: a file whose ACL gave one
named user access (`group::---`, `mask::rw-`, mode 0660) became readable and writable by the
whole group once moved. Also for Move A to B then Add A (the moved text lands as an add of B).
"""

from __future__ import annotations

import os
import stat
import struct
from pathlib import Path

import pytest

from tests.cli.test_cli_atomic import cli, make, tree

ACL = "system.posix_acl_access"


def _acl(*entries: tuple[int, int, int]) -> bytes:
    # posix_acl_xattr: version 2, then (tag, perm, id) per entry, sorted by tag.
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)


UNDEFINED = 0xFFFFFFFF
# user::rw- user:65534:rw- group::--- mask::rw- other::---
NAMED_USER_ONLY = _acl(
    (0x01, 6, UNDEFINED),
    (0x02, 6, 65534),
    (0x04, 0, UNDEFINED),
    (0x10, 6, UNDEFINED),
    (0x20, 0, UNDEFINED),
)
MOVE = """*** Begin Patch
*** Update File: d/a.txt
*** Move to: e/b.txt
@@
-a
+A
*** End Patch
"""
MOVE_THEN_ADD = MOVE.replace("*** End Patch", "*** Add File: d/a.txt\n+fresh\n*** End Patch")


@pytest.mark.parametrize("patch", [MOVE, MOVE_THEN_ADD], ids=["move", "move-then-add"])
def test_a_moved_file_keeps_its_acl_and_attributes(tmp_path: Path, patch: str) -> None:
    root = tmp_path / "ws"
    make(root, {"d/a.txt": b"a\n"})
    src = root / "d/a.txt"
    try:
        os.setxattr(src, ACL, NAMED_USER_ONLY)
    except OSError as exc:
        if os.environ.get("CI"):  # CI runs on ext4 as root: there the guarantee must be tested
            pytest.fail(f"no POSIX ACLs on the test folder's file system: {exc}")
        pytest.skip(f"no POSIX ACLs here: {exc}")
    os.setxattr(src, "user.note", b"kept")
    assert stat.S_IMODE(src.stat().st_mode) == 0o660
    proc = cli("apply-patch", "--root", str(root), "--json", "-", state=tmp_path / "s", stdin=patch)
    assert proc.returncode == 0, proc.stdout
    moved = root / "e/b.txt"
    assert tree(root)["e/b.txt"] == b"A\n"
    assert os.getxattr(moved, ACL) == NAMED_USER_ONLY
    assert os.getxattr(moved, "user.note") == b"kept"
    assert stat.S_IMODE(moved.stat().st_mode) == 0o660
