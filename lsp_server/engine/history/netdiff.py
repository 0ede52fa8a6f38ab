"""The net-diff algebra: a file's changed regions over its baseline, composed with each edit.

A file's net change is a sorted list of `LineEdit`s over the baseline (the content before the
agent first touched it). `compose` takes an edit on the agent's last text into that list without
building the last text (O(log regions) plus the touched regions), `NetIndex` says where each region
sits in the last text, and `map_spans` carries the line spans of recent agent edits (where code
lenses go) through later edits. Pure list arithmetic: no I/O, no history state.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from lsp_server.engine.model import LineEdit, apply_line_edits, minimal_edit

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


def edits_json(edits: Sequence[LineEdit]) -> list[list[Any]]:
    """Line edits as the journal keeps them: `[start, end, [lines...]]` each."""
    return [[e.start, e.end, list(e.new_lines)] for e in edits]


def edits_from(data: Sequence[Sequence[Any]]) -> list[LineEdit]:
    """The line edits of `edits_json`'s form."""
    return [LineEdit(int(a), int(b), tuple(c)) for a, b, c in data]


def _last_lines(
    base: Sequence[str],
    regions: Sequence[tuple[int, int, LineEdit]],
    d_before: int,
    start: int,
    edits: Sequence[LineEdit],
    end: int,
) -> list[str]:
    """Lines [start, end) of the agent's last text with `edits` applied, read from the base and
    the net regions (sorted, with their last-coordinates) alone: the last text is never built."""
    out: list[str] = []
    pos = start
    d = d_before  # base index = last index - d, for unchanged lines
    ri = 0

    def walk(target: int, keep: bool) -> None:
        nonlocal pos, d, ri
        while True:
            # Regions that end at or before `pos` (pure deletions at `pos` included) are behind.
            while ri < len(regions) and regions[ri][1] <= pos:
                r = regions[ri][2]
                d += len(r.new_lines) - (r.end - r.start)
                ri += 1
            if pos >= target:
                return
            if ri < len(regions) and regions[ri][0] <= pos:
                rls, rle, r = regions[ri]
                take = min(target, rle)
                if keep:
                    out.extend(r.new_lines[pos - rls : take - rls])
                pos = take
            else:
                nxt = regions[ri][0] if ri < len(regions) else target
                take = min(target, nxt)
                if keep:
                    out.extend(base[pos - d : take - d])
                pos = take

    for e in edits:
        walk(e.start, True)
        out.extend(e.new_lines)
        walk(e.end, False)
    walk(end, True)
    return out


@dataclass(frozen=True)
class NetIndex:
    """Where each net region is in the last text: `cum[i]` is the line-count change of regions
    before i (so region i starts at `net[i].start + cum[i]`), `lstarts`/`lends` its span."""

    cum: list[int]
    lstarts: list[int]
    lends: list[int]

    @classmethod
    def build(cls, net: Sequence[LineEdit]) -> NetIndex:
        cum = list(accumulate((len(r.new_lines) - (r.end - r.start) for r in net), initial=0))
        lstarts = [r.start + c for r, c in zip(net, cum, strict=False)]
        lends = [ls + len(r.new_lines) for ls, r in zip(lstarts, net, strict=True)]
        return cls(cum, lstarts, lends)


MAX_SPANS = 500


def map_spans(
    spans: Sequence[tuple[int, int, int]], edits: Sequence[LineEdit]
) -> list[tuple[int, int, int]]:
    """Carry line spans `(start, end, editId)` through `edits` (sorted, same coordinates): a span
    an edit touches is dropped (its lines are no longer the ones that edit left), the others move.
    An empty span marks the place of a pure deletion.

    O((spans + edits) log edits): the edits wholly before a span are a prefix of them (their
    ends never go down), found by bisection, their shifts summed once beforehand; the next edit
    alone decides whether the span is touched. Walking the edits for every span instead made
    each replay of a 1,000-hunk edit cost 500 x ~500 steps: the 16th CLI apply of bench_patch's
    1,000-chunk patch to one file (alternately forward and back) took 1.06 s against 0.24 s for
    the first, ~55 ms more per earlier edit of that file (`bench/bench_history_seq.py`).
    """
    if len(edits) == 1:  # the usual case, in one comprehension (500 spans on every edit)
        e = edits[0]
        d = len(e.new_lines) - (e.end - e.start)
        return [
            (s + d, t + d, i) if e.end <= s else (s, t, i)
            for s, t, i in spans
            if e.end <= s or e.start >= t
        ]
    ends = [e.end for e in edits]
    if any(a > b for a, b in zip(ends, ends[1:], strict=False)):
        return _map_spans_walking(spans, edits)  # not a prefix: never made here, kept exact
    shifts = list(accumulate((len(e.new_lines) - (e.end - e.start) for e in edits), initial=0))
    n = len(edits)
    out: list[tuple[int, int, int]] = []
    for s, t, entry_id in spans:
        k = bisect_right(ends, s)  # edits[:k] end at or before the span: they shift it
        if k < n and edits[k].start < t:
            continue  # the first edit past its start touches it
        out.append((s + shifts[k], t + shifts[k], entry_id))
    return out


def _map_spans_walking(
    spans: Sequence[tuple[int, int, int]], edits: Sequence[LineEdit]
) -> list[tuple[int, int, int]]:
    """`map_spans` for edits whose ends go down somewhere: each span walks them in order."""
    out: list[tuple[int, int, int]] = []
    for s, t, entry_id in spans:
        shift = 0
        keep = True
        for e in edits:
            if e.end <= s:
                shift += len(e.new_lines) - (e.end - e.start)  # wholly before the span
                continue
            if e.start >= t:
                break  # wholly after it
            keep = False
            break
        if keep:
            out.append((s + shift, t + shift, entry_id))
    return out


def _shifted(values: list[int], shift: int) -> list[int]:
    return [x + shift for x in values] if shift else values


def _apart(edits: Sequence[LineEdit]) -> bool:
    """Sorted, and no two touching (the general path joins touching edits into one region)."""
    return all(a.end < b.start for a, b in zip(edits, edits[1:], strict=False))


def compose(
    base: list[str],
    net: Sequence[LineEdit],
    edits: Sequence[LineEdit],
    *,
    fold: bool,
    index: NetIndex | None = None,
) -> tuple[list[str], list[LineEdit], bool, NetIndex]:
    """Compose `edits` (on the last text, which is `base` with `net` applied) into `net`.

    Returns (new base, new net, mixed, new index). With `fold` (user edits) a change that does
    not overlap the agent's regions goes into the base instead, so it is not shown as the
    agent's; `mixed` says some did overlap and are now shown as part of the agent's change. With
    the previous `index` it costs O(log regions) plus the touched regions plus a shift of the
    later regions' positions (list work); the last text is never built.
    """
    if not net and not fold and _apart(edits):
        # A file the agent touches for the first time (every file of a 1,000-file patch, on
        # its apply and on each replay): no regions to merge, so each edit's net region is
        # the edit trimmed to the lines it changes. The same result as the general path below
        # (tests/engine/test_netdiff_fresh.py), in a quarter of its time (bench/bench_recording.py).
        trimmed = (minimal_edit(base[e.start : e.end], e.new_lines, e.start) for e in edits)
        fresh = [m for m in trimmed if m is not None]
        return base, fresh, False, NetIndex.build(fresh)
    if index is None:
        index = NetIndex.build(net)
    if not edits:
        return base, list(net), False, index
    cum, lstarts, lends = index.cum, index.lstarts, index.lends
    lo = min(e.start for e in edits)
    hi = max(e.end for e in edits)
    i0 = bisect_left(lends, lo)
    i1 = bisect_right(lstarts, hi)
    items: list[tuple[int, int, int, LineEdit]] = [
        (lstarts[i], lends[i], 0, net[i]) for i in range(i0, i1)
    ]
    items.extend((e.start, e.end, 1, e) for e in edits)
    items.sort(key=lambda x: (x[0], x[1], x[2]))
    clusters: list[list[tuple[int, int, int, LineEdit]]] = []
    cluster_end = -1
    for it in items:
        s, end = it[0], it[1]
        joins = clusters and (s < cluster_end or (not fold and s <= cluster_end))
        if joins:
            clusters[-1].append(it)
            cluster_end = max(cluster_end, end)
        else:
            clusters.append([it])
            cluster_end = end
    new_net: list[LineEdit] = list(net[:i0])
    base_edits: list[LineEdit] = []
    d_before = cum[i0]
    bshift = 0
    mixed = False
    for cl in clusters:
        ls = cl[0][0]
        le = max(x[1] for x in cl)
        regions = [x[3] for x in cl if x[2] == 0]
        eds = [x[3] for x in cl if x[2] == 1]
        dsum = sum(len(r.new_lines) - (r.end - r.start) for r in regions)
        if not eds:
            # Untouched; only user edits folded into the base before them move them.
            new_net.extend(LineEdit(r.start + bshift, r.end + bshift, r.new_lines) for r in regions)
            d_before += dsum
            continue
        bs = ls - d_before
        be = le - d_before - dsum
        placed = [(x[0], x[1], x[3]) for x in cl if x[2] == 0]
        parts = _last_lines(base, placed, d_before, ls, eds, le)
        if fold and not regions:
            base_edits.append(LineEdit(bs, be, tuple(parts)))
            bshift += len(parts) - (be - bs)
        else:
            if fold:
                mixed = True
            m = minimal_edit(base[bs:be], parts, bs)
            if m is not None:
                new_net.append(LineEdit(m.start + bshift, m.end + bshift, m.new_lines))
        d_before += dsum
    mid = new_net[i0:]
    if bshift:
        new_net.extend(LineEdit(r.start + bshift, r.end + bshift, r.new_lines) for r in net[i1:])
    else:
        new_net.extend(net[i1:])
    new_base = apply_line_edits(base, base_edits) if base_edits else base
    # The index: unchanged before the window, rebuilt inside it, shifted after it.
    shift = sum(len(e.new_lines) - (e.end - e.start) for e in edits)
    mid_cum = list(accumulate((len(r.new_lines) - (r.end - r.start) for r in mid), initial=cum[i0]))
    mid_starts = [r.start + c for r, c in zip(mid, mid_cum, strict=False)]
    mid_ends = [ls + len(r.new_lines) for ls, r in zip(mid_starts, mid, strict=True)]
    cum_shift = mid_cum[-1] - cum[i1]
    # Most edits keep the line count (a one-line replace): then the tail is copied, not shifted
    # number by number (10,000 regions: ~1 ms an edit in Python).
    new_index = NetIndex(
        cum[:i0] + mid_cum + _shifted(cum[i1 + 1 :], cum_shift),
        lstarts[:i0] + mid_starts + _shifted(lstarts[i1:], shift),
        lends[:i0] + mid_ends + _shifted(lends[i1:], shift),
    )
    return new_base, new_net, mixed, new_index
