"""`history`: the workspace's edits (json: entries and the net diff; diff: unified text), or one
edit's texts before and after; what other processes journalled is taken in first."""

from __future__ import annotations

from lsp_server.actions.context import Context
from lsp_server.engine import edit_texts, errors
from lsp_server.engine.history import NET_FILES
from lsp_server.engine.read_results import HistoryDiff, HistoryEntries, HistoryTexts

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


async def run(ctx: Context, a: dict[str, Any]) -> HistoryEntries | HistoryDiff | HistoryTexts:
    for name in ("limit", "netLimit"):
        # A negative count showed no entry at all, which the CLI then read as "no agent
        # edits recorded in this workspace" (tests/cli/test_cli_history_limits.py).
        if a.get(name) is not None and a[name] < 0:
            raise errors.invalid_argument(
                f"{name} is {a[name]}; it is a count of entries (or files) to show, 0 or more.",
                f"Give {name} as a whole number from 0, or leave it out for the default.",
                argument=name,
            )
    history = ctx.history
    history.refresh()
    if a.get("texts"):
        return edit_texts.texts_result(history, a.get("editId"), ctx.live)
    files = a.get("netLimit", NET_FILES)
    if a.get("format", "json") == "diff":
        text = await ctx.steps(history.iter_diff_text(ctx.live, a.get("editId"), files))
        return HistoryDiff(diff=text)
    # The history renders its entries as JSON objects already; the answer is typed here.
    rendered = await ctx.steps(
        history.iter_json(
            live=ctx.live, edit_id=a.get("editId"), limit=a.get("limit", 200), net_files=files
        )
    )
    return HistoryEntries.of(rendered)
