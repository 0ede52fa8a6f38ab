"""Move A to B, then Add A: B is the text the move carried away, and keeps A's mode.

The planner turns that pair into an add of B and an update of A (engine/patching.py). A plain
move's destination keeps the source's mode ("a private file stays private where it moves to");
this add of B was created 0644 by the umask, so a 0600 file's text became readable by everyone.
"""

from __future__ import annotations

import stat
from pathlib import Path

from tests.cli.test_cli_atomic import cli, make, tree

PATCH = """*** Begin Patch
*** Update File: d/secret.txt
*** Move to: e/moved.txt
@@
-token
+TOKEN
*** Add File: d/secret.txt
+placeholder
*** End Patch
"""


def test_the_moved_text_keeps_its_private_mode(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    make(root, {"d/secret.txt": b"token\n"})
    (root / "d/secret.txt").chmod(0o600)
    proc = cli("apply-patch", "--root", str(root), "--json", "-", state=tmp_path / "s", stdin=PATCH)
    assert proc.returncode == 0, proc.stdout
    assert tree(root) == {"e/moved.txt": b"TOKEN\n", "d/secret.txt": b"placeholder\n"}
    assert stat.S_IMODE((root / "e/moved.txt").stat().st_mode) == 0o600
    assert stat.S_IMODE((root / "d/secret.txt").stat().st_mode) == 0o600
