"""Which syntax errors an edit introduced: the problems after it that are not old ones shifted."""

from __future__ import annotations

from collections.abc import Sequence

from lsp_server.engine.model import LineEdit
from lsp_server.engine.syntax.problems import SyntaxProblem


def introduced_errors(
    before: Sequence[SyntaxProblem],
    after: Sequence[SyntaxProblem],
    edits: Sequence[LineEdit],
    near: int = 2,
) -> list[SyntaxProblem]:
    """The problems of `after` that the `edits` (old line coordinates, sorted) introduced.

    A problem is old when `before` has one with the same key on the same line once shifted by
    the edits (for a problem inside an edited range: with the same key inside the same edit's
    new range). If `before` is empty every new problem is the edit's doing, even one far away (an
    unclosed brace is reported where the parser gave up); otherwise only new problems whose span
    touches an edited range, widened by `near` lines, are.
    """
    ordered = sorted(edits, key=lambda e: e.start)
    # (old_start, old_end, new_start, new_end) per edit; a pure deletion has an empty new range.
    ranges: list[tuple[int, int, int, int]] = []
    delta = 0
    for e in ordered:
        new_start = e.start + delta
        new_end = new_start + len(e.new_lines)
        ranges.append((e.start, e.end, new_start, new_end))
        delta += len(e.new_lines) - (e.end - e.start)

    def shifted(line: int) -> tuple[int, int | None]:
        """(new line, index of the edit whose old range holds it, else None)."""
        d = 0
        for i, (os_, oe, ns, ne) in enumerate(ranges):
            if line < os_:
                break
            if line < oe:
                return ns, i
            d = ne - oe
        return line + d, None

    old_same_line: set[tuple[str, int]] = set()
    old_in_edit: set[tuple[str, int]] = set()
    for p in before:
        new_line, idx = shifted(p.start.line)
        if idx is None:
            old_same_line.add((p.key, new_line))
        else:
            old_in_edit.add((p.key, idx))

    def edit_holding(line: int) -> int | None:
        for i, (_, _, ns, ne) in enumerate(ranges):
            if ns <= line < max(ne, ns + 1):
                return i
        return None

    def touches_edit(p: SyntaxProblem) -> bool:
        lo, hi = p.start.line, max(p.span_end_line, p.end.line)
        return any(ns - near <= hi and lo <= max(ne - 1, ns) + near for _, _, ns, ne in ranges)

    out: list[SyntaxProblem] = []
    for p in after:
        idx = edit_holding(p.start.line)
        if idx is not None and (p.key, idx) in old_in_edit:
            continue
        if idx is None and (p.key, p.start.line) in old_same_line:
            continue
        if before and not touches_edit(p):
            continue
        out.append(p)
    return out
