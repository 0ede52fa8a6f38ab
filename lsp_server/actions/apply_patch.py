"""`applyPatch`: a V4A patch over any number of files, all of them or none; each file it updates
is checked against the caller's `expect` for it, or its last read.

An `expect` is a precondition the caller asked for ("refuse unless the file has this
content"), so none is dropped unchecked: one keyed by a path that no section updates, deletes
or moves (a misspelt name, a file the patch adds, the file a deleted link points to) is
checked against that file as it is now, and an absent file is STALE
(tests/actions/test_apply_patch_expect_keys.py)."""

from __future__ import annotations

from lsp_server.actions.context import Context
from lsp_server.actions.execute import execute
from lsp_server.actions.paths import Resolved
from lsp_server.actions.session import token_now
from lsp_server.engine import errors
from lsp_server.engine.model import FileChange
from lsp_server.engine.planner import check_precondition
from lsp_server.engine.results import EditResult
from lsp_server.engine.text import Snapshot

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any


async def run(ctx: Context, a: dict[str, Any]) -> EditResult:
    given = [(ctx.resolve(k), v) for k, v in (a.get("expect") or {}).items()]
    keys = {r.rel: r for r, _ in given}
    expect = {r.rel: ctx.session.known(r.rel, v) for r, v in given}
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
        checked = {c.path for c in plan.changes if c.before.exists}
        for rel in expect.keys() - checked:
            now = ctx.read(keys[rel])  # (not `snapshot`: nothing is planned on it)
            if not now.exists:
                raise errors.stale(
                    f"{rel} does not exist, but `expect` gives a token of its content "
                    "(details.expected): it was removed (or never was there) since it was read.",
                    "Read the file again (is it elsewhere now? is its name in `expect` right?) "
                    "and recompute the patch from what the workspace holds.",
                    expected={k: (expect[rel] or {}).get(k) for k in ("version", "sha256")},
                    current=None,
                    path=rel,
                )
            opened = ctx.open_id(keys[rel])
            check_precondition(now, token_now(rel, expect[rel], opened), None, required=False)
        # A file the patch leaves as it is (a chunk of context lines only, `-a` then `+a`, a
        # Delete and an Add of the same text) is not rewritten: it was, with a new inode and
        # mtime, and the result said "M f.txt" over an empty diff. A patch that changes nothing
        # at all is NO_CHANGE, as a replace or write of the same text is.
        changes = [c for c in plan.changes if not _changes_nothing(c)]
        if not changes:
            raise errors.invalid_argument(
                "NO_CHANGE: the patch would change nothing: every file it names already has "
                "the text it gives.",
                "Nothing to do; if a change was meant, read the files again and send the "
                "'-'/'+' lines of it.",
                argument="patch",
                reason="NO_CHANGE",
            )
        return await execute(ctx, "applyPatch", a, changes, where, a.get("dryRun", False))


def _changes_nothing(c: FileChange) -> bool:
    """Whether `c` is an update that leaves its file's text and BOM exactly as they are
    (compared over its edits' lines only: no new text is built)."""
    before = c.before
    if c.change != "update" or c.moved_to is not None or c.bom != before.bom:
        return False
    if c.new_text_override is not None:
        return c.new_text_override == before.text
    text = before.text
    for e in c.edits:
        if e.offsets is None:  # (no offsets: the lines, split once)
            if tuple(before.lines[e.start : e.end]) != e.new_lines:
                return False
            continue
        # The old lines are the text between the edit's offsets: compared without splitting
        # the file (the history's records do not split it either: undo/changes.py).
        start, end = e.offsets
        if end - start != sum(map(len, e.new_lines)) or text[start:end] != "".join(e.new_lines):
            return False
    return True
