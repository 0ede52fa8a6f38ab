"""Turning tree-sitter ERROR and MISSING nodes into problems an agent can act on.

A `SyntaxProblem` carries a message ("missing ')' to close '(' opened at 12:8"), its kind and its
positions in every LSP encoding; `extract_problems` walks only the subtrees holding errors and
reports the cause of a swallowed region once, capped per document.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from tree_sitter import Node, Tree

DEFAULT_MAX_PROBLEMS = 20
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


# ---- turning ERROR / MISSING nodes into messages ---------------------------------------------


class _Positions:
    """Byte offsets to LSP positions for one source.

    Line numbers are counted from the nearest offset already converted (anchors), so the few
    dozen conversions of one extraction cost about one pass over the text, not one each.
    """

    def __init__(self, source: bytes, line_base: int = 0) -> None:
        self.source = source
        # `source` is a region of a file starting at the start of this (LSP) line.
        self.line_base = line_base
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
        return TextPosition(line + self.line_base, offset - line_start, utf16, len(prefix))

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


def _text(node: Node, source: bytes) -> str:
    # From the source, not `node.text`: a tree parsed from a read callback has no text of its own.
    return source[node.start_byte : node.end_byte].decode("utf-8", "replace")


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

    def __init__(self, source: bytes, limit: int, python: bool, line_base: int = 0) -> None:
        self.pos = _Positions(source, line_base)
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
        prev_text = _text(prev, self.pos.source) if prev is not None else ""
        after = f" after {_quote(prev_text)}" if prev_text.strip() else ""
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
        text = _text(node, self.pos.source)
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
    tree: Tree, source: bytes, max_problems: int = DEFAULT_MAX_PROBLEMS, line_base: int = 0
) -> list[SyntaxProblem]:
    """The syntax errors of a parsed tree, at most `max_problems`, sorted by position.

    `line_base`: `source` is the part of a file from the start of that line (a region parse);
    positions and messages then count the file's lines.
    """
    ex = _Extractor(source, max_problems, tree.language.name == "python", line_base)
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
