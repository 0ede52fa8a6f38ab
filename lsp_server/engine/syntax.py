"""Syntax errors of a document, found by tree-sitter and parsed incrementally per document.

This module owns: which grammar a document gets (by LSP languageId, else by file extension), the
lazily loaded grammars, one incremental parser per document, turning tree-sitter ERROR and MISSING
nodes into messages an agent can act on, and deciding which errors an edit introduced.

Grammars come from the per-language wheels (tree-sitter-python, -javascript, -typescript, -rust,
-go, -java, -c, -cpp, -json, -yaml, -toml, -bash, -html, -css); nothing is downloaded at run time.

API (everything an LSP or CLI front end needs):

- `language_for(language_id, path) -> str | None`: our language name ("python", "tsx", ...) or
  None when the document gets no syntax diagnostics (plain text, unknown languages). An explicit
  languageId we know wins; "plaintext" and "jsonc" mean none; otherwise the extension decides.
- `DocumentSyntax(language, text)`: parses once, in full (~630 ms for 100k Python lines). Then per
  change, cheaply and without parsing:
    * `syntax.apply_line_edits(lines_before, edits)` with our `LineEdit`s (old line coordinates,
      sorted, non-overlapping; `lines_before` is the LSP line list of the text the edits apply to,
      which the document store already has), or
    * `syntax.replace(start_byte, old_end_byte, new_text)` for a byte range of the UTF-8 text, or
    * `syntax.edit(start_byte, old_end_byte, new_end_byte, start_point, old_end_point,
      new_end_point, new_source)`, tree-sitter's own form plus the whole new UTF-8 source, or
    * `syntax.set_text(text)` with the whole new text (full-document sync, or a front end that
      only has texts): the byte difference to the current text becomes one edit (~1 ms at 100k
      lines), so this is incremental too.
  `syntax.problems()` reparses incrementally if anything changed (~66 ms for 100k lines), then
  walks only into subtrees that contain errors. The result is cached until the next edit. Keep
  parsing off the keystroke path: call the edit methods in didChange, `problems()` when
  diagnostics are due. While the document is broken, reparses start from the last clean tree
  (tree-sitter reparses an error-bearing tree slowly); documents under `exact_below` bytes
  (64 KiB) that have errors get a fresh parse, so their errors never depend on the edit history.
- `syntax_problems(language, text)`: a one-shot full parse for files that are not open.
- `SyntaxProblem`: one error, capped per document (`max_problems`, default 20; what an unclosed
  bracket or string swallowed is not reported again, only its cause): `message`
  ("missing ')' to close '(' opened at 12:8", "unclosed string starting at 3:9",
  "unexpected 'foo'"), `kind` ("missing" | "unclosed" | "unexpected"), `line` / `column` (1-based,
  column in Unicode code points, as an agent counts characters), `start` / `end`
  (`TextPosition`: 0-based LSP line with the column as UTF-8 bytes, UTF-16 code units and code
  points; `lsp_range(encoding)` picks the one the client negotiated), `to_result()` for the edit
  result's `diagnostics`.
- `introduced_errors(before, after, edits)`: the problems in `after` that the edits introduced.
  Every new problem counts when the file was clean before; otherwise only new problems in or
  near (`near` lines) the edited ranges, with line shifts from the edits taken into account, so
  an already broken file does not blame an unrelated edit.
- `line_edit_to_byte_edit(lines, edit, source)`: a `LineEdit` as tree-sitter's byte/point edit
  (`ByteEdit`). Tree-sitter points are (row, UTF-8 byte column) with rows counted at `\\n` only.

Positions: rows in tree-sitter count `\\n`; LSP lines also end at a lone `\\r`. Positions reported
here are always LSP lines, computed from byte offsets. (The Python grammar itself does not end a
line at a lone `\\r`, so old-Mac Python files parse badly; other grammars take it as whitespace.)
"""

from __future__ import annotations

import bisect
import importlib
import re
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

from tree_sitter import Language, Node, Parser, Point, Tree

from lsp_server.engine.model import LineEdit

# language name -> (module, function returning the grammar pointer)
GRAMMARS: dict[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "rust": ("tree_sitter_rust", "language"),
    "go": ("tree_sitter_go", "language"),
    "java": ("tree_sitter_java", "language"),
    "c": ("tree_sitter_c", "language"),
    "cpp": ("tree_sitter_cpp", "language"),
    "json": ("tree_sitter_json", "language"),
    "yaml": ("tree_sitter_yaml", "language"),
    "toml": ("tree_sitter_toml", "language"),
    "bash": ("tree_sitter_bash", "language"),
    "html": ("tree_sitter_html", "language"),
    "css": ("tree_sitter_css", "language"),
}

# LSP languageIds as VS Code, Neovim (its filetype) and Emacs eglot (major mode minus "-mode")
# send them.
LANGUAGE_IDS: dict[str, str] = {
    "python": "python",
    "javascript": "javascript",
    "javascriptreact": "javascript",
    "js": "javascript",
    "jsx": "javascript",
    "typescript": "typescript",
    "ts": "typescript",
    "typescriptreact": "tsx",
    "tsx": "tsx",
    "rust": "rust",
    "go": "go",
    "java": "java",
    "c": "c",
    "cpp": "cpp",
    "c++": "cpp",
    "cuda-cpp": "cpp",
    "json": "json",
    "yaml": "yaml",
    "toml": "toml",
    "conf-toml": "toml",
    "shellscript": "bash",
    "sh": "bash",
    "bash": "bash",
    "html": "html",
    "mhtml": "html",
    "css": "css",
}

# Ids that mean "no syntax diagnostics", whatever the file is called: an editor that says plain
# text is believed, and JSON with comments and trailing commas (VS Code's settings.json) must not
# meet the strict JSON grammar through its .json extension.
NO_SYNTAX_IDS = frozenset({"plaintext", "text", "txt", "jsonc", "json5"})

EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".go": "go",
    ".java": "java",
    ".c": "c",
    # Headers go to C++: its grammar reads C headers, the C grammar flags every class/namespace.
    ".h": "cpp",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hh": "cpp",
    ".hpp": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".sh": "bash",
    ".bash": "bash",
    ".html": "html",
    ".htm": "html",
    ".css": "css",
}

FILE_NAMES: dict[str, str] = {
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".profile": "bash",
    "Cargo.lock": "toml",
}

DEFAULT_MAX_PROBLEMS = 20
# Documents smaller than this get a fresh parse when an incremental one finds errors (~20 ms at
# this size), so their errors never depend on the edit history; see DocumentSyntax._current_tree.
EXACT_BELOW_BYTES = 64 * 1024
# Agents read one line of context; a message quoting a whole 28,000-line ERROR node helps nobody.
_QUOTE_MAX = 40
_OPENERS = {"(": ")", "[": "]", "{": "}", "${": "}"}
_CLOSERS = frozenset(_OPENERS.values())
_QUOTES = frozenset({'"', "'", "`", '"""', "'''", "string_start", "raw_string_start"})
_PY_HEADER = re.compile(
    r"\s*(?:async\s+)?(if|elif|else|for|while|def|class|with|try|except|finally)\b"
)
# Bounds the work on one ERROR node: a broken file can hold an ERROR spanning most of it.
_MAX_CHILDREN_SCANNED = 5000
_LONE_CR = re.compile(rb"\r(?!\n)")
_TERMINATOR = re.compile(rb"\r\n|\r|\n")


def language_for(language_id: str | None, path: str | None = None) -> str | None:
    """The grammar name for a document, or None when it gets no syntax diagnostics."""
    if language_id:
        lid = language_id.lower()
        if lid in LANGUAGE_IDS:
            return LANGUAGE_IDS[lid]
        if lid in NO_SYNTAX_IDS:
            return None
    if not path:
        return None
    name = re.split(r"[\\/]", path)[-1]
    if name in FILE_NAMES:
        return FILE_NAMES[name]
    dot = name.rfind(".")
    if dot <= 0 and not name.startswith("."):
        return None
    return EXTENSIONS.get(name[dot:].lower()) if dot >= 0 else None


@cache
def load_language(name: str) -> Language:
    """The tree-sitter grammar `name` (a key of GRAMMARS), imported on first use and cached."""
    module_name, function = GRAMMARS[name]
    module = importlib.import_module(module_name)
    return Language(getattr(module, function)())


@dataclass(frozen=True)
class TextPosition:
    """A 0-based LSP position with its column in each LSP position encoding."""

    line: int
    byte: int  # UTF-8 code units (LSP "utf-8", tree-sitter's column)
    utf16: int  # UTF-16 code units (LSP "utf-16", the default)
    char: int  # Unicode code points (LSP "utf-32")

    def character(self, encoding: str = "utf-16") -> int:
        """The column in an LSP `PositionEncodingKind` ("utf-8", "utf-16", "utf-32")."""
        if encoding == "utf-8":
            return self.byte
        if encoding == "utf-32":
            return self.char
        return self.utf16


ProblemKind = Literal["missing", "unclosed", "unexpected"]


@dataclass(frozen=True)
class SyntaxProblem:
    """One syntax error, positioned and worded for an agent and for an editor."""

    message: str
    kind: ProblemKind
    start: TextPosition
    end: TextPosition
    # The last line (0-based) the error's node covers, beyond `end` which stays on one line.
    span_end_line: int
    # Identifies the same error after lines shifted: no positions in it.
    key: str

    @property
    def line(self) -> int:
        """1-based line."""
        return self.start.line + 1

    @property
    def column(self) -> int:
        """1-based column in Unicode code points."""
        return self.start.char + 1

    def lsp_range(self, encoding: str = "utf-16") -> tuple[tuple[int, int], tuple[int, int]]:
        """((line, character), (line, character)), 0-based, columns in `encoding`."""
        return (
            (self.start.line, self.start.character(encoding)),
            (self.end.line, self.end.character(encoding)),
        )

    def to_result(self) -> dict[str, object]:
        """The entry of an edit result's `diagnostics` (1-based, columns in code points)."""
        return {
            "line": self.line,
            "column": self.column,
            "endLine": self.end.line + 1,
            "endColumn": self.end.char + 1,
            "message": self.message,
            "kind": self.kind,
        }


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


# ---- turning ERROR / MISSING nodes into messages ---------------------------------------------


class _Positions:
    """Byte offsets to LSP positions for one source.

    Line numbers are counted from the nearest offset already converted (anchors), so the few
    dozen conversions of one extraction cost about one pass over the text, not one each.
    """

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.has_cr = b"\r" in source
        self.lone_cr = self.has_cr and _LONE_CR.search(source) is not None
        self._anchor_offsets: list[int] = [0]
        self._anchor_lines: list[int] = [0]

    def _line(self, offset: int) -> int:
        i = bisect.bisect_right(self._anchor_offsets, offset) - 1
        base, line = self._anchor_offsets[i], self._anchor_lines[i]
        if self.lone_cr:
            # Never split a "\r\n" between anchor and offset: count from the anchor's line start.
            line += len(_TERMINATOR.findall(self.source, base, offset))
            if offset > base > 0 and self.source[base - 1 : base + 1] == b"\r\n":
                line -= 1
        else:
            line += self.source.count(b"\n", base, offset)
        self._anchor_offsets.insert(i + 1, offset)
        self._anchor_lines.insert(i + 1, line)
        return line

    def at(self, offset: int) -> TextPosition:
        src = self.source
        line = self._line(offset)
        line_start = src.rfind(b"\n", 0, offset) + 1
        if self.has_cr:
            line_start = max(line_start, src.rfind(b"\r", 0, offset) + 1)
        prefix = src[line_start:offset].decode("utf-8", "surrogatepass")
        utf16 = len(prefix.encode("utf-16-le", "surrogatepass")) // 2
        return TextPosition(line, offset - line_start, utf16, len(prefix))

    def line_end(self, offset: int) -> int:
        """The offset of the end of the line holding `offset` (before its terminator)."""
        src = self.source
        end = src.find(b"\n", offset)
        end = len(src) if end < 0 else end
        if self.has_cr:
            cr = src.find(b"\r", offset, end)
            end = cr if cr >= 0 else end
        return end

    def label(self, offset: int) -> str:
        p = self.at(offset)
        return f"{p.line + 1}:{p.char + 1}"


def _text(node: Node) -> str:
    raw = node.text or b""
    return raw.decode("utf-8", "replace")


def _quote(text: str) -> str:
    first = text.strip().splitlines()[0] if text.strip() else text
    if len(first) > _QUOTE_MAX:
        first = first[: _QUOTE_MAX - 3] + "..."
    return f"'{first}'"


def _children(node: Node) -> list[Node]:
    if node.child_count <= _MAX_CHILDREN_SCANNED:
        return list(node.children)
    return [c for i in range(_MAX_CHILDREN_SCANNED) if (c := node.child(i)) is not None]


def _leaves(node: Node, limit: int) -> Iterator[Node]:
    """Up to `limit` leaves of `node`, in order."""
    stack = [node]
    count = 0
    while stack and count < limit:
        n = stack.pop()
        if n.child_count == 0:
            count += 1
            yield n
        else:
            stack.extend(reversed(n.children))


def _last_leaf(node: Node | None) -> Node | None:
    while node is not None and node.child_count:
        node = node.child(node.child_count - 1)
    return node


def _unmatched_opener(
    nodes: Sequence[Node], closer: str | None = None, following: Sequence[Node] = ()
) -> Node | None:
    """The innermost opening bracket among `nodes` (direct children) left unclosed.

    `following` are the nodes after them (an ERROR node's later siblings): a bracket they close is
    not unclosed, tree-sitter merely cut the ERROR node between the two.
    """
    stack: list[Node] = []
    mine: set[int] = set()
    for i, n in enumerate([*nodes, *following]):
        t = n.type
        if n.child_count != 0 or n.is_missing:
            continue
        if t in _OPENERS:
            stack.append(n)
            if i < len(nodes):
                mine.add(n.id)
        elif t in _CLOSERS and stack and _OPENERS[stack[-1].type] == t:
            stack.pop()
    left = [n for n in stack if n.id in mine]
    if closer is not None:
        left = [n for n in left if _OPENERS[n.type] == closer]
    if not left:
        return None
    # Everything after the first unclosed bracket was swallowed by it, so its line is where the
    # fix goes; on that line the innermost bracket is the one to close first.
    row = left[0].start_point[0]
    return [n for n in left if n.start_point[0] == row][-1]


def _unmatched_closer(leaves: Sequence[Node]) -> Node | None:
    """The first closing bracket among `leaves` that closes nothing opened before it."""
    stack: list[str] = []
    for n in leaves:
        if n.is_missing:
            continue
        if n.type in _OPENERS:
            stack.append(_OPENERS[n.type])
        elif n.type in _CLOSERS:
            if not stack or stack[-1] != n.type:
                return n
            stack.pop()
    return None


def _later_siblings(node: Node) -> list[Node]:
    out: list[Node] = []
    sib = node.next_sibling
    while sib is not None and len(out) < _MAX_CHILDREN_SCANNED:
        out.append(sib)
        sib = sib.next_sibling
    return out


class _Extractor:
    """Walks the error-bearing subtrees and words one problem per ERROR / MISSING node."""

    def __init__(self, source: bytes, limit: int, python: bool) -> None:
        self.pos = _Positions(source)
        self.limit = limit
        # Python-only wording (the missing colon of a block header).
        self.python = python
        self.problems: list[SyntaxProblem] = []
        self._seen: set[tuple[int, str]] = set()

    def add(
        self, kind: ProblemKind, message: str, key: str, start: int, end: int, span_end: int
    ) -> None:
        if (start, key) in self._seen:
            return
        self._seen.add((start, key))
        # The range stays on its first line: one broken bracket must not underline the file.
        end = max(start, min(end, self.pos.line_end(start)))
        span_end_line = self.pos.at(span_end).line
        self.problems.append(
            SyntaxProblem(
                message=message,
                kind=kind,
                start=self.pos.at(start),
                end=self.pos.at(end),
                span_end_line=span_end_line,
                key=key,
            )
        )

    def full(self) -> bool:
        return len(self.problems) >= self.limit

    def walk(self, root: Node) -> None:
        if not root.has_error:
            return
        cursor_stack = [root]
        while cursor_stack and not self.full():
            node = cursor_stack.pop()
            if node.is_missing:
                self.missing(node)
            elif node.is_error:
                self.error(node)
            elif node.has_error:
                cursor_stack.extend(reversed([c for c in node.children if c.has_error]))

    def missing(self, node: Node) -> None:
        t = node.type
        what = f"'{t}'" if not node.is_named else t.replace("_", " ")
        offset = node.start_byte
        parent = node.parent
        if t in _CLOSERS and parent is not None:
            before = [c for c in _children(parent) if c.start_byte <= offset and c != node]
            opener = _unmatched_opener(before, t)
            if opener is not None:
                self.add(
                    "missing",
                    f"missing {what} to close '{opener.type}' opened at "
                    f"{self.pos.label(opener.start_byte)}",
                    f"missing {t} {opener.type}",
                    offset,
                    offset,
                    offset,
                )
                return
        prev = _last_leaf(node.prev_sibling)
        after = f" after {_quote(_text(prev))}" if prev is not None and _text(prev).strip() else ""
        self.add("missing", f"missing {what}{after}", f"missing {t}", offset, offset, offset)

    def error(self, node: Node) -> None:
        children = _children(node)
        start, end = node.start_byte, node.end_byte
        # An unclosed string swallows the rest of the line or file: name it, not its contents.
        # Its quote is a stray token directly inside this ERROR or an ERROR nested in it.
        for c in _leaves(node, 200):
            host = c.parent
            if c.type not in _QUOTES or host is None or not host.is_error:
                continue
            closer = c.type.replace("_start", "_end") if c.type.endswith("start") else c.type
            siblings = _children(host)
            later = siblings[siblings.index(c) + 1 :] if c in siblings else []
            if not any(d.type == closer for d in later):
                self.add(
                    "unclosed",
                    f"unclosed string starting at {self.pos.label(c.start_byte)}: add the "
                    f"closing quote",
                    "unclosed string",
                    c.start_byte,
                    self.pos.line_end(c.start_byte),
                    end,
                )
                return
        opener = _unmatched_opener(children, following=_later_siblings(node))
        if opener is not None:
            closer = _OPENERS[opener.type]
            self.add(
                "unclosed",
                f"missing '{closer}' to close '{opener.type}' opened at "
                f"{self.pos.label(opener.start_byte)}",
                f"unclosed {opener.type}",
                opener.start_byte,
                opener.end_byte,
                end,
            )
            return
        leaves = list(_leaves(node, 200))
        if not leaves:
            self.add("unexpected", "syntax error here", "error", start, end, end)
            return
        first = leaves[0]
        first_row = first.start_point[0]
        row_leaves = [lf for lf in leaves if lf.start_point[0] == first_row]
        if self._python_colon(node):
            return
        # Missing operand: the line ends right after an operator ("x = 1 +").
        last = row_leaves[-1]
        if (
            not last.is_named
            and last.type not in _CLOSERS
            and not any(ch.isalnum() for ch in last.type)
            and self.pos.line_end(last.end_byte) == last.end_byte
            and last.end_byte == end
        ):
            self.add(
                "unexpected",
                f"unexpected end of line after '{last.type}': something is missing after it",
                f"dangling {last.type}",
                last.start_byte,
                last.end_byte,
                end,
            )
            return
        if self._inside_open_bracket(node, first):
            return
        # A closer with no opener ("print(1))"): that token is the mistake.
        stray = _unmatched_closer(leaves)
        if stray is not None:
            self.add(
                "unexpected",
                f"unexpected '{stray.type}': nothing open for it to close",
                f"unexpected {stray.type}",
                stray.start_byte,
                stray.end_byte,
                end,
            )
            return
        # Only the tree's shape is used, never parse states: those differ between a full parse
        # and an incremental one that reused nodes, and the messages must not.
        text = _text(node)
        self.add(
            "unexpected",
            f"unexpected {_quote(text)}",
            f"unexpected {text.strip()[:_QUOTE_MAX]}",
            start,
            end,
            end,
        )

    def _python_colon(self, node: Node) -> bool:
        """`if x` / `def f(a)` without the colon: say so at the end of that line."""
        if not self.python:
            return False
        src = self.pos.source
        line_start = src.rfind(b"\n", 0, node.start_byte) + 1
        line_end = self.pos.line_end(node.start_byte)
        line = src[line_start:line_end].decode("utf-8", "replace")
        code = line.split("#", 1)[0].rstrip()
        m = _PY_HEADER.match(code)
        if m is None or code.endswith(":"):
            return False
        end = line_start + len(code.encode("utf-8", "surrogatepass"))
        self.add(
            "missing",
            f"missing ':' at the end of {_quote(code)}",
            f"missing : {m.group(1)}",
            end,
            end,
            node.end_byte,
        )
        return True

    def _inside_open_bracket(self, node: Node, culprit: Node) -> bool:
        """A line-starting token the parser rejects inside a bracket opened on an earlier line.

        `x = [a, b\n    return y` parses as a list holding an error at `return`; the agent's
        mistake is the `[` left open, so that is what gets reported.
        """
        row = culprit.start_point[0]
        line_start = self.pos.source.rfind(b"\n", 0, culprit.start_byte) + 1
        if self.pos.source[line_start : culprit.start_byte].strip():
            return False
        ancestor = node.parent
        while ancestor is not None:
            first = ancestor.child(0) if ancestor.child_count else None
            if (
                first is not None
                and first.type in _OPENERS
                and first.child_count == 0
                and first.start_point[0] < row
            ):
                self.add(
                    "unclosed",
                    f"missing '{_OPENERS[first.type]}' to close '{first.type}' opened at "
                    f"{self.pos.label(first.start_byte)}",
                    f"unclosed {first.type}",
                    first.start_byte,
                    first.end_byte,
                    max(node.end_byte, ancestor.end_byte),
                )
                return True
            ancestor = ancestor.parent
        return False


def extract_problems(
    tree: Tree, source: bytes, max_problems: int = DEFAULT_MAX_PROBLEMS
) -> list[SyntaxProblem]:
    """The syntax errors of a parsed tree, at most `max_problems`, sorted by position."""
    ex = _Extractor(source, max_problems, python=tree.language.name == "python")
    ex.walk(tree.root_node)
    out: list[SyntaxProblem] = []
    swallowed_until = -1
    for p in sorted(ex.problems, key=lambda p: (p.start.line, p.start.byte)):
        # What an unclosed bracket or string swallowed fails to parse as a consequence: those
        # errors go away with the one fix, so only the cause is reported.
        if p.start.line <= swallowed_until:
            continue
        out.append(p)
        if p.kind == "unclosed":
            swallowed_until = max(swallowed_until, p.span_end_line)
    return out


# ---- which errors an edit introduced -----------------------------------------------------------


def introduced_errors(
    before: Sequence[SyntaxProblem],
    after: Sequence[SyntaxProblem],
    edits: Sequence[LineEdit],
    near: int = 2,
) -> list[SyntaxProblem]:
    """The problems of `after` that the `edits` (old line coordinates, sorted) introduced.

    A problem is old when `before` has one with the same key on the same line once shifted by
    the edits (for a problem inside an edited range: with the same key inside the same edit's
    new range). If `before` is empty every new problem is the edit's doing, even one far away (an
    unclosed brace is reported where the parser gave up); otherwise only new problems whose span
    touches an edited range, widened by `near` lines, are.
    """
    ordered = sorted(edits, key=lambda e: e.start)
    # (old_start, old_end, new_start, new_end) per edit; a pure deletion has an empty new range.
    ranges: list[tuple[int, int, int, int]] = []
    delta = 0
    for e in ordered:
        new_start = e.start + delta
        new_end = new_start + len(e.new_lines)
        ranges.append((e.start, e.end, new_start, new_end))
        delta += len(e.new_lines) - (e.end - e.start)

    def shifted(line: int) -> tuple[int, int | None]:
        """(new line, index of the edit whose old range holds it, else None)."""
        d = 0
        for i, (os_, oe, ns, ne) in enumerate(ranges):
            if line < os_:
                break
            if line < oe:
                return ns, i
            d = ne - oe
        return line + d, None

    old_same_line: set[tuple[str, int]] = set()
    old_in_edit: set[tuple[str, int]] = set()
    for p in before:
        new_line, idx = shifted(p.start.line)
        if idx is None:
            old_same_line.add((p.key, new_line))
        else:
            old_in_edit.add((p.key, idx))

    def edit_holding(line: int) -> int | None:
        for i, (_, _, ns, ne) in enumerate(ranges):
            if ns <= line < max(ne, ns + 1):
                return i
        return None

    def touches_edit(p: SyntaxProblem) -> bool:
        lo, hi = p.start.line, max(p.span_end_line, p.end.line)
        return any(ns - near <= hi and lo <= max(ne - 1, ns) + near for _, _, ns, ne in ranges)

    out: list[SyntaxProblem] = []
    for p in after:
        idx = edit_holding(p.start.line)
        if idx is not None and (p.key, idx) in old_in_edit:
            continue
        if idx is None and (p.key, p.start.line) in old_same_line:
            continue
        if before and not touches_edit(p):
            continue
        out.append(p)
    return out
