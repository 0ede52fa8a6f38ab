"""Adversarial review of lsp_server/split_plan.py: a large patch gives the same result with the
split as without it (`headless.SPLIT_PLAN_FROM_CHARS = 1 << 62`), whatever the process
around it does: a fork or a pipe that fails, a pipe whose descriptor number is 1024 or more,
a Ctrl-C that arrives while the parent forks or just after the child is made.

Each test runs the real CLI (`lsp_server.cli.program`) in a fresh process whose `os` is wrapped
by a prelude, deterministically (no sleeps): the wrapper stands for what the kernel or the
terminal does at that moment.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

LAUNCH = """
import os, sys
from lsp_server.actions import headless
if os.environ["SPLIT"] == "off":
    headless.SPLIT_PLAN_FROM_CHARS = 1 << 62
prelude = os.environ.get("PRELUDE")
if prelude:
    exec(compile(open(prelude).read(), prelude, "exec"))
from lsp_server import cli
sys.argv = ["agent-edit", *sys.argv[1:]]
cli.program()
"""

# The `forked`/`joined`/`in order` points, logged so a test knows the split was tried.
LOG_HOOK = """
from lsp_server import split_plan
def _log(point, detail):
    if point != "child":
        with open(os.environ["SPLIT_LOG"], "a") as f:
            f.write(f"{point}\\t{detail}\\n")
split_plan.TEST_HOOK = _log
"""


def _tree(n: int = 300) -> tuple[dict[str, bytes], str]:
    """n files of 40 lines, and a patch (> 256 KiB) of three chunks in each."""
    tree: dict[str, bytes] = {}
    parts = ["*** Begin Patch"]
    for i in range(n):
        name = f"src/f{i}.py"
        lines = [f"line {j} of file {i} " + "x" * 60 for j in range(40)]
        tree[name] = ("\n".join(lines) + "\n").encode()
        parts.append(f"*** Update File: {name}")
        for c in range(3):
            j = 5 + c * 10
            parts += [
                "@@",
                " " + lines[j - 1],
                "-" + lines[j],
                "+" + lines[j].upper(),
                " " + lines[j + 1],
            ]
    parts.append("*** End Patch")
    patch = "\n".join(parts) + "\n"
    assert len(patch) >= 256 * 1024
    return tree, patch


def _write(root: Path, tree: dict[str, bytes]) -> None:
    if root.exists():
        shutil.rmtree(root)
    for rel, data in tree.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def _read(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _cli(
    tmp: Path, split: bool, args: list[str], stdin: bytes = b"", prelude: str = ""
) -> subprocess.CompletedProcess[bytes]:
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO),
        AGENT_EDIT_STATE_DIR=str(tmp / "state"),
        SPLIT="on" if split else "off",
        SPLIT_LOG=str(tmp / "split.log"),
    )
    env.pop("PRELUDE", None)
    if prelude:
        (tmp / "prelude.py").write_text(prelude)
        env["PRELUDE"] = str(tmp / "prelude.py")
    return subprocess.run(
        [sys.executable, "-c", LAUNCH, *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=120,
    )


def _apply(
    tmp: Path, tree: dict[str, bytes], patch: str, split: bool, prelude: str = ""
) -> tuple[int, bytes, bytes, dict[str, bytes], bytes]:
    """apply-patch --json in a fresh tree and state folder: exit code, stdout, stderr, the
    tree after, and the history (its times blanked)."""
    root = tmp / "ws"
    _write(root, tree)
    shutil.rmtree(tmp / "state", ignore_errors=True)
    (tmp / "split.log").unlink(missing_ok=True)
    run = _cli(
        tmp, split, ["apply-patch", "--root", str(root), "--json", "-"], patch.encode(), prelude
    )
    history = _cli(tmp, False, ["history", "--root", str(root), "--json"]).stdout
    history = re.sub(rb'"time": "[^"]*"', b'"time": "T"', history)
    return run.returncode, run.stdout, run.stderr, _read(root), history


def _log(tmp: Path) -> str:
    log = tmp / "split.log"
    return log.read_text() if log.exists() else ""


def _same_as_in_order(tmp: Path, prelude: str) -> str:
    """Assert the split run under `prelude` gives what planning in order gives; its log."""
    tree, patch = _tree()
    split = _apply(tmp, tree, patch, True, LOG_HOOK + prelude)
    log = _log(tmp)
    in_order = _apply(tmp, tree, patch, False)
    assert in_order[0] == 0, in_order[2]
    assert split[2] == in_order[2]  # stderr first: a traceback says most
    assert split[:2] == in_order[:2]
    assert split[3] == in_order[3]
    assert split[4] == in_order[4]
    return log


FORK_FAILS = """
import errno
def _fork():
    raise OSError(errno.EAGAIN, "Resource temporarily unavailable")  # a pids limit, no memory
os.fork = _fork
"""

PIPE_FAILS = """
import errno
def _pipe():
    raise OSError(errno.EMFILE, "Too many open files")
os.pipe = _pipe
"""


def test_a_fork_that_fails_plans_in_order(tmp_path: Path) -> None:
    """Finding (medium): `os.fork` failing (EAGAIN under a container's pids limit or
    RLIMIT_NPROC, ENOMEM under strict overcommit) escaped as an OSError: a traceback, exit 1,
    nothing applied, for a patch that applies in order."""
    _same_as_in_order(tmp_path, FORK_FAILS)


def test_a_pipe_that_fails_plans_in_order(tmp_path: Path) -> None:
    """Finding (medium): `os.pipe` failing (EMFILE, ENFILE) escaped the same way."""
    _same_as_in_order(tmp_path, PIPE_FAILS)


MANY_FDS = """
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < 1200 <= hard or hard == resource.RLIM_INFINITY:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1200, hard))
_held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]  # inherited, say
"""


def test_a_pipe_numbered_past_1023_is_waited_on(tmp_path: Path) -> None:
    """Finding (low-medium): with 1,024 descriptors open (inherited from a caller that leaks
    them, or an agent host with many), the pipe's read end is numbered past FD_SETSIZE and
    `select.select` raised ValueError ("filedescriptor out of range in select()"): a
    traceback, nothing applied."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip("cannot open 1,100 descriptors here")
    log = _same_as_in_order(tmp_path, MANY_FDS)
    assert "forked" in log


# The terminal's Ctrl-C reaches the parent while it forks: Linux restarts a fork that a signal
# interrupts, Python's C-level handler has run by then, and the KeyboardInterrupt is raised as
# `os.fork()` returns (CPython checks for signals after a call), before the pid is stored. The
# child here stops itself at its hook, so it is there to be found unless the parent killed it.
INTERRUPTED_WHILE_FORKING = """
import signal
from lsp_server import split_plan
_real_fork = os.fork
def _fork():
    pid = _real_fork()
    if pid:
        with open(os.environ["SPLIT_LOG"] + ".pid", "w") as f:
            f.write(str(pid))
        signal.raise_signal(signal.SIGINT)
    return pid
os.fork = _fork
def _stop(point, detail):
    if point == "child":
        os.kill(os.getpid(), signal.SIGSTOP)
split_plan.TEST_HOOK = _stop
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status") as f:
            state = next(line for line in f if line.startswith("State:"))
    except (FileNotFoundError, ProcessLookupError):
        return False
    return "Z" not in state.split()[1]


def test_ctrl_c_while_forking_leaves_no_child(tmp_path: Path) -> None:
    """Finding (medium): a Ctrl-C handled as `os.fork()` returns lost the child's pid
    (`self.pid` never set), so `_Child.close` neither killed nor reaped it: the child was
    left running after the CLI exited (130), holding the workspace lock it inherited (the
    next agent-edit command on that workspace waits for it)."""
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    tree, patch = _tree()
    root = tmp_path / "ws"
    _write(root, tree)
    run = _cli(
        tmp_path,
        True,
        ["apply-patch", "--root", str(root), "--json", "-"],
        patch.encode(),
        INTERRUPTED_WHILE_FORKING,
    )
    pid = int((tmp_path / "split.log.pid").read_text())
    try:
        assert run.returncode == 130, run.stderr
        assert not _alive(pid), "the forked child outlived the CLI"
    finally:
        if _alive(pid):
            os.kill(pid, 9)
    assert _read(root) == tree


# The terminal's Ctrl-C reaches the child just after the fork, before it set SIGINT to its
# default action: a KeyboardInterrupt raised in the child as `os.fork()` returns there.
CHILD_INTERRUPTED_AT_ONCE = """
import signal
_real_fork = os.fork
def _fork():
    pid = _real_fork()
    if pid == 0:
        signal.raise_signal(signal.SIGINT)
    return pid
os.fork = _fork
"""


def test_a_child_interrupted_as_it_starts_says_nothing(tmp_path: Path) -> None:
    """Finding (low-medium): the child's KeyboardInterrupt, raised before its `try`, went up
    the parent's own stack in the child: the CLI's Ctrl-C path ran there and wrote
    "agent-edit: interrupted; see `agent-edit history` ..." to the shared stderr, while the
    parent went on and applied the patch (stderr says interrupted, the files changed)."""
    log = _same_as_in_order(tmp_path, CHILD_INTERRUPTED_AT_ONCE)
    assert "forked" in log


def test_the_split_result_is_the_in_order_result(tmp_path: Path) -> None:
    """The control: the plain large patch is split and joined, with the in-order result."""
    log = _same_as_in_order(tmp_path, "")
    assert "joined" in log
    tree, patch = _tree()
    result = json.loads(_apply(tmp_path, tree, patch, True)[1])
    assert result["ok"] and len(result["files"]) == 300


# The same two races with the other signals the CLI stops on (lsp_server/cli_signals.py): a
# terminal closing sends SIGHUP to the whole foreground process group, GNU `timeout` sends
# SIGTERM to its own group, Ctrl-\ SIGQUIT: each reaches the child as well as the parent.
@pytest.mark.parametrize(("sig", "status"), [("SIGTERM", 143), ("SIGHUP", 129), ("SIGQUIT", 131)])
def test_a_stop_signal_while_forking_leaves_no_child(tmp_path: Path, sig: str, status: int) -> None:
    if not os.path.isdir("/proc/self"):
        pytest.skip("needs /proc")
    tree, patch = _tree()
    root = tmp_path / "ws"
    _write(root, tree)
    run = _cli(
        tmp_path,
        True,
        ["apply-patch", "--root", str(root), "--json", "-"],
        patch.encode(),
        INTERRUPTED_WHILE_FORKING.replace("SIGINT", sig),
    )
    pid = int((tmp_path / "split.log.pid").read_text())
    try:
        assert run.returncode == status, run.stderr
        assert not _alive(pid), "the forked child outlived the CLI"
    finally:
        if _alive(pid):
            os.kill(pid, 9)
    assert _read(root) == tree


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGQUIT"])
def test_a_child_stopped_as_it_starts_says_nothing(tmp_path: Path, sig: str) -> None:
    log = _same_as_in_order(tmp_path, CHILD_INTERRUPTED_AT_ONCE.replace("SIGINT", sig))
    assert "forked" in log
