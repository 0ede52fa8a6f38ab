"""The history's memory budgets: how much of the past a long session keeps in memory.

Pre-images (what undo needs) are kept for the last `undo_window` entries and at most
PREIMAGE_BUDGET characters (the newest entry's whatever it weighs); entries' own diffs for at
most DIFF_BUDGET characters. Oldest go first: an entry past its budget keeps its outcome and
files but loses its pre-images (no longer undoable) or its diff (`diffDropped`).

"Oldest" is the order entries finished in, which is the order they were taken in (the journal's
finish lines), not their ids: two processes' applies can overlap (#1 begun, #2 begun and
finished, #1 finished). A compacted journal has one record per entry, in id order, so its
checkpoint carries that order (`finish_order`) and replay puts the queues back in it (`reorder`):
the process that compacted and one that replays its journal strip the same entry next.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from itertools import pairwise

from lsp_server.engine.history.entries import Entry

DEFAULT_UNDO_WINDOW = 100
# In-memory budgets (characters), so a long session stays small: oldest first are dropped.
PREIMAGE_BUDGET = 8 * 1024 * 1024
DIFF_BUDGET = 4 * 1024 * 1024


class Budgets:
    """Which entries still hold pre-images and diffs, oldest first, and what they weigh."""

    __slots__ = ("with_preimages", "preimage_size", "diff_queue", "diff_size")

    def __init__(self) -> None:
        self.with_preimages: deque[int] = deque()
        self.preimage_size = 0
        self.diff_queue: deque[int] = deque()
        self.diff_size = 0

    def take(self, entry: Entry, entries: Mapping[int, Entry], undo_window: int) -> None:
        """Count a finished `entry` in, and strip the oldest of `entries` past the budgets."""
        if entry.changes and all(c.preimage for c in entry.changes):
            self.with_preimages.append(entry.id)
            self.preimage_size += sum(c.size() for c in entry.changes)
        while self.with_preimages and (
            len(self.with_preimages) > undo_window
            # The newest stays whatever it weighs: stripped on its way in, an edit of 8 MB
            # (a large file deleted or written) could never be undone, not even at once, and
            # its undo said it was "too old" (tests/engine/test_history_budgets.py).
            or (self.preimage_size > PREIMAGE_BUDGET and len(self.with_preimages) > 1)
        ):
            old = entries.get(self.with_preimages.popleft())
            if old is not None:
                self.preimage_size -= sum(c.size() for c in old.changes)
                old.changes = tuple(c.stripped() for c in old.changes)
        if entry.diff:
            self.diff_queue.append(entry.id)
            self.diff_size += len(entry.diff)
        while self.diff_queue and self.diff_size > DIFF_BUDGET:
            old = entries.get(self.diff_queue.popleft())
            if old is not None and old.diff:
                self.diff_size -= len(old.diff)
                old.diff = None

    def forget(self, entries: Mapping[int, Entry]) -> None:
        """Take `entries` (dropped from the history) out of the queues, with what they weigh."""
        if any(i in entries for i in self.with_preimages):
            kept = deque(i for i in self.with_preimages if i not in entries)
            for i in self.with_preimages:
                if i in entries:
                    self.preimage_size -= sum(c.size() for c in entries[i].changes)
            self.with_preimages = kept
        if any(i in entries for i in self.diff_queue):
            for i in self.diff_queue:
                old = entries.get(i)
                if old is not None and old.diff:
                    self.diff_size -= len(old.diff)
            self.diff_queue = deque(i for i in self.diff_queue if i not in entries)

    def finish_order(self) -> dict[str, list[int]]:
        """The queues that are not in id order (an entry finished after a later one), by name:
        what a compacted journal's checkpoint needs to give them back (`reorder`). Usually
        none: entries finish in the order they began."""
        out: dict[str, list[int]] = {}
        for name, queue in (("preimages", self.with_preimages), ("diffs", self.diff_queue)):
            if any(a > b for a, b in pairwise(queue)):
                out[name] = list(queue)
        return out

    def reorder(self, order: Mapping[str, Sequence[int]]) -> None:
        """Put the queues in the order `finish_order` gave (what a compacted journal's records,
        taken in id order, lost)."""
        self.with_preimages = _ordered(self.with_preimages, order.get("preimages", ()))
        self.diff_queue = _ordered(self.diff_queue, order.get("diffs", ()))

    def undoable_ids(self, undo_window: int) -> set[int]:
        """The entries whose pre-images a compacted journal keeps (the last `undo_window`)."""
        return set(list(self.with_preimages)[-undo_window:])


def _ordered(queue: deque[int], order: Sequence[int]) -> deque[int]:
    """`queue` in `order`; an id `order` does not name keeps its place before those it does."""
    if not order:
        return queue
    rank = {entry_id: i for i, entry_id in enumerate(order)}
    return deque(sorted(queue, key=lambda entry_id: rank.get(entry_id, -1)))
