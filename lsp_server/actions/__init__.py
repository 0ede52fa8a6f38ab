"""The actions every front runs (LSP commands, the CLI, MCP tools): one module per action, all
written against `context.Context`, every edit through `execute.execute`.

    result = await actions.run(ctx, "replace", {"path": ..., "oldText": ..., "newText": ...})

`run` checks the arguments (malformed: `InvalidArguments`, which each front maps: LSP
InvalidParams, CLI usage error), runs the action, and turns a domain failure into its
`Refusal` (`ok: false`), recording a refused edit in the history. The result is a typed object
(engine/results.py); each front sends `results.wire(result)`, its JSON. Transport-neutral:
nothing here imports pygls, lsprotocol or mcp (ruff TID251).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from lsp_server.actions.args import InvalidArguments, parse
from lsp_server.actions.context import Context
from lsp_server.actions.execute import Journalled, refused
from lsp_server.engine.errors import EditError

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from lsp_server.engine.results import Result  # a union of classes not all loaded at run time

__all__ = ["EDITS", "NAMES", "InvalidArguments", "action", "run"]

Action = Callable[[Context, dict[str, "Any"]], Awaitable["Result"]]

# Each action's module (`run` in it). Imported when first run: a CLI process runs one action,
# and `history` alone pulls in the edit-texts rendering.
MODULES = {
    "read": "read",
    "replace": "replace",
    "write": "write",
    "applyPatch": "apply_patch",
    "history": "history",
    "undo": "undo",
}
NAMES = tuple(MODULES)
EDITS = frozenset({"replace", "write", "applyPatch", "undo"})  # refusals of these are recorded


def action(name: str) -> Action:
    """Action `name`'s `run` (KeyError for a name not in NAMES)."""
    # `__import__` with a fromlist returns the submodule itself, as importlib.import_module
    # would: without the `importlib` package's import on every CLI run.
    module = __import__(f"lsp_server.actions.{MODULES[name]}", fromlist=["run"])
    run_action: Action = module.run
    return run_action


async def run(ctx: Context, name: str, raw_args: Any) -> Result:
    """Action `name`'s result for `raw_args` (a front sends `results.wire` of it); raises
    InvalidArguments if they are malformed (and KeyError for a name not in NAMES)."""
    run_action = action(name)
    try:
        return await run_action(ctx, parse(name, raw_args))
    except Journalled as done:
        return done.error.refusal()
    except EditError as err:
        if name in EDITS:
            given = raw_args[0] if isinstance(raw_args, list | tuple) and raw_args else raw_args
            refused(ctx, name, given, err)
        return err.refusal()
