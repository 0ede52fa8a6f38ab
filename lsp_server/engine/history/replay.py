"""Replay: the history's in-memory state is what its journal's records give, applied in order.

`Replay` holds the entries (by id), the files the agent touched (`Tracked`, by path, and the ones
a move or a rebase retired), the next id and the memory budgets, and applies the journal's records
to them: `begin` (an entry with its change records and the baselines and user edits the net diff
needs), `finish` (its outcome; then its effect goes into the net diff), `record` (both at once) and
`checkpoint` (a compacted journal's net-diff state, and the budgets' order when entries finished
out of id order: budgets.py). A record this version cannot use is skipped whole and counted, but
for a checkpoint's files: each is one file's net diff, taken or left out (and counted) on its own.
`_compacted` writes the state back as the records of a compacted journal (compaction.py).

A finished entry's effect goes into the net diff lazily: `finish` queues what it needs
(`_Untracked`) and `_settle` takes the queue in, in order, at the first read of the tracked files
(`_by_path`, `_retired`, the only way to them). A CLI apply never reads them after its own
`finish`, so it no longer pays for tracking its 1,000 files there (the next run's replay does,
as it did: nothing is dropped, only moved); a server reads them at its next edit or history call.

The server, a restarted server and the CLI all replay the same journal, so they agree;
`History` (recording.py) adds the journal's transactions and the actions on top.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from itertools import islice

from lsp_server.engine import errors
from lsp_server.engine.history.budgets import DEFAULT_UNDO_WINDOW, Budgets
from lsp_server.engine.history.compaction import begin_json, compacted, kept_entries
from lsp_server.engine.history.entries import (
    Entry,
    args_json,
    cap_diff,
    landed_paths,
    now_iso,
    record_diff,
)
from lsp_server.engine.history.netdiff import edits_from
from lsp_server.engine.history.tracked import Tracked, fits, unsure
from lsp_server.engine.journal import Batch
from lsp_server.engine.records import problem, tracked_problem
from lsp_server.engine.undo import ChangeRecord

# What taking in a record (or a checkpoint's file, or a queued net diff) can still raise on
# values records.py let through: counted as skipped with its reason, never a failed start.
_UNUSABLE = (ArithmeticError, LookupError, TypeError, ValueError, AttributeError)

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

# Shared empty containers for finished entries; never mutated.
_NO_ANY: dict[str, Any] = {}
_NO_DIFFS: dict[str, str] = {}
_NO_LINES: dict[str, list[str]] = {}
_NO_VERSIONS: dict[str, int | None] = {}
_NO_FILES: list[dict[str, Any]] = []
_NO_COMMITTED: list[dict[str, Any]] = []


class _Untracked:
    """What a finished entry's effect on the net diff needs, kept until `Replay._settle` takes
    it in: the entry's own fields change after (its pre-images stripped by the budgets, its
    begin-time data shared empty), so the values are held here as they were at finish."""

    __slots__ = (
        "entry",
        "id",
        "outcome",
        "committed",
        "changes",
        "baselines",
        "user",
        "lines",
        "versions",
    )

    def __init__(self, entry: Entry) -> None:
        self.entry = entry  # for `landed_paths`, which needs only its paths and outcome
        self.id = entry.id
        self.outcome = entry.outcome
        self.committed = entry.committed
        self.changes = entry.changes
        self.baselines = entry._baselines
        self.user = entry._user
        self.lines = entry._base_lines
        self.versions = entry.versions


# Past this many queued entries `_settle` runs at once: the queue holds their pre-images and
# baselines, which the budgets would have let go; a replay of a long journal must not hold them
# all (settling early costs nothing: the next read would pay the same).
UNTRACKED_MAX = 32


class Replay:
    """The entries and the net-diff state of a history, built by applying journal records."""

    def __init__(
        self, *, undo_window: int = DEFAULT_UNDO_WINDOW, clock: Callable[[], str] = now_iso
    ) -> None:
        self.undo_window = undo_window
        self.clock = clock
        self._reset()

    def _reset(self) -> None:
        self._entries: dict[int, Entry] = {}
        # The tracked files: read through `_by_path` / `_retired`, which settle first.
        self._paths: dict[str, Tracked] = {}
        self._gone: list[Tracked] = []
        self._untracked: list[_Untracked] = []
        self._next_id = 1
        self._budgets = Budgets()
        # Entries taken in since the journal's last compaction (its checkpoint), or its start;
        # and the entries the journal holds (a process that compacted it keeps more in memory).
        self._fresh = 0
        self._journaled = 0
        # Records replay could not use (records.py), counted from the journal's start.
        self.skipped = 0
        self.skip_reason = ""

    def _ingest(self, batch: Batch) -> None:
        if batch.reset:
            self._reset()
        if batch.skipped:
            self._skip(batch.skipped, "a line that is not a JSON record")
        for rec in batch.records:
            # A record this version cannot use (hand-edited, cut, from another version) is
            # skipped whole, checked before any of it is applied, rather than refuse to start.
            why = problem(rec)
            if why is None:
                try:
                    self._apply(rec)
                except _UNUSABLE as exc:
                    why = f"{type(exc).__name__}: {str(exc)[:80]}"
            if why is not None:
                self._skip(1, why)

    def _skip(self, count: int, why: str) -> None:
        self.skipped += count
        self.skip_reason = why

    def skipped_note(self) -> str | None:
        """The sentence that says replay skipped records, if it did."""
        if not self.skipped:
            return None
        return (
            f"agent-edit: skipped {self.skipped} journal record(s) it could not use (last: "
            f"{self.skip_reason}); the rest of the history is intact."
        )

    def _apply(self, rec: dict[str, Any]) -> None:
        t = rec.get("t")
        if t == "checkpoint":
            tracked = self._checkpoint_files(rec.get("tracked") or [])
            retired = int(rec.get("retired", 0))
            self._next_id = max(self._next_id, int(rec.get("nextId", 1)))
            # The records before it came in id order; the budgets' queues go back to the order
            # the entries finished in (budgets.py), so the next edit strips the same entry.
            self._budgets.reorder(rec.get("finishOrder") or {})
            self._fresh = 0  # the entries before it are the compaction's
            self._settle()  # what came before is replaced, as when it was taken in at once
            self._paths, self._gone = {}, []
            for i, tr in tracked:
                if i < retired:
                    # Retired, whether or not a file is at its path now: keyed, one whose path
                    # nothing holds (moved there, then away) would take the next edit there.
                    self._gone.append(tr)
                else:
                    self._key(tr)
            return
        entry_id = int(rec["id"])
        self._next_id = max(self._next_id, entry_id + 1)
        if t == "begin" or t == "record":
            self._journaled += 1
            if not rec.get("compacted"):
                self._fresh += 1
        if t == "begin":
            self._apply_begin(rec)
        elif t == "finish":
            entry = self._entries.get(entry_id)
            if entry is not None and not entry.finished:
                self._apply_finish(entry, rec)
        elif t == "record":
            self._apply_begin(rec)
            self._apply_finish(self._entries[entry_id], rec)
        elif t == "saved":
            entry = self._entries.get(entry_id)
            if entry is not None:
                entry.saves = _save_records(rec)

    def _checkpoint_files(self, files: list[Any]) -> list[tuple[int, Tracked]]:
        """A checkpoint's tracked files with their places, each checked on its own: one that
        cannot be used (a hand edit, another version's) is left out of the net diff and counted
        as skipped; the others keep theirs (skipping the whole checkpoint would lose every
        file's)."""
        tracked: list[tuple[int, Tracked]] = []
        for i, data in enumerate(files):
            why = tracked_problem(data)
            if why is None:
                try:
                    tr = Tracked.from_json(data)
                    if fits(tr.net, len(tr.base)):
                        tracked.append((i, tr))
                        continue
                    why = "its net diff is outside its file"
                except _UNUSABLE as exc:
                    why = f"{type(exc).__name__}: {str(exc)[:80]}"
            path = data.get("path") if isinstance(data, dict) else None
            self._skip(1, f"the checkpoint's net diff of {str(path)[:80]}, {why}; left out")
        return tracked

    def _blob(self, sha: str) -> bytes:
        """The journal's blob `sha` (History reads it; without a journal there is none)."""
        raise ValueError(f"blob {sha[:12]} cannot be read without a journal")

    def _baselines(self, rec: Mapping[str, Any]) -> dict[str, Any]:
        """The record's baselines, the texts of those in its pre-image pack read back (without
        those when the pack is missing or altered: counted as skipped, the entry kept)."""
        baselines = dict(rec.get("baselines", {}))
        pack = rec.get("pack")
        if pack is None or not any("at" in b for b in baselines.values()):
            return baselines
        try:
            data = self._blob(pack)
        except ValueError as exc:
            # Missing or altered: never used. Only the net diff needs these texts; the entry
            # (its change records, what undo needs) is in the record's own line, so it stays,
            # and the files whose baseline is lost are left out of the net diff, said once.
            self._skip(
                1,
                f"edit #{rec.get('id')}'s pre-image pack, {exc}; its files are left out of the "
                "net diff, the edit and its undo are kept",
            )
            return {p: b for p, b in baselines.items() if "at" not in b}
        for path, b in baselines.items():
            if "at" not in b:
                continue
            offset, size = b["at"]
            if offset + size > len(data):
                raise ValueError(f"the baseline of {path[:80]} is outside its pack")
            skip = 3 if b.get("bom") else 0  # the text is what follows the BOM
            text = data[offset + skip : offset + size].decode("utf-8", "surrogatepass")
            baselines[path] = {"text": text, "bom": b.get("bom"), "exists": b.get("exists")}
        return baselines

    def _apply_begin(self, rec: Mapping[str, Any]) -> None:
        changes = tuple(ChangeRecord.from_json(c) for c in rec.get("changes", []))
        entry = Entry(
            id=int(rec["id"]),
            time=str(rec.get("time", "")),
            action=str(rec.get("action", "")),
            args_json=args_json(rec.get("args", {})),
            refused_files=_NO_FILES if changes else list(rec.get("files", [])),
            undoes=rec.get("undoes"),
            pid=rec.get("pid"),
            pack=rec.get("pack"),
            changes=changes,
            saves=_save_records(rec),
            _user=dict(rec.get("user", {})),
            _baselines=self._baselines(rec),
        )
        self._entries[entry.id] = entry

    def _apply_finish(self, entry: Entry, rec: Mapping[str, Any]) -> None:
        entry.outcome = str(rec.get("outcome", ""))
        entry.ok = bool(rec.get("ok", entry.outcome in ("applied", "dry-run")))
        entry.error = rec.get("error")
        entry.committed = list(rec["committed"]) if rec.get("committed") else _NO_COMMITTED
        entry.finished = True
        entry.pid = None  # only an unfinished entry needs the process that began it
        entry.pack = None  # nor its pack: the net diff took the baselines in
        entry.versions = dict(rec["versions"]) if rec.get("versions") else _NO_VERSIONS
        if "undoneBy" in rec:
            entry.undone_by = rec["undoneBy"]
        if "diff" in rec:
            entry.diff = rec["diff"]
        elif entry._diffs:
            landed = set(landed_paths(entry, entry.outcome, entry.committed))
            entry.diff = cap_diff([d for p, d in entry._diffs.items() if p in landed])
        else:
            landed = set(landed_paths(entry, entry.outcome, entry.committed))
            entry.diff = cap_diff([record_diff(c) for c in entry.changes if c.path in landed])
        if not rec.get("compacted"):
            self._untracked.append(_Untracked(entry))
            if len(self._untracked) > UNTRACKED_MAX:
                self._settle()
        # Done with them: share empty ones (four dicts per entry add up over 10,000 edits). The
        # versions only served the net diff (`_track`, which has them from `_Untracked`).
        entry.versions = _NO_VERSIONS
        entry._user = entry._baselines = _NO_ANY
        entry._diffs = _NO_DIFFS
        entry._plan_diff = None
        entry._base_lines = _NO_LINES
        if entry.undoes is not None and landed_paths(entry, entry.outcome, entry.committed):
            target = self._entries.get(entry.undoes)
            if target is not None:
                target.undone_by = entry.id
        self._budgets.take(entry, self._entries, self.undo_window)

    @property
    def _by_path(self) -> dict[str, Tracked]:
        """The tracked files by path, every finished entry taken in (`_settle`)."""
        if self._untracked:
            self._settle()
        return self._paths

    @property
    def _retired(self) -> list[Tracked]:
        """The tracked files a move or a rebase retired, every finished entry taken in."""
        if self._untracked:
            self._settle()
        return self._gone

    def _settle(self) -> None:
        """Take the queued finished entries into the net diff, oldest first: the one place
        lazy tracking is caught up (see the module docstring). Figures: bench_recording's
        1,000-file `finish` 36 -> 5 ms CPU, the 100k-line file
        4.6 -> 0.8 ms (best of 7 in one process; the replay that follows pays what it did).

        One that does not fit (a record only a bug or a hand edit makes: records.py checks
        them) is counted as skipped, as replay counts a record it could not apply."""
        queue, self._untracked = self._untracked, []
        for item in queue:
            try:
                self._track(item)
            except _UNUSABLE as exc:
                self._skip(1, f"edit #{item.id}'s net diff, {type(exc).__name__}: {str(exc)[:80]}")

    def _key(self, tr: Tracked) -> None:
        old = self._paths.get(tr.path)
        if old is not None and old is not tr:
            self._gone.append(old)
        self._paths[tr.path] = tr

    def _track(self, entry: _Untracked) -> None:
        """Take the entry's effect into the net diff: user edits seen at begin, then what landed."""
        by_path = self._paths
        for path, data in entry.baselines.items():
            if path not in by_path:
                self._key(
                    Tracked.start(
                        path,
                        data.get("text"),
                        bool(data.get("bom")),
                        bool(data.get("exists")),
                        entry.lines.get(path),
                    )
                )
        for path, data in entry.user.items():
            tr = by_path.get(path)
            if tr is None:
                continue
            if "rebase" in data:
                r = data["rebase"]
                tr.rebase(r.get("text"), bool(r.get("bom")), bool(r.get("exists")), entry.id)
            else:
                edits = edits_from(data["edits"])
                if not fits(edits, tr.last_len()):
                    unsure(tr, entry.id)
                    continue
                tr.user_edits(edits, entry.id)
                if "bom" in data:
                    tr.last_bom = bool(data["bom"])
        if entry.outcome == "dry-run":
            return
        landed = set(landed_paths(entry.entry, entry.outcome, entry.committed))
        states = {c.get("path"): c.get("state") for c in entry.committed}
        for rec in entry.changes:
            tr = by_path.get(rec.path)
            if tr is None:
                continue
            if rec.path in landed:
                if rec.change in ("update", "move") and not fits(rec.edits(), tr.last_len()):
                    unsure(tr, entry.id)
                    continue
                tr.agent_change(rec, entry.versions.get(rec.target_path), entry.id)
                if rec.moved_to and rec.moved_to != rec.path:
                    del by_path[rec.path]
                    self._key(tr)
            elif states.get(rec.path) == "unknown":
                tr.uncertain = True
                tr.note(
                    f"edit #{entry.id} may have partly landed here; later changes are compared "
                    "with what the agent last knew"
                )

    def kept_entries(self) -> int:
        """How many entries a compaction keeps at most (history/compaction.py)."""
        return kept_entries(self.undo_window)

    def wants_fewer_entries(self) -> bool:
        """Whether the journal holds more entries than a compaction keeps, with half that many
        taken in since its last compaction: each compaction then waits for as many new entries
        as it can drop at least, so its rewrite is paid once per kept_entries/2 edits. Or far
        more than it keeps (a journal an earlier version compacted only for its size, thousands
        of entries, none new): at once, for any new entry."""
        keep = self.kept_entries()
        n = self._journaled
        return n > keep and (self._fresh >= keep // 2 or (n > 3 * keep and self._fresh > 0))

    def _forget_dropped(self, kept: Collection[int]) -> None:
        """Forget the entries this process's compaction left out of the journal (`kept`: the
        ids it holds), as a process replaying that journal never has them: a long-lived
        language server listed edits the CLI said were "no longer in the history", and kept
        every entry of a session in memory until it restarted. Their diffs leave the diff
        budget's queue with their weight (an id the queue kept, whose entry was gone, was never
        taken off its size: newer diffs were dropped for it), and so the checkpoint's
        `finishOrder` with them."""
        gone = [i for i in self._entries if i not in kept]
        if not gone:
            return
        self._budgets.forget({i: self._entries.pop(i) for i in gone})

    def _compacted(self, target: int, written: Collection[int] = ()) -> list[dict[str, Any]]:
        """The journal rewritten from this state (history/compaction.py `compacted`), never
        without the entries of `written`."""
        return compacted(
            list(self._entries.values()),
            undoable=self._budgets.undoable_ids(self.undo_window),
            keep=self.kept_entries(),
            tracked=[*self._retired, *self._by_path.values()],
            retired=len(self._retired),
            next_id=self._next_id,
            time=self.clock(),
            finish_order=self._budgets.finish_order(),
            target=target,
            written=written,
        )

    def _begin_json(self, e: Entry) -> dict[str, Any]:
        return begin_json(e)

    # -- reading ------------------------------------------------------------------------------

    @property
    def entries(self) -> list[Entry]:
        return list(self._entries.values())

    def entry(self, entry_id: int) -> Entry:
        entry = self._entries.get(entry_id)
        if entry is None and 0 < entry_id < self._next_id:
            # An id the history gave, gone since: the oldest entries are dropped (compaction.py
            # KEPT_ENTRIES). "There is no edit #N" told the agent that made it that it never was.
            oldest = next(iter(self._entries), self._next_id)
            raise errors.invalid_argument(
                f"Edit #{entry_id} is no longer in the history: it keeps only its newest edits "
                f"(about {self.kept_entries()}; fewer when they are large), and the oldest "
                f"it holds is #{oldest}.",
                "List the history (agentEdit.history) and use one of its ids; the net diff "
                "still shows what the older edits changed, which can no longer be undone.",
                argument="editId",
                editId=entry_id,
            )
        if entry is None:
            raise errors.invalid_argument(
                f"There is no edit #{entry_id} in the history.",
                "List the history (agentEdit.history) and use one of its ids.",
                argument="editId",
                editId=entry_id,
            )
        return entry

    def oldest_id(self) -> int | None:
        """The id of the oldest entry held (None: none)."""
        return next(iter(self._entries), None)

    def find(self, entry_id: int) -> Entry | None:
        """The entry with this id, or None."""
        return self._entries.get(entry_id)

    def latest(self, count: int) -> list[Entry]:
        """The last `count` entries, oldest first."""
        return list(islice(reversed(self._entries.values()), count))[::-1]

    def entry_count(self) -> int:
        return len(self._entries)

    def tracked_at(self, path: str) -> Tracked | None:
        """The file the agent touched that is now at `path`, or None."""
        return self._by_path.get(path)

    def tracked_files(self) -> list[Tracked]:
        """Every file the agent touched this session (what `net` renders), oldest first."""
        return [*self._retired, *self._by_path.values()]

    def tracked_count(self) -> int:
        """How many files the net diff can name (an upper bound: some may be back as they were)."""
        return len(self._retired) + len(self._by_path)


def _save_records(rec: Mapping[str, Any]) -> tuple[ChangeRecord, ...]:
    """A `saved` record's (or a compacted entry's) save changes (History.saved)."""
    return tuple(ChangeRecord.from_json(c) for c in rec.get("saves") or ())
