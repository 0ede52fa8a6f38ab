"""Lazy net-diff tracking (history/replay.py `_settle`): `finish` only queues an entry's effect,
the first read of the tracked files takes the queue in, and whatever the order of reads, the
net diff, the entries and a later replay are what eager tracking gave."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_server.engine.errors import EditError
from lsp_server.engine.history import History, Tracked
from lsp_server.engine.history.replay import UNTRACKED_MAX
from lsp_server.engine.journal import Journal
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_write
from tests.history_helpers import FS, apply_plan, snap, snaps


class Session:
    """A dict file system with a history, applying plans the way a front end would."""

    def __init__(self, fs: FS, history: History) -> None:
        self.fs = dict(fs)
        self.history = history

    def run(self, plan: Plan) -> int:
        entry_id = self.history.begin(plan, {})
        self.fs = apply_plan(self.fs, plan)
        self.history.finish(entry_id, "applied")
        return entry_id

    def write(self, path: str, text: str) -> int:
        return self.run(Plan("write", (plan_write(snap(self.fs, path), text),)))

    def undo(self, entry_id: int) -> int:
        plan = self.history.plan_undo(entry_id, snaps(self.fs, self.history.undo_paths(entry_id)))
        return self.run(plan)


def test_finish_does_not_track_and_the_first_read_does(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = Tracked.agent_change

    def counted(self: Tracked, *args: Any) -> None:
        calls.append(self.path)
        real(self, *args)

    monkeypatch.setattr(Tracked, "agent_change", counted)
    s = Session({"a.py": "one\ntwo\n", "b.py": "x\n"}, History())
    s.write("a.py", "one\nTWO\n")
    assert calls == []  # finish queued it: a CLI apply never pays for tracking its own edit
    assert [n["path"] for n in s.history.net()] == ["a.py"]
    assert calls == ["a.py"]
    s.history.net()
    assert calls == ["a.py"]  # taken in once


def test_undo_right_after_an_apply_in_the_same_process() -> None:
    """The server's case: apply, then undo with the tracked state read between and not."""
    for read_between in (False, True):
        s = Session({"f.py": "a\nb\nc\n"}, History())
        first = s.write("f.py", "a\nB\nc\n")
        if read_between:
            assert len(s.history.net()) == 1
        s.undo(first)
        assert s.fs["f.py"] == "a\nb\nc\n"
        assert s.history.net() == []
        assert s.history.entry(first).undone_by == first + 1


def test_a_user_edit_between_two_queued_entries_is_folded_into_the_baseline() -> None:
    s = Session({"f.py": "1\n2\n3\n4\n5\n6\n7\n8\n"}, History())
    s.write("f.py", "1\nTWO\n3\n4\n5\n6\n7\n8\n")
    s.fs["f.py"] = "1\nTWO\n3\n4\n5\n6\n7\nuser\n"  # someone else, before the next edit
    s.write("f.py", "ONE\nTWO\n3\n4\n5\n6\n7\nuser\n")
    (net,) = s.history.net()
    assert "+ONE" in net["diff"] and "+TWO" in net["diff"] and "user" not in net["diff"]


def test_a_long_replay_holds_few_entries_untracked(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "ws", tmp_path / "state")
    s = Session({f"f{i}.py": "x\n" for i in range(3)}, History.load(journal))
    for i in range(UNTRACKED_MAX * 3):
        s.write(f"f{i % 3}.py", f"x{i}\n")
    # The queue holds pre-images the budgets would have let go: bounded, also while replaying.
    assert len(s.history._untracked) <= UNTRACKED_MAX
    again = History.load(Journal(tmp_path / "ws", tmp_path / "state"))
    assert len(again._untracked) <= UNTRACKED_MAX
    assert again.net() == s.history.net()


def test_a_crash_between_begin_and_finish_then_recovery(tmp_path: Path) -> None:
    """Begun, the process gone before finish (nothing tracked in memory was ever written):
    the next process recovers it from the files and its net diff shows the edit."""
    ws, state = tmp_path / "ws", tmp_path / "state"
    s = Session({"f.py": "a\nb\n"}, History.load(Journal(ws, state)))
    s.write("f.py", "a\nB\n")
    plan = Plan("write", (plan_write(snap(s.fs, "f.py"), "A\nB\n"),))
    entry_id = s.history.begin(plan, {})
    s.history._own.discard(entry_id)  # as if its process had died
    fs = apply_plan(s.fs, plan)
    later = History.load(Journal(ws, state))
    (pending,) = [e for e in later.entries if not e.finished]
    later.recover(pending.id, snaps(fs, later.undo_paths(pending.id)))
    assert later.entry(entry_id).outcome == "applied"
    (net,) = later.net()
    assert "-a\n-b\n+A\n+B\n" in net["diff"]


def test_a_record_that_does_not_fit_at_settle_is_counted_not_raised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    s = Session({"f.py": "a\n", "g.py": "b\n"}, History())
    s.write("f.py", "A\n")

    def broken(self: Tracked, *args: Any) -> None:
        raise ValueError("hand-edited")

    monkeypatch.setattr(Tracked, "agent_change", broken)
    s.write("g.py", "B\n")
    s.history.net()  # no traceback: counted as a record replay could not use
    assert s.history.skipped == 2 and "hand-edited" in (s.history.skipped_note() or "")


_OPS = st.lists(
    st.tuples(st.sampled_from(["write", "user", "undo", "read"]), st.integers(0, 2), st.integers()),
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(_OPS)
def test_reads_in_any_order_give_what_eager_tracking_gave(ops: list[tuple[str, int, int]]) -> None:
    """Two sessions doing the same; one reads the tracked state after every step (what eager
    tracking amounted to), the other only at the end: same net diff and entries."""
    files = {f"f{i}.py": "".join(f"l{j}\n" for j in range(6)) for i in range(3)}
    eager = Session(files, History(clock=lambda: "t"))
    lazy = Session(files, History(clock=lambda: "t"))
    for op, k, n in ops:
        path = f"f{k}.py"
        for s in (eager, lazy):
            if op == "write":
                lines = s.fs.get(path, "").splitlines(keepends=True) or ["\n"]
                lines[n % len(lines)] = f"w{n}\n"
                s.write(path, "".join(lines))
            elif op == "user":
                s.fs[path] = s.fs.get(path, "") + f"u{n}\n"
            elif op == "undo":
                undoable = [e.id for e in s.history.entries if e.undoable]
                if undoable:
                    try:
                        s.undo(undoable[n % len(undoable)])
                    except EditError as exc:  # a three-way conflict: both refuse alike
                        s.history.record("undo", {}, error=exc)
            if s is eager or op == "read":
                s.history.net()
    assert lazy.history.net() == eager.history.net()
    assert lazy.history.to_json() == eager.history.to_json()
