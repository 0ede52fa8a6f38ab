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

from lsp_server.engine.undo.changes import (
    CONTEXT,
    MIDDLE_LIMIT,
    ChangeRecord,
    Hunk,
    line_diff,
    record_change,
)
from lsp_server.engine.undo.reverting import MAX_CONFLICT_LINES, Undoable, plan_undo, undo_paths
from lsp_server.engine.undo.rollback import CommitState, plan_rollback, rollback_records

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
    "undo_paths",
]
