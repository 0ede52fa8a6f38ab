"""The plan data model: what an action will change, as minimal line-range edits per file.

A `Plan` is computed purely from snapshots and says everything a front end needs to carry it out:
for each file the snapshot it was computed from (the precondition), the line-range edits, and the
text it must have afterwards (what verification compares against).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

from lsp_server.engine.text import HashMark, Snapshot, sha256_text, split_lines
from lsp_server.engine.values import slot_setters

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Literal, TypeAlias, overload

ChangeKind: TypeAlias = "Literal['add', 'update', 'delete', 'move']"  # quoted: no typing


@dataclass(frozen=True, slots=True, init=False)
class LineEdit:
    """Replace `lines[start:end]` of the old snapshot (LSP line list) with `new_lines`.

    `new_lines` keep their terminators. An edit whose `end` is `len(lines)` also replaces the
    final, unterminated line.

    Made at a slots object's cost (values.slot_setters): 0.93 -> 0.28 us each, best of 7 in
    process, ~3 ms of the 5,000 edits of the 1,000-file plan.
    """

    start: int
    end: int
    new_lines: tuple[str, ...]
    # Character offsets of lines[start] and lines[end] in the old text, when the planner knows
    # them: the new text is then built by slicing instead of joining every line.
    offsets: tuple[int, int] | None = None

    def __init__(
        self,
        start: int,
        end: int,
        new_lines: tuple[str, ...],
        offsets: tuple[int, int] | None = None,
    ) -> None:
        _set_start(self, start)
        _set_end(self, end)
        _set_new_lines(self, new_lines)
        _set_offsets(self, offsets)


_set_start, _set_end, _set_new_lines, _set_offsets = slot_setters(
    LineEdit, "start", "end", "new_lines", "offsets"
)


def apply_line_edits(lines: list[str], edits: list[LineEdit]) -> list[str]:
    """The line list after `edits` (sorted, non-overlapping, in old coordinates)."""
    out: list[str] = []
    pos = 0
    for e in edits:
        out.extend(lines[pos : e.start])
        out.extend(e.new_lines)
        pos = e.end
    out.extend(lines[pos:])
    # Keep the representation invariant: the last element is the unterminated final line.
    if not out or out[-1].endswith(("\n", "\r")):
        out.append("")
    return out


class EditedLines(Sequence[str]):
    """The line list after `edits`, read lazily: indexing costs O(log edits), not O(file).

    Diffs and checks only look at the lines around the edits, so a 100k-line file need not be
    rebuilt for them.
    """

    def __init__(self, lines: Sequence[str], edits: Sequence[LineEdit]) -> None:
        self._old = lines
        self._edits = list(edits)
        # Start of each edit's new lines in new coordinates.
        self._starts: list[int] = []
        delta = 0
        for e in self._edits:
            self._starts.append(e.start + delta)
            delta += len(e.new_lines) - (e.end - e.start)
        n = len(lines) + delta
        last = self._raw(n - 1) if n else ""
        # Keep the representation invariant: a terminated last line is followed by "".
        self._len = n + (1 if n == 0 or last.endswith(("\n", "\r")) else 0)
        self._n = n

    def _raw(self, i: int) -> str:
        k = bisect_right(self._starts, i) - 1
        if k >= 0:
            e = self._edits[k]
            offset = i - self._starts[k]
            if offset < len(e.new_lines):
                return e.new_lines[offset]
            # Past this edit: map back through its size change.
            return self._old[e.end + offset - len(e.new_lines)]
        return self._old[i]

    def __len__(self) -> int:
        return self._len

    if TYPE_CHECKING:  # the overloads are the type checker's (no typing at run time)

        @overload
        def __getitem__(self, i: int) -> str: ...
        @overload
        def __getitem__(self, i: slice) -> list[str]: ...

    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._len))]
        if i < 0:
            i += self._len
        if not 0 <= i < self._len:
            raise IndexError(i)
        return "" if i >= self._n else self._raw(i)


def common_ends(old: Sequence[str], new: Sequence[str]) -> tuple[int, int]:
    """How many lines `old` and `new` share at the start, then at the end (not overlapping)."""
    n, m = len(old), len(new)
    p = 0
    while p < n and p < m and old[p] == new[p]:
        p += 1
    s = 0
    while s < n - p and s < m - p and old[n - 1 - s] == new[m - 1 - s]:
        s += 1
    return p, s


def minimal_edit(old: Sequence[str], new: Sequence[str], offset: int = 0) -> LineEdit | None:
    """One edit covering only the lines that differ between `old` and `new` (None if equal)."""
    n, m = len(old), len(new)
    p, s = common_ends(old, new)
    if p == n and p == m:
        return None
    return LineEdit(offset + p, offset + n - s, tuple(new[p : m - s]))


class NewDigest:
    """A change's new-text sha256 once something computed it, and the running hash states an
    editor's document store resumes from (`text.hash_with_marks`), if it was hashed with them.

    Deliberately mutable, declared on `FileChange`: whoever writes the new bytes (the disk
    writer) or hashes them while the editor applies them fills it, so the result's token is not
    computed a second time over megabytes.
    """

    __slots__ = ("sha256", "marks")

    def __init__(self) -> None:
        self.sha256: str | None = None
        self.marks: list[HashMark] | None = None


@dataclass(frozen=True, eq=False)
class FileChange:
    """One file's part of a plan."""

    change: ChangeKind
    before: Snapshot
    edits: tuple[LineEdit, ...] = ()
    # For add/delete/move the whole new text; for update derived from the edits.
    new_text_override: str | None = None
    moved_to: str | None = None
    new_bom: bool | None = None
    # For an add that is the text a move carried away (Move A to B, then Add A: an add of B):
    # the file whose mode the new one keeps, as the move's own destination would.
    mode_of: str | None = None
    # For an add: the permission bits the new file gets (an undone delete's file, as it was),
    # None for the umask's.
    new_mode: int | None = None
    # Not an argument: each change (a `dataclasses.replace` too) gets its own.
    digest: NewDigest = field(default_factory=NewDigest, init=False, repr=False)

    @property
    def path(self) -> str:
        return self.before.path

    @property
    def target_path(self) -> str:
        return self.moved_to or self.before.path

    @cached_property
    def new_lines(self) -> list[str]:
        if self.change == "delete":
            return [""]
        if self.new_text_override is not None:
            return split_lines(self.new_text_override)
        return apply_line_edits(self.before.lines, list(self.edits))

    @cached_property
    def new_text(self) -> str:
        if self.change == "delete":
            return ""
        if self.new_text_override is not None:
            return self.new_text_override
        if self.edits and all(e.offsets is not None for e in self.edits):
            old = self.before.text
            pieces: list[str] = []
            pos = 0
            for e in self.edits:
                assert e.offsets is not None
                pieces.append(old[pos : e.offsets[0]])
                pieces.extend(e.new_lines)
                pos = e.offsets[1]
            pieces.append(old[pos:])
            return "".join(pieces)
        return "".join(self.new_lines)

    @property
    def new_sha256(self) -> str:
        digest = self.digest
        if digest.sha256 is None:
            digest.sha256 = sha256_text(self.new_text)
        return digest.sha256

    @property
    def bom(self) -> bool:
        return self.before.bom if self.new_bom is None else self.new_bom


@dataclass(frozen=True, eq=False)
class Plan:
    """Everything one action will change. Computed purely; carried out by the LSP or CLI front."""

    action: str
    changes: tuple[FileChange, ...]
    summary: dict[str, object] = field(default_factory=dict)
