"""A change record made from the edits' offsets, the file's lines never split
(`undo.changes._record_hunks_at`), must be the one made from the split lines
(`_record_hunks`): the same hunks, context included, and the same old line count. Undo and
recovery find an edit again by them, so a hunk that differed by one context line would make an
undo refuse (or, worse, match elsewhere) later; and the fast path must be what a planned patch
on a file read from disk takes, or it saves nothing."""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from lsp_server.engine.model import EditedLines, FileChange, LineEdit
from lsp_server.engine.patching import plan_hunks
from lsp_server.engine.text import Snapshot, split_lines
from lsp_server.engine.undo.changes import _record_hunks, _record_hunks_at, record_change
from lsp_server.engine.v4a import parse_patch

# Few distinct lines, so lines repeat (context that reads the wrong neighbour shows); the other
# characters str.splitlines splits on, which LSP lines do not.
_PLAIN = ["a", "b", "", "  x = 1", "é"]
_LINE = st.sampled_from(_PLAIN * 6 + ["\x0b", "é\x85", "\u2028"])


@st.composite
def _file_and_edits(draw: st.DrawFn, cr: bool = False) -> tuple[str, list[LineEdit]]:
    body = draw(st.lists(_LINE, min_size=0, max_size=40))
    ends = ["\n", ""] + (["\r", "\r\n"] if cr else [])
    text = "".join(x + draw(st.sampled_from(ends)) for x in body) if cr else "\n".join(body)
    text += draw(st.sampled_from(ends))
    lines = split_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    points = sorted(draw(st.lists(st.integers(0, len(lines)), max_size=12)))
    edits = []
    for a, b in zip(points[::2], points[1::2], strict=False):  # an odd last point: unused
        if edits and a < edits[-1].end:
            continue
        if b == len(lines) and lines[-1] == "" and a == b:
            continue
        new = tuple(x + "\n" for x in draw(st.lists(_LINE, max_size=3)))
        span = None if draw(st.integers(0, 9)) == 0 else (starts[a], starts[b])
        edits.append(LineEdit(a, b, new, span))
    return text, edits


@settings(max_examples=3000, deadline=None)
@given(_file_and_edits())
def test_hunks_from_offsets_are_the_hunks_from_lines(case: tuple[str, list[LineEdit]]) -> None:
    text, edits = case
    lines = split_lines(text)
    at = _record_hunks_at(text, edits)
    event("offsets path taken" if at is not None else "offsets path declined")
    if at is not None:
        assert at == (len(lines), _record_hunks(lines, EditedLines(lines, edits), edits))


@settings(max_examples=1500, deadline=None)
@given(_file_and_edits(cr=True))
def test_a_file_recorded_unsplit_gets_the_record_of_its_split_lines(
    case: tuple[str, list[LineEdit]],
) -> None:
    """Through `record_change`, CR line ends included (split on by LSP, not by the offsets
    path, which must then not be taken)."""
    text, edits = case
    if not edits:
        return
    unsplit = Snapshot("f.txt", text)
    split = Snapshot("f.txt", text, given_lines=split_lines(text))
    fast = record_change(FileChange("update", unsplit, tuple(edits)))
    assert fast == record_change(FileChange("update", split, tuple(edits)))


def test_edits_in_the_middle_of_a_long_file_take_the_offsets() -> None:
    text = "".join(f"line {i}\n" for i in range(100))
    lines = split_lines(text)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    edits = [
        LineEdit(0, 1, ("first\n",), (starts[0], starts[1])),
        LineEdit(10, 12, (), (starts[10], starts[12])),
        LineEdit(20, 20, ("new\n", "lines\n"), (starts[20], starts[20])),
        LineEdit(50, 51, ("mid\n",), (starts[50], starts[51])),
    ]
    at = _record_hunks_at(text, edits)
    assert at is not None
    assert at == (len(lines), _record_hunks(lines, EditedLines(lines, edits), edits))


def _patch(n_files: int) -> tuple[dict[str, str], str]:
    files, parts = {}, ["*** Begin Patch"]
    for f in range(n_files):
        body = [f"value_{f}_{j} = compute({j})" for j in range(60)]
        files[f"m{f}.py"] = "\n".join(body) + "\n"
        parts.append(f"*** Update File: m{f}.py")
        for at in (5, 25, 45):
            parts += ["@@", *(f" {x}" for x in body[at - 3 : at])]
            parts += [f"-{body[at]}", f"+{body[at]}  # changed"]
            parts += [f" {x}" for x in body[at + 1 : at + 4]]
    parts.append("*** End Patch")
    return files, "\n".join(parts) + "\n"


def test_a_planned_patch_is_recorded_without_splitting_its_files_and_as_from_lines() -> None:
    files, patch = _patch(5)
    plan = plan_hunks(parse_patch(patch), lambda p: Snapshot(p, files[p]))
    for c in plan.changes:
        assert c.before.lines_if_split() is None  # the planner did not split it either
        fast = record_change(c)
        assert c.before.lines_if_split() is None, "the record split the whole file"
        split = Snapshot(c.path, c.before.text, given_lines=split_lines(c.before.text))
        slow = record_change(FileChange(c.change, split, c.edits))
        assert fast == slow
        assert len(fast.hunks) == 3
