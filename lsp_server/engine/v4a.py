"""The V4A patch format: one named normalising pre-pass, the lark LALR grammar, the hunk data model.

`parse_patch(text)` is the only entry point most callers need: it returns a `Patch` (a tuple of
`AddFile` / `DeleteFile` / `UpdateFile`, in patch order) or raises `EditError(PARSE_ERROR)` with
`details = {patchLine, line, expected}`, `patchLine` being 1-based in the text as the agent sent it.

Leniency lives in `normalise_patch` only, so the grammar (v4a.lark) stays strict and readable. It
accepts what models really emit, following Codex's lenient rules (peers.md):

- CRLF patch bodies (every `\\r\\n` becomes `\\n`), and lines ending in `\\r\\r\\n` (CRLF
  converted twice: both `\\r`s go, as in Codex);
- leading/trailing blank lines around the patch (Codex trims the input);
- a heredoc wrapper: `<<EOF`, `<<'EOF'`, `<<"EOF"` (optionally after `apply_patch `) ... `EOF`;
- marker lines padded with whitespace (`  *** Update File: a`, ` *** End Patch `) and
  `*** Add File:a` without the space; but inside a chunk a line starting with a space is a
  context line whatever its text (as in Codex), so files containing patch text stay editable;
- `@@` headers with trailing whitespace, and unified-diff style headers (`@@ -3,7 +3,8 @@ def f`,
  whose line numbers are dropped: seeking is by content, and the text after them is the anchor);
- blank lines between file sections (dropped) and inside a chunk (an empty context line, as Codex);
- a blank line between `+` lines of an Add File (an empty line of the new file: models drop
  the `+`);
- a first chunk without `@@` (in the grammar).

A chunk keeps, besides Codex's `old_lines`/`new_lines`, its `ops` (one of ` `, `-`, `+` per body
line) so the planner can leave context lines byte for byte as the file has them.

Why this module is over 500 lines (~700): the normaliser, the hand-written reader and the
lark fallback that words syntax errors must accept exactly the same language, and are checked
against each other (tests/engine/test_v4a_parse.py, test_v4a_differential.py,
test_v4a_line_reader.py); keeping them in one module keeps that one reviewable unit.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter

from lsp_server.engine import errors
from lsp_server.engine.errors import EditError
from lsp_server.engine.values import slot_setters

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

    from lark import Lark, Token

BEGIN = "*** Begin Patch"
END = "*** End Patch"
END_OF_FILE = "*** End of File"

GRAMMAR_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "v4a.lark")


@dataclass(frozen=True, slots=True, init=False)
class Chunk:
    """One `@@` section of an Update File: find `old_lines` (after `anchors`), put `new_lines`.

    `anchors` are the texts of its `@@ <line>` headers, in order (a bare `@@` adds none): each
    is sought after the previous one, the old lines after the last. `anchor` is the first, or
    None when there is none (what a chunk with one header always had).

    Made at a slots object's cost (values.slot_setters): 1.48 -> 0.35 us each, best of 7 in
    process, ~5 ms of the 5,000 chunks of the 1,000-file patch.
    """

    anchor: str | None
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    is_end_of_file: bool = False
    # One op per body line, in order: " " context, "-" removed, "+" added.
    ops: str = ""
    patch_line: int = 0  # 1-based line of the chunk's header (or first line) in the patch
    # Every header's text when it has more than one (`anchor` alone says the rest).
    nested_anchors: tuple[str, ...] = ()

    def __init__(
        self,
        anchor: str | None,
        old_lines: tuple[str, ...],
        new_lines: tuple[str, ...],
        is_end_of_file: bool = False,
        ops: str = "",
        patch_line: int = 0,
        nested_anchors: tuple[str, ...] = (),
    ) -> None:
        _set_anchor(self, anchor)
        _set_old_lines(self, old_lines)
        _set_new_lines(self, new_lines)
        _set_is_end_of_file(self, is_end_of_file)
        _set_ops(self, ops)
        _set_patch_line(self, patch_line)
        _set_nested_anchors(self, nested_anchors)

    @property
    def anchors(self) -> tuple[str, ...]:
        if self.nested_anchors:
            return self.nested_anchors
        return () if self.anchor is None else (self.anchor,)


(
    _set_anchor,
    _set_old_lines,
    _set_new_lines,
    _set_is_end_of_file,
    _set_ops,
    _set_patch_line,
    _set_nested_anchors,
) = slot_setters(
    Chunk,
    "anchor",
    "old_lines",
    "new_lines",
    "is_end_of_file",
    "ops",
    "patch_line",
    "nested_anchors",
)


@dataclass(frozen=True)
class AddFile:
    """`*** Add File: path` and the new file's lines (without terminators)."""

    path: str
    lines: tuple[str, ...]
    patch_line: int = 0

    @property
    def text(self) -> str:
        """The new file's content: every line ends with `\\n` (as Codex writes it)."""
        return "".join(line + "\n" for line in self.lines)


@dataclass(frozen=True)
class DeleteFile:
    """`*** Delete File: path`."""

    path: str
    patch_line: int = 0


@dataclass(frozen=True, slots=True, init=False)
class UpdateFile:
    """`*** Update File: path` (optionally `*** Move to: move_to`) and its chunks.

    One per file section (values.slot_setters: 0.7 -> 0.3 us each, best of 7 in process).
    """

    path: str
    move_to: str | None
    chunks: tuple[Chunk, ...]
    patch_line: int = 0

    def __init__(
        self, path: str, move_to: str | None, chunks: tuple[Chunk, ...], patch_line: int = 0
    ) -> None:
        _set_path(self, path)
        _set_move_to(self, move_to)
        _set_chunks(self, chunks)
        _set_patch_line_of_update(self, patch_line)


_set_path, _set_move_to, _set_chunks, _set_patch_line_of_update = slot_setters(
    UpdateFile, "path", "move_to", "chunks", "patch_line"
)


Hunk = AddFile | DeleteFile | UpdateFile
Patch = tuple[Hunk, ...]


class NormalisedPatch:
    """The patch as the grammar reads it, and where each of its lines came from."""

    # A plain class: a dataclass costs ~1 ms of import time each, a tenth of a small CLI run.
    __slots__ = ("text", "first_line", "dropped", "source")

    def __init__(self, text: str, first_line: int, dropped: tuple[int, ...], source: str):
        self.text = text
        self.first_line = first_line  # 1-based original line of the first normalised line
        self.dropped = dropped  # original lines (1-based, sorted) that normalisation removed
        self.source = source  # the original patch (LF), for quoting lines in errors

    def original_line(self, normalised_line: int) -> int:
        """The original patch line of normalised line `normalised_line` (both 1-based)."""
        base = self.first_line - 1
        o = base + max(normalised_line, 1)
        if not self.dropped:
            return o
        while True:
            o2 = base + normalised_line + bisect_right(self.dropped, o)
            if o2 == o:
                return o
            o = o2

    def original_lines(self, normalised_lines: list[int]) -> list[int]:
        """`original_line` of each of `normalised_lines`: one walk over `dropped` for the lines
        in order (a patch's tokens are), `original_line` for any other."""
        base = self.first_line - 1
        dropped = self.dropped
        if not dropped:
            return [base + max(n, 1) for n in normalised_lines]
        out = []
        j, end, last = 0, len(dropped), 1
        for n in normalised_lines:
            if n < last:
                out.append(self.original_line(n))
                continue
            last = n
            # The least o with o == base + n + (dropped lines <= o): j only grows with n.
            o = base + n + j
            while j < end and dropped[j] <= o:
                j += 1
                o += 1
            out.append(o)
        return out

    def text_of(self, original_line: int) -> str:
        lines = self.source.split("\n")
        return lines[original_line - 1] if 1 <= original_line <= len(lines) else ""


# These four are sources, compiled (and kept by `re`'s own cache) at their first use: a
# well-formed patch, the common case, needs none of them, and compiling them at import was
# ~0.9 ms of a short CLI run (bench/bench_startup.py).
_HEREDOC = r"""^(?:apply_patch\s+)?<<\s*(?:EOF|'EOF'|"EOF")$"""
_FILE_MARKER = r"^\*\*\* (Add File|Delete File|Update File|Move to):[ \t]*(.*?)$"
# `@@ -12,5 +12,6 @@ anchor` (unified diff) and `@@ anchor @@` (Hermes-style closing @@).
_UNIFIED_HEADER = r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@[ \t]?(.*)$"
_CLOSED_HEADER = r"^@@ (.*?)[ \t]*@@$"
# The start of every line normalisation might change or that might change its state: anything
# but a `+`/`-` line, a ` x` context line or a `@@` header `_header` keeps as it is: bare, or
# `@@ anchor` neither unified (`@@ -`) nor closed (ending in `@`) nor with trailing whitespace
# (`\\s` is `str.rstrip`'s whitespace). The chunk a header starts is seen at the next line looked
# at. Plain body lines and headers, the bulk of a patch, are never looked at one by one
# (anchored headers too: half the lines looked at in a patch of small sections, ~40% of its
# normalising; `bench/bench_parse.py`).
_INTERESTING = re.compile(r"\n(?=[^+\- \n@]|@(?!@\n|@ (?!-)[^\n]*[^\s@]\n)|[ ][ *\t\n]|\n)")

# Normaliser states: where a blank line is dropped or means something.
_TOP, _ADD, _UPDATE_HEAD, _CHUNK = range(4)
# A file marker's text before ': ' (as `_FILE_MARKER` reads it), and the state after it.
_MARKER_HEADS = {
    "*** Add File": _ADD,
    "*** Delete File": _TOP,
    "*** Update File": _UPDATE_HEAD,
    "*** Move to": _UPDATE_HEAD,
}


def _marker(stripped: str) -> tuple[str, int] | None:
    """The canonical form of a marker line and the state after it, or None if not a marker."""
    if stripped in (BEGIN, END):
        return stripped, _TOP
    if stripped == END_OF_FILE:
        return stripped, _UPDATE_HEAD
    head, _, path = stripped.partition(": ")
    state = _MARKER_HEADS.get(head)
    if state is not None and path[:1] not in ("", " ", "\t"):
        return stripped, state  # already canonical: what the match below would rebuild
    m = re.match(_FILE_MARKER, stripped)
    if not m:
        return None
    kind, path = m.group(1), m.group(2)
    return f"*** {kind}: {path}", _MARKER_HEADS["*** " + kind]


def _header(line: str) -> str:
    s = line.rstrip()
    if s == "@@":
        return s
    m = re.match(_UNIFIED_HEADER, s) or re.match(_CLOSED_HEADER, s)
    if m:
        anchor = m.group(1).strip()
        return f"@@ {anchor}" if anchor else "@@"
    return s


def _strip_lines(text: str) -> tuple[str, int]:
    """`text` without leading/trailing whitespace, and how many lines went from its start."""
    body = text.strip()
    if not body:
        return "", 0
    return body, text.count("\n", 0, text.index(body[0]))


def normalise_patch(text: str) -> NormalisedPatch:
    """Turn what a model emitted into the strict form v4a.lark reads (see the module docstring)."""
    if "\r" in text:
        # As Codex 0.169.0 reads a patch: every `\r\n` becomes `\n`, then each line loses one
        # more `\r` before its `\n` (Rust's `str::lines`). So a line ending in `\r\r\n` (CRLF
        # converted twice) ends cleanly, in every section (added, context and removed lines,
        # anchors, paths) whatever the file's own line endings; a `\r` elsewhere in a line,
        # or a third one before its end, stays in its text.
        text = text.replace("\r\n", "\n")
        if "\r\n" in text:
            text = text.replace("\r\n", "\n")
    body, skipped = _strip_lines(text)
    first_line = skipped + 1
    nl = body.find("\n")
    # (`<<` first: a line without it cannot match, and the pattern is compiled only for one with)
    if nl > 0 and "<<" in body[:nl] and re.match(_HEREDOC, body[:nl].strip()):
        last_nl = body.rfind("\n")
        if body[last_nl + 1 :].strip().endswith("EOF"):
            inner, skipped = _strip_lines(body[nl + 1 : last_nl])
            first_line += 1 + skipped
            body = inner
    s = body + "\n" if body else ""
    pieces: list[str] = []
    dropped: list[int] = []
    state = _TOP
    copied = 0  # s[:copied] is already in pieces
    prev_end = 0  # end of the last line looked at
    nl_counted, nl_pos = 0, 0
    starts = (m.end() for m in _INTERESTING.finditer(s))
    ls = 0 if s else -1
    while ls >= 0:
        le = s.index("\n", ls)
        line = s[ls:le]
        if ls > prev_end:  # lines not looked at since the last one
            if state == _UPDATE_HEAD:
                state = _CHUNK  # plain body lines since the header: the first chunk has no @@
            elif state != _CHUNK and s.find("\n@@", prev_end - 1, ls) >= 0:
                state = _CHUNK  # a header among them started a chunk
        prev_end = le + 1
        replacement: str | None = line
        c = line[:1]
        stripped = line.strip()
        if c == "+" or c == "-":
            if state == _UPDATE_HEAD:
                state = _CHUNK
        elif c == " " and state == _CHUNK and (stripped != END or le + 1 < len(s)):
            # A context line, even if its text looks like a marker (a file that contains a
            # patch): inside a chunk only the final line may be a padded '*** End Patch'.
            pass
        elif not stripped:
            if state == _CHUNK:
                replacement = ""  # a whitespace-only line inside a chunk: empty context
            elif state == _ADD and _next_is_added_line(s, le + 1):
                replacement = "+"  # a blank line inside a new file's body: an empty line
            else:
                replacement = None  # between sections
        elif stripped[:3] == "***":
            marker = _marker(stripped)
            if marker is not None:
                replacement, state = marker
        elif c == "@" and stripped[:2] == "@@":
            replacement = _header(line)
            state = _CHUNK
        elif c == " " and state == _UPDATE_HEAD:
            state = _CHUNK
        if replacement != line:
            pieces.append(s[copied:ls])
            if replacement is None:
                nl_counted += s.count("\n", nl_pos, ls)
                nl_pos = ls
                dropped.append(first_line + nl_counted)
            else:
                pieces.append(replacement + "\n")
            copied = le + 1
        ls = next(starts, -1)
    pieces.append(s[copied:])
    return NormalisedPatch("".join(pieces), first_line, tuple(dropped), text)


def _next_is_added_line(s: str, pos: int) -> bool:
    while pos < len(s):
        end = s.index("\n", pos)
        line = s[pos:end]
        if line.strip():
            return line[:1] == "+"
        pos = end + 1
    return False


_EXPECTED = {
    "BEGIN": "'*** Begin Patch'",
    "ADD_FILE": "'*** Add File: <path>'",
    "DELETE_FILE": "'*** Delete File: <path>'",
    "UPDATE_FILE": "'*** Update File: <path>'",
    "MOVE_TO": "'*** Move to: <path>'",
    "CHUNK": "a chunk: '@@' or '@@ <anchor line>' (several in a row narrow the search), then "
    "lines starting with ' ' (context), '-' (removed) or '+' (added)",
    "BARE_CHUNK": "a chunk line starting with ' ' (context), '-' (removed) or '+' (added)",
    "ADD_BODY": "a '+' line of the new file",
    "END": "'*** End Patch'",
    "$END": "the end of the patch",
}
_FILE_HEADERS = ("ADD_FILE", "DELETE_FILE", "UPDATE_FILE")
_EOF_TAIL = "\n" + END_OF_FILE + "\n"


def _parse_error(message: str, patch_line: int, line: str, expected: list[str]) -> EditError:
    return errors.parse_error(
        message,
        "Fix that line and send the whole patch again: it must be '*** Begin Patch', then file "
        "sections ('*** Add File: p' with '+' lines, '*** Delete File: p', '*** Update File: p' "
        "with '@@' chunks of ' '/'-'/'+' lines), then '*** End Patch'.",
        patchLine=patch_line,
        line=line,
        expected=expected,
    )


class _ToHunks:
    """The grammar's callbacks for one parse of `norm` (the reader's, or lark's while it
    parses: no parse tree is made): they build the data model, with original line numbers."""

    def __init__(self, norm: NormalisedPatch) -> None:
        self.norm = norm

    def _line(self, token: Token) -> int:
        assert self.norm is not None
        return self.norm.original_line(token.line or 1)

    def _path(self, token: Token, prefix: str) -> str:
        path = str(token)[len(prefix) : -1].strip()
        if not path:
            line = self._line(token)
            assert self.norm is not None
            raise _parse_error(
                f"Invalid patch line {line}: {self.norm.text_of(line)!r} names no file.",
                line,
                self.norm.text_of(line),
                ["a path after the colon"],
            )
        return path

    def start(self, children: list[Any]) -> Patch:
        hunks = children[1:-1]
        tokens = [t for h in hunks if type(h) is tuple for t in h[2]]
        if not tokens:
            return tuple(hunks)
        # Every chunk of the patch at once (see `_chunks`), then the UpdateFiles.
        chunks = self._chunks(tokens)
        out: list[Hunk] = []
        k = 0
        for h in hunks:
            if type(h) is tuple:
                path, move_to, its_tokens, patch_line = h
                k2 = k + len(its_tokens)
                h = UpdateFile(path, move_to, tuple(chunks[k:k2]), patch_line)
                k = k2
            out.append(h)
        return tuple(out)

    def add_file(self, children: list[Any]) -> AddFile:
        header = children[0]
        body = str(children[1]) if len(children) > 1 else ""
        lines = tuple([s[1:] for s in body.split("\n")[:-1]])
        return AddFile(self._path(header, "*** Add File: "), lines, self._line(header))

    def delete_file(self, children: list[Any]) -> DeleteFile:
        header = children[0]
        return DeleteFile(self._path(header, "*** Delete File: "), self._line(header))

    def update_file(self, children: list[Any]) -> _PendingUpdate:
        """The file's path, destination, chunk tokens and line; `start` makes the UpdateFile
        (chunks are built for the whole patch at once). Paths are checked here, in patch
        order, so a bad path is reported before any later syntax error, as lark meets them."""
        header = children[0]
        move_to = None
        rest = children[1:]
        if rest[0].type == "MOVE_TO":
            move_to = self._path(rest[0], "*** Move to: ")
            rest = rest[1:]
        return (self._path(header, "*** Update File: "), move_to, rest, self._line(header))

    def _chunks(self, tokens: list[Any]) -> list[Chunk]:
        """The chunks of `tokens` (lark's CHUNK / BARE_CHUNK Tokens), in order.

        The per-line work (a line's op, its text without the op, which side it is on) runs over
        the lines of all tokens together, in C (`split`, `map`, `translate`, `compress`); a
        chunk's `@@` line (op '@') and `*** End of File` line (op '*') are on neither side. Per
        chunk only slices and counts remain. One comprehension per chunk line was most of the
        time of parsing a large patch.
        """
        assert self.norm is not None
        lines = "".join(tokens).split("\n")
        lines.pop()
        ops = "".join(map(_OP_OF, lines))
        if len(ops) != len(lines):  # an empty line: an empty context line
            ops = "".join([x[:1] or " " for x in lines])
        text = list(map(_TEXT_OF, lines))
        sides = ops.encode("ascii")
        # Tuples: a chunk's lines are then one slice each.
        olds = tuple(compress(text, sides.translate(_OLD_SIDE)))
        news = tuple(compress(text, sides.translate(_NEW_SIDE)))
        patch_lines = self.norm.original_lines([t.line or 1 for t in tokens])
        out: list[Chunk] = []
        k = o = w = 0
        for token, patch_line in zip(tokens, patch_lines, strict=True):
            n = token.end_line - token.line  # its lines (each token ends with a newline)
            anchor = None
            anchors: tuple[str, ...] = ()
            if token.type == "CHUNK":
                head = lines[k]
                if head[:3] == "@@ ":
                    anchor = head[3:]
                    anchors = (anchor,)
                k += 1
                n -= 1
                while lines[k][:2] == "@@":  # more headers: a body line never starts with '@'
                    head = lines[k]
                    if head[:3] == "@@ ":
                        anchors += (head[3:],)
                    k += 1
                    n -= 1
                anchor = anchors[0] if anchors else None
            eof = token.endswith(_EOF_TAIL)
            if eof:
                n -= 1
            chunk_ops = ops[k : k + n]
            k += n + eof
            o2 = o + n - chunk_ops.count("+")
            w2 = w + n - chunk_ops.count("-")
            nested = anchors if len(anchors) > 1 else ()
            out.append(Chunk(anchor, olds[o:o2], news[w:w2], eof, chunk_ops, patch_line, nested))
            o, w = o2, w2
        return out


# An Update File section between `update_file` and `start`: (path, move_to, chunk tokens, line).
_PendingUpdate = tuple[str, "str | None", "list[Any]", int]
_OP_OF = itemgetter(slice(None, 1))
_TEXT_OF = itemgetter(slice(1, None))
# A chunk line's op to 1 (on that side of the change) or 0: '@' is a header, '*' End of File.
_OLD_SIDE = bytes.maketrans(b" -+@*", b"\1\1\0\0\0")
_NEW_SIDE = bytes.maketrans(b" -+@*", b"\1\0\1\0\0")


# The options every parser of v4a.lark is built with.
_LARK_OPTIONS: dict[str, Any] = {
    "parser": "lalr",
    "lexer": "contextual",
    "propagate_positions": False,
    "maybe_placeholders": False,
}


def _grammar() -> str:
    with open(GRAMMAR_PATH, encoding="utf-8") as f:
        return f.read()


def _lark(callbacks: _ToHunks) -> Lark:
    """A parser of v4a.lark calling `callbacks` (one per parse: lark binds them when it is
    built; ~5 ms, paid only for a patch the reader does not take, a syntax error). Imported
    here so valid patches never pay for lark's import.

    Without lark's grammar cache (`cache=True`, ~1.3 ms): it is a pickle at a predictable name
    in the shared temporary folder, which `pickle.load` would run whoever planted it first."""
    from lark import Lark

    return Lark(_grammar(), transformer=callbacks, **_LARK_OPTIONS)


# --- the line reader: v4a.lark's language without lark's import ----------------------------
#
# Importing lark costs more than parsing a 10,000-line patch (a quarter of a one-file CLI
# apply), and the grammar is small: BEGIN, then file sections, then END, each terminal whole
# lines (`_TERMINALS`), which may come next decided by the section (lark's contextual lexer).
# `_read_patch` reads a valid patch line by line, deciding each line by its first character
# (`ops`, one character per line, is the patch's shape: runs of body lines are one regex match
# over it, never a per-line test in Python). It builds no tokens: it checks the whole patch
# before it makes a hunk, so it either reads all of it or leaves all of it to lark, at the
# first line it does not take (a syntax error, or an empty path: lark then reports the first
# bad path or syntax error, as before). So every error is lark's own, worded by `_explain`;
# tests/engine/test_v4a_parse.py checks the reader against lark, test_v4a_line_reader.py
# against recorded answers and against the token reader it replaced.
#
# Speed (the token reader it replaced ran one regex per token over the text, char by char,
# made a token object per chunk and a Chunk through its frozen dataclass __init__), with the
# normaliser's skipping of anchored headers (`_INTERESTING`), against 2a090b2 on a loaded machine:
# `bench/bench_parse.py --against <2a090b2 checkout>` (best of 15 CPU, in process): many (46k
# lines) 57.0 -> 30.2 ms (1.88x), big (9k) 9.0 -> 3.5 ms (2.6x), small (3,000 one-chunk files)
# 46.6 -> 17.7 ms (2.6x), mixed (Add/Delete/Move to/End of File) 36.0 -> 16.9 ms (2.1x);
# callgrind, one parse_patch of many: 441 -> 255 M instructions (1.73x; at e9ffc52);
# `bench/bench_ab.py --instructions --rounds 1 2a090b2 70e66a4`, whole CLI applies: many
# 3160.9 -> 2983.2 M, big 1108.2 -> 1070.2 M. What is left is per line (split, each line's op
# and text, two compresses: ~35%) and per chunk (its slices, counts and Chunk: ~45%, a tenth
# of it the garbage collector's passes over the young lines). The hunks are made through their
# constructors (positional), with their patch line mapped as they are made: building them
# around their frozen __init__ (fields put into __dict__, patch lines rewritten afterwards)
# saved ~2 ms of the 46k lines (27.7 vs 29.9 ms, `bench_parse.py --against` d4c421d), not worth
# a frozen object written after it was made (issue 15: honest value types).

# v4a.lark's terminals, as lark compiles them (tests/test_v4a_parse.py checks they still are):
# the language `_read_patch` reads, spelled by hand there.
_TERMINALS = {
    "END": "\\*\\*\\*\\ End\\ Patch\\\n",
    "ADD_FILE": "\\*\\*\\* Add File: [^\n]*\n",
    "DELETE_FILE": "\\*\\*\\* Delete File: [^\n]*\n",
    "UPDATE_FILE": "\\*\\*\\* Update File: [^\n]*\n",
    "MOVE_TO": "\\*\\*\\* Move to: [^\n]*\n",
    "ADD_BODY": "(?:\\+[^\n]*\n)+",
    "CHUNK": "(?:@@(?: [^\n]*)?\n)+(?:[ +\\-][^\n]*\n|\n)+(?:\\*\\*\\* End of File\n)?",
    "BARE_CHUNK": "(?:[ +\\-][^\n]*\n|\n)+(?:\\*\\*\\* End of File\n)?",
}
# The first characters a line of a valid patch starts with (an empty line's is ' ').
_LINE_STARTS = b" +-@*"
_ADD_HEAD = "*** Add File: "
_DELETE_HEAD = "*** Delete File: "
_UPDATE_HEAD_LINE = "*** Update File: "
_MOVE_HEAD = "*** Move to: "
_FIRST_CHAR = itemgetter(0)


def _read_patch(norm: NormalisedPatch) -> Patch | None:
    """`norm` parsed as lark parses it, or None where lark must decide (see above)."""
    text = norm.text
    if not text.startswith(BEGIN + "\n"):
        return None
    lines = text.split("\n")
    lines.pop()  # after the last newline
    last = len(lines) - 1
    if lines[last] != END or last == 0:
        return None
    try:
        ops = "".join(map(_FIRST_CHAR, lines))
    except IndexError:  # an empty line: an empty context line (or an error)
        ops = "".join([x[:1] or " " for x in lines])
    # Every line starts as a line of some terminal, so a run of body lines ends at the next '@'
    # or '*' line (the last line, End Patch, is one).
    if not ops.isascii():
        return None
    sides = ops.encode("ascii")
    if sides.translate(None, _LINE_STARTS):
        return None
    # The per-line work, for every line at once, in C (as `_ToHunks._chunks`): each line's
    # text without its op, and the lines on each side of the change (Add File lines count as
    # new ones: `w` skips them).
    texts = list(map(_TEXT_OF, lines))
    olds = tuple(compress(texts, sides.translate(_OLD_SIDE)))
    news = tuple(compress(texts, sides.translate(_NEW_SIDE)))
    find = ops.find
    no_at = len(ops)
    at = star = 0  # the next '@' and '*' line at or after the line looked at
    out: list[Hunk] = []
    # A hunk's patch line is the normalised one unless the normaliser shifted lines.
    shifted = norm.first_line != 1 or bool(norm.dropped)
    line_of = norm.original_line if shifted else int
    o = w = 0
    i = 1
    while i < last:
        line = lines[i]
        if line.startswith(_UPDATE_HEAD_LINE):
            path = line[len(_UPDATE_HEAD_LINE) :].strip()
            if not path:
                return None
            head_line = line_of(i + 1)
            move_to: str | None = None
            i += 1
            if lines[i].startswith(_MOVE_HEAD):
                move_to = lines[i][len(_MOVE_HEAD) :].strip()
                if not move_to:
                    return None
                i += 1
            chunks: list[Chunk] = []
            op = ops[i]
            while op == "@" or (not chunks and op != "*"):
                start = i + 1
                anchors: tuple[str, ...] = ()
                while op == "@":  # the headers
                    head = lines[i]
                    if head[:3] == "@@ ":
                        anchors += (head[3:],)
                    elif head != "@@":
                        return None
                    i += 1
                    op = ops[i]
                if at < i:
                    at = find("@", i)
                    if at < 0:
                        at = no_at
                if star < i:
                    star = find("*", i)
                end = at if at < star else star
                if end == i:  # headers without a body line
                    return None
                chunk_ops = ops[i:end]
                n = end - i
                o2 = o + n - chunk_ops.count("+")
                w2 = w + n - chunk_ops.count("-")
                eof = end == star and lines[end] == END_OF_FILE
                chunks.append(
                    Chunk(
                        anchors[0] if anchors else None,
                        olds[o:o2],
                        news[w:w2],
                        eof,
                        chunk_ops,
                        line_of(start),
                        anchors if len(anchors) > 1 else (),
                    )
                )
                o, w = o2, w2
                i = end + eof
                op = ops[i]
            if not chunks:
                return None
            hunk: Hunk = UpdateFile(path, move_to, tuple(chunks), head_line)
        elif line.startswith(_ADD_HEAD):
            path = line[len(_ADD_HEAD) :].strip()
            if not path:
                return None
            if star <= i:
                star = find("*", i + 1)
            if ops.count("+", i + 1, star) != star - i - 1:  # not all '+' up to the next marker
                return None
            hunk = AddFile(path, tuple(texts[i + 1 : star]), line_of(i + 1))
            w += star - i - 1
            i = star
        elif line.startswith(_DELETE_HEAD):
            path = line[len(_DELETE_HEAD) :].strip()
            if not path:
                return None
            hunk = DeleteFile(path, line_of(i + 1))
            i += 1
        else:
            return None
        out.append(hunk)
    return tuple(out)


def parse_patch(text: str) -> Patch:
    """Parse a V4A patch into hunks, or raise `EditError(PARSE_ERROR)` saying where and why."""
    norm = normalise_patch(text)
    t = norm.text
    if not t.startswith(BEGIN + "\n"):
        n = norm.first_line
        raise _parse_error(
            "Invalid patch: the first line of the patch must be '*** Begin Patch'.",
            n,
            norm.text_of(n),
            [_EXPECTED["BEGIN"]],
        )
    last_nl = t.rfind("\n", 0, len(t) - 1)
    if t[last_nl + 1 :] != END + "\n" or last_nl < 0:
        n_lines = t.count("\n")
        n = norm.original_line(n_lines) + (1 if n_lines < 2 else 0)
        raise _parse_error(
            "Invalid patch: the last line of the patch must be '*** End Patch'.",
            n,
            norm.text_of(n),
            [_EXPECTED["END"]],
        )
    fast = _read_patch(norm)
    patch: Patch = fast if fast is not None else _lark_parse(norm)
    if not patch:
        n = norm.original_line(2)
        raise _parse_error(
            "Invalid patch: it has no file sections, so it would change nothing.",
            n,
            norm.text_of(n),
            [_EXPECTED[name] for name in _FILE_HEADERS],
        )
    return patch


def _lark_parse(norm: NormalisedPatch) -> Patch:
    from lark.exceptions import UnexpectedInput

    try:
        return _lark(_ToHunks(norm)).parse(norm.text)  # type: ignore[return-value]
    except UnexpectedInput as exc:
        raise _explain(exc, norm) from None


def _explain(exc: Any, norm: NormalisedPatch) -> EditError:
    """A PARSE_ERROR naming the original line, what it is, and what was expected there."""
    lines = norm.text.split("\n")
    token = getattr(exc, "token", None)
    n_line = int(getattr(exc, "line", 0) or 0)
    if not n_line and token is not None:
        n_line = int(token.line or 0)
    n_line = n_line or len(lines) - 1
    allowed = set(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ())
    expected = [_EXPECTED[t] for t in _EXPECTED if t in allowed]
    here = lines[n_line - 1] if n_line <= len(lines) else ""
    prev = lines[n_line - 2] if n_line >= 2 else ""
    if here.startswith("@@") and "CHUNK" in allowed:
        # The chunk token failed after its headers (several in a row are one chunk's): the
        # culprit is the line after the last.
        while n_line < len(lines) - 1 and lines[n_line].startswith("@@"):
            n_line += 1
        n = norm.original_line(n_line + 1)
        text = norm.text_of(n)
        if n_line >= len(lines) - 1 or lines[n_line].startswith("***"):
            at = norm.original_line(n_line)
            why = (
                f"follows the '@@' line {at} with no chunk lines; a chunk needs at least one "
                "' ', '-' or '+' line"
            )
        else:
            why = (
                "is not a chunk line; every line of an update chunk starts with ' ' (context), "
                "'-' (removed) or '+' (added), and a new chunk starts with '@@'"
            )
        return _parse_error(
            f"Invalid patch line {n}: {text!r} {why}.", n, text, [_EXPECTED["BARE_CHUNK"]]
        )
    if prev.startswith(("*** Update File: ", "*** Move to: ")) and "CHUNK" in allowed:
        # Codex: "Update file hunk for path 'p' is empty".
        n = norm.original_line(n_line - 1)
        path = prev.split(": ", 1)[1]
        return _parse_error(
            f"Invalid patch line {n}: the Update File section for {path!r} has no chunk; an "
            "update needs at least one '@@' chunk of changed lines.",
            n,
            norm.text_of(n),
            expected,
        )
    section = next(
        (x for x in reversed(lines[: n_line - 1]) if x.startswith("*** ") and x != END_OF_FILE),
        "",
    )
    n = norm.original_line(n_line)
    text = norm.text_of(n)
    if prev == END_OF_FILE and not here.startswith("***"):
        why = (
            "follows '*** End of File', which ends its chunk at the end of the file; start "
            "another chunk with '@@' (in file order) or the next file section"
        )
    elif section.startswith("*** Add File: ") and not here.startswith("***"):
        why = "is not part of the new file; every line of an Add File section starts with '+'"
    elif section.startswith("*** Delete File: ") and not here.startswith("***"):
        why = "follows a Delete File line, which takes no body; the next line must be a file header"
    elif "CHUNK" in allowed and "BARE_CHUNK" not in allowed and not here.startswith("***"):
        why = (
            "is not a chunk line; every line of an update chunk starts with ' ' (context), "
            "'-' (removed) or '+' (added), and a new chunk starts with '@@'"
        )
    elif allowed & set(_FILE_HEADERS) and here.startswith("***"):
        why = (
            "is not a valid file header; valid headers are '*** Add File: <path>', "
            "'*** Delete File: <path>' and '*** Update File: <path>'"
        )
    elif "ADD_BODY" in allowed:
        why = "is not part of the new file; every line of an Add File section starts with '+'"
    elif here.startswith("***"):
        why = "is not a valid marker here"
    else:
        why = "is not valid here"
    return _parse_error(f"Invalid patch line {n}: {text!r} {why}.", n, text, expected)
