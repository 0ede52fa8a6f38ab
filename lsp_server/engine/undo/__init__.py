"""Reversible change records, undo with a three-way check, and rollback of partly applied plans.

What lives where (everything other modules import is re-exported here):

- `changes.py`: `ChangeRecord` and `Hunk` (what the journal keeps of a file's change),
  `record_change`, `line_diff`, and whether a snapshot shows a change's before or after state;
- `reverting.py`: `plan_undo` (three-way checked, regions relocated, conflicts listed) and
  `undo_paths`;
- `rollback.py`: `plan_rollback` / `rollback_records`, the committed list of what landed and the
  plan that reverts it.

All of it is pure: snapshots in, plans and lists out.
"""

from __future__ import annotations

from lsp_server.engine.undo.changes import (
    CONTEXT,
    MIDDLE_LIMIT,
    ChangeRecord,
    Hunk,
    line_diff,
    record_change,
    save_record,
)

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from lsp_server.engine.undo.reverting import (
        MAX_CONFLICT_LINES,
        Undoable,
        plan_undo,
        undo_paths,
    )
    from lsp_server.engine.undo.rollback import CommitState, plan_rollback, rollback_records

# Undo and rollback load with their first name read (PEP 562 `__getattr__`), not with the
# package: every edit records its changes (changes.py), few plan an undo or a rollback, and a
# headless apply's imports were 0.5 ms the heavier for them (bench/bench_startup.py,
# `-X importtime`: reverting 0.33 + rollback 0.18 ms; --instructions --rounds 3, 90107e9 ->
# 6fd0e34: 153.5 -> 151.7 M instructions past interpreter start).
# `from lsp_server.engine.undo import plan_undo` works as before.
_LATER = {
    "MAX_CONFLICT_LINES": "reverting",
    "Undoable": "reverting",
    "plan_undo": "reverting",
    "undo_paths": "reverting",
    "CommitState": "rollback",
    "plan_rollback": "rollback",
    "rollback_records": "rollback",
}


def __getattr__(name: str) -> Any:
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(__import__(f"{__name__}.{module}", fromlist=[name]), name)


__all__ = [
    "CONTEXT",
    "MAX_CONFLICT_LINES",
    "MIDDLE_LIMIT",
    "ChangeRecord",
    "CommitState",
    "Hunk",
    "Undoable",
    "line_diff",
    "plan_rollback",
    "plan_undo",
    "record_change",
    "rollback_records",
    "save_record",
    "undo_paths",
]
