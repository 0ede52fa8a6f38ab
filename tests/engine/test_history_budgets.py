"""The history's pre-image budget strips the oldest entries first, never the newest: an entry
heavier than PREIMAGE_BUDGET on its own (a large file deleted or written) was stripped on its
way in, so the edit just made could never be undone, and its undo said it was "too old"."""

from __future__ import annotations

from lsp_server.engine.history.budgets import PREIMAGE_BUDGET, Budgets
from lsp_server.engine.history.entries import Entry
from lsp_server.engine.undo.changes import ChangeRecord


def _entry(n: int, size: int) -> Entry:
    rec = ChangeRecord(f"f{n}.txt", "delete", before_text="x" * size)
    return Entry(id=n, time="", action="applyPatch", args_json="{}", changes=(rec,))


def test_the_newest_entry_keeps_its_preimages_whatever_it_weighs() -> None:
    budgets, entries = Budgets(), {}
    big = _entry(1, PREIMAGE_BUDGET + 1)
    entries[1] = big
    budgets.take(big, entries, undo_window=100)
    assert big.changes[0].preimage and big.changes[0].before_text is not None
    assert list(budgets.with_preimages) == [1]


def test_a_heavy_entry_goes_once_a_newer_one_comes() -> None:
    budgets, entries = Budgets(), {}
    for n, size in ((1, PREIMAGE_BUDGET), (2, 10)):
        entries[n] = _entry(n, size)
        budgets.take(entries[n], entries, undo_window=100)
    assert not entries[1].changes[0].preimage  # over the budget with the newer one: stripped
    assert entries[2].changes[0].preimage
    assert list(budgets.with_preimages) == [2]


def test_the_undo_window_still_counts_the_newest() -> None:
    budgets, entries = Budgets(), {}
    entries[1] = _entry(1, 10)
    budgets.take(entries[1], entries, undo_window=0)
    assert not entries[1].changes[0].preimage
