"""The entries of the history: one per action, with its arguments, files, outcome and own diff.

`Entry` is what an action leaves (the journal's `begin`/`finish`/`record` lines replayed); this
module also holds how an entry shows its arguments (`summarize_args`, cut to a size), how its own
diff is made from its change records after a crash (`record_diff`) and capped (`cap_diff`), which of
its files landed (`landed_paths`), and how an error is kept (`error_json`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter

from lsp_server.engine.errors import EditError
from lsp_server.engine.model import Plan
from lsp_server.engine.text import content, split_lines
from lsp_server.engine.undo import ChangeRecord

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

ARG_STRING_CAP = 200
ARG_LIST_CAP = 20
ENTRY_DIFF_CAP = 256 * 1024


def now_iso() -> str:
    """The time now as ISO 8601 in UTC to the millisecond (`...T12:34:56.789+00:00`), with
    `time`: `datetime` would be one more import of every headless edit (bench_startup.py)."""
    seconds, ns = divmod(time.time_ns(), 1_000_000_000)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{stamp}.{ns // 1_000_000:03d}+00:00"


def summarize_args(value: Any, depth: int = 0) -> Any:
    """The arguments as an entry shows them: big strings and lists cut, with their size said."""
    if isinstance(value, str):
        if len(value) <= ARG_STRING_CAP:
            return value
        return value[:ARG_STRING_CAP] + f"... ({len(value)} chars)"
    if isinstance(value, Mapping):
        if depth > 4:
            return "{...}"
        return {str(k): summarize_args(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [summarize_args(v, depth + 1) for v in value[:ARG_LIST_CAP]]
        if len(value) > ARG_LIST_CAP:
            items.append(f"... ({len(value)} items)")
        return items
    if value is None or isinstance(value, bool | int | float):
        return value
    return summarize_args(str(value), depth)


def args_json(args: Mapping[str, Any]) -> str:
    return json.dumps(args, ensure_ascii=False, separators=(",", ":"))


@dataclass(slots=True)
class Entry:
    """One action in the history."""

    id: int
    time: str
    action: str
    # The summarised arguments as compact JSON: a dict with its own key and value strings cost
    # ~600 bytes an entry, the text ~150 (10,000 edits: 4.5 MB); `args` decodes it when shown.
    args_json: str
    # The files of a refused action (it has no change records); otherwise derived from `changes`.
    refused_files: list[dict[str, Any]] = field(default_factory=list)
    outcome: str = "pending"
    ok: bool = False
    diff: str | None = ""
    committed: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, Any] | None = None
    undoes: int | None = None
    undone_by: int | None = None
    changes: tuple[ChangeRecord, ...] = ()
    # What the editor's save changed after the edit, per file (`History.saved`): the edit's
    # text -> the text the save left. Undo reverts these first (undo/reverting.py).
    saves: tuple[ChangeRecord, ...] = ()
    finished: bool = False
    # Buffer versions the editor reported after the edit, per target path (from `finish`).
    versions: dict[str, int | None] = field(default_factory=dict)
    pid: int | None = None  # the process that began it, while it is unfinished
    # The blob holding its baselines (history/recording.py's pack), while it is unfinished: a
    # compaction keeps it named (the disk writer's apply journal may name it too).
    pack: str | None = None
    # Between begin and finish only: what the net diff needs to take the edit in.
    _user: dict[str, Any] = field(default_factory=dict, repr=False)
    _baselines: dict[str, Any] = field(default_factory=dict, repr=False)
    _diffs: dict[str, str] = field(default_factory=dict, repr=False)
    # The whole plan's diff as the caller made it (`History.begin(diff=...)`): the entry's
    # diff when all of it lands.
    _plan_diff: str | None = field(default=None, repr=False)
    # The baselines' line lists, copied at begin: sharing the line strings with the document
    # store instead of splitting the text again halves what a big file costs in memory.
    _base_lines: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @property
    def args(self) -> dict[str, Any]:
        args: dict[str, Any] = json.loads(self.args_json)
        return args

    @property
    def files(self) -> list[dict[str, Any]]:
        if self.changes:
            return [c.file_entry() for c in self.changes]
        return self.refused_files

    @property
    def paths(self) -> list[str]:
        from lsp_server.engine.undo import undo_paths  # here: see undo/__init__.py

        return undo_paths(self.changes)

    @property
    def undoable(self) -> bool:
        if not self.finished or self.undone_by is not None:
            return False
        if self.outcome == "applied":  # the usual case, without a list of every path landed
            landed = bool(self.changes)
        else:
            landed = bool(landed_paths(self, self.outcome, self.committed, unknown=True))
        return landed and all(map(has_preimage, self.changes))

    def to_json(self, with_diff: bool = True, files_cap: int | None = None) -> dict[str, Any]:
        if files_cap is not None and len(self.changes) > files_cap:
            files = [c.file_entry() for c in self.changes[:files_cap]]
        else:
            files = self.files
        out: dict[str, Any] = {
            "id": self.id,
            "time": self.time,
            "action": self.action,
            "args": self.args,
            "files": files,
            "outcome": self.outcome,
            "ok": self.ok,
        }
        if len(files) < len(self.changes):
            out["filesTotal"] = len(self.changes)
        if with_diff:
            out["diff"] = self.diff
            if self.diff is None:
                out["diffDropped"] = True
        if self.saves:
            out["changedOnSave"] = [{"path": s.path, "diff": record_diff(s)} for s in self.saves]
        if self.error:
            out["error"] = self.error
        if self.committed:
            out["committed"] = self.committed
        if self.undoes is not None:
            out["undoes"] = self.undoes
        if self.undone_by is not None:
            out["undoneBy"] = self.undone_by
        out["undoable"] = self.undoable
        if not self.finished:
            out["unfinished"] = True
        return out


has_preimage = attrgetter("preimage")


def record_diff(rec: ChangeRecord) -> str:
    """A diff from a record alone (for plans recovered after a crash, whose snapshots are gone)."""
    old_p, new_p = rec.path, rec.target_path
    head = f"diff --git a/{old_p} b/{new_p}\n"
    if rec.change == "add":
        lines = split_lines(rec.after_text or "")
        n = len(lines) - 1 if lines[-1] == "" else len(lines)
        body = "".join("+" + content(x) + "\n" for x in lines[:n])
        return (
            head + f"new file mode 100644\n--- /dev/null\n+++ b/{new_p}\n@@ -0,0 +1,{n} @@\n" + body
        )
    if rec.change == "delete":
        lines = split_lines(rec.before_text or "")
        n = len(lines) - 1 if lines[-1] == "" else len(lines)
        body = "".join("-" + content(x) + "\n" for x in lines[:n])
        return (
            head
            + f"deleted file mode 100644\n--- a/{old_p}\n+++ /dev/null\n@@ -1,{n} +0,0 @@\n"
            + body
        )
    if rec.change == "move":
        head += f"rename from {old_p}\nrename to {new_p}\n"
    if not rec.hunks:
        return head if rec.change == "move" else ""
    out = [head, f"--- a/{old_p}\n+++ b/{new_p}\n"]
    for h in rec.hunks:
        before = [x for x in h.before if x]
        after = [x for x in h.after if x]
        c1, c2 = list(h.ctx_before), [x for x in h.ctx_after if x]
        o_start = h.start - len(c1)
        n_start = h.after_start - len(c1)
        o_len = len(c1) + len(before) + len(c2)
        n_len = len(c1) + len(after) + len(c2)
        out.append(f"@@ -{o_start + 1},{o_len} +{n_start + 1},{n_len} @@\n")
        out.extend(" " + content(x) + "\n" for x in c1)
        out.extend("-" + content(x) + "\n" for x in before)
        out.extend("+" + content(x) + "\n" for x in after)
        out.extend(" " + content(x) + "\n" for x in c2)
    return "".join(out)


def cap_diff(parts: Sequence[str], cap: int = ENTRY_DIFF_CAP) -> str:
    out: list[str] = []
    size = 0
    for d in parts:
        if size + len(d) > cap:
            first = d.split("\n", 1)[0]
            plus = sum(1 for x in d.splitlines() if x.startswith("+") and not x.startswith("+++"))
            minus = sum(1 for x in d.splitlines() if x.startswith("-") and not x.startswith("---"))
            d = f"{first}\n# diff cut: +{plus} -{minus} lines\n"
        size += len(d)
        out.append(d)
    return "".join(out)


def landed_paths(
    entry: Entry, outcome: str, committed: Sequence[Mapping[str, Any]], *, unknown: bool = False
) -> list[str]:
    """The paths whose change is in effect after the action (with `unknown`: or may be).

    For partial outcomes the committed list says it, as it stands after any rollback; a
    PARTIAL_ROLLED_BACK action left nothing in effect whatever its list says landed for a while.
    """
    if outcome == "applied":
        return [c.path for c in entry.changes]
    if outcome in ("dry-run", "PARTIAL_ROLLED_BACK"):
        return []
    wanted = ("applied", "unknown") if unknown else ("applied",)
    states = {c.get("path"): c.get("state") for c in committed}
    return [c.path for c in entry.changes if states.get(c.path) in wanted]


def undoes_of(plan: Plan) -> int | None:
    value = plan.summary.get("undoes")
    return value if isinstance(value, int) else None


def error_json(error: EditError) -> dict[str, Any]:
    return {
        "code": str(error.code),
        "message": error.message,
        "hint": error.hint,
        "details": summarize_args(error.details),
    }
