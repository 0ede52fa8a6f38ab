"""The actions every front runs (LSP commands, the CLI, MCP tools): one module per action, all
written against `context.Context`, every edit through `execute.execute`.

    result = await actions.run(ctx, "replace", {"path": ..., "oldText": ..., "newText": ...})

`run` checks the arguments (malformed: `InvalidArguments`, which each front maps: LSP
InvalidParams, CLI usage error), runs the action, and turns a domain failure into its result
object (`ok: false`), recording a refused edit in the history. Transport-neutral: nothing here
imports pygls, lsprotocol or mcp (ruff TID251).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from lsp_server.actions import apply_patch, history, read, replace, undo, write
from lsp_server.actions.args import InvalidArguments, parse
from lsp_server.actions.context import Context
from lsp_server.actions.execute import Journalled, refused
from lsp_server.engine.errors import EditError

__all__ = ["EDITS", "NAMES", "InvalidArguments", "run"]

Action = Callable[[Context, dict[str, Any]], Awaitable[dict[str, Any]]]

ACTIONS: dict[str, Action] = {
    "read": read.run,
    "replace": replace.run,
    "write": write.run,
    "applyPatch": apply_patch.run,
    "history": history.run,
    "undo": undo.run,
}
NAMES = tuple(ACTIONS)
EDITS = frozenset({"replace", "write", "applyPatch", "undo"})  # refusals of these are recorded


async def run(ctx: Context, name: str, raw_args: Any) -> dict[str, Any]:
    """Action `name`'s result object for `raw_args`; raises InvalidArguments if they are
    malformed (and KeyError for a name not in NAMES)."""
    action = ACTIONS[name]
    try:
        return await action(ctx, parse(name, raw_args))
    except Journalled as done:
        return done.error.to_result()
    except EditError as err:
        if name in EDITS:
            given = raw_args[0] if isinstance(raw_args, list | tuple) and raw_args else raw_args
            refused(ctx, name, given, err)
        return err.to_result()
