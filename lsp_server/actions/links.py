"""The link rule every front follows: a Delete File, or the source of a Move, that names a
symbolic link removes (or moves) the link itself, never the file it points to.

A context records, as the patch's paths are resolved, which names were symbolic links
(`LinkRule.note`), then rewrites the plan (`LinkRule.on_links`): such a change's `before` names
the link's own path and carries the link as it was seen (`files.note_link`), which the disk
writer removes as a link and re-checks before it does (STALE if the link moved). Both contexts
use this one rule (actions/headless.py, lsp/editor_context.py), so a patch changes the same
files through the CLI and the language server. Other changes through a link (an Update File)
act on the file it points to, as any read or write through a link does.

So a link and the file it points to are two files for a Delete (or a Move's source) and one for
every other section: a patch that removes (or moves) the link in one section and names that file
in another (Delete File: lnk, then Add File: target) names one file twice, and what it wants
(the link gone and a new file? the file rewritten through the link?) is a guess. It is refused
whole (INVALID_ARGUMENT), saying which sections, instead of being merged into an update of the
file that leaves the link in place (`LinkRule.plan`).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import replace

from lsp_server.engine import errors, files
from lsp_server.engine.errors import EditError
from lsp_server.engine.model import Plan
from lsp_server.engine.policy.resolution import ResolvedPath
from lsp_server.engine.text import LinkRead, Snapshot

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from lsp_server.engine.v4a import Patch


class LinkRule:
    """The names one patch's sections used: by a symbolic link (name -> the link's own name and
    the link as read then), or directly."""

    def __init__(self) -> None:
        self._via_link: dict[str, tuple[str, LinkRead]] = {}
        self._direct: set[str] = set()
        self._last: tuple[str, bool] | None = None  # the last name noted, and if by a link

    def start(self) -> None:
        """Forget earlier names: only the names this patch's sections use count (an `expect`
        key, or an earlier action, naming a link to a file is no Delete File of that link)."""
        self._via_link, self._direct = {}, set()

    def plan(
        self,
        patch: str,
        snapshot: Callable[[str], Snapshot],
        plan_hunks: Callable[[Patch, Callable[[str], Snapshot]], Plan] | None = None,
    ) -> Plan:
        """engine.patching's plan of `patch` over `snapshot` (which resolves each path through
        the context, noting it here), under this rule; INVALID_ARGUMENT for a patch that names
        a link's file in another section than the Delete or Move of the link. `plan_hunks`:
        another planner giving exactly engine.patching's plan (the CLI's split_plan.py)."""
        from lsp_server.engine import patching  # lark: not for a CLI's read
        from lsp_server.engine.v4a import parse_patch

        hunks = parse_patch(patch)
        self.start()
        # Each path as a section wrote it -> the name it resolved to, and whether by a link.
        named: dict[str, tuple[str, bool]] = {}

        def snap(path: str) -> Snapshot:
            self._last = None
            seen = snapshot(path)
            if self._last is not None:
                named[path] = self._last
            return seen

        try:
            plan = (plan_hunks or patching.plan_hunks)(hunks, snap)
        except EditError:
            # A planner's refusal of the second section (NOT_FOUND: "already deleted it") is
            # this one's consequence: say the cause.
            _refuse_named_twice(hunks, named)
            raise
        _refuse_named_twice(hunks, named)
        return self.on_links(plan)

    def by_link(self, name: str) -> bool:
        """Whether a path of the patch being planned reached `name` through a symbolic link."""
        return name in self._via_link

    def note(self, r: ResolvedPath, name: str, several_roots: bool) -> None:
        """Record how `name` (the name results use for `r`) was reached."""
        if r.named_path != r.abs_path:
            link = link_itself(r.root, r.named_path)
            if link is not None:
                rel, seen = link
                # With several folders, results name files by absolute path (policy.name_of).
                self._via_link[name] = (os.path.join(r.root, rel) if several_roots else rel, seen)
                self._last = (name, True)
                return
        self._direct.add(name)
        self._last = (name, False)

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


def _refuse_named_twice(hunks: Patch, named: dict[str, tuple[str, bool]]) -> None:
    """INVALID_ARGUMENT if a Delete File, or a Move's source, named a symbolic link (it acts on
    the link) and another section names the file the link points to, by any name."""
    from lsp_server.engine.v4a import AddFile, DeleteFile, UpdateFile

    sections = [
        (h, p)
        for h in hunks
        for p in (h.path, getattr(h, "move_to", None))
        if p is not None and p in named
    ]
    for h in hunks:
        moved = isinstance(h, UpdateFile) and h.move_to is not None
        if not (isinstance(h, DeleteFile) or moved) or not named.get(h.path, ("", False))[1]:
            continue
        name = named[h.path][0]
        for other, path in sections:
            # The section's own Move to counts: moving the link onto the file it points to
            # names that file twice (it was planned as an update of it, the link left).
            if (other is h and path == h.path) or named[path][0] != name:
                continue
            verb = "moves" if moved else "removes"
            header = "Update File" if moved else "Delete File"
            kind = (
                "Add File"
                if isinstance(other, AddFile)
                else "Delete File"
                if isinstance(other, DeleteFile)
                else "Update File"
                if path == other.path
                else "Move to"
            )
            raise errors.invalid_argument(
                f"The patch names {name} twice: {header} {h.path} (patch line {h.patch_line}) "
                f"is a symbolic link to it, and that section {verb} the link itself, while "
                f"{kind} {path} (the section at patch line {other.patch_line}) names {name}, "
                "the file the link points to. What the patch wants of that file is a guess, "
                "so nothing was changed.",
                (
                    f"To move the link, name a Move to that does not exist; to change {name}, "
                    f"name it in Update File without Move to."
                )
                if other is h
                else f"Send the section on the link {h.path} and the one on {name} as two "
                f"patches, or name {name} itself in both (Delete File then Add File of one name "
                "rewrites it).",
                argument="patch",
                path=name,
                link=h.path,
                patchLines=sorted({h.patch_line, other.patch_line}),
            )


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
