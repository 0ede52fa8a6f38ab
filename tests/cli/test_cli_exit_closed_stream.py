"""cli.program's exit when the process was started with a standard stream closed (`>&-`,
`2>&-`: Python then has `sys.stdout` / `sys.stderr` as None): the command's own exit status
and message, never a traceback from the exit's flush of a stream that is not there (the
interpreter's own exit skips a None stream)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REFUSED = "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+2\n*** End Patch\n"


def _run_closed(tmp_path: Path, fd: int, argv: list[str], stdin: str) -> tuple[int, str]:
    """Run the CLI with descriptor `fd` closed in the child; stderr is returned (stdout when
    `fd` is stderr's)."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "a.txt").write_text("one\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "PYTHONPATH")}
    env |= {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp_path / "state")}
    other = {"stdout": subprocess.PIPE} if fd == 2 else {"stderr": subprocess.PIPE}
    proc = subprocess.run(
        [sys.executable, "-m", "lsp_server", *argv],
        input=stdin.encode(),
        cwd=ws,
        env=env,
        timeout=120,
        preexec_fn=lambda: os.close(fd),  # noqa: PLW1509 - no threads in the test process's child
        **other,
    )
    return proc.returncode, (proc.stdout if fd == 2 else proc.stderr).decode()


def test_a_refusal_with_stdout_closed_keeps_its_status_and_message(tmp_path: Path) -> None:
    rc, err = _run_closed(tmp_path, 1, ["apply-patch", "-"], REFUSED)
    assert rc == 1
    assert "NO_MATCH" in err and "No files were changed." in err
    assert "Traceback" not in err, err


def test_a_usage_error_with_stdout_closed_exits_2(tmp_path: Path) -> None:
    rc, err = _run_closed(tmp_path, 1, ["apply-patch", "--root", str(tmp_path / "none"), "-"], "")
    assert "Traceback" not in err, err
    assert rc == 2, err


def test_a_refusal_with_stderr_closed_keeps_its_status(tmp_path: Path) -> None:
    rc, out = _run_closed(tmp_path, 2, ["apply-patch", "--json", "-"], REFUSED)
    assert rc == 1
    assert '"NO_MATCH"' in out


def test_an_applied_edit_with_stdout_closed_exits_0_and_says_nothing_failed(
    tmp_path: Path,
) -> None:
    """The report of an edit that landed had nowhere to go: it raised AttributeError on
    `sys.stdout` None, a traceback and exit 1, as if the edit had failed."""
    applied = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+1\n*** End Patch\n"
    for argv in (["apply-patch", "-"], ["apply-patch", "--json", "-"]):
        rc, err = _run_closed(tmp_path, 1, argv, applied)
        assert "Traceback" not in err, err
        assert rc == 0, err
        assert (tmp_path / "ws" / "a.txt").read_text() == "1\n"


def test_a_read_with_stdout_closed_exits_0(tmp_path: Path) -> None:
    rc, err = _run_closed(tmp_path, 1, ["read", "a.txt"], "")
    assert "Traceback" not in err, err
    assert rc == 0, err


def test_a_patch_from_closed_stdin_is_a_usage_error_that_says_so(tmp_path: Path) -> None:
    """`-` with standard input closed (`<&-`): stdin is None; it raised AttributeError."""
    for argv in (["apply-patch", "-"], ["replace", "a.txt", "one", "@-"]):
        rc, err = _run_closed(tmp_path, 0, argv, "")
        assert "Traceback" not in err, err
        assert rc == 2, err
        assert "standard input is closed" in err, err
        assert (tmp_path / "ws" / "a.txt").read_text() == "one\n"
