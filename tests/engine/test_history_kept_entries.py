"""A journal keeps a bounded number of entries, so what every CLI command replays stays bounded.

Each CLI command replays the workspace's whole journal, and a journal was compacted only for
its size (16 MB: ~20,000 small edits), so a one-line apply slowed by ~0.1 ms for every edit
made before it in the workspace. A compaction now also runs once the journal holds more than
`kept_entries` entries with half that many new since the last one, and keeps the newest
finished ones; unfinished plans (a crash to recover) and the undo window's are never dropped,
and the net diff (the checkpoint) is the same as with every entry kept.

KEPT_ENTRIES (history/compaction.py) is lowered here so that a few dozen edits show it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lsp_server.engine.errors import EditError
from lsp_server.engine.history import History, compaction
from lsp_server.engine.journal import Journal
from lsp_server.engine.model import Plan
from lsp_server.engine.planner import plan_write
from tests.history_helpers import FS, apply_plan, snap

KEEP = 10


@pytest.fixture(autouse=True)
def _few_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compaction, "KEPT_ENTRIES", KEEP, raising=False)


class Workspace:
    """A dict file system and a history over a real journal, as a CLI run leaves them."""

    def __init__(self, root: Path, undo_window: int = 3) -> None:
        self.root = root
        (root / "ws").mkdir()
        self.undo_window = undo_window
        self.history = History(self.journal(), undo_window=undo_window)
        self.fs: FS = {}

    def journal(self) -> Journal:
        return Journal(self.root / "ws", state_dir=self.root / "state")

    def write(self, path: str, text: str, finish: bool = True) -> int:
        plan = Plan("write", (plan_write(snap(self.fs, path), text),))
        entry_id = self.history.begin(plan, {"paths": [path]})
        self.fs = apply_plan(self.fs, plan)
        if finish:
            self.history.finish(entry_id, "applied")
        return entry_id

    def reloaded(self) -> History:
        """What the next CLI command replays."""
        return History.load(self.journal(), undo_window=self.undo_window)

    def journal_ids(self) -> list[int]:
        """The entries the journal's lines hold (begin and record lines)."""
        import json

        path = self.journal().path
        ids = []
        for line in path.read_bytes().splitlines():
            rec = json.loads(line)
            if rec.get("t") in ("begin", "record"):
                ids.append(rec["id"])
        return ids


def _edits(w: Workspace, n: int) -> list[int]:
    return [w.write(f"f{k % 4}.txt", f"text {k}\n") for k in range(n)]


def test_the_journal_holds_a_bounded_number_of_entries(tmp_path: Path) -> None:
    w = Workspace(tmp_path)
    ids = _edits(w, 60)
    held = w.journal_ids()
    # At most kept_entries, plus the half that a compaction waits for.
    assert len(held) <= KEEP + KEEP // 2, len(held)
    # The newest ones, without a gap.
    assert held == ids[-len(held) :]
    again = w.reloaded()
    assert [e.id for e in again.entries] == held
    # The next id goes on from the last one (a dropped id is never given again).
    assert again._next_id == ids[-1] + 1
    # Asked for by id, a dropped edit is said to be gone, not to have never been.
    with pytest.raises(EditError) as gone:
        again.entry(ids[0])
    assert "no longer in the history" in gone.value.message
    assert f"oldest it holds is #{held[0]}" in gone.value.message
    with pytest.raises(EditError) as never:
        again.entry(ids[-1] + 5)
    assert "There is no edit" in never.value.message


def test_the_net_diff_is_the_one_every_entry_gives(tmp_path: Path) -> None:
    w = Workspace(tmp_path)
    first = {f"f{k}.txt": f"base {k}\n" for k in range(4)}
    # The files existed before the agent touched them: their bases are these texts.
    w.fs = dict(first)
    _edits(w, 45)
    full = History(undo_window=w.undo_window)  # no journal: nothing dropped
    fs: FS = dict(first)
    for k in range(45):
        plan = Plan("write", (plan_write(snap(fs, f"f{k % 4}.txt"), f"text {k}\n"),))
        full.finish(full.begin(plan, {}), "applied")
        fs = apply_plan(fs, plan)
    assert w.reloaded().net(None) == full.net(None)
    assert fs == w.fs


def test_unfinished_plans_and_the_undo_window_are_never_dropped(tmp_path: Path) -> None:
    w = Workspace(tmp_path, undo_window=3)
    crashed = w.write("crash.txt", "half\n", finish=False)  # a run killed mid-apply
    ids = _edits(w, 50)
    again = w.reloaded()
    kept = {e.id: e for e in again.entries}
    assert crashed in kept and not kept[crashed].finished
    for entry_id in ids[-w.undo_window :]:
        assert kept[entry_id].undoable, entry_id
    # The newest edit undoes in the reloaded history as in the live one.
    current = {"f1.txt": snap(w.fs, "f1.txt")}
    last_f1 = max(i for k, i in enumerate(ids) if k % 4 == 1)
    undone = apply_plan(w.fs, again.plan_undo(last_f1, current))
    assert undone == apply_plan(w.fs, w.history.plan_undo(last_f1, current))
    assert undone["f1.txt"] == "text 45\n"  # what f1.txt held before that edit


def test_a_large_undo_window_keeps_twice_its_entries(tmp_path: Path) -> None:
    w = Workspace(tmp_path, undo_window=8)  # kept_entries: max(KEEP, 16)
    ids = _edits(w, 40)
    held = w.journal_ids()
    assert 16 <= len(held) <= 16 + 8
    assert held == ids[-len(held) :]


def test_a_compaction_waits_for_half_the_kept_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each rewrite of the journal is paid once per KEEP/2 edits, not at every edit past KEEP."""
    rewrites: list[int] = []
    rewrite = Journal._rewrite

    def counted(self: Journal, records: list[dict[str, object]]) -> None:
        rewrites.append(len(records))
        rewrite(self, records)

    monkeypatch.setattr(Journal, "_rewrite", counted)
    w = Workspace(tmp_path)
    _edits(w, 60)
    # 60 edits: the first past KEEP + KEEP/2 new ones, then one every KEEP/2.
    assert 1 <= len(rewrites) <= (60 - KEEP) // (KEEP // 2) + 1, rewrites


def test_a_dropped_edit_is_said_to_be_dropped_not_never_made(tmp_path: Path) -> None:
    """`history --edit 1` / `undo 1` after edit #1 was dropped: "There is no edit #1" told the
    agent that made it that it never was; an id the history never gave keeps that answer."""
    from lsp_server.engine.errors import EditError

    w = Workspace(tmp_path)
    ids = _edits(w, 30)
    again = w.reloaded()
    assert again.find(ids[0]) is None  # dropped
    with pytest.raises(EditError) as dropped:
        again.entry(ids[0])
    assert "no longer in the history" in dropped.value.message
    assert f"newest edits (about {again.kept_entries()};" in dropped.value.message
    with pytest.raises(EditError) as dropped_undo:
        again.undo_paths(ids[0])
    assert "no longer in the history" in dropped_undo.value.message
    for never in (ids[-1] + 1, 0, -3):
        with pytest.raises(EditError) as unknown:
            again.entry(never)
        assert unknown.value.message == f"There is no edit #{never} in the history."


def test_a_finish_after_another_process_compacted_reports_the_finished_entry(
    tmp_path: Path,
) -> None:
    """The server begins an edit; a CLI run compacts the journal (the count rule) before the
    server finishes it. The finish takes the compacted journal in (every entry rebuilt), and
    what it returns and tells its listeners (the editor's `agentEdit/historyChanged`) must be
    the finished entry, not the stale "pending" one fetched before."""
    w = Workspace(tmp_path)
    heard: list[tuple[int, str, bool]] = []
    w.history.listeners.append(lambda e: heard.append((e.id, e.outcome, e.finished)))
    server = w.write("server.txt", "the server's edit\n", finish=False)
    cli = w.reloaded()  # another process, on the same journal
    fs = dict(w.fs)
    for k in range(KEEP + KEEP // 2 + 1):
        plan = Plan("write", (plan_write(snap(fs, f"c{k % 3}.txt"), f"cli {k}\n"),))
        cli.finish(cli.begin(plan, {}), "applied")
        fs = apply_plan(fs, plan)
    assert len(w.journal_ids()) <= KEEP + KEEP // 2  # the CLI compacted
    entry = w.history.finish(server, "applied")
    assert entry.finished and entry.outcome == "applied"
    assert entry is w.history.find(server)
    assert heard[-1] == (server, "applied", True)


def test_a_journal_compacted_only_for_its_size_is_cut_down_at_the_next_edit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier version compacted for size alone: thousands of `compacted` records and a
    checkpoint, none of them new. The first edit after the upgrade cuts it down, not the
    KEPT_ENTRIES/2-th (until then every command replayed all of them)."""
    monkeypatch.setattr(compaction, "KEPT_ENTRIES", 1000)
    w = Workspace(tmp_path)
    _edits(w, 40)
    assert w.history.journal is not None
    with w.history.journal.transaction() as (batch, writer):
        w.history._ingest(batch)
        writer.rewrite(w.history._compacted(10**9))  # as a compaction for size wrote it
    assert len(w.journal_ids()) == 40
    monkeypatch.setattr(compaction, "KEPT_ENTRIES", KEEP)
    w.history = w.reloaded()  # the next command, with the new version
    w.write("f1.txt", "one more\n")
    assert len(w.journal_ids()) <= KEEP + 1


def test_no_compaction_for_the_entry_count_between_a_plan_and_its_sending(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan's begin is followed at once by sending its edit: a compaction there (20-50 ms)
    is more time for the user's typing to make the edit STALE; the finish does it instead."""
    in_begin: list[bool] = []
    rewrites_in_begin: list[int] = []
    rewrite = Journal._rewrite
    begin = History.begin

    def counted(self: Journal, records: list[dict[str, object]]) -> None:
        if in_begin:
            rewrites_in_begin.append(len(records))
        rewrite(self, records)

    def begin_marked(self: History, *args: object, **kwargs: object) -> int:
        in_begin.append(True)
        try:
            return begin(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            in_begin.pop()

    monkeypatch.setattr(Journal, "_rewrite", counted)
    monkeypatch.setattr(History, "begin", begin_marked)
    w = Workspace(tmp_path)
    _edits(w, 40)
    assert not rewrites_in_begin
    assert len(w.journal_ids()) <= KEEP + KEEP // 2


def test_the_history_answer_says_older_edits_were_dropped(tmp_path: Path) -> None:
    from lsp_server.engine.history import rendering
    from lsp_server.engine.read_results import HistoryEntries

    w = Workspace(tmp_path)
    _edits(w, 5)
    assert "droppedNote" not in rendering.to_json(w.reloaded())  # nothing dropped yet
    _edits(w, 55)
    again = w.reloaded()
    answer = rendering.to_json(again)
    oldest = again.entries[0].id
    assert oldest > 1
    assert answer["droppedNote"].startswith(f"edits before #{oldest} are no longer")
    assert HistoryEntries.of(answer).dropped_note == answer["droppedNote"]  # a declared field


def test_the_process_that_compacts_holds_what_the_journal_holds(tmp_path: Path) -> None:
    # A long-lived language server compacts the journal itself: it listed (and kept in memory)
    # every entry of its session, where a CLI command replaying the same journal said the older
    # ones were "no longer in the history".
    w = Workspace(tmp_path)
    ids = _edits(w, 60)
    held = w.journal_ids()
    assert [e.id for e in w.history.entries] == held
    assert [e.id for e in w.reloaded().entries] == held
    with pytest.raises(EditError) as gone:
        w.history.entry(ids[0])
    assert f"oldest it holds is #{held[0]}" in gone.value.message
    # Its memory budgets count only what it holds.
    budgets = w.history._budgets
    assert set(budgets.diff_queue) <= set(held)
    assert budgets.diff_size == sum(len(w.history.entry(i).diff or "") for i in budgets.diff_queue)
    assert set(budgets.with_preimages) <= set(held)


def test_the_finish_order_names_only_entries_held(tmp_path: Path) -> None:
    # Entries finished out of id order (two processes' applies overlapping): the checkpoint
    # carries the order they finished in, which listed every id ever dropped, for good.
    import json

    w = Workspace(tmp_path)
    for k in range(40):
        first = w.write(f"a{k % 3}.txt", f"a {k}\n", finish=False)
        w.write(f"b{k % 3}.txt", f"b {k}\n")
        w.history.finish(first, "applied")
    held = set(w.journal_ids())
    checkpoints = [
        json.loads(line)
        for line in w.journal().path.read_bytes().splitlines()
        if json.loads(line).get("t") == "checkpoint"
    ]
    assert checkpoints
    named = {i for order in checkpoints[-1].get("finishOrder", {}).values() for i in order}
    assert named and named <= held, sorted(named - held)
    # Replayed, the queues come back in the order the entries finished.
    again = w.reloaded()
    assert list(again._budgets.diff_queue) == list(w.history._budgets.diff_queue)
