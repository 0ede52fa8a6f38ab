"""A compaction keeps the entries its own transaction wrote: a compaction for size (the undo
window's records alone past the target) or for the number of entries (the older ones all
unfinished or undoable) dropped the record just written, the refusal or dry run the caller was
told about. The compacting process kept it in memory (`_forget_dropped` spares what the
transaction wrote), so a language server listed it while every CLI command, replaying the
journal, said "Edit #N is no longer in the history ... the oldest it holds is #1", N past 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.engine.history import History, compaction
from lsp_server.engine.journal import Journal
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_write
from tests.history_helpers import FS, apply_plan, snap


def _journal(root: Path, max_bytes: int | None = None) -> Journal:
    kw = {} if max_bytes is None else {"max_bytes": max_bytes}
    return Journal(root / "ws", state_dir=root / "state", **kw)


def _ids(h: History) -> list[int]:
    return [e.id for e in h.entries]


def _replayed(root: Path, undo_window: int) -> list[int]:
    fresh = History.load(_journal(root), undo_window=undo_window)
    try:
        return _ids(fresh)
    finally:
        assert fresh.journal is not None
        fresh.journal.close()


def test_a_compaction_for_size_keeps_the_record_it_was_written_with(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    h = History(_journal(tmp_path, max_bytes=8000), undo_window=2)
    fs: FS = {}
    for n in range(2):  # the undo window: ~7 KB of lines each, past the target on their own
        path = f"f{n}.txt"
        text = "".join(f"line {n} {i} {'x' * 40}\n" for i in range(60))
        plan = Plan("write", (plan_write(snap(fs, path), text),))
        h.finish(h.begin(plan, {"path": path}), "applied")
        fs = apply_plan(fs, plan)
    assert h.journal is not None
    compactions = 0
    for _ in range(40):  # each a quarter of the journal's size later, a compaction
        before = h.journal.compacted_size
        entry = h.record("replace", {"path": "x"}, outcome="STALE")
        compactions += h.journal.compacted_size != before
        assert _replayed(tmp_path, 2) == _ids(h), entry.id
        assert entry.id in _ids(h)
    assert compactions >= 1


def test_a_compaction_for_the_number_of_entries_keeps_the_record_it_was_written_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compaction, "KEPT_ENTRIES", 2)
    (tmp_path / "ws").mkdir()
    h = History(_journal(tmp_path), undo_window=1)
    fs: FS = {}
    for path in ("a.txt", "b.txt"):  # begun, not finished: never dropped
        h.begin(Plan("write", (plan_write(snap(fs, path), "new\n"),)), {"path": path})
    entry = h.record("replace", {"path": "x"}, outcome="STALE")  # 3 entries: compacted
    assert entry.id == 3
    assert _replayed(tmp_path, 1) == _ids(h) == [1, 2, 3]
