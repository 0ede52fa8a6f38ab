"""A compaction that could not get the journal below `max_bytes` is not redone by the next
process on its first write: the size the compaction left is read from the journal itself (where
its checkpoint line ends), not kept only in the memory of the process that compacted. Each CLI
run is a new process; before, every apply rewrote such a journal (seconds on a 1,000-file
history)."""

from __future__ import annotations

from pathlib import Path

from lsp_server.engine.history import History
from lsp_server.engine.journal import BLOB_MIN, Journal
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_replace
from tests.history_helpers import FS, apply_plan, snap

MAX = 4096  # bytes: small enough that a compacted journal of a few entries stays above it


def _edit(history: History, fs: FS, i: int) -> FS:
    """One applied edit of a.txt (line `i` changed); returns the new files."""
    plan = Plan("replace", (plan_replace(snap(fs, "a.txt"), f"line {i}\n", f"LINE {i}\n"),))
    entry_id = history.begin(plan, {"path": "a.txt"})
    fs = apply_plan(fs, plan)
    history.finish(entry_id, "applied")
    return fs


def _session(tmp_path: Path) -> tuple[Path, FS, int]:
    """A journal past MAX that its compaction could not get below MAX (the undo window keeps
    every entry's change records), as one process left it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    fs: FS = {"a.txt": "".join(f"line {i}\n" for i in range(3000))}
    journal = Journal(ws, state_dir=tmp_path / "state", max_bytes=MAX)
    history = History(journal)
    i = 0
    while journal.compacted_size == 0:
        fs = _edit(history, fs, i)
        i += 1
    assert journal.size() > MAX  # the compaction could not get below it
    return ws, fs, journal.compacted_size


def _next_process(tmp_path: Path, ws: Path) -> tuple[Journal, History]:
    journal = Journal(ws, state_dir=tmp_path / "state", max_bytes=MAX)
    return journal, History.load(journal)


def test_the_next_process_does_not_compact_again_on_its_first_write(tmp_path: Path) -> None:
    ws, _fs, left = _session(tmp_path)
    journal, history = _next_process(tmp_path, ws)
    assert journal.compacted_size == left  # where the checkpoint line ends
    inode = journal.path.stat().st_ino
    history.record("replace", {"path": "a.txt"}, outcome="dry-run")
    assert journal.path.stat().st_ino == inode  # appended to, not rewritten


def test_it_compacts_again_once_a_quarter_of_what_it_left_is_appended(tmp_path: Path) -> None:
    ws, fs, left = _session(tmp_path)
    journal, history = _next_process(tmp_path, ws)
    assert journal.compacted_size == left
    inode = journal.path.stat().st_ino
    i = 1000
    while journal.path.stat().st_ino == inode:
        # Compacted no later than that (`left` is over MAX: a quarter of it, not of MAX).
        assert journal.size() - left < max(MAX, left) // 4 + 2048
        journal, history = _next_process(tmp_path, ws)  # each edit a process of its own
        fs = _edit(history, fs, i)
        i += 1
    again = History.load(Journal(ws, state_dir=tmp_path / "state", max_bytes=MAX))
    assert again.skipped == 0 and again.entry_count() == history.entry_count()


def test_a_line_that_only_looks_like_a_checkpoint_delays_it_by_a_quarter_at_most(
    tmp_path: Path,
) -> None:
    ws, fs, _left = _session(tmp_path)
    journal = Journal(ws, state_dir=tmp_path / "state", max_bytes=MAX)
    with open(journal.path, "ab") as f:  # hand-edited: not JSON, but it starts like one
        f.write(b'{"t":"checkpoint" garbage ' + b"x" * 100 + b"\n")
    journal, history = _next_process(tmp_path, ws)
    assert history.skipped == 1  # the line itself is skipped, the rest intact
    left = journal.compacted_size
    assert left == journal.size()
    inode = journal.path.stat().st_ino
    i = 2000
    while journal.path.stat().st_ino == inode:
        assert journal.size() - left < max(MAX, left) // 4 + 2048
        journal, history = _next_process(tmp_path, ws)
        fs = _edit(history, fs, i)
        i += 1


def test_a_large_checkpoint_in_a_blob_still_counts(tmp_path: Path) -> None:
    """A checkpoint whose net diff holds a file past BLOB_MIN (its text in a blob file) is
    still found: its line starts the same way."""
    ws = tmp_path / "ws"
    ws.mkdir()
    fs: FS = {"a.txt": "x" * BLOB_MIN + "\n" + "".join(f"line {i}\n" for i in range(50))}
    journal = Journal(ws, state_dir=tmp_path / "state", max_bytes=MAX)
    history = History(journal)
    i = 0
    while journal.compacted_size == 0:
        fs = _edit(history, fs, i)
        i += 1
    assert b'{"t":"checkpoint"' in journal.path.read_bytes()
    journal2, _history = _next_process(tmp_path, ws)
    assert journal2.compacted_size == journal.compacted_size


def test_a_journal_compaction_cannot_shrink_is_not_rewritten_for_every_quarter_of_max_bytes(
    tmp_path: Path,
) -> None:
    """Rewriting what a compaction left (N bytes, over MAX) waits for N/4 new bytes, not MAX/4:
    with MAX/4 alone, a 46 MB journal of 1,000-file entries was rewritten every second CLI
    apply, 3.4-4.7 s each (bench/bench_history_seq.py --workload many)."""
    ws, fs, left = _session(tmp_path)
    assert left > 4 * MAX  # the undo window keeps the entries' change records
    journal, history = _next_process(tmp_path, ws)
    inode = journal.path.stat().st_ino
    i = 1500
    while journal.size() - left < left // 4 - 512:  # past MAX/4 long before
        fs = _edit(history, fs, i)
        i += 1
        assert journal.path.stat().st_ino == inode, "compacted before a quarter of what it left"
    assert journal.size() - left > MAX // 4
