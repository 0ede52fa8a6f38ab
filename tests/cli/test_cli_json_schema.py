"""Review (rtrust): the CLI's `--json` answers against the exported result schema. The editor
client, the MCP helper and test_fronts check every answer they see (tests/result_schemas.py);
the CLI's own output had no such check. This drives the six commands through the refusal codes a
workspace on disk can reach (and their successes) and checks each answer as the contract exports
it. (All held in review: this pins it.)"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lsp_server import cli
from tests import result_schemas


def P(body: str) -> str:
    return "*** Begin Patch\n" + body + "*** End Patch\n"


# (action, command line after the command name, stdin, the code expected: None for ok)
CASES: list[tuple[str, list[str], str | None, str | None]] = [
    ("read", ["read", "a.txt"], None, None),
    ("read", ["read", "--start-line", "2", "--end-line", "2", "a.txt"], None, None),
    ("read", ["read", "missing.txt"], None, "NOT_FOUND"),
    ("read", ["read", "../x"], None, "OUTSIDE_WORKSPACE"),
    ("read", ["read", "bin.dat"], None, "BINARY"),
    ("read", ["read", "lat.txt"], None, "INVALID_ENCODING"),
    ("read", ["read", "--start-line", "5", "a.txt"], None, "INVALID_ARGUMENT"),
    ("read", ["read", ".git/config"], None, "DENIED"),
    ("replace", ["replace", "a.txt", "two", "TWO"], None, None),
    ("replace", ["replace", "--dry-run", "a.txt", "one", "ONE"], None, None),
    ("replace", ["replace", "a.txt", "zzz", "y"], None, "NO_MATCH"),
    ("replace", ["replace", "dup.txt", "x", "y"], None, "AMBIGUOUS"),
    ("write", ["write", "new.txt", "hello\n"], None, None),
    ("write", ["write", "--expect-sha256", "0" * 64, "a.txt", "x\n"], None, "STALE"),
    ("applyPatch", ["apply-patch", "-"], "garbage\n", "PARSE_ERROR"),
    ("applyPatch", ["apply-patch", "-"], P("*** Add File: a.txt\n+x\n"), "ALREADY_EXISTS"),
    ("applyPatch", ["apply-patch", "-"], P("*** Delete File: lnk\n"), None),
    (
        "applyPatch",
        ["apply-patch", "-"],
        P("*** Update File: lnk\n*** Move to: a.txt\n@@\n-one\n+ONE\n"),
        "INVALID_ARGUMENT",
    ),
    ("history", ["history"], None, None),
    ("history", ["history", "--diff"], None, None),
    ("history", ["history", "--edit", "99"], None, "INVALID_ARGUMENT"),
    ("undo", ["undo", "--dry-run", "1"], None, None),
    ("undo", ["undo", "99"], None, "INVALID_ARGUMENT"),
]


@pytest.mark.parametrize(
    ("action", "argv", "stdin", "code"), CASES, ids=[" ".join(c[1]) for c in CASES]
)
def test_each_json_answer_validates(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    action: str,
    argv: list[str],
    stdin: str | None,
    code: str | None,
) -> None:
    import io

    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("one\ntwo\n")
    (ws / "dup.txt").write_text("x\nx\n")
    (ws / "bin.dat").write_bytes(b"\x00\x01abc")
    (ws / "lat.txt").write_bytes(b"caf\xe9\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("x\n")
    os.symlink("a.txt", ws / "lnk")
    # One edit first, so history and undo have an entry 1.
    assert cli.main(["write", "--root", str(ws), "seed.txt", "s\n"]) == 0
    capsys.readouterr()
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(stdin.encode())))
    cli.main([argv[0], "--root", str(ws), "--json", *argv[1:]])
    answer = json.loads(capsys.readouterr().out)
    result_schemas.check(action, answer)
    assert answer.get("code") == code, answer
