"""`read`: a file as the caller sees it (buffer or disk), optionally a numbered line range;
the read is the session's token for later edits (read-before-edit)."""

from __future__ import annotations

from lsp_server.actions.context import Context
from lsp_server.engine import errors
from lsp_server.engine.planner import require_exists
from lsp_server.engine.read_results import ReadResult
from lsp_server.engine.text import describe_eol

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


async def run(ctx: Context, a: dict[str, Any]) -> ReadResult:
    where = ctx.resolve(a["path"])
    snap = ctx.read(where)
    require_exists(snap)
    lines = snap.lines
    total = len(lines) - (1 if lines[-1] == "" else 0)
    start = a.get("startLine") or 1
    end = a.get("endLine") or total
    if start < 1 or end < start - 1:
        raise errors.invalid_argument(
            f"The line range {start}-{end} is not valid.",
            f"Lines are 1-based; {where.rel} has {total} lines.",
            argument="startLine",
            lines=total,
        )
    ranged = "startLine" in a or "endLine" in a
    if ranged:
        chosen = lines[start - 1 : end]
        numbered = a.get("lineNumbers", True)
    else:
        chosen = lines
        numbered = a.get("lineNumbers", False)
    if numbered:
        text = "".join(
            f"{start + i:6d}\t{line}"
            for i, line in enumerate(chosen)
            if line or i < len(chosen) - 1
        )
    else:
        text = snap.text if not ranged else "".join(chosen)
    buffered = snap.source == "buffer"
    eol = describe_eol(snap.text)
    if snap.declared_eol is not None and eol == "lf":
        # The editor shows the file's line endings as LF (Emacs): the file has its own.
        eol = snap.declared_eol
    ctx.session.saw(where.rel, snap.version if buffered else None, snap.sha256, ctx.open_id(where))
    return ReadResult(
        path=where.rel,
        text=text,
        version=snap.version,
        sha256=snap.sha256,
        source="buffer" if buffered else "disk",  # it exists (require_exists)
        eol=eol,
        bom=snap.bom,
        lines=total,
        start_line=start,
        end_line=min(end, total),
    )
