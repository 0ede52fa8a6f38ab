"""`_record_hunks` reads a hunk's lines and context from the old lines and the edit itself
where it can (a speed trick): the hunks must be exactly those read through the new text."""

from __future__ import annotations

import random

from lsp_server.engine.model import EditedLines, LineEdit
from lsp_server.engine.text import split_lines
from lsp_server.engine.undo import changes
from lsp_server.engine.undo.changes import CONTEXT, Hunk


def through_new(old: list[str], edits: list[LineEdit]) -> tuple[Hunk, ...]:
    """The hunks as they were made before the trick: every line read through `new`."""
    new = EditedLines(old, edits)
    out = []
    delta = 0
    for e in edits:
        a_start = e.start + delta
        a_end = a_start + len(e.new_lines)
        before, after = tuple(old[e.start : e.end]), tuple(new[a_start:a_end])
        if e.end >= len(old):
            before, after, a_end = tuple(old[e.start :]), tuple(new[a_start:]), len(new)
        ctx_before = tuple(new[max(0, a_start - CONTEXT) : a_start])
        ctx_after = tuple(new[a_end : a_end + CONTEXT])
        out.append(
            Hunk(e.start, e.start + len(before), a_start, before, after, ctx_before, ctx_after)
        )
        delta += len(e.new_lines) - (e.end - e.start)
    return tuple(out)


def test_hunks_are_those_read_through_the_new_text() -> None:
    rnd = random.Random(15)
    for _ in range(20_000):
        n = rnd.randint(0, 15)
        old = split_lines("".join(f"l{i}\n" for i in range(n)) + rnd.choice(["", "tail"]))
        edits: list[LineEdit] = []
        pos = 0
        while pos <= len(old) and rnd.random() < 0.7:
            start = rnd.randint(pos, len(old))
            end = rnd.randint(start, min(len(old), start + 3))
            lines = tuple(f"n{rnd.randint(0, 99)}\n" for _ in range(rnd.randint(0, 3)))
            if lines and rnd.random() < 0.2:
                lines = (*lines[:-1], "unterminated")
            if start == end and not lines:
                break
            edits.append(LineEdit(start, end, lines))
            pos = end + rnd.choice([0, 1])  # adjacent edits too
        if edits:
            new = EditedLines(old, edits)
            assert changes._record_hunks(old, new, edits) == through_new(old, edits), edits


def test_a_record_weighs_every_line_it_keeps_context_included() -> None:
    # The history's budgets (PREIMAGE_BUDGET) weigh entries by `size`: counting a hunk's old
    # and new lines alone, a 1,000-file entry of 5 hunks weighed a sixth of what it keeps, and
    # twenty such entries stayed undoable in a journal compaction could not shrink.
    from lsp_server.engine.undo.changes import ChangeRecord, Hunk

    hunk = Hunk(3, 4, 3, ("old\n",), ("new!\n",), ("a\n", "bb\n", "ccc\n"), ("dddd\n",))
    rec = ChangeRecord("f.py", "update", hunks=(hunk, hunk))
    assert rec.size() == 2 * (4 + 5 + 2 + 3 + 4 + 5)
    assert ChangeRecord("g.py", "delete", before_text="xyz").size() == 3
