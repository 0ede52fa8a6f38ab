"""One document's incremental tree-sitter parse: edits recorded on the tree, reparsed lazily."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from tree_sitter import Parser, Point, Tree

from lsp_server.engine.model import LineEdit
from lsp_server.engine.syntax.grammars import load_language
from lsp_server.engine.syntax.problems import DEFAULT_MAX_PROBLEMS, SyntaxProblem, extract_problems

# Documents smaller than this get a fresh parse when an incremental one finds errors (~20 ms at
# this size), so their errors never depend on the edit history; see DocumentSyntax._current_tree.
EXACT_BELOW_BYTES = 64 * 1024


@dataclass(frozen=True)
class ByteEdit:
    """A tree-sitter edit: byte offsets and (row, byte column) points, plus the inserted bytes."""

    start_byte: int
    old_end_byte: int
    new_end_byte: int
    start_point: tuple[int, int]
    old_end_point: tuple[int, int]
    new_end_point: tuple[int, int]
    new_bytes: bytes


def _encode(text: str) -> bytes:
    # Same policy as sha256_text: a lone surrogate from a UTF-16 client must not crash a parse.
    return text.encode("utf-8", "surrogatepass")


def _point_after(start: tuple[int, int], inserted: bytes) -> tuple[int, int]:
    newlines = inserted.count(b"\n")
    if newlines == 0:
        return (start[0], start[1] + len(inserted))
    return (start[0] + newlines, len(inserted) - inserted.rfind(b"\n") - 1)


def _point_at(source: bytes, offset: int) -> tuple[int, int]:
    """Tree-sitter's point for a byte offset: rows end at `\\n` only."""
    row = source.count(b"\n", 0, offset)
    return (row, offset - (source.rfind(b"\n", 0, offset) + 1))


_CHUNK = 4096


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of `a` and `b`.

    Compares whole chunks (memcmp speed), then halves the chunk: ~n/4096 + 12 compares.
    """
    n = min(len(a), len(b))
    i = 0
    step = _CHUNK
    while step:
        while i + step <= n and a.startswith(b[i : i + step], i):
            i += step
        step //= 2
    return i


def _common_suffix(a: bytes, b: bytes, prefix: int) -> int:
    """Length of the common suffix of `a` and `b` not overlapping their common `prefix`."""
    n = min(len(a), len(b)) - prefix
    la, lb = len(a), len(b)
    i = 0
    step = _CHUNK
    while step:
        while i + step <= n and a.endswith(b[lb - i - step : lb - i], 0, la - i):
            i += step
        step //= 2
    return i


def line_edit_to_byte_edit(lines: Sequence[str], edit: LineEdit, source: bytes) -> ByteEdit:
    """`edit` (on the LSP line list `lines`) as a tree-sitter edit of `source`.

    `source` is the UTF-8 encoding of `"".join(lines)`; it is needed for the points, whose rows
    tree-sitter counts at `\\n` only.
    """
    start_byte = len(_encode("".join(lines[: edit.start])))
    old_end_byte = start_byte + len(_encode("".join(lines[edit.start : edit.end])))
    new_bytes = _encode("".join(edit.new_lines))
    start_point = _point_at(source, start_byte)
    return ByteEdit(
        start_byte=start_byte,
        old_end_byte=old_end_byte,
        new_end_byte=start_byte + len(new_bytes),
        start_point=start_point,
        old_end_point=_point_at(source, old_end_byte),
        new_end_point=_point_after(start_point, new_bytes),
        new_bytes=new_bytes,
    )


class DocumentSyntax:
    """One document's parse tree, kept current by incremental edits and reparsed lazily.

    Thread-safe: a lock serialises edits and reparses, so a front end may call `problems()` from a
    worker thread while its event loop records edits.
    """

    def __init__(
        self,
        language: str,
        text: str,
        max_problems: int = DEFAULT_MAX_PROBLEMS,
        exact_below: int = EXACT_BELOW_BYTES,
    ) -> None:
        self.language = language
        self.max_problems = max_problems
        self.exact_below = exact_below
        self._lock = threading.Lock()
        self._parser = Parser(load_language(language))
        self._source = _encode(text)
        self._tree: Tree | None = None
        # Edits recorded on the tree since the last parse.
        self._dirty = False
        self._problems: list[SyntaxProblem] | None = None
        # The last tree without errors and its source (see _base_tree).
        self._clean: tuple[Tree, bytes] | None = None

    @property
    def source(self) -> bytes:
        """The UTF-8 text the tree describes (after the recorded edits)."""
        return self._source

    def tree(self) -> Tree:
        """The current tree, parsed (incrementally when possible) if edits are pending."""
        with self._lock:
            return self._current_tree()

    def _current_tree(self) -> Tree:
        if self._tree is None:
            self._tree = self._parser.parse(self._source)
        elif self._dirty:
            self._tree = self._parser.parse(self._source, self._base_tree())
            if self._tree.root_node.has_error and len(self._source) < self.exact_below:
                # tree-sitter's error recovery can depend on which old nodes a reparse reused:
                # in fuzzing, about 1 in 200 reparses of badly broken TypeScript or Rust gave
                # other errors than a fresh parse (none seen for Python). Below this size a
                # fresh parse is cheap, so the errors are exactly those of a full parse.
                self._tree = self._parser.parse(self._source)
        self._dirty = False
        if not self._tree.root_node.has_error:
            # Copy: later edits mutate self._tree, the clean base must stay as parsed.
            self._clean = (self._tree.copy(), self._source)
        return self._tree

    def _base_tree(self) -> Tree:
        """The old tree to reparse from: the edited current one, or the last clean one.

        Reparsing from a tree that holds errors is slow in tree-sitter: after a one-line break is
        fixed in a 100k-line Python file it takes ~450 ms (near a full parse), against ~70 ms from
        a clean tree. So while the document is broken, a copy of the last clean tree, edited by
        the byte difference between its text and the current one, is the base, as long as that
        difference is small.
        """
        assert self._tree is not None
        if self._clean is None or not self._tree.root_node.has_error:
            return self._tree
        clean_tree, clean_source = self._clean
        src = self._source
        prefix = _common_prefix(clean_source, src)
        suffix = _common_suffix(clean_source, src, prefix)
        old_end = len(clean_source) - suffix
        new_end = len(src) - suffix
        if max(old_end, new_end) - prefix > len(src) // 4:
            return self._tree
        base = clean_tree.copy()
        start_point = _point_at(clean_source, prefix)
        base.edit(
            start_byte=prefix,
            old_end_byte=old_end,
            new_end_byte=new_end,
            start_point=Point(*start_point),
            old_end_point=Point(*_point_at(clean_source, old_end)),
            new_end_point=Point(*_point_after(start_point, src[prefix:new_end])),
        )
        return base

    def edit(
        self,
        start_byte: int,
        old_end_byte: int,
        new_end_byte: int,
        start_point: tuple[int, int],
        old_end_point: tuple[int, int],
        new_end_point: tuple[int, int],
        new_source: bytes,
    ) -> None:
        """Record a tree-sitter edit; `new_source` is the whole UTF-8 text after it."""
        with self._lock:
            self._edit_tree(
                start_byte, old_end_byte, new_end_byte, start_point, old_end_point, new_end_point
            )
            self._source = new_source

    def _edit_tree(
        self,
        start_byte: int,
        old_end_byte: int,
        new_end_byte: int,
        start_point: tuple[int, int],
        old_end_point: tuple[int, int],
        new_end_point: tuple[int, int],
    ) -> None:
        if self._tree is not None:
            self._tree.edit(
                start_byte=start_byte,
                old_end_byte=old_end_byte,
                new_end_byte=new_end_byte,
                start_point=Point(*start_point),
                old_end_point=Point(*old_end_point),
                new_end_point=Point(*new_end_point),
            )
            self._dirty = True
        self._problems = None

    def apply_byte_edit(self, e: ByteEdit) -> None:
        """Apply one `ByteEdit` computed against the current source."""
        with self._lock:
            self._apply(e)

    def _apply(self, e: ByteEdit) -> None:
        self._edit_tree(
            e.start_byte,
            e.old_end_byte,
            e.new_end_byte,
            e.start_point,
            e.old_end_point,
            e.new_end_point,
        )
        src = self._source
        self._source = src[: e.start_byte] + e.new_bytes + src[e.old_end_byte :]

    def replace(self, start_byte: int, old_end_byte: int, new_text: str) -> None:
        """Replace the UTF-8 byte range [start_byte, old_end_byte) with `new_text`."""
        with self._lock:
            src = self._source
            new_bytes = _encode(new_text)
            start_point = _point_at(src, start_byte)
            self._apply(
                ByteEdit(
                    start_byte,
                    old_end_byte,
                    start_byte + len(new_bytes),
                    start_point,
                    _point_at(src, old_end_byte),
                    _point_after(start_point, new_bytes),
                    new_bytes,
                )
            )

    def apply_line_edits(self, lines_before: Sequence[str], edits: Sequence[LineEdit]) -> None:
        """Apply `LineEdit`s (old coordinates of `lines_before`, sorted, non-overlapping)."""
        with self._lock:
            # Last edit first, so each edit's offsets are still those of the text it was made on.
            for e in sorted(edits, key=lambda x: x.start, reverse=True):
                self._apply(line_edit_to_byte_edit(lines_before, e, self._source))

    def set_text(self, text: str) -> None:
        """Replace the whole text (full-document sync): recorded as an edit of what differs."""
        with self._lock:
            src, new = self._source, _encode(text)
            if new == src:
                return
            prefix = _common_prefix(src, new)
            suffix = _common_suffix(src, new, prefix)
            new_bytes = new[prefix : len(new) - suffix]
            start_point = _point_at(src, prefix)
            self._apply(
                ByteEdit(
                    prefix,
                    len(src) - suffix,
                    prefix + len(new_bytes),
                    start_point,
                    _point_at(src, len(src) - suffix),
                    _point_after(start_point, new_bytes),
                    new_bytes,
                )
            )

    def problems(self) -> list[SyntaxProblem]:
        """The document's syntax errors (capped, sorted by position), reparsing if needed."""
        with self._lock:
            tree = self._current_tree()
            if self._problems is None:
                self._problems = extract_problems(tree, self._source, self.max_problems)
            return list(self._problems)


def syntax_problems(
    language: str | None, text: str, max_problems: int = DEFAULT_MAX_PROBLEMS
) -> list[SyntaxProblem]:
    """A full parse of `text`: its syntax errors, or none when `language` is None."""
    if language is None:
        return []
    return DocumentSyntax(language, text, max_problems).problems()
