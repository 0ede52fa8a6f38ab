"""text.split_lines' fast path (str.splitlines when the text holds no other character it splits
on, each looked for by `in`) against a reference splitter and against the split it replaced (the
count of `\\n`s checked against the pieces), on texts of every string kind (ASCII, Latin-1, UCS-2,
UCS-4) holding every character str.splitlines splits on, anywhere, the last position too."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_server.engine.text import split_lines

# Every character str.splitlines splits on, LSP's three terminators among them.
BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
# One character of each string kind, so the ASCII shortcut and the wide checks both run.
KINDS = ["a", "é", "\xff", "中", "\U0001f600", " "]


def reference(text: str) -> list[str]:
    pieces = re.split(r"(\r\n|\r|\n)", text)
    return [*(pieces[i] + pieces[i + 1] for i in range(0, len(pieces) - 1, 2)), pieces[-1]]


def previous(text: str) -> list[str]:
    """The split before (03eec8d's text.split_lines)."""
    if "\r" not in text:
        lines = text.splitlines(keepends=True)
        if len(lines) == text.count("\n") + (0 if not text or text[-1] == "\n" else 1):
            if not lines or lines[-1][-1] == "\n":
                lines.append("")
            return lines
        parts = text.split("\n")
        last = parts.pop()
        return [*(p + "\n" for p in parts), last]
    return reference(text)


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(BREAKS + KINDS), max_size=16))
def test_split_lines_is_lsp_splitting_on_every_kind(pieces: list[str]) -> None:
    text = "".join(pieces)
    got = split_lines(text)
    assert got == reference(text) == previous(text)
    assert "".join(got) == text


def test_each_other_break_alone_and_last() -> None:
    for kind in KINDS:
        for br in BREAKS:
            for text in (br, kind + br, br + kind, kind + br + "\n" + kind, kind + "\n" + br):
                assert split_lines(text) == reference(text), repr(text)
