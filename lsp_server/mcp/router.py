"""Where an MCP tool call runs: through the editor's agent-edit server, or headless on disk.

Every call looks the root up in discovery (one directory listing): when a live server's
workspace holds it, the call is forwarded there (`via: "editor"`): unsaved buffers are read and
edited, edits are versioned and verified and appear in the editor's history. Otherwise it runs
in a headless server in this process (`via: "disk"`).

If the editor's server goes away mid-session, the next call says so and runs on disk, with one
guard: the files that editor had open (it reports them with every answer) are not written on disk
while the editor itself still runs, because its buffers may hold unsaved text the disk lacks (and
a later save would overwrite our write). Reads still work (from the disk, which is then the only
truth there is). Once the editor process is gone too, its buffers are gone and the disk is the
truth again. An edit whose connection dropped before the answer may have landed: it is reported
UNVERIFIED, never retried on disk.

An editor's server that died before this MCP server reached it told nothing of the files its
editor has open. While that editor still runs (discovery keeps such an orphan's announcement),
no file in its workspace folders is written on disk: any of them may be open there with unsaved
text. Found: it was written, under a buffer whose save would then overwrite the edit (or the
other way round), with nothing said.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from typing import TYPE_CHECKING, Any

from lsp_server import discovery
from lsp_server.engine import processes
from lsp_server.engine.results import refusal

if TYPE_CHECKING:
    from lsp_server.actions.paths import Resolved
    from lsp_server.engine.model import Plan

log = logging.getLogger(__name__)

EDITS = frozenset({"replace", "write", "applyPatch", "undo"})
# An edit waits for the editor (its apply and verify timeouts, a pending save): generous.
ANSWER_TIMEOUT_S = float(os.environ.get("AGENT_EDIT_MCP_TIMEOUT_S") or 120)
_HEADER = re.compile(r"^(\*\*\* (?:Add File|Delete File|Update File|Move to): ?)(.*?)(\r?)$", re.M)
_PADDED_HEADER = re.compile(r"^[ \t]+\*\*\* (?:Add File|Delete File|Update File|Move to):", re.M)


def _leaves_root(root: str, action: str, args: Any) -> bool:
    from lsp_server.mcp.boundary import leaves_root  # the policy: only once an editor runs

    return leaves_root(root, action, args)


def _pid_alive(pid: int) -> bool:
    return processes.probe(pid) != processes.NONE  # another user's editor still runs


class Router:
    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        # One MCP client (this process) is one agent session, in the editor and on disk alike.
        self.session_key = f"mcp-{os.getpid()}-{secrets.token_hex(4)}"
        self.editor: discovery.Entry | None = None  # the editor's server last reached
        self.editor_open: set[str] = set()  # files it had open at its last answer
        self.lost: discovery.Entry | None = None  # an editor's server that went away
        self.lost_open: set[str] = set()
        # Dead servers, never reached, whose editors still run (at the last lookup).
        self.orphans: list[discovery.Entry] = []
        from lsp_server.actions.session import Session

        self._disk_session = Session()  # this client's reads on disk

    async def call(self, action: str, args: Any) -> dict[str, Any]:
        note = None
        orphans: list[discovery.Entry] = []
        try:
            entry = discovery.find(self.root, orphans)
        except discovery.DiscoveryError as exc:
            entry, note = None, f"agent-edit cannot look for the editor's server: {exc}"
        self.orphans = orphans
        if entry is not None and _leaves_root(self.root, action, args):
            # Outside this root, whatever the editor's folder holds: the disk front refuses it
            # as it would with no editor (mcp/boundary.py).
            result = await self._on_disk(action, args)
            result["via"] = "disk"
            return result
        if entry is not None:
            answer = await self._through_editor(entry, action, args)
            if answer is not None:
                return answer
        if self.editor is not None:
            # It answered before and is gone now (killed, crashed, the editor closed).
            self.lost, self.lost_open = self.editor, set(self.editor_open)
            self.editor, self.editor_open = None, set()
            note = (
                f"The editor's agent-edit server ({self.lost.describe()}) is gone; this call ran "
                "on the disk, and files open in that editor are not written while it runs."
            )
        elif self.lost is None and orphans:
            note = (
                f"The agent-edit server of {orphans[0].describe()} is gone, and that editor "
                "still runs; this call ran on the disk, and files in its workspace folders are "
                "not written while it runs (which it has open is unknown)."
            )
        result = await self._on_disk(action, args)
        result["via"] = "disk"
        if note:
            result["note"] = note
        return result

    async def _through_editor(
        self, entry: discovery.Entry, action: str, args: Any
    ) -> dict[str, Any] | None:
        """The editor's answer; None if it cannot be reached (then the call runs on disk)."""
        rebased = self._rebase(entry, action, args)
        if "ok" in rebased:
            rebased["via"] = "editor"  # a refusal of the editor's route, said before sending
            return rebased
        payload = {
            "session": self.session_key,
            "action": action,
            "args": rebased["args"],
            "withOpen": True,
            # Every path the editor's server takes for this call must lie in this root, those it
            # finds itself too (an undo's, from the history): `_leaves_root` sees only named ones.
            "within": self.root,
        }
        try:
            answer = await discovery.arequest(entry, payload, ANSWER_TIMEOUT_S)
        except TimeoutError:
            # Alive but silent: an edit may still land, and the disk is not what its editor
            # shows, so nothing runs on disk instead.
            return {
                **refusal(
                    "TIMEOUT",
                    f"The editor's agent-edit server ({entry.describe()}) did not answer in "
                    f"{ANSWER_TIMEOUT_S:.0f} s. "
                    + (
                        "The edit may still land in the editor; nothing was written on disk."
                        if action in EDITS
                        else "Nothing was changed."
                    ),
                    "Check the editor; read the files again before editing them.",
                    editor=entry.editor,
                    pid=entry.editor_pid or entry.pid,
                ),
                "via": "editor",
            }
        except discovery.Unanswered as exc:
            if action not in EDITS:
                return None  # a read or history: nothing changed; the disk answers
            self.lost, self.lost_open = entry, set(self.editor_open)
            self.editor, self.editor_open = None, set()
            return {
                **refusal(
                    "UNVERIFIED",
                    f"The editor's agent-edit server ({entry.describe()}) went away while this "
                    f"edit was in flight ({exc}): it may or may not have landed in the editor. "
                    "Nothing was written on disk by this call.",
                    "Read the files again to see what they hold now before you edit them again; "
                    "do not resend the edit blindly.",
                    editor=entry.editor,
                    pid=entry.editor_pid or entry.pid,
                ),
                "via": "editor",
            }
        except (OSError, ValueError) as exc:
            # Not reachable: gone, or broken. On disk, the guard still refuses to write a file
            # a live server's editor holds (it asks it, and refuses when it cannot).
            log.info("the editor's server %s cannot be reached: %s", entry.describe(), exc)
            return None
        if self.lost is not None and self.lost.pid != entry.pid:
            answer["note"] = (
                f"Through {entry.describe()}'s agent-edit server again (the one of "
                f"{self.lost.describe()} went away)."
            )
        opened = answer.pop("_open", None)
        if action == "history":
            answer = self._within_root(entry, answer)
        prefix = self._prefix(entry)
        if prefix is not None:
            answer = _unbased(answer, prefix)
        self.editor = entry
        self.editor_open = {p for p in opened or [] if isinstance(p, str)}
        self.lost, self.lost_open = None, set()
        answer["via"] = "editor"
        return answer

    def _within_root(self, entry: discovery.Entry, answer: dict[str, Any]) -> dict[str, Any]:
        """A history answer of the editor's server (whose workspace may hold more than this
        root) without what it shows of files outside the root: entries that touched one (their
        diffs and the request they echo), net diffs, an edit's texts, diff sections. A read of
        such a file is refused OUTSIDE_WORKSPACE; its history must not show it either."""
        if not entry.folders:
            return answer
        base = entry.folders[0]

        def inside(path: Any) -> bool:
            if not isinstance(path, str) or not path:
                return True
            full = os.path.normpath(os.path.join(base, path))
            return full == self.root or full.startswith(self.root.rstrip("/") + "/")

        def shown(item: Any) -> bool:
            return not isinstance(item, dict) or (
                inside(item.get("path")) and inside(item.get("movedTo"))
            )

        out = dict(answer)
        left = 0
        if isinstance(out.get("entries"), list):
            kept = [
                e
                for e in out["entries"]
                if not isinstance(e, dict)
                or (
                    all(map(shown, e.get("files") or []))
                    # A refused request names no files, but echoes the paths (and texts) it
                    # was sent with: one outside the root is not shown either.
                    and all(map(inside, _args_paths(e.get("args"))))
                    # Past ENTRY_FILES an entry names no more files: those it leaves out may not
                    # be inside.
                    and e.get("filesTotal", 0) <= len(e.get("files") or [])
                )
            ]
            left += len(out["entries"]) - len(kept)
            out["entries"] = kept
        for key in ("net", "files"):
            if isinstance(out.get(key), list):
                kept = [f for f in out[key] if shown(f)]
                left += len(out[key]) - len(kept)
                out[key] = kept
        if isinstance(out.get("diff"), str):
            out["diff"], cut = _diff_within(out["diff"], inside)
            left += cut
        if left:
            out["note"] = (
                f"{left} item(s) of the editor's history concern files outside {self.root} "
                "and are not shown."
            )
        return out

    def _prefix(self, entry: discovery.Entry) -> str | None:
        """This root relative to the editor's first workspace folder, when it lies below it
        (the editor's server names paths relative to that folder); else None."""
        if not entry.folders or entry.folders[0] == self.root:
            return None
        prefix = os.path.relpath(self.root, entry.folders[0])
        return None if prefix.startswith("..") else prefix

    def _rebase(self, entry: discovery.Entry, action: str, args: Any) -> dict[str, Any]:
        """`args` with paths relative to this root, as the editor's server (which resolves
        relative paths against its first workspace folder) takes them: {"args": ...}, or a
        refusal."""
        if not isinstance(args, dict) or not entry.folders or entry.folders[0] == self.root:
            return {"args": args}
        prefix = os.path.relpath(self.root, entry.folders[0])
        if prefix.startswith(".."):
            prefix = self.root  # another folder of that workspace: absolute paths then
        out = dict(args)
        path = out.get("path")
        if isinstance(path, str) and path and not _absolute(path):
            out["path"] = os.path.join(prefix, path)
        patch = out.get("patch")
        if action == "applyPatch" and isinstance(patch, str):
            if _PADDED_HEADER.search(patch):
                return refusal(
                    "INVALID_ARGUMENT",
                    "The patch has file header lines that do not start at the beginning of the "
                    f"line; paths are relative to {self.root}, below the editor's workspace "
                    f"folder {entry.folders[0]}, so each header must be rewritten and a padded "
                    "one cannot be told apart from patch content.",
                    "Start every '*** Add/Delete/Update File:' and '*** Move to:' line at the "
                    "beginning of the line.",
                    argument="patch",
                )
            out["patch"] = _HEADER.sub(
                lambda m: (
                    m.group(1)
                    + (
                        m.group(2)
                        if not m.group(2).strip() or _absolute(m.group(2).strip())
                        else os.path.join(prefix, m.group(2).strip())
                    )
                    + m.group(3)
                ),
                patch,
            )
            expect = out.get("expect")
            if isinstance(expect, dict):
                out["expect"] = {
                    (k if not isinstance(k, str) or _absolute(k) else os.path.join(prefix, k)): v
                    for k, v in expect.items()
                }
        return {"args": out}

    async def _on_disk(self, action: str, args: Any) -> dict[str, Any]:
        from lsp_server.mcp import disk

        return await disk.run(self.root, self._disk_session, action, args, self._guard)

    def _guard(self, plan: Plan, where: dict[str, Resolved]) -> None:
        """Before the disk is written: refuse files another live server's editor holds open,
        and files the vanished editor had open while it still runs."""
        from lsp_server import peers

        def abs_of(p: str) -> str | None:
            r = where.get(p)
            return r.abs_path if r is not None else None

        changes = list(plan.changes)
        entries = peers.others([self.root])
        if entries:
            peers.refuse_if_held_sync(entries, changes, abs_of)
        if self.lost is None:
            peers.refuse_if_orphaned(self.orphans, changes, abs_of)
        lost = self.lost
        if lost is None or not self.lost_open:
            return
        if lost.editor_pid is not None and not _pid_alive(lost.editor_pid):
            self.lost_open = set()  # the editor is gone too: its buffers with it
            return
        held = sorted(
            {p for c in changes for p in (c.path, c.moved_to) if p and abs_of(p) in self.lost_open}
        )
        if held:
            from lsp_server.engine import errors

            raise errors.open_elsewhere(
                f"{', '.join(held)} was open in {lost.describe()} when its agent-edit server "
                "went away; the buffer there may hold unsaved text the disk lacks (and a save "
                "would overwrite a disk edit), so the disk was not written. Nothing was changed.",
                "Restart agent-edit in that editor (e.g. restart its language server) so edits "
                "go through it again, or quit the editor; read works meanwhile, from the disk.",
                reason="EDITOR_SERVER_GONE",
                paths=held,
                editor=lost.editor,
                pid=lost.editor_pid or lost.pid,
            )


_ANY_HEADER = re.compile(
    r"^[ \t]*\*\*\* (?:Add File|Delete File|Update File|Move to):[ \t]*(.*?)[ \t\r]*$", re.M
)


def _args_paths(args: Any) -> list[str]:
    """The paths a history entry's echoed request names: its path; a patch's file headers (read
    line by line: a long patch is echoed cut short) and `expect` keys (paths, for a patch)."""
    if not isinstance(args, dict):
        return []
    out = [args["path"]] if isinstance(args.get("path"), str) else []
    if isinstance(args.get("patch"), str):
        out += [m.group(1) for m in _ANY_HEADER.finditer(args["patch"]) if m.group(1)]
        if isinstance(args.get("expect"), dict):
            out += [k for k in args["expect"] if isinstance(k, str)]
    return [_local(p) for p in out]


def _local(path: str) -> str:
    """`path` as a file system path when the policy reads it so (a `file://` URI, `~/...`);
    else as it is (a URI it cannot decode stays one: not inside, so not shown)."""
    from lsp_server.engine.policy.uris import SCHEME, uri_to_path

    if SCHEME.match(path):
        return uri_to_path(path) or path
    return os.path.expanduser(path) if path == "~" or path[:2] == "~/" else path


_PATH_KEYS = frozenset({"path", "movedTo", "movedFrom"})
_PATH_LISTS = frozenset({"committed", "paths", "held"})
_DIFF_HEADER = re.compile(r"^(diff --git a/|rename from |rename to |--- a/|\+\+\+ b/)")


def _unbased(value: Any, prefix: str) -> Any:
    """The editor's answer with the paths it names relative to this root again (the tools take
    paths relative to the root: a model that reuses a path from a result must reach the same
    file, not `sub/sub/a.py`). A path outside the root becomes `../name`. The request echoed in
    a history entry (`args`) is left as it was recorded."""
    if isinstance(value, list):
        return [_unbased(v, prefix) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k in _PATH_KEYS and isinstance(v, str):
            out[k] = _relative(v, prefix)
        elif k in _PATH_LISTS and isinstance(v, list):
            out[k] = [_relative(p, prefix) if isinstance(p, str) else p for p in v]
        elif k == "diff" and isinstance(v, str):
            out[k] = _unbased_diff(v, prefix)
        elif k == "args":
            out[k] = v
        else:
            out[k] = _unbased(v, prefix)
    return out


def _relative(path: str, prefix: str) -> str:
    if _absolute(path):
        return path
    return os.path.relpath(os.path.join("/", path), os.path.join("/", prefix))


def _unbased_diff(diff: str, prefix: str) -> str:
    """Header lines only (between `diff --git` and the first `@@`: a removed line may look like
    `--- a/...`), and only paths inside the root."""
    inside = re.escape(prefix.rstrip("/") + "/")
    # A path starts after a space: `a/sub/x`, `b/sub/x`, or bare after `rename from|to `.
    in_path = re.compile(r"(?<= )([ab]/)?" + inside)
    lines = diff.split("\n")
    header = False
    for i, line in enumerate(lines):
        if line.startswith("diff --git "):
            header = True
        elif line.startswith("@@"):
            header = False
        if header and _DIFF_HEADER.match(line):
            lines[i] = in_path.sub(lambda m: m.group(1) or "", line)
    return "\n".join(lines)


_SECTION_PATH = re.compile(r"^(?:--- a/|\+\+\+ b/|rename from |rename to )(.*)$")


def _diff_within(diff: str, inside: Any) -> tuple[str, int]:
    """`diff` without its `diff --git` sections that name a path `inside` refuses (paths as the
    editor's server names them), and how many were left out."""
    parts = re.split(r"(?m)^(?=diff --git )", diff)
    kept, cut = [], 0
    for part in parts:
        if part.startswith("diff --git "):
            names = []
            for line in part.split("\n"):
                if line.startswith("@@"):
                    break
                m = _SECTION_PATH.match(line)
                if m:
                    names.append(m.group(1))
            if not names:  # a header this cannot read (a quoted name): not shown either
                names = [part.split("\n", 1)[0].removeprefix("diff --git a/")]
            if not all(inside(n) for n in names):
                cut += 1
                continue
        kept.append(part)
    return "".join(kept), cut


def _absolute(path: str) -> bool:
    """Whether the path policy reads `path` as it is, not relative to a folder. `~` and `~/...`
    only: it takes `~name` as a relative name (a file `~draft.py` in the root), to rebase."""
    return os.path.isabs(path) or path.startswith("file:") or path == "~" or path[:2] == "~/"
