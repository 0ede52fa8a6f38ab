"""`write`: create a file, or overwrite one the caller has seen (an `expect`, or a read whose
token still holds, unless the requireRead setting is off)."""

from __future__ import annotations

from lsp_server.actions.context import Context
from lsp_server.actions.execute import execute
from lsp_server.actions.session import token_now
from lsp_server.engine import errors
from lsp_server.engine.planner import check_precondition, plan_write
from lsp_server.engine.results import EditResult

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


async def run(ctx: Context, a: dict[str, Any]) -> EditResult:
    where = ctx.resolve(a["path"])
    known = ctx.session.known(where.rel, a.get("expect"))
    async with ctx.edit_lock:
        snap = ctx.snapshot(where)
        known = token_now(where.rel, known, ctx.open_id(where))
        if snap.exists:
            # Overwriting replaces text the agent may never have seen: it needs a read or
            # `expect` (unless the requireRead setting is off).
            check_precondition(snap, known, None, required=ctx.settings.require_read)
        elif a.get("expect"):
            raise errors.not_found(
                f"{where.rel} does not exist, but expect was given for it.",
                "Drop expect to create the file, or check the path.",
                path=where.rel,
            )
        change = plan_write(snap, a["text"])
        if change.change == "update" and not change.edits:
            raise errors.invalid_argument(
                f"NO_CHANGE: {where.rel} already has exactly this text.",
                "Nothing to do; send different text to change it.",
                argument="text",
                reason="NO_CHANGE",
            )
        return await execute(ctx, "write", a, [change], {where.rel: where}, a.get("dryRun", False))
