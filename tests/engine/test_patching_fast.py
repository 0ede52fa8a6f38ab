"""The exact fast path of hunk planning (`patching._exact_edits`) against the general seeker.

`_exact_edits` finds chunks with `str.find` on the text and proves them unique with a find to
the end or (past INDEX_FROM_CHUNKS) an index of the snapshot's lines; `_FileSeeker` is the
general way (the ladder, every refusal). Whenever the fast path takes a file, its edits must be
exactly the seeker's; a whole plan must be the same with and without it (edits, new text and
its hash, lenient notes, refusals with their messages and details).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lsp_server.engine import patching
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.text import Snapshot, absent
from lsp_server.engine.v4a import UpdateFile, parse_patch

# Lines that repeat, differ only in whitespace or typographic punctuation, or are blank.
LINES = ["a", "b", "a ", " a", "", "x y", "x  y", "it\u2019s", "it's", "long line here", "}"]


@contextmanager
def index_from(n: int) -> Iterator[None]:
    old = patching.INDEX_FROM_CHUNKS
    patching.INDEX_FROM_CHUNKS = n
    try:
        yield
    finally:
        patching.INDEX_FROM_CHUNKS = old


@contextmanager
def without_fast_path() -> Iterator[None]:
    fast = patching._exact_edits
    patching._exact_edits = lambda text, chunks, snap=None, shapes=None: None
    try:
        yield
    finally:
        patching._exact_edits = fast


@st.composite
def cases(draw: st.DrawFn) -> tuple[Snapshot, str]:
    """A file (repeated lines, LF or CRLF, maybe no final newline, maybe a BOM, maybe empty)
    and an Update File section of chunks taken from it, edited, near its ends, anchored."""
    picks = draw(st.lists(st.sampled_from([*LINES, *[None] * 8]), max_size=14))
    lines = [f"line {i}" if x is None else x for i, x in enumerate(picks)]  # some unique
    eol = draw(st.sampled_from(["\n", "\n", "\n", "\r\n"]))
    final = draw(st.integers(0, 4)) > 0 or not lines
    text = eol.join(lines) + (eol if final and lines else "")
    snap = Snapshot("f", text, "disk", bom=draw(st.booleans()))
    body: list[str] = []
    pos = 0  # where the last chunk stopped: chunks mostly come in file order
    for n in range(draw(st.integers(1, 5))):
        if pos >= len(lines) and n and draw(st.booleans()):
            break
        eof = False
        # Mostly after the cursor; sometimes overlapping what an earlier chunk consumed.
        low = max(0, pos - draw(st.sampled_from([0, 0, 0, 2])))
        if low < len(lines) and draw(st.integers(0, 9)):
            start = draw(st.integers(low, len(lines) - 1))
            k = draw(st.integers(1, min(4, len(lines) - start)))
            window = lines[start : start + k]
            eof = start + k == len(lines) and draw(st.booleans())
            anchors = []
            if start > pos and draw(st.integers(0, 3)) == 0:
                anchors = [lines[draw(st.integers(pos, start - 1))]]
            pos = start + k
        else:  # lines from anywhere, or from nowhere
            window = draw(st.lists(st.sampled_from(LINES), min_size=0, max_size=3))
            eof = draw(st.integers(0, 5)) == 0
            anchors = draw(st.lists(st.sampled_from([*LINES, "nowhere"]), max_size=2))
        header = "\n".join(f"@@ {a}" for a in anchors) if anchors else "@@"
        body.append(header + "\n")
        for x in window:
            if draw(st.integers(0, 12)) == 0:
                x = x.strip() + draw(st.sampled_from(["", " ", "\t"]))  # whitespace-only change
            op = draw(st.sampled_from([" ", " ", "-", "=", "+"]))
            if op == "+":
                body.append(f"+{draw(st.sampled_from(['n', 'a', '']))}\n")
                op = " "
            body.append(f"-{x}\n+{x}\n" if op == "=" else f"{op}{x}\n")
        if draw(st.booleans()) or not window:
            body.append(f"+{draw(st.sampled_from(['added', 'a', '']))}\n")
        if eof:
            body.append("*** End of File\n")
    return snap, "".join(body)


def outcome(snap: Snapshot, body: str) -> object:
    """Everything a plan says, or the refusal."""
    patch = f"*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n"
    fresh = Snapshot(snap.path, snap.text, snap.source, bom=snap.bom)
    try:
        plan = patching.plan_patch(patch, lambda p: fresh if p == "f" else absent(p))
    except EditError as err:
        return ("refused", err.code, err.message, err.details)
    (c,) = plan.changes
    return (c.edits, c.new_text, c.new_sha256, c.bom, plan.summary)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.booleans())
def test_fast_path_edits_are_the_seekers(case: tuple[Snapshot, str], indexed: bool) -> None:
    snap, body = case
    try:
        (hunk,) = parse_patch(f"*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n")
    except EditError:
        return
    assert isinstance(hunk, UpdateFile)
    with index_from(1 if indexed else 10**9):
        fast = patching._exact_edits(snap.text, hunk.chunks, snap)
        try:
            general: object = patching._FileSeeker(snap, [], hunk.chunks).edits(hunk.chunks)
        except EditError as err:
            general = err.code
    event(f"fast path taken: {fast is not None}")
    if fast is not None:
        assert fast == general


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases(), st.booleans())
def test_plans_are_the_same_without_the_fast_path(
    case: tuple[Snapshot, str], indexed: bool
) -> None:
    snap, body = case
    with index_from(1 if indexed else 10**9):
        with_fast = outcome(snap, body)
        with without_fast_path():
            general = outcome(snap, body)
    refused = isinstance(with_fast, tuple) and with_fast[0] == "refused"
    event(f"refused: {with_fast[1] if refused else None}")  # type: ignore[index]
    assert with_fast == general


def test_fast_path_takes_the_common_cases() -> None:
    """The cases the fast path is for are taken (not silently left to the general way)."""
    lines = [f"line {i}" for i in range(200)]
    text = "\n".join(lines) + "\n"
    snap = Snapshot("f", text)
    body = "".join(f"@@ line {i - 2}\n line {i}\n-line {i + 1}\n+NEW\n" for i in range(10, 190, 6))
    body += "@@\n line 198\n-line 199\n+END\n*** End of File\n"
    (hunk,) = parse_patch(f"*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n")
    assert isinstance(hunk, UpdateFile)
    for n in (1, 10**9):
        with index_from(n):
            fast = patching._exact_edits(text, hunk.chunks, snap)
            assert fast is not None
            assert fast == patching._FileSeeker(snap, [], hunk.chunks).edits(hunk.chunks)


@pytest.mark.parametrize("indexed", [False, True])
def test_a_pivot_line_repeated_after_the_match_is_still_checked(indexed: bool) -> None:
    """The chunk's longest line stands again further on, with and without the rest of the chunk
    around it: unique in the first file, AMBIGUOUS (both places named) in the second."""
    unique = "a\nthe longest line\nb\nx\nc\nthe longest line\nd\n"
    twice = "a\nthe longest line\nb\nx\na\nthe longest line\nb\n"
    body = "*** Update File: f\n@@\n a\n-the longest line\n+NEW\n b\n"
    with index_from(1 if indexed else 10**9):
        (c,) = patching.plan_patch(
            f"*** Begin Patch\n{body}*** End Patch\n", lambda p: Snapshot(p, unique)
        ).changes
        assert c.new_text == unique.replace("the longest line", "NEW", 1)
        with pytest.raises(EditError) as info:
            patching.plan_patch(
                f"*** Begin Patch\n{body}*** End Patch\n", lambda p: Snapshot(p, twice)
            )
    assert info.value.code == Code.AMBIGUOUS
    assert info.value.details["lines"] == [1, 5]
