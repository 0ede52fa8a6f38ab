"""Planning a V4A patch over snapshots: every hunk of every file located and verified, or nothing.

`plan_patch(patch_text, get_snapshot)` parses the patch (v4a.py), asks `get_snapshot(path)` for
each file it names (the open buffer, else the disk; `source="absent"` when there is no file) and
returns a `Plan` whose `FileChange`s hold minimal `LineEdit`s. Any problem raises `EditError` and
nothing is planned, so a front end (LSP or CLI) never starts an apply that could half-succeed.

What a front end gets (the LSP `agentEdit.applyPatch` and the CLI both use it this way):

- `get_snapshot(path)` receives each path exactly as the patch wrote it (Update/Add/Delete paths
  and Move-to destinations). It resolves it (path policy) and returns the snapshot whose `.path`
  is the canonical workspace-relative path, or raises `EditError` (OUTSIDE_WORKSPACE, DENIED,
  BINARY, ...) which `plan_patch` lets through. Sections apply in patch order; a canonical
  path named by two sections is planned only for Delete then Add and Move then Add of the old
  name (see `_Sections`), and refused otherwise.
- `plan.changes`, in patch order, one `FileChange` per file section:
  `add` (`before` is the absent snapshot, `new_text` the content, no BOM),
  `delete` (`before` is the file),
  `update` (`edits`: sorted, minimal `LineEdit`s in `before.lines` coordinates, with character
  offsets; `new_text` is built by slicing),
  `move` (`path` the source, `moved_to`/`target_path` the destination, `edits` as for update,
  relative to the source's content). An editor applies a move as RenameFile then the edits.
- Per-path preconditions are the front end's: check each `change.before` (the source of a move)
  against the agent's `expect` with `planner.check_precondition`.
- `plan.summary`: `files`, `chunks`, and `lenient` (`[{path, patchLine, match}]`) when a chunk
  only matched after whitespace or punctuation normalisation.
- Refusals: PARSE_ERROR `{patchLine, line, expected}`; NOT_FOUND / ALREADY_EXISTS
  `{path, patchLine}`; AMBIGUOUS `{path, patchLine, lines, count}`; NO_MATCH
  `{path, patchLine, oldLines, candidates}`; INVALID_ARGUMENT `{path, patchLine,
  earlierPatchLine}` for a path named twice where that is not allowed.
- `plan.summary["combined"]`, when sections of one path were combined: `[{path, patchLines,
  sections, planned}]` (`sections` as the patch has them, `planned` the changes they became).

Seeking follows Codex (peers.md): an optional `@@ anchor` line moves a forward-only cursor
(several in a row move it step by step, each sought after the previous one: Codex's parser
refuses them, its instructions to models use them); the chunk's old lines are then looked for
from the cursor in four passes (matching.LADDER: exact, trailing whitespace, both ends trimmed,
Unicode punctuation folded), the first pass with any match deciding; `*** End of File` tries
only the last position; a chunk with no old lines is appended at the very end of the file
(after a trailing blank line too, as Codex 0.169.0). One deliberate difference: if the first
successful pass matches at more than one place in the window, the chunk is `AMBIGUOUS` (with
every line number) instead of taking the first. Matched context lines are left exactly as the
file has them (also under a lenient pass); added lines take the file's first line terminator;
an updated file ends with a newline.

Seeking never runs Python code per file line. The common case (an LF file, every chunk found
exactly once by the exact pass) is `_exact_edits`: `str.find` on the text from the cursor's
offset, offsets carried to the edits. Everything else is `_FileSeeker`: a chunk is found by
`list.index` on its longest line (a C loop) from the cursor, and verified by one list-slice
comparison. Uniqueness needs the rest of the window: files with many chunks get an index of the
last position of each chunk's pivot line (one C-level pass), so a pivot found at its last
position needs no scan. 1,000 chunks on a 100k-line file plan in tens of milliseconds.

Why this module is over 500 lines (~900): planning a patch and seeking its chunks are one
algorithm (the seeker's index is built from the plan's chunks and read back by its uniqueness
check); the sections (`_Sections`), the exact/lenient chunk matchers and the seeker (`_Level`,
`_FileSeeker`) are the parts a split would take apart, next.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import compress
from operator import itemgetter

from lsp_server.engine import errors
from lsp_server.engine.errors import EditError
from lsp_server.engine.matching import LADDER, MAX_LISTED_MATCHES
from lsp_server.engine.model import FileChange, LineEdit, Plan, common_ends, minimal_edit
from lsp_server.engine.text import Snapshot, content, split_lines
from lsp_server.engine.v4a import AddFile, Chunk, DeleteFile, Patch, UpdateFile, parse_patch

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

GetSnapshot = Callable[[str], Snapshot]
_RUN = re.compile(r"[-+]+")
MAX_SHOWN_LINES = 10


def plan_patch(patch_text: str, get_snapshot: GetSnapshot) -> Plan:
    """Parse and plan a V4A patch; `EditError` (PARSE_ERROR, NOT_FOUND, ...) on any problem."""
    return plan_hunks(parse_patch(patch_text), get_snapshot)


def plan_hunks(patch: Patch, get_snapshot: GetSnapshot) -> Plan:
    """Plan already-parsed hunks (see `plan_patch`)."""
    sections = _Sections()
    changes = sections.changes
    lenient: list[dict[str, Any]] = []
    for hunk in patch:
        snap = get_snapshot(hunk.path)
        line = hunk.patch_line
        if isinstance(hunk, AddFile):
            sections.add(snap, hunk.text, line)
        elif isinstance(hunk, DeleteFile):
            sections.delete(snap, line)
        else:
            sections.claim(snap.path, line, "update")
            dest = _plan_update(hunk, snap, get_snapshot, sections, lenient)
            sections.updated(snap, dest, line)
    summary: dict[str, object] = {
        "files": len(changes),
        "chunks": sum(len(h.chunks) for h in patch if isinstance(h, UpdateFile)),
    }
    if lenient:
        summary["lenient"] = lenient
    if sections.combined:
        summary["combined"] = sections.combined
    return Plan("applyPatch", tuple(changes), summary)


# What the sections before have made of a path, for the next section that names it.
_ADDED, _UPDATED, _MOVED_HERE, _DELETED, _MOVED_AWAY, _REWRITTEN = (
    "added",
    "updated",
    "moved here",
    "deleted",
    "moved away",
    "rewritten",
)


class _Sections:
    """The file sections planned so far, applied in patch order as Codex applies them.

    A path may be named again only where the meaning is plain (product.md 4): after a Delete
    File, or after an Update File that moved it away, an Add File of it writes it anew (the
    rewrite idiom). The plan says what the disk and the editor will end with, with the change
    kinds every front end already carries out: Delete then Add is an update of the file to the
    new text (an open buffer is updated, not closed and reopened); Move A to B then Add A is
    an add of B (the moved text) and an update of A. `combined` tells which sections made
    each. Any other repeat is refused, saying why: a second Update of one file (merge the
    chunks), an Update or Delete of what an earlier section created, an Add onto what exists
    by then (ALREADY_EXISTS, as for any Add), a Delete or Update of what is gone (NOT_FOUND).
    """

    def __init__(self) -> None:
        self.changes: list[FileChange] = []
        # path -> (what the last section naming it did, its patch line, its change's index)
        self.state: dict[str, tuple[str, int, int]] = {}
        self.dest: dict[int, Snapshot] = {}  # a move's index -> its destination's snapshot
        self.combined: list[dict[str, Any]] = []
        self.shapes: dict[str, Runs] = {}  # the chunk shapes decomposed so far (`_runs`)

    def add(self, snap: Snapshot, text: str, line: int) -> None:
        prior = self.state.get(snap.path)
        if prior is None or prior[0] not in (_DELETED, _MOVED_AWAY):
            if snap.exists or prior is not None:
                raise _add_onto_existing(snap.path, line, prior)
            self.state[snap.path] = (_ADDED, line, len(self.changes))
            self.changes.append(FileChange("add", snap, new_text_override=text, new_bom=False))
            return
        what, first, k = prior
        gone = self.changes[k]
        rewrite = _rewrite(gone.before, text)
        if what == _DELETED:
            self.changes[k] = rewrite
            planned = [{"path": snap.path, "change": "update"}]
        else:
            assert gone.moved_to is not None
            dest = self.dest.pop(k)
            # The moved text lands at the destination as a new file; the source is rewritten.
            self.changes[k] = FileChange(
                "add",
                dest,
                new_text_override=gone.new_text,
                new_bom=gone.bom,
                # (not a symbolic link's: 0777)
                mode_of=gone.path if gone.before.link is None else None,
            )
            # Still what the Update File section at `first` moved there (it says so when a
            # later section names the destination), though planned as an add.
            self.state[dest.path] = (_MOVED_HERE, first, k)
            self.changes.append(rewrite)
            planned = [
                {"path": dest.path, "change": "add"},
                {"path": snap.path, "change": "update"},
            ]
        self.state[snap.path] = (_REWRITTEN, line, len(self.changes) - 1)
        self.combined.append(
            {
                "path": snap.path,
                "patchLines": [first, line],
                "sections": ["delete" if what == _DELETED else "move", "add"],
                "planned": planned,
            }
        )

    def delete(self, snap: Snapshot, line: int) -> None:
        self.claim(snap.path, line, "delete")
        _require_file(snap, "delete", line)
        self.state[snap.path] = (_DELETED, line, len(self.changes))
        self.changes.append(FileChange("delete", snap))

    def claim(self, path: str, line: int, verb: str) -> None:
        """Refuse a Delete or Update (`verb`) of `path`, or a move onto it ("move"), that an
        earlier section makes meaningless or ambiguous."""
        prior = self.state.get(path)
        if prior is None:
            return
        what, first, _ = prior
        if what in (_DELETED, _MOVED_AWAY):
            if verb == "move":
                raise _named_again(
                    path,
                    first,
                    line,
                    f"the section at patch line {first} {what.replace('moved', 'moves')} it, "
                    "and moving another file onto a path the same patch frees is not supported",
                    "Apply the Delete File (or the move away) in one patch and this move in the "
                    "next.",
                )
            gone = "deleted" if what == _DELETED else "moved away"
            raise errors.not_found(
                f"Cannot {verb} {path} (patch line {line}): the section at patch line {first} "
                f"already {gone} it, so there is no such file by then.",
                "Drop one of the two sections, or name the file as it is after the earlier one.",
                path=path,
                patchLine=line,
                earlierPatchLine=first,
            )
        if verb == "move":
            raise _add_onto_existing(path, line, prior, move=True)
        if what in (_ADDED, _REWRITTEN):
            made = "creates it" if what == _ADDED else "writes it anew"
            if verb == "update":
                why = f"the Add File section at patch line {first} {made} with its whole text"
                hint = "Put the change into that Add File section's '+' lines."
            else:
                why = f"the section at patch line {first} {made}, and deleting it here undoes that"
                hint = "Leave out both sections (and the Delete File before, if any)."
            raise _named_again(path, first, line, why, hint)
        if verb == "update":
            raise _named_again(
                path,
                first,
                line,
                f"the Update File section at patch line {first} already changes it, and a second "
                "one would have to be matched against text that no snapshot shows",
                "Merge the two sections: all chunks for one file under a single "
                "'*** Update File:' section, in file order.",
            )
        raise _named_again(
            path,
            first,
            line,
            f"the Update File section at patch line {first} changes it, which deleting it here "
            "makes pointless",
            "Drop the Update File section and keep the Delete File, or drop the Delete File.",
        )

    def updated(self, snap: Snapshot, dest: Snapshot | None, line: int) -> None:
        """Record the Update File section just planned (`dest`: where it moved the file)."""
        k = len(self.changes) - 1
        if dest is None:
            self.state[snap.path] = (_UPDATED, line, k)
            return
        self.dest[k] = dest
        self.state[snap.path] = (_MOVED_AWAY, line, k)
        self.state[dest.path] = (_MOVED_HERE, line, k)


def _rewrite(before: Snapshot, text: str) -> FileChange:
    """`before` made to hold exactly `text` (an Add File's: no BOM), as one minimal edit."""
    edit = minimal_edit(before.lines, split_lines(text))
    return FileChange("update", before, (edit,) if edit else (), new_bom=False)


def _named_again(path: str, first: int, line: int, why: str, hint: str) -> EditError:
    return errors.invalid_argument(
        f"{path} is named by two file sections (patch lines {first} and {line}): {why}.",
        hint,
        argument="patch",
        path=path,
        patchLine=line,
        earlierPatchLine=first,
    )


def _add_onto_existing(
    path: str, line: int, prior: tuple[str, int, int] | None, move: bool = False
) -> EditError:
    what = f"Move to {path}" if move else f"Add File {path}"
    if prior is None:
        return errors.already_exists(
            f"{what} (patch line {line}) would overwrite an existing file.",
            "Move to a path that does not exist yet, or update the destination file instead."
            if move
            else "Use '*** Update File:' with chunks to change it, or '*** Delete File:' it "
            "first (in the same patch, just before) if replacing it whole is really intended.",
            path=path,
            patchLine=line,
        )
    done, first, _ = prior
    return errors.already_exists(
        f"{what} (patch line {line}) would overwrite the file that the section at patch line "
        f"{first} leaves there ({done}).",
        "Give the file its final content in one section, or move to another path.",
        path=path,
        patchLine=line,
        earlierPatchLine=first,
    )


def _require_file(snap: Snapshot, verb: str, patch_line: int) -> None:
    if not snap.exists:
        raise errors.not_found(
            f"Cannot {verb} {snap.path} (patch line {patch_line}): no such file.",
            "Check the path; to create a file use '*** Add File:' with '+' lines.",
            path=snap.path,
            patchLine=patch_line,
        )


def _plan_update(
    hunk: UpdateFile,
    snap: Snapshot,
    get_snapshot: GetSnapshot,
    sections: _Sections,
    lenient: list[dict[str, Any]],
) -> Snapshot | None:
    """Plan an Update File section into `sections.changes`; the move's destination, if any."""
    _require_file(snap, "update", hunk.patch_line)
    dest: Snapshot | None = None
    if hunk.move_to is not None:
        to = get_snapshot(hunk.move_to)
        if to.path != snap.path:
            sections.claim(to.path, hunk.patch_line, "move")
            if to.exists:
                raise _add_onto_existing(to.path, hunk.patch_line, None, move=True)
            dest = to
    edits = _exact_edits(snap.text, hunk.chunks, snap, sections.shapes)
    if edits is None:
        edits = _FileSeeker(snap, lenient, hunk.chunks).edits(hunk.chunks)
    if dest is not None:
        sections.changes.append(FileChange("move", snap, edits, moved_to=dest.path))
    else:
        sections.changes.append(FileChange("update", snap, edits))
    return dest


def _exact_edits(
    text: str,
    chunks: Sequence[Chunk],
    snap: Snapshot | None = None,
    shapes: dict[str, Runs] | None = None,
) -> tuple[LineEdit, ...] | None:
    """`_FileSeeker.edits` for the common case, on the text itself, or None to take the
    general way (`snap`: the snapshot of `text`, whose lines and CR flag are reused; `shapes`:
    the plan's chunk shapes decomposed so far, see `_runs`).

    The common case: an LF file ending with a newline, every chunk with old lines, each found
    exactly once by the exact pass (its `@@` anchors exactly too; an `*** End of File` chunk
    at the very end). A chunk's old lines are then one substring of the text starting at a
    line start, so it is sought with `str.find` from the cursor's offset (by its longest line,
    see `_seek`), line numbers are newlines counted between two finds, and every edit carries
    the offsets the new text is sliced by: no Python work per file line. Proving a match
    unique needs the rest of the file: a find to the end for a few chunks; past
    INDEX_FROM_CHUNKS, one C-level pass over the snapshot's lines (which the history and the
    diff read anyway) tells where each chunk's longest line stands last and whether it stands
    more than once: a line that stands once gives the chunk's line number too, with nothing
    counted. Anything else (no match, several, a lenient pass, a CR, a pure addition) returns
    None, and `_FileSeeker` decides, errors included; the edits are the ones it would make.

    Measured against 2a090b2 (which took only files of under INDEX_FROM_CHUNKS anchorless
    chunks this way, each sought by its whole text): plan_hunks in-process, snapshots read,
    GC off, callgrind: 1,000 files 407 -> 324 M instructions (CPU 59-65 -> ~42 ms), one 100k-line
    file with 1,000 chunks 184 -> 126 M (lines split beforehand: the split, 99 M, is the history's
    and the diff's too; CPU ~45 -> ~25 ms). Whole CLI, `bench/bench_ab.py --instructions
    --rounds 1 [--workload big] 2a090b2 WORKTREE`: 1,000 files 3160 -> 3088 M, big 1108 -> 1052 M;
    CPU (`--rounds 5`, a loaded machine): 643 -> 570 ms, big 237 -> 224 ms.
    """
    if not text.endswith("\n") or (snap.has_cr if snap is not None else "\r" in text):
        return None
    indexed = len(chunks) >= INDEX_FROM_CHUNKS
    lines: list[str] = []
    last: dict[str, int] = {}  # a wanted line's last position, -1 where it stands nowhere
    repeated: set[str] = set()  # the wanted lines that stand more than once
    if indexed:
        wanted: set[str] = set()
        for chunk in chunks:
            if not chunk.old_lines:
                return None
            wanted.add(max(chunk.old_lines, key=len) + "\n")  # (the first longest, as below)
            wanted.update([a + "\n" for a in chunk.anchors])
        lines = snap.lines if snap is not None else split_lines(text)
        last = dict.fromkeys(wanted, -1)
        for p in compress(range(len(lines)), map(wanted.__contains__, lines)):
            v = lines[p]
            if last[v] >= 0:
                repeated.add(v)
            last[v] = p
    count = text.count
    line = 0  # the cursor, as a line number and as the offset where that line starts
    pos = 0
    # (start line, end line, start offset, old lines, new lines) of each run of -/+, in file
    # order, touching runs of consecutive chunks merged (as `_finish` merges them); lines
    # without their `\n` (every one has it).
    runs: list[tuple[int, int, int, Sequence[str], Sequence[str]]] = []
    for chunk in chunks:
        old = chunk.old_lines
        if not old:
            return None
        for anchor in chunk.anchors:
            v = anchor + "\n"
            at = _find_line_run(text, v, pos)
            if at < 0:
                return None
            line = last[v] + 1 if indexed and v not in repeated else line + count("\n", pos, at) + 1
            pos = at + len(v)
        k = len(old)
        lens = list(map(len, old))
        pivot = lens.index(max(lens))
        pattern = "\n".join(old) + "\n"
        v = old[pivot] + "\n"
        off = sum(lens[:pivot]) + pivot  # where `v` starts in `pattern`
        eof = chunk.is_end_of_file
        if eof:
            # Only the last position, not before the cursor (as `_FileSeeker.find`).
            at = len(text) - len(pattern)
            if at < pos or not text.endswith(pattern) or (at and text[at - 1] != "\n"):
                return None
        else:
            at = _seek(text, pattern, v, off, pos)
            if at < 0:
                return None
        if indexed and v not in repeated:
            start = last[v] - pivot  # the one place the pivot line stands: the match is there
        else:
            start = line + count("\n", pos, at)
            if eof:
                pass
            elif indexed:
                # The pivot line stands again further on: is the whole chunk there too?
                want = [x + "\n" for x in old]
                stop = min(len(lines) - 1 - k + pivot, last[v])
                if _scan(lines, want, pivot, start + 1, stop, True):
                    return None  # AMBIGUOUS: the general way says where
            elif _seek(text, pattern, v, off, at + 1) >= 0:
                return None
        line = start + k
        pos = at + len(pattern)
        new = chunk.new_lines
        for oi, oe, ni, ne in _runs(chunk.ops, shapes):
            s = start + oi
            if runs and runs[-1][1] == s:
                ms, _, mc, mold, mnew = runs[-1]
                runs[-1] = (ms, start + oe, mc, (*mold, *old[oi:oe]), (*mnew, *new[ni:ne]))
            else:
                char = at + sum(lens[:oi]) + oi if oi else at
                runs.append((s, start + oe, char, old[oi:oe], new[ni:ne]))
    out: list[LineEdit] = []
    for s, e, char, old_lines, new_lines in runs:
        n, m = e - s, len(new_lines)
        if n and m and (old_lines[0] == new_lines[0] or old_lines[-1] == new_lines[-1]):
            # A replaced line may come back unchanged (a `-x`/`+x` pair): keep it minimal.
            p, q = common_ends(old_lines, new_lines)
            if p == n and p == m:
                continue
            if p:
                char += sum(map(len, old_lines[:p])) + p
            old_lines = old_lines[p : n - q]
            new_lines = new_lines[p : m - q]
            s, e = s + p, e - q
        end = char + sum(map(len, old_lines)) + len(old_lines)
        out.append(LineEdit(s, e, tuple([x + "\n" for x in new_lines]), (char, end)))
    return tuple(out)


# A chunk is sought by its longest line when that is at least this long: a shorter one (`}`,
# a blank line) stands at too many places, each a candidate to check.
SEEK_BY_LINE_FROM = 8


def _seek(text: str, pattern: str, line: str, off: int, start: int) -> int:
    """The first offset from `start` where `pattern` (whole lines) begins at a line start, or -1.

    Sought by `line`, the pattern's line at offset `off` in it, then the whole compared: a
    needle under 100 characters is found by CPython's plain search, while a longer one (most
    chunks' whole text) is first preprocessed for the two-way search, a cost per call that
    was ~60% of planning the 1,000-file workload.
    """
    if len(line) < SEEK_BY_LINE_FROM:
        line, off = pattern, 0
    find = text.find
    q = find(line, start + off)
    while q >= 0:
        at = q - off
        if (not at or text[at - 1] == "\n") and text.startswith(pattern, at):
            return at
        q = find(line, q + 1)
    return -1


# A chunk's runs of -/+ ops as (first old line, end old line, first new line, end new line),
# relative to the chunk.
Runs = tuple[tuple[int, int, int, int], ...]
# Patches repeat a few chunk shapes (`   -+   `), so a plan decomposes each once, keeping the
# short ones in its own `shapes` (per plan, not a module global): 5,000 chunks of one shape
# 10.9 -> 0.5 ms in process (best of 9).
_SHAPE_KEPT_UP_TO = 64


def _runs(ops: str, shapes: dict[str, Runs] | None = None) -> Runs:
    runs = shapes.get(ops) if shapes is not None else None
    if runs is not None:
        return runs
    count = ops.count
    out = []
    for m in _RUN.finditer(ops):
        a, b = m.span()
        oi = a - count("+", 0, a)
        ni = a - count("-", 0, a)
        added = count("+", a, b)
        out.append((oi, oi + (b - a) - added, ni, ni + added))
    runs = tuple(out)
    if shapes is not None and len(ops) <= _SHAPE_KEPT_UP_TO:
        shapes[ops] = runs
    return runs


def _find_line_run(text: str, pattern: str, start: int) -> int:
    """The first offset from `start` where `pattern` (whole lines) begins at a line start, or -1."""
    at = text.find(pattern, start)
    while at > 0 and text[at - 1] != "\n":
        at = text.find(pattern, at + 1)
    return at


def _without_final_newline(
    old: tuple[str, ...], new: tuple[str, ...], ops: str
) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """A chunk's lines without its last old line (an empty one), and without its last new line
    when that is empty too, as Codex retries a chunk; `ops` follow, so that the lines left
    alone stay context: a context line dropped from one side only becomes added or removed."""
    items: list[list[str]] = []
    oi = ni = 0
    for op in ops:
        if op == " ":
            items.append([" ", old[oi]])
            oi, ni = oi + 1, ni + 1
        elif op == "-":
            items.append(["-", old[oi]])
            oi += 1
        else:
            items.append(["+", new[ni]])
            ni += 1

    def drop(side: str, gone: str) -> None:
        i = max(k for k, item in enumerate(items) if item[0] in side)
        if items[i][0] == " ":
            items[i][0] = gone  # now on the other side only
        else:
            del items[i]

    drop(" -", "+")
    if new and new[-1] == "":
        drop(" +", "-")
    return (
        tuple(t for op, t in items if op != "+"),
        tuple(t for op, t in items if op != "-"),
        "".join(op for op, _ in items),
    )


class _Level:
    """One ladder level's view of the file: each line normalised, and optionally an index."""

    __slots__ = ("values", "last", "reverse")

    def __init__(self, values: list[str]) -> None:
        self.values = values
        # Last position of a value (-1: absent), for files with many chunks: a pivot line found
        # at its last position has no later occurrence, so uniqueness needs no scan to the end.
        self.last: dict[str, int] | None = None
        self.reverse: list[str] | None = None

    def prefill(self, wanted: set[str]) -> None:
        """Index the last positions of `wanted` values in one C-level pass over the file."""
        values = self.values
        last = self.last = dict.fromkeys(wanted, -1)
        for p in compress(range(len(values)), map(wanted.__contains__, values)):
            last[values[p]] = p

    def last_of(self, value: str) -> int:
        assert self.last is not None
        p = self.last.get(value)
        if p is None:
            # Not prefilled (an anchor or a retried pattern): scan back from the end once.
            if self.reverse is None:
                self.reverse = self.values[::-1]
            try:
                p = len(self.values) - 1 - self.reverse.index(value)
            except ValueError:
                p = -1
            self.last[value] = p
        return p


# Past this many chunks in one file, indexing the chunks' pivot lines (one C-level pass) is
# cheaper than scanning the rest of the file once per chunk to prove a match unique.
INDEX_FROM_CHUNKS = 24


def _pivot(want: Sequence[str]) -> int:
    """The line a chunk is sought by: its longest (long lines are the rare ones)."""
    lens = list(map(len, want))
    return lens.index(max(lens))


def _scan(
    values: list[str], want: list[str], pivot: int, start: int, stop: int, first_only: bool
) -> list[int]:
    """Where `want` stands in `values` at or after `start`: its pivot line found by the C-level
    `list.index` up to position `stop`, then the whole window compared."""
    k = len(want)
    v = want[pivot]
    index = values.index
    hits: list[int] = []
    i = start + pivot
    while i <= stop:
        try:
            p = index(v, i, stop + 1)
        except ValueError:
            break
        s = p - pivot
        if values[s : s + k] == want:
            hits.append(s)
            if first_only:
                break
        i = p + 1
    return hits


class _FileSeeker:
    """Locates one file's chunks in order and turns them into minimal line edits."""

    def __init__(self, snap: Snapshot, lenient: list[dict[str, Any]], chunks: Sequence[Chunk]):
        self.snap = snap
        self.lenient = lenient
        self.eol = snap.eol
        lines = snap.lines
        last = lines[-1]
        self.unterminated = last != ""
        # The searchable lines: the final empty "line" after a trailing newline is not one, and
        # an unterminated last line is searched (and kept) as if it had the file's terminator,
        # because Codex ends every updated file with a newline.
        self.lines = lines[:-1] + [last + self.eol] if self.unterminated else lines[:-1]
        # Exact matching compares whole lines with their `\n` when the file has no other
        # terminator (no per-line copies needed); otherwise the lines' contents.
        self.lf_only = "\r" not in snap.text
        self.chunks = chunks
        self.exact_wants: dict[int, tuple[list[str], int]] = {}
        self.indexed = len(chunks) >= INDEX_FROM_CHUNKS
        self.levels: dict[str, _Level] = {}
        if self.indexed:
            self._level("exact", LADDER[0][1])

    def _exact(self, line: str) -> str:
        return line + "\n" if self.lf_only else line

    def _pivots(self, norm: Callable[[str], str]) -> set[str]:
        """Every chunk's pivot line (and anchor) as `norm` sees it: what an index must cover."""
        wanted = {norm(a) for c in self.chunks for a in c.anchors}
        exact = norm == self._exact
        for chunk in self.chunks:
            if chunk.old_lines:
                want = [norm(x) for x in chunk.old_lines]
                pivot = _pivot(want)
                wanted.add(want[pivot])
                if exact:
                    # find() asks for exactly this first; do not compute it twice.
                    self.exact_wants[id(chunk.old_lines)] = (want, pivot)
        return wanted

    def content(self, i: int) -> str:
        return content(self.lines[i])

    def _level(self, name: str, norm: Callable[[str], str]) -> _Level:
        level = self.levels.get(name)
        if level is None:
            if name != "exact":
                values = list(map(norm, self.lines))  # every level below exact strips the end
            elif self.lf_only:
                values = self.lines
            else:
                values = [content(x) for x in self.lines]
            level = self.levels[name] = _Level(values)
            if self.indexed:
                level.prefill(self._pivots(self._exact if name == "exact" else norm))
        return level

    def find(
        self, pattern: Sequence[str], start: int, eof: bool, first_only: bool = False
    ) -> tuple[str, list[int]]:
        """The first ladder level with any match of `pattern` at or after `start`, and all hits."""
        k = len(pattern)
        n = len(self.lines)
        if k > n or k == 0:
            return "", []
        if not eof and not self.indexed and self.lf_only:
            # The common case, without the ladder's generality: exact lines, no index.
            exact = self._exact_hits(pattern, start, first_only)
            if exact:
                return "exact", exact
            ladder = LADDER[1:]
        else:
            ladder = LADDER
        for name, norm in ladder:
            level = self._level(name, norm)
            values = level.values
            cached = self.exact_wants.get(id(pattern)) if name == "exact" else None
            if cached is not None:
                want, pivot = cached
            else:
                if name != "exact":
                    want = [norm(x) for x in pattern]
                elif self.lf_only:
                    want = [x + "\n" for x in pattern]
                else:
                    want = list(pattern)
                pivot = _pivot(want)
            if eof:
                # Only the last position, and only if the cursor has not passed it (Codex:
                # a chunk never matches lines an earlier chunk or anchor consumed).
                if n - k >= start and values[n - k :] == want:
                    return name, [n - k]
                continue
            v = want[pivot]
            stop = n - k + pivot  # the pivot's last position that leaves room for the window
            if level.last is not None:
                stop = min(stop, level.last_of(v))
            hits = _scan(values, want, pivot, start, stop, first_only)
            if hits:
                return name, hits
        return "", []

    def _exact_hits(self, pattern: Sequence[str], start: int, first_only: bool) -> list[int]:
        """`find`'s exact level for an LF-only file without an index (same search)."""
        want = [x + "\n" for x in pattern]
        pivot = _pivot(want)
        stop = len(self.lines) - len(want) + pivot
        return _scan(self.lines, want, pivot, start, stop, first_only)

    def edits(self, chunks: Sequence[Chunk]) -> tuple[LineEdit, ...]:
        lines = self.lines
        eol = self.eol
        cursor = 0
        pending: list[tuple[int, int, int, tuple[str, ...]]] = []  # (start, end, seq, new)
        for seq, chunk in enumerate(chunks):
            # Each `@@ <line>` is sought after the previous one (`@@ class Base` then
            # `@@ def run():` narrows step by step); the chunk's lines after the last.
            for k, anchor in enumerate(chunk.anchors):
                level, hits = self.find([anchor], cursor, False, first_only=True)
                if not hits:
                    raise self._no_match(chunk, cursor, anchor=k)
                cursor = hits[0] + 1
                self._note(level, chunk)
            old, new, ops = chunk.old_lines, chunk.new_lines, chunk.ops
            if not old:
                # Codex (0.169.0): a pure addition goes at the very end of the file, after a
                # trailing blank line too (`a\n\n` + `+b` is `a\n\nb\n`); an anchor only
                # moves the cursor for the chunks after it.
                at = len(lines)
                pending.append((at, at, seq, tuple(x + eol for x in new)))
                continue
            level, hits = self.find(old, cursor, chunk.is_end_of_file)
            if not hits and old[-1] == "":
                # Codex: a trailing empty old line may stand for the file's final newline: it
                # tries again without it (and without the last new line if that is empty too);
                # nothing left to find matches at the cursor.
                old, new, ops = _without_final_newline(old, new, ops)
                if old:
                    level, hits = self.find(old, cursor, chunk.is_end_of_file)
                else:
                    level, hits = "exact", [cursor]
            if not hits:
                raise self._no_match(chunk, cursor)
            if len(hits) > 1:
                raise self._ambiguous(chunk, cursor, hits)
            self._note(level, chunk)
            start = hits[0]
            cursor = start + len(old)
            # Each run of -/+ ops is one edit; context lines between runs stay untouched. Run
            # positions come from counting ops (C-level), not from a loop over every line.
            count = ops.count
            for m in _RUN.finditer(ops):
                a, b = m.span()
                pos = start + a - count("+", 0, a)
                ni = a - count("-", 0, a)
                added = count("+", a, b)
                pending.append(
                    (
                        pos,
                        pos + (b - a) - added,
                        seq,
                        tuple([x + eol for x in new[ni : ni + added]]),
                    )
                )
        return self._finish(pending)

    def _finish(self, pending: list[tuple[int, int, int, tuple[str, ...]]]) -> tuple[LineEdit, ...]:
        lines = self.lines
        if self.unterminated:
            last = len(lines) - 1
            if not any(s <= last < e for s, e, _, _ in pending):
                pending.append((last, last + 1, -1, (lines[last],)))
        pending.sort(key=itemgetter(0, 1, 2))
        merged: list[tuple[int, int, list[str]]] = []
        for s, e, _, new in pending:
            if merged and s <= merged[-1][1]:
                ms, me, mnew = merged[-1]
                if s < me and s != e:
                    raise errors.invalid_argument(
                        f"Two chunks of {self.snap.path} change the same lines.",
                        "Merge the overlapping chunks into one.",
                        argument="patch",
                        path=self.snap.path,
                    )
                if s == me:
                    mnew.extend(lines[me:s])
                    mnew.extend(new)
                    merged[-1] = (ms, max(me, e), mnew)
                    continue
                # A pure addition inside a replaced range goes after the replacement.
                mnew.extend(new)
                continue
            merged.append((s, e, list(new)))
        out: list[LineEdit] = []
        old_lines = self.snap.lines
        line, char = 0, 0
        for s, e, new_lines in merged:
            if s != e and new_lines:
                # A replaced line may come back unchanged (a `-x`/`+x` pair): keep the edit
                # minimal. Compared with the snapshot's own lines: an unterminated last line
                # differs.
                n, m = e - s, len(new_lines)
                p, q = common_ends(old_lines[s:e], new_lines)
                if p == n and p == m:
                    continue
                new_lines = new_lines[p : m - q]
                s, e = s + p, e - q
            # Character offsets let FileChange build the new text by slicing the old one.
            char += sum(map(len, old_lines[line:s]))
            line = s
            end = char + sum(map(len, old_lines[s:e]))
            out.append(LineEdit(s, e, tuple(new_lines), (char, end)))
        return tuple(out)

    def _note(self, level: str, chunk: Chunk) -> None:
        if level != "exact":
            self.lenient.append(
                {"path": self.snap.path, "patchLine": chunk.patch_line, "match": level}
            )

    def _ambiguous(self, chunk: Chunk, cursor: int, hits: list[int]) -> EditError:
        listed = [h + 1 for h in hits[:MAX_LISTED_MATCHES]]
        return errors.ambiguous(
            f"The chunk at patch line {chunk.patch_line} matches {len(hits)} places in "
            f"{self.snap.path} (lines {', '.join(map(str, listed))})"
            f"{f' after line {cursor}' if cursor else ''}; applying it would mean guessing "
            "which one.",
            "Add context lines (or an '@@ <line>' anchor such as the enclosing def or class) so "
            "the chunk matches exactly one place.",
            path=self.snap.path,
            patchLine=chunk.patch_line,
            lines=listed,
            count=len(hits),
        )

    def _no_match(self, chunk: Chunk, cursor: int, anchor: int | None = None) -> EditError:
        """NO_MATCH for the chunk's old lines, or (`anchor`: its index) for one of its anchors."""
        path = self.snap.path
        if anchor is not None:
            what = "its '@@' anchor line was"
            if len(chunk.anchors) > 1:
                what = f"its '@@' anchor line {anchor + 1} of {len(chunk.anchors)} was"
                if anchor:
                    what += f" (looked for after '@@ {chunk.anchors[anchor - 1]}')"
            wanted: Sequence[str] = [chunk.anchors[anchor]]
        else:
            what = "its context and removed lines were"
            wanted = chunk.old_lines
        found: list[dict[str, Any]] = []
        _, earlier = self.find(wanted, 0, False) if cursor else ("", [])
        for h in earlier[:3]:
            found.append(
                {
                    "line": h + 1,
                    "text": self.content(h),
                    "why": f"matches here, but before line {cursor + 1} where the previous "
                    "chunk left off: chunks must be in file order",
                }
            )
        if not found:
            from lsp_server.engine.matching import candidates

            found = [
                dict(c, why=str(c["why"]).replace("oldText", "the chunk"))
                for c in candidates(self.snap, "\n".join(wanted))
            ]
        place = f" after line {cursor}" if cursor else ""
        if chunk.is_end_of_file and anchor is None:
            place = " at the end of the file ('*** End of File')"
        shown = "\n".join(wanted[:MAX_SHOWN_LINES])
        if len(wanted) > MAX_SHOWN_LINES:
            shown += f"\n... ({len(wanted) - MAX_SHOWN_LINES} more lines)"
        return errors.no_match(
            f"The chunk at patch line {chunk.patch_line} does not match {path}: {what} not "
            f"found{place}, not even ignoring whitespace and typographic punctuation:\n{shown}",
            "Read the file again and resend the chunk with context lines exactly as the file "
            "has them, chunks in file order.",
            path=path,
            patchLine=chunk.patch_line,
            oldLines=list(wanted),
            candidates=found,
        )
