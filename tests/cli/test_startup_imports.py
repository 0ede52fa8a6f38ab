"""What the CLI's common commands load (issue 18 item 5): only what they use.

A short `agent-edit apply-patch` / `replace` / `write` / `read` is mostly imports
(bench/bench_startup.py times them; no timing here): these tests pin which modules such a run
must never load, by
running the command in a fresh interpreter and reading `sys.modules` at its end. Each entry of
NEVER says why the command has no use for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# module (or package, with everything under it) -> why no common command may load it
NEVER = {
    "pygls": "the language server's; the CLI is a front of its own",
    "lsprotocol": "the language server's",
    "lsp_server.lsp": "the language server's",
    "mcp": "`agent-edit mcp` only",
    "lsp_server.mcp": "`agent-edit mcp` only",
    "lark": "the V4A fallback parser, for a patch the fast reader refuses",
    "tree_sitter": "diagnostics are the editor front's",
    "lsp_server.engine.syntax": "diagnostics are the editor front's",
    "asyncio": "startup.run_sync drives the headless actions",
    "inspect": "startup.lean_dataclasses",
    "logging": "only a failed record of a refusal logs",
    "typing": "annotations only: `if TYPE_CHECKING:` imports (lsp_server/startup.py)",
    "datetime": "history entries' times are made with `time` (history/entries.now_iso)",
    "lsp_server.contract": "the checks and the options read arguments.FIELDS",
    "lsp_server.actions.history": "the history action, not an edit",
    "lsp_server.actions.read": "the read action, not an edit",
    "lsp_server.actions.undo": "the undo action, not an edit",
    "lsp_server.engine.read_results": "read's and history's answers, not an edit's",
    "lsp_server.split_plan": "a patch under 256 KiB is planned in order (actions/headless.py)",
    "select": "split_plan waits for its child with it: large patches only",
    "urllib": "pathlib's Path.as_uri only (startup.lean_pathlib)",
    "ipaddress": "urllib.parse's, for URLs",
    "copy": "dataclasses' for asdict/astuple only (startup.lean_dataclasses)",
    "weakref": "copy's",
    "importlib": "the code cache's magic number is _frozen_importlib_external's; actions.action "
    "imports with __import__",
    "math": "journal._finite's, for a record holding a float",
    "difflib": "a line changed in place needs no SequenceMatcher (undo/changes.line_diff)",
    "ntpath": "pathlib's PureWindowsPath only (startup.lean_pathlib)",
    "hashlib": "sha256 and sha1 come from OpenSSL's _hashlib (engine/digests.py)",
    "_hashlib": "a small command hashes a few KiB: the interpreter's own (engine/digests.py)",
    "lsp_server.engine.undo.reverting": "undo plans, loaded by their first use (undo/__init__.py)",
    "lsp_server.engine.undo.rollback": "rollback plans, only after a failed apply",
}
# And what a plain command line (`apply-patch [--root R] [--json] [--dry-run] PATCH`, the
# same for replace, write and read) skips besides.
NEVER_PLAIN = {
    "argparse": "cli._plain reads the usual command line",
    # (argparse's path imports these itself)
    "fnmatch": "pathlib's Path.glob/match only (startup.lean_pathlib)",
    "warnings": "pathlib's deprecated methods only (startup.lean_pathlib)",
}

PROBE = """
import json, sys
from lsp_server.cli import main
rc = main(sys.argv[1:])
sys.stdout.flush()
sys.stderr.write("\\nMODULES " + json.dumps([rc, sorted(sys.modules)]) + "\\n")
"""

PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 10\n*** End Patch\n"


def _loaded(tmp_path: Path, argv: list[str]) -> tuple[int, set[str], str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp_path / "state")}
    env.pop("AGENT_EDIT_CRASH_AFTER", None)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    marker = proc.stderr.rfind("\nMODULES ")
    assert marker >= 0, proc.stderr
    rc, modules = json.loads(proc.stderr[marker + len("\nMODULES ") :])
    return rc, set(modules), proc.stdout


def _offenders(modules: set[str], never: dict[str, str]) -> dict[str, str]:
    return {
        m: why
        for m in sorted(modules)
        for top, why in never.items()
        if m == top or m.startswith(top + ".")
    }


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("x = 1\ny = 2\n")
    (root / "b.txt").write_text("alpha\nbeta\n")
    (tmp_path / "p").write_text(PATCH)
    return root


COMMANDS = {
    "apply-patch": ["apply-patch", "--root", "ws", "p"],
    "apply-patch --json --dry-run": ["apply-patch", "--json", "--dry-run", "--root", "ws", "p"],
    "apply-patch --expect-sha256": [
        "apply-patch",
        "--root",
        "ws",
        "--expect-sha256",
        "a.py=" + "0" * 64,
        "p",
    ],
    "apply-patch with an option argparse reads": [
        "apply-patch",
        "--root",
        "ws",
        "--expect-sha256=a.py=" + "0" * 64,
        "p",
    ],
    "replace": ["replace", "--root", "ws", "b.txt", "beta", "BETA"],
    "write": ["write", "--root", "ws", "new.txt", "hello\n"],
    "read": ["read", "--root", "ws", "a.py"],
    "read --json --line-numbers": ["read", "--json", "--line-numbers", "--root", "ws", "b.txt"],
    "read a line range": ["read", "--start-line", "2", "--end-line", "2", "--root", "ws", "a.py"],
}
# What a read loads besides an edit's: its own action and answer.
READ_USES = ("lsp_server.actions.read", "lsp_server.engine.read_results")


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_common_command_loads_nothing_it_does_not_use(
    tmp_path: Path, ws: Path, name: str
) -> None:
    rc, modules, out = _loaded(tmp_path, COMMANDS[name])
    expect_rc = 1 if "expect-sha256" in " ".join(COMMANDS[name]) else 0  # that sha is wrong
    assert rc == expect_rc, out
    assert "lsp_server.actions.headless" in modules  # the probe saw the command run
    never = dict(NEVER)
    if "argparse reads" not in name:
        never |= NEVER_PLAIN
    if name.startswith("read"):
        assert set(READ_USES) <= modules  # the read ran
        never = {k: v for k, v in never.items() if k not in READ_USES}
    assert not _offenders(modules, never)


def test_the_commands_did_what_they_said(tmp_path: Path, ws: Path) -> None:
    """The runs above are real edits (so the modules they load are an edit's)."""
    for name in ("apply-patch", "replace", "write"):
        rc, _, _ = _loaded(tmp_path, COMMANDS[name])
        assert rc == 0
    assert (ws / "a.py").read_text() == "x = 10\ny = 2\n"
    assert (ws / "b.txt").read_text() == "alpha\nBETA\n"
    assert (ws / "new.txt").read_text() == "hello\n"


def test_help_loads_no_action_and_no_contract(tmp_path: Path) -> None:
    """`--help` builds the parser from arguments.FIELDS, and runs nothing."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(REPO)}
    probe = PROBE.replace(
        "rc = main(sys.argv[1:])",
        "try:\n    rc = main(sys.argv[1:])\nexcept SystemExit as exc:\n    rc = exc.code",
    )
    for argv in (["--help"], ["replace", "--help"], ["apply-patch", "--help"]):
        proc = subprocess.run(
            [sys.executable, "-c", probe, *argv],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=120,
        )
        marker = proc.stderr.rfind("\nMODULES ")
        assert marker >= 0, proc.stderr
        rc, modules = json.loads(proc.stderr[marker + len("\nMODULES ") :])
        assert rc == 0 and "usage: agent-edit" in proc.stdout
        never = NEVER | {
            "lsp_server.actions": "help runs no action",
            "lsp_server.engine.history": "help runs no action",
        }
        assert not _offenders(set(modules), never), argv


def test_lean_pathlib_keeps_as_uri_and_the_real_module(tmp_path: Path, ws: Path) -> None:
    """After a command (which loaded pathlib with the stand-in), `Path.as_uri` still quotes as
    urllib does, and `import urllib.parse` is the real module, not the stand-in."""
    probe = PROBE.replace(
        'sys.stderr.write("\\nMODULES "',
        "import pathlib, urllib.parse\n"
        "assert pathlib.Path('/a b/%c\\u00e9').as_uri() == 'file:///a%20b/%25c%C3%A9'\n"
        "assert urllib.parse.quote_from_bytes(b'a b') == 'a%20b'\n"
        "assert urllib.parse.urlsplit('http://h/p').netloc == 'h'\n"
        "import fnmatch, ntpath, warnings\n"
        "assert pathlib.PurePath('a/b.py').match('*.py') and fnmatch.__spec__ is not None\n"
        "assert str(pathlib.PureWindowsPath('c:/a', 'b')) == 'c:\\\\a\\\\b'\n"
        "assert pathlib.PureWindowsPath('c:/a').is_absolute() and ntpath.__spec__ is not None\n"
        "with warnings.catch_warnings(record=True) as seen:\n"
        "    warnings.simplefilter('always')\n"
        "    with pathlib.Path('.'):\n"
        "        pass\n"
        "assert [w.category for w in seen] == [DeprecationWarning], seen\n"
        "assert sys.modules['warnings'] is warnings and warnings.__spec__ is not None\n"
        'sys.stderr.write("\\nMODULES "',
    )
    assert probe != PROBE
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.run(
        [sys.executable, "-c", probe, *COMMANDS["apply-patch"]],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0 and "\nMODULES " in proc.stderr, proc.stderr


def test_an_apply_after_a_user_edit_loads_nothing_unused(tmp_path: Path, ws: Path) -> None:
    """The second apply of a file the user changed back in between (as bench_startup's runs
    do: a fresh tree each time): the history diffs the user's edit (one line changed in
    place), which needs no difflib."""
    rc, _, out = _loaded(tmp_path, COMMANDS["apply-patch"])
    assert rc == 0, out
    (ws / "a.py").write_text("x = 1\ny = 2\n")  # the user's edit: the line back as it was
    rc, modules, out = _loaded(tmp_path, COMMANDS["apply-patch"])
    assert rc == 0, out
    assert (ws / "a.py").read_text() == "x = 10\ny = 2\n"
    assert "lsp_server.engine.history.recording" in modules
    assert not _offenders(modules, NEVER | NEVER_PLAIN)


def test_the_copy_stand_in_leaves_asdict_and_the_real_module(tmp_path: Path, ws: Path) -> None:
    """After a command (dataclasses imported with the `copy` and `inspect` stand-ins), a deep
    copy through dataclasses works, `import copy` is the real module, and a dataclass without
    a docstring still gets its signature as one (inspect)."""
    probe = PROBE.replace(
        'sys.stderr.write("\\nMODULES "',
        "import copy, dataclasses, inspect\n"
        "@dataclasses.dataclass\n"
        "class P:\n"
        "    xs: list\n"
        "p = P([[1], [2]])\n"
        "d = dataclasses.asdict(p)\n"
        "assert d == {'xs': [[1], [2]]} and d['xs'][0] is not p.xs[0]\n"
        "assert dataclasses.astuple(p)[0][1] is not p.xs[1]\n"
        "assert copy.deepcopy is dataclasses.copy.deepcopy and copy.__spec__ is not None\n"
        "assert inspect.signature is dataclasses.inspect.signature\n"
        "assert P.__doc__ == 'P(xs: list)', P.__doc__\n"
        'sys.stderr.write("\\nMODULES "',
    )
    assert probe != PROBE
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp_path / "state")}
    proc = subprocess.run(
        [sys.executable, "-c", probe, *COMMANDS["apply-patch"]],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0 and "\nMODULES " in proc.stderr, proc.stderr
