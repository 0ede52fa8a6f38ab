"""`compose` on a file's first edit takes a shortcut (no regions yet): it must give exactly what
the general path gives, for every shape of edit (touching, inserting, deleting, at the end, equal
lines that trim away), or the net diff of a first edit would differ between paths."""

from __future__ import annotations

import random

import pytest

from lsp_server.engine.history import netdiff
from lsp_server.engine.history.netdiff import NetIndex, compose
from lsp_server.engine.model import LineEdit


def _general(base: list[str], edits: list[LineEdit]) -> tuple[object, ...]:
    # The general path, reached by handing it an index (the shortcut needs no index and is
    # skipped when `_apart` says no).
    real = netdiff._apart
    netdiff._apart = lambda edits: False  # type: ignore[assignment]
    try:
        return compose(base, [], edits, fold=False, index=NetIndex.build([]))
    finally:
        netdiff._apart = real


def _random_edits(rng: random.Random, n: int) -> list[LineEdit]:
    edits: list[LineEdit] = []
    pos = 0
    while pos <= n and len(edits) < 6:
        start = pos + rng.randint(0, 4)
        if start > n:
            break
        end = min(n, start + rng.randint(0, 3))
        new = tuple(rng.choice(["a\n", "b\n", "c\n", "x\n", ""]) for _ in range(rng.randint(0, 3)))
        edits.append(LineEdit(start, end, new))
        pos = end + rng.randint(0, 2)  # sometimes touching the next: the shortcut must step aside
    return edits


@pytest.mark.parametrize("seed", range(300))
def test_first_edit_shortcut_equals_general_path(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(0, 12)
    base = [rng.choice(["a\n", "b\n", "c\n"]) for _ in range(n)] + [""]
    edits = _random_edits(rng, len(base) - 1)
    got = compose(base, [], edits, fold=False)
    want = _general(base, edits)
    assert got[0] == want[0] and got[1] == want[1] and got[2] == want[2]
    assert got[3] == want[3]


def test_touching_edits_take_the_general_path() -> None:
    base = ["a\n", "b\n", "c\n", ""]
    edits = [LineEdit(0, 1, ("x\n",)), LineEdit(1, 2, ("y\n",))]
    assert not netdiff._apart(edits)
    assert compose(base, [], edits, fold=False)[1] == [LineEdit(0, 2, ("x\n", "y\n"))]
