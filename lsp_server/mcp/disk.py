"""The headless side of `agent-edit mcp`: the actions on a disk-only context (no editor runs).

Each call opens `actions.headless` for the root (the workspace lock, the rollback of an apply
interrupted meanwhile, the workspace's journal that the editor shows when it starts), runs the
action for this MCP client's session, and lets go. Before anything is written, a guard may refuse
the plan: files another live server's editor holds open (lsp/peers.py), files a vanished editor
had open (mcp/router.py).

The wait for the workspace lock another process holds (up to 30 s: a CLI apply, a process
stopped while it held it) is awaited, not slept: pings and the client's other calls are answered
meanwhile, and a call the client cancels then stops waiting with nothing read or changed. It
blocked the event loop: no ping answered, a cancel not even read, so the cancelled call went on
to edit once the lock came free. Once the lock is held the call runs to its end, cancelled or
not (shielded): a cancel must not stop it between its history entry and its result. A signal
that comes meanwhile stops it as mcp/signals.py says (`busy`).
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
    import anyio

    from lsp_server import actions
    from lsp_server.actions import headless
    from lsp_server.actions.args import refusal_of
    from lsp_server.mcp import signals
    from lsp_server.peers import GuardedApplier

    locked = False
    try:
        async with headless.open(
            root, session=session, notify=log.warning, pause=anyio.sleep
        ) as ctx:
            locked = True
            with anyio.CancelScope(shield=True), signals.busy():
                if guard is not None:
                    ctx.applier = GuardedApplier(ctx.applier, guard)  # type: ignore[assignment]
                try:
                    result = wire(await actions.run(ctx, action, args))
                except actions.InvalidArguments as exc:
                    result = refusal_of(exc)
        if anyio.current_effective_deadline() == float("-inf"):
            log.warning(
                "agent-edit mcp: the client cancelled a %s call after it had begun; it ran to "
                "its end (MCP sends no answer to a cancelled call): what it did is in the "
                "history (agent-edit history).",
                action,
            )
        return result
    except EditError as err:  # a workspace that cannot be made ready (state folder, rollback)
        return err.to_result()
    except KeyboardInterrupt:
        # A signal raised it in the work (mcp/signals.py): the apply was rolled back and its
        # history entry finished on the way here; `stopped` ends the server now.
        signals.stopped()
        raise  # one that is none of ours
    except anyio.get_cancelled_exc_class():
        if not locked:
            log.warning(
                "agent-edit mcp: the client cancelled a %s call while it waited for the "
                "workspace lock; nothing was read or changed.",
                action,
            )
        raise
