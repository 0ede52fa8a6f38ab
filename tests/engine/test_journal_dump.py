"""journal._dump encodes a record once: the same line (and the same blobs, in the same order) as
the previous way, which encoded the record to measure it, walked it, and encoded it again."""

from __future__ import annotations

import hashlib
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_server.engine import journal
from lsp_server.engine.journal import BLOB_MIN, _dump, _dumps, _externalize


class FakeBlobs:
    """What `_externalize` asks of `Blobs`: `put`, recorded in order."""

    def __init__(self) -> None:
        self.puts: list[bytes] = []

    def put(self, data: bytes) -> str:
        self.puts.append(data)
        return hashlib.sha256(data).hexdigest()


def _dump_before(record: dict[str, Any], blobs: Any = None, named: tuple[str, ...] = ()) -> bytes:
    """The previous `_dump`, as it was (the reference this change must match byte for byte)."""
    text = _dumps(record)
    if isinstance(record.get("pack"), str):
        named = (*named, record["pack"])
    if blobs is not None and (named or len(text) >= BLOB_MIN):
        used: list[str] = list(named)
        small = _externalize(record, blobs, used) if len(text) >= BLOB_MIN else dict(record)
        if used:
            small["$blobs"] = sorted(set(used))
            text = _dumps(small)
    return (text + "\n").encode("utf-8", "surrogatepass")


# Strings around the thresholds: short ones, and ones near BLOB_MIN and BLOB_MIN / 17 (a list
# of more than 16 lines whose total crosses BLOB_MIN is one blob; of 16 or fewer, it is not).
_sizes = st.sampled_from([0, 1, 5, BLOB_MIN // 17, BLOB_MIN // 16 + 1, BLOB_MIN - 2, BLOB_MIN])
_text = st.builds(
    lambda n, c: c * n, _sizes, st.sampled_from(["a", "é", '"', "\\", "\n", "\ud800", "😀"])
)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(), _text)
_lines = st.lists(_text, max_size=20)
_value = st.recursive(
    st.one_of(_scalar, _lines),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from("abcd"), inner, max_size=4)
    ),
    max_leaves=12,
)
_record = st.dictionaries(
    st.sampled_from(["t", "id", "changes", "diff", "baselines", "pack", "x"]), _value, max_size=5
)


@settings(max_examples=300, deadline=None)
@given(_record, st.sampled_from([(), ("f" * 64,)]), st.booleans())
def test_the_line_and_the_blobs_are_those_of_the_previous_dump(
    record: dict[str, Any], named: tuple[str, ...], with_blobs: bool
) -> None:
    before, now = (FakeBlobs(), FakeBlobs()) if with_blobs else (None, None)
    assert _dump(record, now, named) == _dump_before(record, before, named)  # type: ignore[arg-type]
    if with_blobs:
        assert now is not None and before is not None
        assert now.puts == before.puts


def test_a_begin_record_is_encoded_once(monkeypatch: Any) -> None:
    """The change's point: a large record with blobs is JSON-encoded once, not twice."""
    calls: list[int] = []
    real = journal._dumps

    def counting(value: Any) -> str:
        if isinstance(value, dict):  # the record (a long hunk's lines are encoded as a blob)
            calls.append(1)
        return real(value)

    monkeypatch.setattr(journal, "_dumps", counting)
    record = {"t": "begin", "id": 1, "pack": "e" * 64, "changes": [["x" * 100] * 2000]}
    line = _dump(record, FakeBlobs())  # type: ignore[arg-type]
    assert b'"$blobs"' in line
    assert len(calls) == 1


# Records with a list of objects, encoded item by item (`journal._split`): a
# begin record's change records, a compacted journal's records, with a few large ones among them.
_hunks = st.lists(st.lists(_value, max_size=7), min_size=8, max_size=10)
_object = st.dictionaries(st.sampled_from("abcd"), st.one_of(_value, _hunks), max_size=3)
_objects = st.lists(_object, min_size=8, max_size=11)
_split_record = st.fixed_dictionaries(
    {"t": st.just("begin"), "id": st.integers(), "changes": _objects},
    optional={"pack": st.just("e" * 64), "x": _value, "y": _objects},
)


@settings(max_examples=300, deadline=None)
@given(_split_record, st.sampled_from([(), ("f" * 64,)]))
def test_a_record_encoded_item_by_item_is_the_walked_one(
    record: dict[str, Any], named: tuple[str, ...]
) -> None:
    before, now = FakeBlobs(), FakeBlobs()
    assert _dump(record, now, named) == _dump_before(record, before, named)  # type: ignore[arg-type]
    assert now.puts == before.puts


def test_a_begin_record_of_small_changes_is_not_walked(monkeypatch: Any) -> None:
    """The point of `_dump_split`: 1,000 change records of a few lines each, and one with a huge
    line, are walked only where that one is."""
    walked: list[Any] = []
    real = journal._externalize

    def counting(value: Any, blobs: Any, used: list[str]) -> Any:
        walked.append(value)
        return real(value, blobs, used)

    monkeypatch.setattr(journal, "_externalize", counting)
    small = {"path": "a.py", "hunks": [[1, 2, 1, ["a\n"], ["b\n"], ["c\n"] * 3, ["d\n"] * 3]]}
    huge = {"path": "b.py", "hunks": [[1, 2, 1, ["a\n"], ["x" * BLOB_MIN], [], []]]}
    record = {"t": "begin", "id": 1, "changes": [small] * 500 + [huge] + [small] * 499}
    blobs = FakeBlobs()
    line = _dump(record, blobs)  # type: ignore[arg-type]
    assert not any(w is small or w is small["hunks"] for w in walked)
    assert len(walked) < 10  # only inside `huge`, where the blob is
    assert len(blobs.puts) == 1 and line == _dump_before(record, FakeBlobs())


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_value, max_size=7), max_size=3), st.integers(0, 70), _value)
def test_a_change_of_many_hunks_is_the_walked_one(some: list[Any], at: int, other: Any) -> None:
    """A change record with a long list (the 100k-line file's 1,000 hunks) is looked into
    without being encoded whole first (`journal._wide`): still the walked line and blobs."""
    plain = [[i, i + 1, i, ["a\n"], ["b\n"], ["c\n"] * 3, ["d\n"] * 3] for i in range(70)]
    hunks: list[Any] = plain[:at] + some + plain[at:]
    record = {"t": "begin", "id": 1, "changes": [{"path": "big.py", "hunks": hunks, "x": other}]}
    before, now = FakeBlobs(), FakeBlobs()
    assert journal._wide(record["changes"][0])
    assert _dump(record, now) == _dump_before(record, before)  # type: ignore[arg-type]
    assert now.puts == before.puts


def _pre_encoded(change: Any) -> Any:
    """`change` with its last member's list encoded ahead (what the CLI's split planner gives
    `History.begin`), or `change` itself where that cannot be done exactly."""
    if type(change) is not dict or not change:
        return change
    last = next(reversed(change.values()))
    if type(last) is not list:
        return change
    text = journal.encode_items(last)
    if text is None:
        return change
    return journal.encoded_object(change, text) or change


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.dictionaries(st.sampled_from(["path", "change", "lines"]), _value, max_size=3).flatmap(
            lambda head: st.builds(
                lambda hunks: {**head, "hunks": hunks},
                st.lists(st.lists(_value, max_size=7), max_size=70),
            )
        ),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from([(), ("f" * 64,)]),
)
def test_changes_encoded_ahead_give_the_line_and_the_blobs_of_the_plain_ones(
    changes: list[Any], named: tuple[str, ...]
) -> None:
    """A begin record whose change records were encoded ahead (`journal.Encoded`) is written as
    the same line, with the same blobs, as the record of plain objects: also a change of more
    than BLOB_MIN characters, of many hunks (`_wide`), or with a hunk or a member of BLOB_MIN
    characters or more (not encoded ahead then)."""
    plain = {"t": "begin", "id": 1, "changes": changes}
    ahead = {"t": "begin", "id": 1, "changes": [_pre_encoded(c) for c in changes]}
    before, now = FakeBlobs(), FakeBlobs()
    assert _dump(ahead, now, named) == _dump_before(plain, before, named)  # type: ignore[arg-type]
    assert now.puts == before.puts


def test_a_large_change_of_small_hunks_is_encoded_ahead_and_one_of_a_huge_line_is_not() -> None:
    small = [[i, i + 1, i, ["a\n"], ["b\n"], ["c\n"] * 3, ["d\n"] * 3] for i in range(2000)]
    assert len(_dumps(small)) >= BLOB_MIN
    assert journal.encode_items(small) == _dumps(small)
    assert journal.encode_items([*small, [1, 2, 1, ["x" * BLOB_MIN], [], [], []]]) is None
    assert journal.encoded_object({"path": "p" * BLOB_MIN, "hunks": []}, "[]") is None


def test_an_encoded_item_anywhere_else_is_refused_not_written_as_a_string() -> None:
    import pytest

    item = journal.Encoded('{"path":"a.py"}')
    with pytest.raises(TypeError):
        _dump({"t": "begin", "diff": item})
    with pytest.raises(TypeError):
        _dump({"t": "begin", "changes": [item]})  # no blobs: the one-call path
