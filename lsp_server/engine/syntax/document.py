"""One document's incremental tree-sitter parse: edits recorded on the tree, reparsed lazily."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Parser, Point, Tree

from lsp_server.engine.model import LineEdit
from lsp_server.engine.syntax.grammars import load_language
from lsp_server.engine.syntax.problems import DEFAULT_MAX_PROBLEMS, SyntaxProblem, extract_problems
from lsp_server.engine.syntax.region import check_region, find_region
from lsp_server.engine.syntax.rows import READ_CHUNK, Rows

# Documents smaller than this get a fresh parse when an incremental one finds errors (~20 ms at
# this size), so their errors never depend on the edit history; see DocumentSyntax._current_tree.
EXACT_BELOW_BYTES = 64 * 1024
# Documents from this size on get region checks after an edit instead of a whole reparse (which
# costs ~20 ms here and grows with the file).
REGION_ABOVE_BYTES = 64 * 1024
_LONE_CR = re.compile(rb"\r(?!\n)")


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


CheckStatus = Literal["exact", "region", "pending"]


@dataclass(frozen=True)
class Check:
    """What `DocumentSyntax.check()` knows right after edits, without a whole-document parse.

    - "exact": `problems` are all the document's problems (a whole parse was cheap, or current);
    - "region": the document was clean and only the edited region was parsed: no `problems`
      means the document is still clean; problems are the region's, at the document's
      positions, and a whole parse (`problems()`, `parse_detached()`) will say which stay;
    - "pending": nothing is known yet (the document was broken, the edits cannot be bounded, no
      tree yet): a whole parse is due.
    """

    status: CheckStatus
    problems: tuple[SyntaxProblem, ...] = ()


class DocumentSyntax:
    """One document's parse tree, kept current by incremental edits and reparsed lazily.

    Thread-safe: a lock serialises edits and reparses, so a front end may call `problems()` from a
    worker thread while its event loop records edits; `parse_detached()` parses without holding
    it, so edits and region checks never wait for a whole-document parse.
    """

    def __init__(
        self,
        language: str,
        text: str,
        max_problems: int = DEFAULT_MAX_PROBLEMS,
        exact_below: int = EXACT_BELOW_BYTES,
        region_above: int = REGION_ABOVE_BYTES,
    ) -> None:
        self.language = language
        self.max_problems = max_problems
        self.exact_below = exact_below
        self.region_above = region_above
        self._lock = threading.Lock()
        # One detached whole parse at a time, with its own parser (the region parser may run
        # meanwhile under the lock).
        self._detached_lock = threading.Lock()
        self._parser = Parser(load_language(language))
        self._region_parser = Parser(load_language(language))
        self._detached_parser: Parser | None = None
        source = _encode(text)
        self._rows = Rows(source)
        # LSP lines end at a lone CR too, tree-sitter rows only at LF: while no lone CR can be in
        # the text, an LSP line number is a row number (line edits and regions need that).
        self._lines_are_rows = b"\r" not in source or _LONE_CR.search(source) is None
        # Whatever identifies the text for the front end (a sha256): set and read by it only.
        self.text_id: str | None = None
        self._tree: Tree | None = None
        # Edits recorded on the tree since the last whole parse.
        self._dirty = False
        self._problems: list[SyntaxProblem] | None = None
        # The current text is known to have no errors (a whole parse or clean region checks).
        self._known_clean = False
        # Bytes [lo, hi] of the current text edited since the last check or whole parse.
        self._changed: tuple[int, int] | None = None
        self._generation = 0
        # The last tree without errors and its source (see _base_tree).
        self._clean: tuple[Tree, bytes] | None = None

    @property
    def source(self) -> bytes:
        """The UTF-8 text the tree describes (after the recorded edits); O(file)."""
        with self._lock:
            return self._rows.to_bytes()

    @property
    def size(self) -> int:
        return self._rows.size

    @property
    def has_tree(self) -> bool:
        """Whether a parse was made (edits since are recorded on its tree)."""
        return self._tree is not None

    @property
    def lines_are_rows(self) -> bool:
        """Whether `apply_line_edits` needs no line list (no lone CR can be in the text)."""
        return self._lines_are_rows

    def tree(self) -> Tree:
        """The current tree, parsed (incrementally when possible) if edits are pending."""
        with self._lock:
            return self._current_tree(self._rows.to_bytes())

    # -- recording edits (cheap: no parsing) ---------------------------------------------------

    def _record(self, start: int, old_end: int, new_bytes: bytes) -> None:
        rows = self._rows
        start_point = rows.point_at(start)
        old_end_point = rows.point_at(old_end)
        if b"\r" in new_bytes or (start and rows.read(start - 1)[:1] == b"\r"):
            self._lines_are_rows = False  # conservative: a lone CR may exist now
        new_end = start + len(new_bytes)
        if self._tree is not None:
            self._tree.edit(
                start_byte=start,
                old_end_byte=old_end,
                new_end_byte=new_end,
                start_point=Point(*start_point),
                old_end_point=Point(*old_end_point),
                new_end_point=Point(*_point_after(start_point, new_bytes)),
            )
            self._dirty = True
        rows.replace(start, old_end, new_bytes)
        if self._changed is None:
            self._changed = (start, new_end)
        else:
            lo, hi = self._changed
            hi = hi + new_end - old_end if hi >= old_end else new_end
            self._changed = (min(lo, start), max(hi, new_end))
        self._generation += 1
        self._problems = None

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
        """Record a tree-sitter edit; `new_source` is the whole UTF-8 text after it.

        The points are recomputed from the text (they follow from the offsets).
        """
        with self._lock:
            self._record(start_byte, old_end_byte, new_source[start_byte:new_end_byte])

    def apply_byte_edit(self, e: ByteEdit) -> None:
        """Apply one `ByteEdit` computed against the current source."""
        with self._lock:
            self._record(e.start_byte, e.old_end_byte, e.new_bytes)

    def replace(self, start_byte: int, old_end_byte: int, new_text: str) -> None:
        """Replace the UTF-8 byte range [start_byte, old_end_byte) with `new_text`."""
        with self._lock:
            self._record(start_byte, old_end_byte, _encode(new_text))

    def apply_line_edits(
        self, lines_before: Sequence[str] | None, edits: Sequence[LineEdit]
    ) -> None:
        """Apply `LineEdit`s (old coordinates of `lines_before`, sorted, non-overlapping).

        O(edit) while `lines_are_rows`; `lines_before` (the LSP line list of the text the edits
        apply to) is only needed otherwise.
        """
        with self._lock:
            # Last edit first, so each edit's offsets are still those of the text it was made on.
            ordered = sorted(edits, key=lambda x: x.start, reverse=True)
            rows = self._rows
            if self._lines_are_rows and all(_whole_rows(e, len(rows)) for e in ordered):
                for e in ordered:
                    start = rows.offset_of_row(e.start)
                    self._record(start, rows.offset_of_row(e.end), _encode("".join(e.new_lines)))
                return
            if lines_before is None:
                raise ValueError("the text may hold a lone CR: give the line list")
            source = self._rows.to_bytes()
            for e in ordered:
                b = line_edit_to_byte_edit(lines_before, e, source)
                self._record(b.start_byte, b.old_end_byte, b.new_bytes)

    def set_text(self, text: str) -> None:
        """Replace the whole text (full-document sync): recorded as an edit of what differs."""
        with self._lock:
            src, new = self._rows.to_bytes(), _encode(text)
            if new == src:
                return
            prefix = _common_prefix(src, new)
            suffix = _common_suffix(src, new, prefix)
            self._record(prefix, len(src) - suffix, new[prefix : len(new) - suffix])

    # -- what the edits did ----------------------------------------------------------------------

    def check(self) -> Check:
        """What is known right after edits, cheaply (see `Check`); never a large parse."""
        with self._lock:
            if not self._dirty and self._problems is not None:
                return Check("exact", tuple(self._problems))
            if self._rows.size < self.region_above:
                source = self._rows.to_bytes()
                return Check("exact", tuple(self._exact_problems(source)))
            changed = self._changed
            if self._tree is None or not self._known_clean or not self._lines_are_rows:
                return Check("pending")
            if changed is None:
                return Check("region")
            region = find_region(self._tree.root_node, self._rows, changed[0], changed[1])
            found = (
                None
                if region is None
                else check_region(self._region_parser, self._rows, region, self.max_problems)
            )
            if found is None:
                return Check("pending")
            self._changed = None
            if found:
                self._known_clean = False
                return Check("region", tuple(found))
            return Check("region")

    def known_problems(self) -> list[SyntaxProblem] | None:
        """The current text's problems when known without parsing (after a whole parse, or []
        after clean region checks), else None."""
        with self._lock:
            if not self._dirty and self._problems is not None:
                return list(self._problems)
            if self._known_clean and self._changed is None:
                return []
            return None

    def problems(self) -> list[SyntaxProblem]:
        """The document's syntax errors (capped, sorted by position), reparsing if needed."""
        with self._lock:
            if self._dirty or self._problems is None:
                self._exact_problems(self._rows.to_bytes())
            assert self._problems is not None
            return list(self._problems)

    def _exact_problems(self, source: bytes) -> list[SyntaxProblem]:
        tree = self._current_tree(source)
        problems = extract_problems(tree, source, self.max_problems)
        self._settle(tree, source, problems)
        return problems

    def _settle(self, tree: Tree, source: bytes, problems: list[SyntaxProblem]) -> None:
        """Install a whole parse of the current text."""
        self._tree = tree
        self._dirty = False
        self._problems = problems
        self._changed = None
        self._known_clean = not tree.root_node.has_error
        if self._known_clean:
            # Copy: later edits mutate self._tree, the clean base must stay as parsed.
            self._clean = (tree.copy(), source)

    def parse_detached(self) -> tuple[list[SyntaxProblem], bool]:
        """A whole parse that holds the lock only to copy the state and to install the result.

        Meant for a worker thread: edits recorded meanwhile are not waited for. Returns the
        problems of the text as it was when the parse began and whether that is still the
        current text (only then is the result installed).
        """
        with self._detached_lock:
            with self._lock:
                if not self._dirty and self._problems is not None:
                    return list(self._problems), True
                generation = self._generation
                rows = self._rows.frozen()
                old = None if self._tree is None else self._tree.copy()
                clean = self._clean
            source = rows.to_bytes()
            base = None if old is None else _base_tree(old, clean, source)
            tree = _parse(self._full_parser(), rows, source, base)
            if tree.root_node.has_error and base is not None and len(source) < self.exact_below:
                tree = self._full_parser().parse(source)
            problems = extract_problems(tree, source, self.max_problems)
            with self._lock:
                current = generation == self._generation
                if current:
                    self._settle(tree, source, problems)
            return problems, current

    def _full_parser(self) -> Parser:
        if self._detached_parser is None:
            self._detached_parser = Parser(load_language(self.language))
        return self._detached_parser

    def _current_tree(self, source: bytes) -> Tree:
        if self._tree is None:
            self._tree = _parse(self._parser, self._rows, source, None)
        elif self._dirty:
            base = _base_tree(self._tree, self._clean, source)
            self._tree = _parse(self._parser, self._rows, source, base)
            if self._tree.root_node.has_error and len(source) < self.exact_below:
                # tree-sitter's error recovery can depend on which old nodes a reparse reused:
                # in fuzzing, about 1 in 200 reparses of badly broken TypeScript or Rust gave
                # other errors than a fresh parse (none seen for Python). Below this size a
                # fresh parse is cheap, so the errors are exactly those of a full parse.
                self._tree = self._parser.parse(source)
        self._dirty = False
        return self._tree


def _whole_rows(e: LineEdit, n_rows: int) -> bool:
    """Whether `e`'s new lines are whole rows: each ends in LF, the last one unless it ends the
    text. (A line list can hold an unterminated line mid-text, merged with the next one.)"""
    lines = e.new_lines
    if any(not line.endswith("\n") for line in lines[:-1]):
        return False
    return not lines or e.end >= n_rows or lines[-1].endswith("\n")


def _parse(parser: Parser, rows: Rows, source: bytes, old: Tree | None) -> Tree:
    """A parse of `source` (= `rows`); large ones read it in chunks so the GIL is let go."""
    if len(source) <= 2 * READ_CHUNK:
        return parser.parse(source, old) if old is not None else parser.parse(source)
    if old is not None:
        return parser.parse(rows.read, old)
    return parser.parse(rows.read)


def _base_tree(tree: Tree, clean: tuple[Tree, bytes] | None, src: bytes) -> Tree:
    """The old tree to reparse `src` from: the edited current one, or the last clean one.

    Reparsing from a tree that holds errors is slow in tree-sitter: after a one-line break is
    fixed in a 100k-line Python file it takes ~450 ms (near a full parse), against ~70 ms from
    a clean tree. So while the document is broken, a copy of the last clean tree, edited by
    the byte difference between its text and the current one, is the base, as long as that
    difference is small.
    """
    if clean is None or not tree.root_node.has_error:
        return tree
    clean_tree, clean_source = clean
    prefix = _common_prefix(clean_source, src)
    suffix = _common_suffix(clean_source, src, prefix)
    old_end = len(clean_source) - suffix
    new_end = len(src) - suffix
    if max(old_end, new_end) - prefix > len(src) // 4:
        return tree
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


def syntax_problems(
    language: str | None, text: str, max_problems: int = DEFAULT_MAX_PROBLEMS
) -> list[SyntaxProblem]:
    """A full parse of `text`: its syntax errors, or none when `language` is None."""
    if language is None:
        return []
    return DocumentSyntax(language, text, max_problems).problems()
