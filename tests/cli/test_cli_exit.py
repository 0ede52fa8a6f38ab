"""How the `agent-edit` program leaves (cli.program): by `os._exit` once a headless command has
returned, so nothing it printed may be lost on the way out, its exit status must be the
command's, and the exit handlers must still run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILES = 300


def _tree(ws: Path) -> str:
    """`FILES` files and a patch changing each (its output is far over any stream buffer)."""
    parts = ["*** Begin Patch"]
    for i in range(FILES):
        (ws / f"f{i}.txt").write_text(f"line {i}\nkeep\n")
        parts += [f"*** Update File: f{i}.txt", "@@", f"-line {i}", f"+LINE {i}"]
    parts.append("*** End Patch")
    return "\n".join(parts) + "\n"


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "PYTHONPATH")}
    # Block-buffered streams (to a file, no PYTHONUNBUFFERED): what a missing flush would lose.
    return env | {"PYTHONPATH": str(REPO), "AGENT_EDIT_STATE_DIR": str(tmp_path / "state")}


def _run(
    tmp_path: Path, ws: Path, argv: list[str], stdin: str, code: str | None = None
) -> tuple[int, str, str]:
    out, err = tmp_path / "out", tmp_path / "err"
    command = [sys.executable, "-m", "lsp_server"] if code is None else [sys.executable, "-c", code]
    with open(out, "wb") as o, open(err, "wb") as e:
        rc = subprocess.run(
            [*command, *argv],
            input=stdin.encode(),
            stdout=o,
            stderr=e,
            cwd=ws,
            env=_env(tmp_path),
            timeout=120,
        ).returncode
    return rc, out.read_text(), err.read_text()


def test_a_large_result_reaches_a_file_whole(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    patch = _tree(ws)
    rc, out, err = _run(tmp_path, ws, ["apply-patch", "--json", "-"], patch)
    assert rc == 0, err
    result = json.loads(out)  # the whole document, not a buffer's worth of it
    assert [f["path"] for f in result["files"]] == [f"f{i}.txt" for i in range(FILES)]
    assert (ws / f"f{FILES - 1}.txt").read_text() == f"LINE {FILES - 1}\nkeep\n"


def test_a_small_result_is_flushed_before_the_exit(tmp_path: Path) -> None:
    # A few hundred bytes stay in the stream's buffer until it is flushed (a large write goes
    # through at once): this is what an exit without the flush loses.
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+1\n*** End Patch\n"
    rc, out, err = _run(tmp_path, ws, ["apply-patch", "-"], patch)
    assert rc == 0, err
    assert out.startswith("Changed 1 file(s):\nM a.txt\n") and out.endswith("-one\n+1\n")
    rc, out, err = _run(tmp_path, ws, ["read", "a.txt"], "")
    assert (rc, out) == (0, "1\n"), err


def test_a_refusal_keeps_its_status_and_its_whole_message(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\n")
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+2\n*** End Patch\n"
    rc, out, err = _run(tmp_path, ws, ["apply-patch", "-"], patch)
    assert rc == 1
    assert out == ""
    assert err.startswith("agent-edit: ") and err.endswith("No files were changed.\n")
    rc, out, err = _run(tmp_path, ws, ["apply-patch", "--no-such-flag", "-"], patch)
    assert rc == 2 and "unrecognized arguments" in err


def test_exit_handlers_still_run(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    mark = tmp_path / "mark"
    code = (
        "import atexit, sys\n"
        f"atexit.register(lambda: open({str(mark)!r}, 'w').write('ran'))\n"
        "sys.argv[0] = 'agent-edit'\n"
        "from lsp_server.cli import program\n"
        "program()\n"
    )
    rc, out, err = _run(tmp_path, ws, ["apply-patch", "-"], _tree(ws), code=code)
    assert rc == 0, err
    assert mark.read_text() == "ran"
    assert out.startswith(f"Changed {FILES} file(s):\n")
    assert out.endswith(f"+LINE {FILES - 1}\n keep\n")


def test_a_running_thread_is_waited_for(tmp_path: Path) -> None:
    """As the interpreter's own exit does: a non-daemon thread still working when `main` returns
    finishes its work (here: released by `main`'s return, then a few milliseconds of hashing
    before it writes its mark; an exit that did not wait would cut it off)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    mark = tmp_path / "mark"
    code = (
        "import hashlib, sys, threading\n"
        "from lsp_server import cli\n"
        "go = threading.Event()\n"
        "def work():\n"
        "    go.wait()\n"
        "    hashlib.sha256(b'x' * (64 << 20)).hexdigest()\n"
        f"    open({str(mark)!r}, 'w').write('done')\n"
        "threading.Thread(target=work).start()\n"
        "real = cli.main\n"
        "def main():\n"
        "    code = real()\n"
        "    go.set()\n"
        "    return code\n"
        "cli.main = main\n"
        "sys.argv[0] = 'agent-edit'\n"
        "cli.program()\n"
    )
    (ws / "a.txt").write_text("one\n")
    patch = "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+1\n*** End Patch\n"
    rc, out, err = _run(tmp_path, ws, ["apply-patch", "-"], patch, code=code)
    assert rc == 0, err
    assert mark.read_text() == "done"
