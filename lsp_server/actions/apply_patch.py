"""`applyPatch`: a V4A patch over any number of files, all of them or none; each file it updates
is checked against the caller's `expect` for it, or its last read."""

from __future__ import annotations

from lsp_server.actions.context import Context
from lsp_server.actions.execute import execute
from lsp_server.actions.paths import Resolved
from lsp_server.actions.session import token_now
from lsp_server.engine.planner import check_precondition
from lsp_server.engine.results import EditResult
from lsp_server.engine.text import Snapshot

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


async def run(ctx: Context, a: dict[str, Any]) -> EditResult:
    expect = {
        r.rel: ctx.session.known(r.rel, v)
        for k, v in (a.get("expect") or {}).items()
        if (r := ctx.resolve(k))
    }
    known = {p: ctx.session.known(p, None) for p in ctx.session.reads}  # when it was sent
    async with ctx.edit_lock:
        where: dict[str, Resolved] = {}

        def get_snapshot(path: str) -> Snapshot:
            r = ctx.resolve(path)
            where[r.rel] = r
            return ctx.snapshot(r)

        plan = ctx.plan_patch(a["patch"], get_snapshot)
        for c in plan.changes:
            if c.moved_to and c.moved_to not in where:
                where[c.moved_to] = ctx.resolve(c.moved_to, argument="moveTo")
            if c.path not in where:  # read by a front's planner elsewhere (a child process)
                where[c.path] = ctx.resolve(c.path)
            if c.before.exists:
                opened = ctx.open_id(where[c.path])
                check_precondition(
                    c.before,
                    token_now(c.path, expect.get(c.path), opened),
                    token_now(c.path, known.get(c.path), opened),
                    required=False,  # context and removed lines are checked as they are now
                )
        return await execute(
            ctx, "applyPatch", a, list(plan.changes), where, a.get("dryRun", False)
        )
