"""Planning a large patch on two cores: the second half of its file sections in a forked child.

Parsing and planning a patch of tens of thousands of lines is pure Python work, most of a large
headless apply, and one core does it while the other idles. `SplitPlanner` cuts such a patch
in two at a file header (`CHILD_SHARE`) and forks; the child reads, parses and plans the
second half into minimal edits while the parent reads every file and plans the first half;
the child sends back its edits (plain tuples, marshalled through a pipe) and the parent assembles
one plan. Only the success path is parallel: the result is the one `patching.plan_patch` would
give, or it is computed by `plan_patch` itself:

- a cut is made only at a line `*** Update File: ` at column 0, which the normaliser always
  reads as a file header (never as chunk text), and only when the second half holds nothing
  but plain updates (no Add, Delete or Move marker anywhere in it, not even inside a line)
  and the patch has no CR;
- any error in either half (parse or plan), a path claimed by both halves, a file whose text
  the child read differently (it changed between the two reads), a child that did not answer,
  or anything unexpected makes the parent plan the whole patch again in order, so every
  refusal is the one sequential planning gives, with the same patch line;
- the child only reads; it never writes a file, and leaves with `os._exit` (no stdio flush,
  no atexit handlers).

Used by the CLI, a short-lived single-threaded process. Not for the language server: forking a
process that runs threads is unsafe.
"""

from __future__ import annotations

import marshal
import os
import signal
from typing import Any

from lsp_server.engine.errors import EditError
from lsp_server.engine.model import FileChange, LineEdit, Plan
from lsp_server.engine.patching import GetSnapshot, plan_hunks
from lsp_server.engine.v4a import BEGIN, END, UpdateFile, load_parser, parse_patch

# Below this size forking (~1-3 ms) and the hand-over cost more than half the planning saves.
PARALLEL_FROM_BYTES = 256 * 1024
# The share of the patch (in characters) the child takes: a little over half, as the parent
# also reads the child's files (it writes them all) and starts the reservation. Tune it with
# bench/bench_timeline.py: "collect" is the parent's wait for the child's answer.
CHILD_SHARE = 0.55
_HEADER = "\n*** Update File: "
_NOT_PLAIN_UPDATE = ("*** Add File:", "*** Delete File:", "*** Move to:")


class SplitPlanner:
    """Plans a patch (`patching.plan_patch`), on two cores when it is large.

    Created as early as possible, while the process is small: forking a process that already
    holds the snapshots costs milliseconds, and every page either side then writes (Python's
    reference counts write everywhere) is copied. What both processes need anyway (the
    parser's tables; the caller's path policy) is loaded before. The child reads its files
    itself with `read_snapshot`; `plan(get_snapshot)` plans the first half, takes the child's
    edits and joins them to the parent's own snapshots, after checking that both read the
    same text.
    Use it as a context manager: leaving it stops a child whose answer was never taken.
    """

    def __init__(self, patch_text: str, read_snapshot: GetSnapshot) -> None:
        self.text = patch_text
        self.cut = _cut(patch_text)
        self.child: tuple[int, int] | None = None
        self.joined = False  # whether the last plan was assembled from both halves
        if self.cut is not None:
            load_parser()  # once, for both processes
            self.child = _fork_planner(BEGIN + "\n" + patch_text[self.cut :], read_snapshot)

    def __enter__(self) -> SplitPlanner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.child is not None:
            pid, read_end = self.child
            self.child = None
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            os.close(read_end)
            os.waitpid(pid, 0)

    def plan(self, get_snapshot: GetSnapshot) -> Plan:
        text, cut, child = self.text, self.cut, self.child
        if cut is None or child is None:
            return plan_hunks(parse_patch(text), get_snapshot)
        try:
            plan: Plan | None = plan_hunks(parse_patch(text[:cut] + END + "\n"), get_snapshot)
        except EditError:
            plan = None
        # Until here an interruption (Ctrl-C) leaves the child to `close`; from here `_collect`
        # reaps it.
        self.child = None
        answer = _collect(*child)
        if plan is not None and answer is not None:
            # Line k of the second half is line k - 1 + (lines before the cut) of the patch.
            merged = _merge(plan, answer, text.count("\n", 0, cut) - 1, get_snapshot)
            if merged is not None:
                self.joined = True
                return merged
        return plan_hunks(parse_patch(text), get_snapshot)


def _cut(text: str) -> int | None:
    """Where to cut `text` in two (a column-0 Update File header), or None."""
    if len(text) < PARALLEL_FROM_BYTES or "\r" in text or not hasattr(os, "fork"):
        return None
    # `str.find` for the literal markers: a regex anchored at line starts tries every position.
    at = text.find(_HEADER, int(len(text) * (1 - CHILD_SHARE)))
    if at < 0 or text.find(_HEADER, 0, at) < 0:
        return None  # no section after the cut, or none before it
    cut = at + 1
    # Anything but plain updates after the cut, even a marker inside a chunk line: in order.
    if any(text.find(marker, cut) >= 0 for marker in _NOT_PLAIN_UPDATE):
        return None
    return cut


# What the child sends, as `marshal` data: only exact str, int, tuple, list, dict and None (a
# str subclass such as the parser's tokens is refused, and the parent then plans in order).
# marshal rather than pickle: it is built in, where importing pickle (with struct) costs a
# headless apply ~1.5 ms, and it reads back only what our own child wrote. Per file section:
# the path as the patch wrote it, the canonical path, the length and `hash()` of the text it
# planned against (the same in both processes: a fork keeps the hash seed), its edits as
# (start, end, new_lines, offsets); then the lenient matches; the chunk count.
_File = tuple[str, str, int, int, list[tuple[Any, ...]]]
_Answer = tuple[list[_File], list[dict[str, Any]], int]


def _fork_planner(text: str, get_snapshot: GetSnapshot) -> tuple[int, int] | None:
    """Fork a child planning `text`; its pid and the read end of its pipe (None: no fork)."""
    try:
        read_end, write_end = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # pragma: no cover - the child (coverage does not follow forks)
        try:
            os.close(read_end)
            data = marshal.dumps(_child_answer(text, get_snapshot))
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view) :]
        finally:
            os._exit(0)
    os.close(write_end)
    return pid, read_end


def _child_answer(text: str, get_snapshot: GetSnapshot) -> _Answer | None:
    """The child's plan of `text`, as plain data; None when it was refused (the parent then
    plans the whole patch, to give the refusal sequential planning gives)."""
    try:
        hunks = parse_patch(text)
        plan = plan_hunks(hunks, get_snapshot)
    except EditError:
        return None
    files = []
    for hunk, change in zip(hunks, plan.changes, strict=True):
        if not isinstance(hunk, UpdateFile) or change.change != "update":
            return None
        edits = [(e.start, e.end, e.new_lines, e.offsets) for e in change.edits]
        read = change.before.text
        files.append((hunk.path, change.path, len(read), hash(read), edits))
    lenient: list[dict[str, Any]] = list(plan.summary.get("lenient", ()))  # type: ignore[call-overload]
    return files, lenient, int(plan.summary["chunks"])  # type: ignore[call-overload]


def _collect(pid: int, read_end: int) -> _Answer | None:
    """The child's answer (None if it refused or died), once it has exited."""
    parts = []
    try:
        while True:
            part = os.read(read_end, 1 << 20)
            if not part:
                break
            parts.append(part)
    finally:
        os.close(read_end)
        os.waitpid(pid, 0)
    try:
        answer = marshal.loads(b"".join(parts))
    except Exception:  # noqa: BLE001 - a child killed mid-write: plan in order instead
        return None
    return answer  # type: ignore[no-any-return]


def _merge(plan: Plan, answer: _Answer, offset: int, get_snapshot: GetSnapshot) -> Plan | None:
    """The first half's plan followed by the child's files; None if they cannot be joined
    exactly as sequential planning would have planned them."""
    files, lenient, chunks = answer
    claimed = {c.path for c in plan.changes} | {c.moved_to for c in plan.changes if c.moved_to}
    changes = list(plan.changes)
    new_edit = object.__new__
    for written, canonical, size, fingerprint, edits in files:
        snap = get_snapshot(written)
        if snap.path != canonical or canonical in claimed:
            return None  # named twice: the sequential refusal says where
        if not snap.exists or len(snap.text) != size or hash(snap.text) != fingerprint:
            # The file changed between the two reads (deleted: an absent file's text is "",
            # an empty one's too): plan what is there now.
            return None
        claimed.add(canonical)
        made = []
        for start, end, new_lines, offsets in edits:
            edit = new_edit(LineEdit)
            # LineEdit's own fields, as its (frozen) __init__ would set them.
            vars(edit).update(start=start, end=end, new_lines=new_lines, offsets=offsets)
            made.append(edit)
        changes.append(FileChange("update", snap, tuple(made)))
    summary: dict[str, object] = {
        "files": len(changes),
        "chunks": int(plan.summary["chunks"]) + chunks,  # type: ignore[call-overload]
    }
    merged_lenient = list(plan.summary.get("lenient", ()))  # type: ignore[call-overload]
    merged_lenient += [{**x, "patchLine": x["patchLine"] + offset} for x in lenient]
    if merged_lenient:
        summary["lenient"] = merged_lenient
    return Plan(plan.action, tuple(changes), summary)
