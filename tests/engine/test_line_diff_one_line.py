"""`line_diff`'s shortcut for a middle with one line on a side that the other lacks (a line
changed in place): the same edits difflib gives, without importing difflib. Compared with
difflib's own answer over every small case of a few-letter alphabet (the lines a shortcut
could get wrong: a line repeated, found on the other side, at either end), and in a fresh
interpreter, that such a diff leaves difflib unloaded."""

from __future__ import annotations

import difflib
import itertools
import os
import subprocess
import sys
from pathlib import Path

from lsp_server.engine.model import LineEdit, minimal_edit
from lsp_server.engine.undo import line_diff

REPO = Path(__file__).resolve().parents[2]


def _by_difflib(old: list[str], new: list[str]) -> list[LineEdit]:
    """line_diff as it was before the shortcut: the trimmed middle through SequenceMatcher."""
    whole = minimal_edit(old, new)
    if whole is None:
        return []
    p = whole.start
    a, b = old[whole.start : whole.end], list(whole.new_lines)
    if not a or not b:
        return [whole]
    matcher = difflib.SequenceMatcher(None, a, b)
    return [
        LineEdit(p + i1, p + i2, tuple(b[j1:j2]))
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def test_every_small_case_matches_difflib() -> None:
    lines = ["a\n", "b\n", "c\n", "\n"]
    cases = [list(t) for n in range(5) for t in itertools.product(lines, repeat=n)]
    checked = 0
    for old in cases:
        for new in cases:
            assert line_diff(old, new) == _by_difflib(old, new), (old, new)
            checked += 1
    assert checked == len(cases) ** 2


def test_a_long_side_and_popular_lines_match_difflib() -> None:
    # Past 200 lines SequenceMatcher treats popular lines as junk: the shortcut must not
    # depend on that (it only answers when no line of one side is on the other).
    many = [f"{i % 3}\n" for i in range(450)]
    for old, new in [
        (["x\n"], many),
        (many, ["x\n"]),
        (["0\n"], ["y\n", *many, "z\n"]),
        (["head\n", "x\n", "tail\n"], ["head\n", *many, "tail\n"]),
        (["head\n", "1\n", "tail\n"], ["head\n", *many, "tail\n"]),
    ]:
        assert line_diff(old, new) == _by_difflib(old, new)


def test_a_line_changed_in_place_does_not_import_difflib() -> None:
    probe = (
        "import sys\n"
        "from lsp_server.engine.undo import line_diff\n"
        "old = [f'{i}\\n' for i in range(200)]\n"
        "new = old[:10] + ['changed\\n'] + old[11:]\n"
        "edits = line_diff(old, new)\n"
        "assert [(e.start, e.end, e.new_lines) for e in edits] == [(10, 11, ('changed\\n',))]\n"
        "print('difflib' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
