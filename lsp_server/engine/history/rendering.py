"""Rendering the history: the answers of `agentEdit.history` (JSON and diff text), the net diff
file by file, and where the still-undoable agent edits sit in a file (what code lenses mark; their
titles and commands are the LSP layer's, lsp/lenses.py).

Each answer is a generator that yields between entries and files (`iter_*`), so a front end can
run it in slices between other work; `drive` runs one to its end. Each builds only what it shows:
the last `limit` entries, the first `net_files` changed files, diffs cut past a size.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping

from lsp_server.engine.history.entries import ENTRY_DIFF_CAP
from lsp_server.engine.history.netdiff import map_spans
from lsp_server.engine.history.tracked import Tracked
from lsp_server.engine.text import Snapshot
from lsp_server.engine.undo import line_diff

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from lsp_server.engine.history.replay import Replay

    T = TypeVar("T")

# What one `history` answer builds at most: the files of the net diff, the files each entry
# names (a 100k-file patch made a 90 s answer of every one of them).
NET_FILES = 200
ENTRY_FILES = 1000
LIVE_CHANGED = "the buffer has changed since the agent's last edit"

Live = Mapping[str, Snapshot] | Callable[[str], Snapshot | None]
Iterator_ = Generator[None, None, "T"]  # T quoted: typing is the type checker's


def drive(gen: Generator[None, None, T]) -> T:
    """Run an `iter_*` generator of the history to its end; its result."""
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            result: T = stop.value
            return result


def net(
    history: Replay, live: Live | None = None, files: int | None = None
) -> list[dict[str, Any]]:
    """Per file: the agent's net change since it first touched it, git-style, with notes
    (the first `files` changed files when given)."""
    return drive(iter_net(history, live, files))[0]


def iter_net(
    history: Replay, live: Live | None = None, files: int | None = None
) -> Iterator_[tuple[list[dict[str, Any]], bool]]:
    """`net` one file at a time (a generator: it yields between files, so a front end can
    let other work run; `drive` runs it through). Returns (items, cut): `cut` when files
    past `files` were left out (not rendered at all)."""
    out: list[dict[str, Any]] = []
    # A copy of the list: an edit that lands while this yields does not disturb the walk
    # (each file's diff is made in one step, so each is consistent by itself).
    for tr in history.tracked_files():
        if files is not None and len(out) >= files:
            return out, True
        yield
        rendered = tr.render()
        if rendered is None:
            continue
        item = dict(rendered)
        notes = list(tr.notes)
        changed = live_changed(tr, live)
        if changed:
            notes.append(LIVE_CHANGED)
        item["liveChanged"] = changed
        item["notes"] = notes
        out.append(item)
    return out, False


def live_changed(tr: Tracked, live: Live | None) -> bool:
    if live is None:
        return False
    snap = live.get(tr.path) if isinstance(live, Mapping) else live(tr.path)
    if snap is None:
        return False
    return not tr.shows(snap)


def lens_spans(history: Replay, path: str, live: Snapshot | None = None) -> list[dict[str, Any]]:
    """Where to put code lenses in `path`: the lines each still-undoable agent edit left,
    `[{line, endLine, editId, action}]` (0-based, end exclusive), in the coordinates
    of `live` (the buffer now) when given; user edits since the agent's last edit move them
    (an O(file) comparison, done only when the text differs)."""
    tr = history.tracked_at(path)
    if tr is None or not tr.last_exists or not tr.spans:
        return []
    spans = tr.spans
    if live is not None and not tr.shows(live):
        if not live.exists:
            return []
        spans = map_spans(spans, line_diff(tr.last, live.lines))
    out: list[dict[str, Any]] = []
    for start, end, entry_id in spans:
        entry = history.find(entry_id)
        if entry is None or not entry.undoable:
            continue
        out.append(
            {
                "line": start,
                "endLine": end,
                "editId": entry_id,
                "action": entry.action,
            }
        )
    return out


def to_json(
    history: Replay,
    live: Live | None = None,
    edit_id: int | None = None,
    limit: int | None = None,
    diffs: bool = True,
    net_cap: int = ENTRY_DIFF_CAP,
    net_files: int | None = NET_FILES,
) -> dict[str, Any]:
    """The `agentEdit.history` result (`format: json`); see `iter_json`."""
    return drive(iter_json(history, live, edit_id, limit, diffs, net_cap, net_files))


def iter_json(
    history: Replay,
    live: Live | None = None,
    edit_id: int | None = None,
    limit: int | None = None,
    diffs: bool = True,
    net_cap: int = ENTRY_DIFF_CAP,
    net_files: int | None = NET_FILES,
) -> Iterator_[dict[str, Any]]:
    """`to_json` as a generator that yields between entries and files (run it with `drive`,
    or a step at a time between other work). Builds only what the answer shows: the last
    `limit` entries (with their diffs unless `diffs` is false; each names at most
    ENTRY_FILES files, `filesTotal` says how many it has), `total`, and the net diff of the
    first `net_files` changed files (`netCut: true` and `netFiles`, the files tracked, when
    more may have changed), cut past `net_cap` characters in all (`diffCut: true`)."""
    if edit_id is not None:
        return {"ok": True, "entries": [history.entry(edit_id).to_json()], "total": 1}
    # Counted with the entries chosen: edits that land while this yields (the server runs
    # it in slices) are in neither, so `total` never names entries the answer lacks.
    total = history.entry_count()
    count = total if limit is None else max(0, min(limit, total))
    chosen = history.latest(count)
    entries = []
    for e in chosen:
        yield
        entries.append(e.to_json(with_diff=diffs, files_cap=ENTRY_FILES))
    net, cut = yield from iter_net(history, live, net_files)
    size = 0
    for item in net:
        # The net diff of a long session can be megabytes: past the cap each file is summed
        # up (`format: diff` gives it whole).
        if size + len(item["diff"]) > net_cap:
            first = item["diff"].split("\n", 1)[0]
            item["diff"] = f"{first}\n# diff cut: +{item['added']} -{item['removed']} lines\n"
            item["diffCut"] = True
        size += len(item["diff"])
    out: dict[str, Any] = {
        "ok": True,
        "entries": entries,
        "total": total,
        "net": net,
    }
    if cut:
        out["netCut"] = True
        out["netFiles"] = history.tracked_count()
        out["netNote"] = (
            f"the net diff shows the first {len(net)} changed files of up to "
            f"{history.tracked_count()} the agent touched; ask for more with netLimit"
        )
    if history.skipped:
        out["skipped"] = history.skipped
        out["skippedNote"] = history.skipped_note()
    oldest = history.oldest_id()
    if oldest is not None and oldest > 1:
        out["droppedNote"] = (
            f"edits before #{oldest} are no longer in the history, which keeps only its newest "
            f"(about {history.kept_entries()}); the net diff still includes what they changed"
        )
    # A journal that could not be read (a directory, a FIFO in its place): without this the
    # answer was `entries: []`, read as "no edits recorded" (tests/cli/test_cli_history_limits.py).
    journal_error = getattr(history, "journal_error", None)
    if journal_error:
        out["journalError"] = journal_error
    return out


def to_diff_text(
    history: Replay,
    live: Live | None = None,
    edit_id: int | None = None,
    net_files: int | None = None,
) -> str:
    """The `agentEdit.history` result text for `format: diff`; see `iter_diff_text`."""
    return drive(iter_diff_text(history, live, edit_id, net_files))


def iter_diff_text(
    history: Replay,
    live: Live | None = None,
    edit_id: int | None = None,
    net_files: int | None = None,
) -> Iterator_[str]:
    """One entry's diff, or the session's net diff (of the first `net_files` changed files,
    when given, with a `#` line saying so) with notes as `#` lines (which `git apply` skips);
    a generator as `iter_json`."""
    if edit_id is not None:
        e = history.entry(edit_id)
        head = f"# agent edit #{e.id} {e.action} {e.outcome} {e.time}\n"
        return head + (e.diff or "")
    parts: list[str] = []
    net, cut = yield from iter_net(history, live, net_files)
    for item in net:
        for note in item["notes"]:
            parts.append(f"# {item['path']}: {note}\n")
        parts.append(item["diff"])
    if cut:
        parts.append(
            f"# net diff cut: the first {len(net)} changed files of up to "
            f"{history.tracked_count()}; ask for more with netLimit\n"
        )
    return "".join(parts)
