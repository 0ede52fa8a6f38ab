"""`replace`: str_replace of `oldText` by `newText` in one file (exactly one match unless
`replaceAll`), checked against the caller's `expect` or last read."""

from __future__ import annotations

from lsp_server.actions.context import Context
from lsp_server.actions.execute import execute
from lsp_server.actions.session import token_now
from lsp_server.engine.planner import check_precondition, plan_replace, require_exists
from lsp_server.engine.results import EditResult

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


async def run(ctx: Context, a: dict[str, Any]) -> EditResult:
    where = ctx.resolve(a["path"])
    # What the agent knew when it sent this request: a racing edit must not inherit the
    # token refreshed by the edit it raced with.
    known = ctx.session.known(where.rel, a.get("expect"))
    async with ctx.edit_lock:
        snap = ctx.snapshot(where)
        require_exists(snap)
        known = token_now(where.rel, known, ctx.open_id(where))
        # oldText is itself checked against the file as it is now, so without a read or
        # `expect` the replace still cannot land on text the agent did not name.
        check_precondition(snap, known, None, required=False)
        change = plan_replace(
            snap,
            a["oldText"],
            a["newText"],
            replace_all=a.get("replaceAll", False),
            match=a.get("match", "exact"),
        )
        return await execute(
            ctx, "replace", a, [change], {where.rel: where}, a.get("dryRun", False)
        )
