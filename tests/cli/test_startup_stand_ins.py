"""No start-up stand-in (startup.lean_dataclasses, startup.lean_pathlib) outlives its block
except where it was meant to: after a command, in its fresh process, every module in
`sys.modules` is a real one (it has a spec), and the only modules that still hold a module
object missing from `sys.modules` are the two imported inside the blocks (pathlib's submodules
too, where it is a package), holding the stand-ins they were given there (dataclasses: copy,
inspect; pathlib: fnmatch, ntpath, warnings). A module a later change imports inside a block,
which would keep a stand-in of its own, fails here; so does a stand-in left in `sys.modules`.
The commands include refusals (a missing file, a path outside the workspace, a malformed
patch, an unknown edit to undo) and the history's diff."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys, types
from lsp_server.cli import main
rc = main(sys.argv[1:])
real = {id(m) for m in sys.modules.values()}
held = sorted(
    [name, value.__name__]
    for name, module in list(sys.modules.items())
    if isinstance(module, types.ModuleType)  # (typing.io is a class)
    for attr, value in list(vars(module).items())
    if isinstance(value, types.ModuleType) and id(value) not in real
)
unreal = sorted(n for n, m in sys.modules.items() if isinstance(m, types.ModuleType)
                and m.__spec__ is None and n != "__main__")
sys.stdout.flush()
sys.stderr.write("\\nSTAND-INS " + json.dumps([rc, held, unreal]) + "\\n")
"""

# The module imported inside each block -> the stand-ins it was given there. (pathlib may be a
# package, as from Python 3.13: its submodules import them then.)
ALLOWED = {
    "dataclasses": {"copy", "inspect"},
    "pathlib": {"fnmatch", "ntpath", "warnings", "urllib.parse"},
}


def _allowed(holder: str, stand_in: str) -> bool:
    return stand_in in ALLOWED.get(holder.partition(".")[0], set())


Result = tuple[int, list[list[str]], list[str]]  # exit status, held stand-ins, unreal modules
PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 10\n*** End Patch\n"
COMMANDS = {
    "apply-patch": (["apply-patch", "--root", "ws", "p"], 0),
    "apply-patch stale": (["apply-patch", "--root", "ws", "p"], 1),  # after the first
    "apply-patch malformed": (["apply-patch", "--root", "ws", "bad"], 1),
    "apply-patch outside": (["apply-patch", "--root", "ws", "outside"], 1),
    "apply-patch --expect-sha256": (
        ["apply-patch", "--root", "ws", "--expect-sha256", "a.py=" + "0" * 64, "p"],
        1,
    ),
    "read missing": (["read", "--root", "ws", "missing.txt"], 1),
    "write": (["write", "--root", "ws", "new.txt", "hello\n"], 0),
    "replace no match": (["replace", "--root", "ws", "a.py", "nothere", "x"], 1),
    "history --diff": (["history", "--root", "ws", "--diff"], 0),
    "undo unknown": (["undo", "--root", "ws", "99"], 1),
    "undo": (["undo", "--root", "ws", "1"], 0),
}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Result]:
    tmp = tmp_path_factory.mktemp("stand_ins")
    (tmp / "ws").mkdir()
    (tmp / "ws" / "a.py").write_text("x = 1\ny = 2\n")
    (tmp / "p").write_text(PATCH)
    (tmp / "bad").write_text("*** Begin Patch\n*** Upd File: a.py\n")
    (tmp / "outside").write_text(PATCH.replace("a.py", "../a.py"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "AGENT_EDIT_CRASH_AFTER")}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp / "state")}
    out = {}
    for name, (argv, _) in COMMANDS.items():  # in order: each command sees the ones before
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp,
            timeout=120,
        )
        marker = proc.stderr.rfind("\nSTAND-INS ")
        assert marker >= 0, (name, proc.stderr)
        rc, held, unreal = json.loads(proc.stderr[marker + len("\nSTAND-INS ") :])
        out[name] = (rc, held, unreal)
    return out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_no_stand_in_outlives_its_block(run: dict[str, Result], name: str) -> None:
    rc, held, unreal = run[name]
    assert rc == COMMANDS[name][1], name
    assert not unreal, f"stand-ins left in sys.modules: {unreal}"
    assert all(_allowed(holder, stand_in) for holder, stand_in in held), held
