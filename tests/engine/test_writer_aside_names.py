"""The names of the disk writer's temporary files next to a target.

- A file whose name is near the 255-byte limit (the path policy allows up to 255) could not be
  edited, added or put back: `.<name>.agent-edit-<token>.tmp` was too long (ENAMETOOLONG), and
  the refusal listed that never-made temporary file as one "that could not be removed".
- A rollback killed between writing a pre-image aside and renaming it over its file left that
  copy (a random name, not in the journal) in the workspace for good.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lsp_server.engine import files
from tests.cli.test_cli_atomic import REPO, cli, make, tree

LONG = "n" * 250


def test_a_file_with_a_255_byte_name_can_be_edited_added_and_put_back(tmp_path: Path) -> None:
    state = tmp_path / "state"
    root = tmp_path / "ws"
    make(root, {LONG: b"hi\n"})
    proc = cli("replace", "--root", str(root), "--json", LONG, "hi", "HI", state=state)
    assert proc.returncode == 0, proc.stdout
    added = "m" * 254
    patch = f"*** Begin Patch\n*** Add File: {added}\n+x\n*** End Patch\n"
    proc = cli("apply-patch", "--root", str(root), "--json", "-", state=state, stdin=patch)
    assert proc.returncode == 0, proc.stdout
    assert tree(root) == {LONG: b"HI\n", added: b"x\n"}
    # Put back after a failure: both files, through their own temporary names.
    patch = (
        f"*** Begin Patch\n*** Update File: {LONG}\n@@\n-HI\n+hi\n"
        f"*** Update File: {added}\n@@\n-x\n+y\n*** End Patch\n"
    )
    proc = cli(
        "apply-patch",
        "--root",
        str(root),
        "-",
        state=state,
        stdin=patch,
        env={files.CRASH_ENV: "3"},  # two written, the first renamed
    )
    assert proc.returncode == -9
    proc = cli("history", "--root", str(root), state=state)
    assert proc.returncode == 0 and "restored 1 file(s)" in proc.stderr, proc.stderr
    assert tree(root) == {LONG: b"HI\n", added: b"x\n"}


CHILD = """
import os, signal, sys
from lsp_server import cli
from lsp_server.engine import files
root = sys.argv[1]
def hook(point, path):
    if point == "renamed" and path == "a.txt":  # b.txt saved meanwhile: the apply rolls back
        with open(os.path.join(root, "b.txt"), "w") as f:
            f.write("saved\\n")
    if point == "putting-back":  # a.txt's pre-image written aside, not yet renamed
        os.kill(os.getpid(), signal.SIGKILL)
files.TEST_HOOK = hook
cli.main(["apply-patch", "--root", root, "-"])
"""


def test_a_rollback_killed_before_its_rename_leaves_nothing_after_recovery(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    root = tmp_path / "ws"
    make(root, {"a.txt": b"a\n", "b.txt": b"b\n"})
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+A\n"
        "*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(root)],
        input=patch,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), files.STATE_DIR_ENV: str(state), "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert proc.returncode == -9, proc.stderr
    assert any(".agent-edit-restore" in p for p in tree(root)), tree(root)
    proc = cli("history", "--root", str(root), "--json", state=state)
    assert proc.returncode == 0, proc.stderr
    assert "restored 1 file(s): a.txt" in proc.stderr
    assert tree(root) == {"a.txt": b"a\n", "b.txt": b"saved\n"}
    assert [e["action"] for e in json.loads(proc.stdout)["entries"]] == ["applyPatch", "recover"]
