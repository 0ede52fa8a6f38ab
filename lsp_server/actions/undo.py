"""`undo`: revert one edit by id, only where its lines are still as it left them (else
CONFLICT); the undo is itself an edit in the history."""

from __future__ import annotations

from lsp_server.actions.context import Context
from lsp_server.actions.execute import execute
from lsp_server.engine.results import EditResult

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


async def run(ctx: Context, a: dict[str, Any]) -> EditResult:
    edit_id = a["editId"]
    async with ctx.edit_lock:
        ctx.history.refresh()
        where = {p: ctx.resolve(p) for p in ctx.history.undo_paths(edit_id)}
        current = {p: ctx.snapshot(r) for p, r in where.items()}
        plan = ctx.history.plan_undo(edit_id, current)
        return await execute(
            ctx, "undo", a, list(plan.changes), where, a.get("dryRun", False), undoes=edit_id
        )
