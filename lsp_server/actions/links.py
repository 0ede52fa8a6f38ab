"""The link rule every front follows: a Delete File, or the source of a Move, that names a
symbolic link removes (or moves) the link itself, never the file it points to.

A context records, as the patch's paths are resolved, which names were symbolic links
(`LinkRule.note`), then rewrites the plan (`LinkRule.on_links`): such a change's `before` names
the link's own path and carries the link as it was seen (`files.note_link`), which the disk
writer removes as a link and re-checks before it does (STALE if the link moved). Both contexts
use this one rule (actions/headless.py, lsp/editor_context.py), so a patch changes the same
files through the CLI and the language server. Other changes through a link (an Update File)
act on the file it points to, as any read or write through a link does.
"""

from __future__ import annotations

import os
import stat
from dataclasses import replace

from lsp_server.engine import files
from lsp_server.engine.model import Plan
from lsp_server.engine.policy.resolution import ResolvedPath
from lsp_server.engine.text import LinkRead


class LinkRule:
    """The names one patch's sections used: by a symbolic link (name -> the link's own name and
    the link as read then), or directly."""

    def __init__(self) -> None:
        self._via_link: dict[str, tuple[str, LinkRead]] = {}
        self._direct: set[str] = set()

    def start(self) -> None:
        """Forget earlier names: only the names this patch's sections use count (an `expect`
        key, or an earlier action, naming a link to a file is no Delete File of that link)."""
        self._via_link, self._direct = {}, set()

    def note(self, r: ResolvedPath, name: str, several_roots: bool) -> None:
        """Record how `name` (the name results use for `r`) was reached."""
        if r.named_path != r.abs_path:
            link = link_itself(r.root, r.named_path)
            if link is not None:
                rel, seen = link
                # With several folders, results name files by absolute path (policy.name_of).
                self._via_link[name] = (os.path.join(r.root, rel) if several_roots else rel, seen)
                return
        self._direct.add(name)

    def on_links(self, plan: Plan) -> Plan:
        """`plan` with each Delete and Move source that was named by a symbolic link acting on
        that link (its path, and the link as it was seen, re-checked before it is removed),
        never on the file it points to."""
        if not self._via_link:
            return plan
        changes = []
        for c in plan.changes:
            via = self._via_link.get(c.path)
            # A file the patch also names directly (a Delete of it and a Move onto its link) is
            # acted on as that file: the link is only a way to it.
            if via is not None and c.change in ("delete", "move") and c.path not in self._direct:
                link_name, seen = via
                c = replace(c, before=replace(c.before, path=link_name, link=seen))
            changes.append(c)
        return replace(plan, changes=tuple(changes))


def link_itself(root: str, named: str) -> tuple[str, LinkRead] | None:
    """The path relative to `root` of the symbolic link `named` is (its folder resolved) and
    the link as seen now, or None if it is not one or that folder is outside `root`."""
    try:
        if not stat.S_ISLNK(os.lstat(named).st_mode):
            return None
    except OSError:
        return None
    folder = os.path.realpath(os.path.dirname(named))
    rel = os.path.relpath(os.path.join(folder, os.path.basename(named)), root)
    if rel == "." or rel.startswith("../") or rel == ".." or os.path.isabs(rel):
        return None
    seen = files.note_link(root, rel)
    return (rel, seen) if seen is not None else None
