"""diffing.hunks (whether a hunk shows a change known from its edits' slices, not from a second
pass over its body) against 03eec8d's, taken from git: the same diff lines for random files (every
terminator, an unterminated or empty last line, lone CRs) and random sorted edits, those that
touch only the final empty line or replace lines by themselves included, on LSP and git lines.

Needs the repository's history (`git show`); without it the test is skipped.
"""

from __future__ import annotations

import os
import subprocess
import types
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_server.engine import diffing
from lsp_server.engine.model import EditedLines, LineEdit, apply_line_edits
from lsp_server.engine.text import split_lines

BEFORE = "03eec8d"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def before() -> Any:
    try:
        source = subprocess.run(
            ["git", "-C", ROOT, "show", f"{BEFORE}:lsp_server/engine/diffing.py"],
            capture_output=True,
            check=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"commit {BEFORE} is not in this checkout's history")
    module = types.ModuleType("diffing_before")
    exec(compile(source, "diffing_before.py", "exec"), module.__dict__)
    return module


LINE = st.sampled_from(["a", "b", "", " x", "a\r"]).flatmap(
    lambda body: st.sampled_from([body + "\n", body + "\r\n", body + "\r", body])
)


@st.composite
def case(draw: Any) -> tuple[list[str], list[LineEdit]]:
    text = "".join(draw(st.lists(LINE, max_size=14)))
    lines = split_lines(text)
    n = len(lines)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=8)))
    edits = []
    for s, e in zip(cuts[::2], cuts[1::2], strict=False):
        new = tuple(draw(st.lists(LINE.filter(lambda x: x[-1:] in "\n\r"), max_size=3)))
        if s == e and not new:
            continue
        edits.append(LineEdit(s, e, new))
    return lines, edits


@settings(max_examples=1500, deadline=None)
@given(case(), st.integers(0, 3), st.booleans())
def test_hunks_as_before(
    before: Any, c: tuple[list[str], list[LineEdit]], context: int, git: bool
) -> None:
    old, edits = c
    new = apply_line_edits(old, edits)
    for new_view in (new, EditedLines(old, edits)):
        got = diffing.hunks(old, new_view, edits, context, git_lines=git)
        assert got == before.hunks(old, new_view, edits, context, git_lines=git)


def test_an_edit_of_only_the_final_empty_line_shows_no_hunk(before: Any) -> None:
    old = ["a\n", ""]
    edits = [LineEdit(1, 2, ("",))]  # the final "" for itself: nothing printable changes
    new = apply_line_edits(old, edits)
    assert diffing.hunks(old, new, edits) == before.hunks(old, new, edits) == []
