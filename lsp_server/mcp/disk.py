"""The headless side of `agent-edit mcp`: the actions on a disk-only context (no editor runs).

Each call opens `actions.headless` for the root (the workspace lock, the rollback of an apply
interrupted meanwhile, the workspace's journal that the editor shows when it starts), runs the
action for this MCP client's session, and lets go. Before anything is written, a guard may refuse
the plan: files another live server's editor holds open (lsp/peers.py), files a vanished editor
had open (mcp/router.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from lsp_server.engine.errors import EditError
from lsp_server.engine.results import wire

if TYPE_CHECKING:
    from lsp_server.actions.session import Session
    from lsp_server.peers import Guard

log = logging.getLogger(__name__)


async def run(
    root: str, session: Session, action: str, args: Any, guard: Guard | None = None
) -> dict[str, Any]:
    from lsp_server import actions
    from lsp_server.actions import headless
    from lsp_server.actions.args import refusal_of
    from lsp_server.peers import GuardedApplier

    try:
        async with headless.open(root, session=session, notify=log.warning) as ctx:
            if guard is not None:
                ctx.applier = GuardedApplier(ctx.applier, guard)  # type: ignore[assignment]
            try:
                return wire(await actions.run(ctx, action, args))
            except actions.InvalidArguments as exc:
                return refusal_of(exc)
    except EditError as err:  # a workspace that cannot be made ready (state folder, rollback)
        return err.to_result()
