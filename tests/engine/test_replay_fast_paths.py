"""The fast paths a history replay takes must decide exactly as the step-by-step ones.

`records._plain_hunks` accepts a change record's hunks in one pass; it must never accept hunks
that `records._hunks` (the checks one by one) would refuse, or a hand-edited journal could put
a malformed hunk into replay. `netdiff.map_spans` bisects the edits; it must carry every span
exactly as walking the edits does (`_map_spans_walking`), for any edits, sorted or not.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from lsp_server.engine import records
from lsp_server.engine.history.netdiff import _map_spans_walking, map_spans
from lsp_server.engine.model import LineEdit


class Str(str):
    pass


class Lst(list):  # type: ignore[type-arg]
    pass


def _slow_ok(hunks: list[Any]) -> bool:
    try:
        records._hunks(hunks)
    except records._Bad:
        return False
    return True


_line = st.one_of(
    st.text(max_size=3), st.builds(Str, st.text(max_size=2)), st.integers(), st.none()
)
_lines = st.one_of(
    st.lists(st.text(max_size=3), max_size=3),
    st.lists(_line, max_size=3),
    st.none(),
    st.text(max_size=2),
    st.builds(Lst, st.lists(st.text(max_size=2), max_size=2)),
)
_num = st.one_of(
    st.integers(-2, 12),
    st.just(2**53 - 1),
    st.just(2**53),
    st.booleans(),
    st.floats(0, 5),
    st.none(),
)
_hunk = st.one_of(
    st.tuples(_num, _num, _num, _lines, _lines, _lines, _lines).map(list),
    st.lists(_num, max_size=8),
    st.builds(Lst, st.tuples(_num, _num, _num, _lines, _lines, _lines, _lines)),
    st.none(),
    st.text(max_size=2),
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(_hunk, max_size=5))
@example([[0, 2**53, 0, [], [], [], []]])
@example([[0, 1, 2**53, [], [], [], []]])
@example([[2**53, 2**53, 0, [], [], [], []]])
@example([[-1, 1, 0, [], [], [], []]])
@example([[0, 1, -1, [], [], [], []]])
@example([[1, 1, 0, [], [], [], []], [0, 1, 0, [], [], [], []]])
@example([[0, 1, 0, [], [], [], [Str("a")]], [1, 1, 0, [], [1], [], []]])
def test_the_one_pass_check_never_accepts_hunks_the_step_by_step_check_refuses(
    hunks: list[Any],
) -> None:
    if records._plain_hunks(hunks):
        assert _slow_ok(hunks)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.integers(0, 3),
            st.integers(0, 5),
            *[st.lists(st.text(max_size=4), max_size=3)] * 4,
        ),
        max_size=6,
    )
)
def test_well_formed_hunks_take_the_one_pass_check(rows: list[tuple[Any, ...]]) -> None:
    hunks, at = [], 0
    for gap, width, lines, *texts in rows:
        start = at + gap
        at = start + width
        hunks.append([start, at, lines, *texts])
    assert records._plain_hunks(hunks)
    assert _slow_ok(hunks)
    assert records.problem({"t": "begin", "id": 1, "changes": [_change(hunks)]}) is None


def _change(hunks: list[Any]) -> dict[str, Any]:
    return {"path": "a.py", "change": "update", "hunks": hunks}


def test_a_bad_hunk_is_still_named_for_what_is_wrong() -> None:
    cases = [
        ([[0, 1, 0, ["a\n"], [], [], [1]]], "is not a string"),
        ([[2, 1, 0, [], [], [], []]], "out of order"),
        ([[0, 1, 0, [], [], []]], "malformed"),
        ([[0, True, 0, [], [], [], []]], "not an integer"),
        ([[0, 2**53, 0, [], [], [], []]], "not an integer"),
        ([[3, 4, 0, [], [], [], []], [1, 2, 0, [], [], [], []]], "out of order"),
        ([[0, 1, 0, "ab", [], [], []]], "is not a list"),
    ]
    for hunks, said in cases:
        why = records.problem({"t": "begin", "id": 1, "changes": [_change(hunks)]})
        assert why is not None and said in why, (hunks, why)
    # None for a hunk's lines is accepted by both ways (no lines).
    rec = {"t": "begin", "id": 1, "changes": [_change([[0, 1, 0, None, [], [], []]])]}
    assert records.problem(rec) is None


def _edit(start: int, end: int, n: int) -> LineEdit:
    return LineEdit(start, end, tuple(f"x{k}\n" for k in range(n)))


_edits_sorted = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4)), max_size=8
).map(lambda rows: [_edit(s, s + w, n) for s, w, n in _placed(rows)])


def _placed(rows: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Edits as a plan or a change record has them: sorted, touching allowed, never
    overlapping (pure insertions included)."""
    out, at = [], 0
    for gap, width, n in rows:
        start = at + gap
        out.append((start, width, n))
        at = start + width
    return out


_spans = st.lists(
    st.tuples(st.integers(0, 40), st.integers(0, 6), st.integers(1, 9)).map(
        lambda t: (t[0], t[0] + t[1], t[2])
    ),
    max_size=12,
)


@settings(max_examples=1500, deadline=None)
@given(_spans, _edits_sorted)
def test_bisected_spans_are_the_walked_ones(
    spans: list[tuple[int, int, int]], edits: list[LineEdit]
) -> None:
    assert map_spans(spans, edits) == _map_spans_walking(spans, edits)


@settings(max_examples=1000, deadline=None)
@given(
    _spans,
    st.lists(
        st.tuples(st.integers(0, 30), st.integers(0, 5), st.integers(0, 3)).map(
            lambda t: _edit(t[0], t[0] + t[1], t[2])
        ),
        max_size=6,
    ),
)
def test_any_edits_even_unsorted_carry_spans_as_walking_them_does(
    spans: list[tuple[int, int, int]], edits: list[LineEdit]
) -> None:
    assert map_spans(spans, edits) == _map_spans_walking(spans, edits)


def _strs_one_by_one(v: Any) -> bool:
    try:
        for x in records._list(v, "lines"):
            records._str(x, "lines")
    except records._Bad:
        return False
    return True


@settings(max_examples=800, deadline=None)
@given(_lines)
def test_the_one_pass_lines_check_decides_as_checking_each_line(lines: Any) -> None:
    try:
        records._strs(lines, "lines")
        ok = True
    except records._Bad as bad:
        ok = False
        assert "is not a string" in str(bad) or "is not a list" in str(bad)
    assert ok == _strs_one_by_one(lines)


class _Blobs:
    """A stand-in for the journal's blob folder: `get` of a known name."""

    def __init__(self, held: dict[str, bytes]) -> None:
        self.held = held

    def get(self, sha: str) -> bytes:
        return self.held[sha]


def _resolve_walking(value: Any, blobs: _Blobs, named: frozenset[str]) -> Any:
    """`journal._resolve` as it walked every value, a call each (before its fast path)."""
    from lsp_server.engine import journal

    if isinstance(value, dict):
        if len(value) == 1:
            ((key, sha),) = value.items()
            if key in (journal.BLOB_TEXT, journal.BLOB_JSON) and isinstance(sha, str):
                if sha in named:
                    data = blobs.get(sha)
                    if key == journal.BLOB_TEXT:
                        return data.decode("utf-8", "surrogatepass")
                    return journal._DECODER.decode(data.decode("utf-8", "surrogatepass"))
        return {k: _resolve_walking(v, blobs, named) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_walking(v, blobs, named) for v in value]
    return value


_leaf = st.one_of(st.text(max_size=3), st.integers(), st.booleans(), st.none(), st.floats(0, 1))
_marker = st.sampled_from(
    [{"$blob": "t1"}, {"$json": "j1"}, {"$blob": "absent"}, {"$json": 5}, {"$other": "t1"}]
)
_json_values = st.recursive(
    st.one_of(_leaf, _marker),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=20,
)


@settings(max_examples=800, deadline=None)
@given(_json_values)
def test_resolving_blob_markers_gives_what_walking_every_value_gives(value: Any) -> None:
    from lsp_server.engine import journal

    blobs = _Blobs({"t1": "é text".encode(), "j1": b'["a", {"b": 1}]'})
    named = frozenset({"t1", "j1"})
    got = journal._resolve(value, blobs, named)  # type: ignore[arg-type]
    assert got == _resolve_walking(value, blobs, named)
