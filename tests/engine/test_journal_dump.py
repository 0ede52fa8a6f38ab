"""journal._dump encodes a record once: the same line (and the same blobs, in the same order) as
the previous way, which encoded the record to measure it, walked it, and encoded it again."""

from __future__ import annotations

import hashlib
import json
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


@settings(max_examples=200, deadline=None)
@given(_value)
def test_the_reused_c_encoder_writes_what_json_dumps_writes(value: Any) -> None:
    """`_dumps` with one C encoder made once (no table of markers per call) is json.dumps."""
    assert _dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert _dumps([value, {"k": value}]) == json.dumps(
        [value, {"k": value}], ensure_ascii=False, separators=(",", ":")
    )


@settings(max_examples=80, deadline=None)
@given(st.one_of(_record, _split_record))
def test_a_line_is_measured_as_long_as_it_is_written(record: dict[str, Any]) -> None:
    # Compaction keeps or drops records by this size: it is the written line's, blobs and all.
    assert journal.line_size(record) == len(_dump(record, FakeBlobs()))
