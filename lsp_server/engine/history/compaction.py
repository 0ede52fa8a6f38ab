"""Compaction: a history's state written back as the records of a shorter journal.

A compacted journal holds one `record` line per entry kept (finished, marked `compacted`: its
effect is in the checkpoint already), each unfinished plan's `begin` as it was, and a last
`checkpoint` line with the net diff of every tracked file (replay.py takes it in). It keeps at
most `kept_entries` entries, the oldest finished ones dropped first, never an unfinished plan,
an entry of the undo window nor one the compacting transaction wrote; past `target` bytes the
oldest diffs go, then the oldest entries outside the undo window. Replay (replay.py) decides
when: for the journal's size (journal.py `wants_compaction`) or its number of entries
(`Replay.wants_fewer_entries`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from lsp_server.engine.history.entries import Entry
from lsp_server.engine.history.tracked import Tracked
from lsp_server.engine.journal import line_size

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

# A compacted journal keeps at most this many finished entries, or twice the undo window when
# that is more (those past the window can no longer be undone: their pre-images are gone), the
# oldest dropped first; `history` lists 200 by default. Every CLI command replays the whole
# journal, so without a bound on entries its start grew by ~0.1 ms an entry: a one-line apply
# took ~130 ms after 100 edits in a workspace and ~230 ms after 1,000, and a journal is only
# compacted for its size (16 MB: some 20,000 small edits). `bench/bench_history_seq.py
# --workload small --applies 1000 bed9dd1 WORKTREE` (one-line applies in a row, alternating),
# medians of each tenth of the run: before 99, 123, 134, 141, 171, 180, 189, 200, 233, 257 ms;
# with the bound 101, 122, 121, 112, 128, 126, 119, 118, 130, 139 ms (the journal stays ~300 KB).
KEPT_ENTRIES = 200


def kept_entries(undo_window: int) -> int:
    """How many entries a compaction keeps at most, unfinished ones and the undo window's
    aside (see KEPT_ENTRIES)."""
    return max(KEPT_ENTRIES, 2 * undo_window)


def compacted(
    entries: Sequence[Entry],
    *,
    undoable: Collection[int],
    keep: int,
    tracked: Sequence[Tracked],
    retired: int,
    next_id: int,
    time: str,
    finish_order: dict[str, list[int]],
    target: int,
    written: Collection[int] = (),
) -> list[dict[str, Any]]:
    """The journal's records: `entries` oldest first (the order they began: their ids'), at
    most `keep` of them, pre-images only for `undoable` (the undo window's ids); the
    checkpoint of `tracked` (its first `retired` ones retired by a move or a rebase), the next
    id, and `finish_order` (budgets.py) when entries finished out of id order. Oldest diffs,
    then oldest entries outside the undo window, go when it would not fit in `target` bytes.
    Never an entry of `written`, the ids the compacting transaction wrote: its caller was just
    told about them (a refusal's editId), and every process replaying the journal must hold
    them as the compacting one does."""
    excess = len(entries) - keep
    records: list[dict[str, Any]] = []
    for e in entries:
        if excess > 0 and e.finished and e.id not in undoable and e.id not in written:
            excess -= 1
            continue
        if not e.finished:
            records.append(begin_json(e))
            continue
        rec = {
            "t": "record",
            "compacted": True,
            "id": e.id,
            "time": e.time,
            "action": e.action,
            "args": e.args,
            "files": e.files,
            "outcome": e.outcome,
            "ok": e.ok,
            "committed": e.committed,
            "diff": e.diff,
            "changes": [(c if e.id in undoable else c.stripped()).to_json() for c in e.changes],
        }
        if e.saves:
            rec["saves"] = [c.to_json() for c in e.saves]
        if e.error:
            rec["error"] = e.error
        if e.undoes is not None:
            rec["undoes"] = e.undoes
        if e.undone_by is not None:
            rec["undoneBy"] = e.undone_by
        records.append(rec)
    checkpoint: dict[str, Any] = {
        "t": "checkpoint",
        "time": time,
        "nextId": next_id,
        "tracked": [t.to_json() for t in tracked],
        "retired": retired,  # how many of those come first
    }
    if finish_order:  # some entry finished after a later one: the records are in id order
        checkpoint["finishOrder"] = finish_order
    # What stays in a line: big values live in blob files.
    sizes = [line_size(r) for r in records]
    total = sum(sizes) + line_size(checkpoint)
    for i, r in enumerate(records):  # oldest diffs first
        if total <= target:
            break
        if r.get("t") == "record" and r.get("diff"):
            r["diff"] = None
            new = line_size(r)
            total += new - sizes[i]
            sizes[i] = new
    for i, r in enumerate(records):  # then oldest entries outside the undo window
        if total <= target:
            break
        if r.get("t") == "record" and r["id"] not in undoable and r["id"] not in written:
            total -= sizes[i]
            sizes[i] = 0
    kept = [r for r, s in zip(records, sizes, strict=True) if s]
    if finish_order:
        # Only the entries kept: a dropped one's id would stay in the order for good.
        ids = {r["id"] for r in kept}
        order = {k: [i for i in v if i in ids] for k, v in finish_order.items()}
        checkpoint["finishOrder"] = {k: v for k, v in order.items() if v}
        if not checkpoint["finishOrder"]:
            del checkpoint["finishOrder"]
    return [*kept, checkpoint]


def begin_json(e: Entry) -> dict[str, Any]:
    """An unfinished entry's `begin` record (as `History.begin` journals it)."""
    rec: dict[str, Any] = {
        "t": "begin",
        "id": e.id,
        "time": e.time,
        "action": e.action,
        "args": e.args,
        "changes": [c.to_json() for c in e.changes],
    }
    if e._user:
        rec["user"] = e._user
    if e._baselines:
        rec["baselines"] = e._baselines
    if e.undoes is not None:
        rec["undoes"] = e.undoes
    if e.pid is not None:
        rec["pid"] = e.pid
    if e.pack is not None:  # named, so compaction keeps it while the entry is unfinished
        rec["pack"] = e.pack
    return rec
