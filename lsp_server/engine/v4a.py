"""The V4A patch format: one named normalising pre-pass, the lark LALR grammar, the hunk data model.

`parse_patch(text)` is the only entry point most callers need: it returns a `Patch` (a tuple of
`AddFile` / `DeleteFile` / `UpdateFile`, in patch order) or raises `EditError(PARSE_ERROR)` with
`details = {patchLine, line, expected}`, `patchLine` being 1-based in the text as the agent sent it.

Leniency lives in `normalise_patch` only, so the grammar (v4a.lark) stays strict and readable. It
accepts what models really emit, following Codex's lenient rules (peers.md):

- CRLF patch bodies (every `\\r\\n` becomes `\\n`);
- leading/trailing blank lines around the patch (Codex trims the input);
- a heredoc wrapper: `<<EOF`, `<<'EOF'`, `<<"EOF"` (optionally after `apply_patch `) ... `EOF`;
- marker lines padded with whitespace (`  *** Update File: a`, ` *** End Patch `), and
  `*** Add File:a` without the space;
- `@@` headers with trailing whitespace, and unified-diff style headers (`@@ -3,7 +3,8 @@ def f`,
  whose line numbers are dropped: seeking is by content, and the text after them is the anchor);
- blank lines between file sections (dropped) and inside a chunk (an empty context line, as Codex);
- a blank line between `+` lines of an Add File (an empty line of the new file: models drop
  the `+`);
- a first chunk without `@@` (in the grammar).

A chunk keeps, besides Codex's `old_lines`/`new_lines`, its `ops` (one of ` `, `-`, `+` per body
line) so the planner can leave context lines byte for byte as the file has them.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from lsp_server.engine.errors import Code, EditError

if TYPE_CHECKING:
    from lark import Lark, Token

BEGIN = "*** Begin Patch"
END = "*** End Patch"
END_OF_FILE = "*** End of File"

GRAMMAR_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "v4a.lark")


@dataclass(frozen=True)
class Chunk:
    """One `@@` section of an Update File: find `old_lines` (after `anchor`), put `new_lines`."""

    anchor: str | None
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    is_end_of_file: bool = False
    # One op per body line, in order: " " context, "-" removed, "+" added.
    ops: str = ""
    patch_line: int = 0  # 1-based line of the chunk's header (or first line) in the patch


@dataclass(frozen=True)
class AddFile:
    path: str
    lines: tuple[str, ...]
    patch_line: int = 0

    @property
    def text(self) -> str:
        """The new file's content: every line ends with `\\n` (as Codex writes it)."""
        return "".join(line + "\n" for line in self.lines)


@dataclass(frozen=True)
class DeleteFile:
    path: str
    patch_line: int = 0


@dataclass(frozen=True)
class UpdateFile:
    path: str
    move_to: str | None
    chunks: tuple[Chunk, ...]
    patch_line: int = 0


Hunk = AddFile | DeleteFile | UpdateFile
Patch = tuple[Hunk, ...]


@dataclass(frozen=True)
class NormalisedPatch:
    """The patch as the grammar reads it, and where each of its lines came from."""

    text: str
    # line_map[i] is the 1-based line, in the original patch, of normalised line i + 1.
    line_map: tuple[int, ...]
    original_lines: tuple[str, ...]

    def original_line(self, normalised_line: int) -> int:
        if not self.line_map:
            return 1
        i = min(max(normalised_line, 1), len(self.line_map)) - 1
        return self.line_map[i]

    def text_of(self, original_line: int) -> str:
        if 1 <= original_line <= len(self.original_lines):
            return self.original_lines[original_line - 1]
        return ""


_HEREDOC = re.compile(r"""^(?:apply_patch\s+)?<<\s*(?:EOF|'EOF'|"EOF")$""")
_FILE_MARKER = re.compile(r"^\*\*\* (Add File|Delete File|Update File|Move to):[ \t]*(.*?)$")
# `@@ -12,5 +12,6 @@ anchor` (unified diff) and `@@ anchor @@` (Hermes-style closing @@).
_UNIFIED_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@[ \t]?(.*)$")
_CLOSED_HEADER = re.compile(r"^@@ (.*?)[ \t]*@@$")

# Normaliser states: where a blank line is dropped or means something.
_TOP, _ADD, _UPDATE_HEAD, _CHUNK = range(4)


def _marker(stripped: str) -> tuple[str, int] | None:
    """The canonical form of a marker line and the state after it, or None if not a marker."""
    if stripped in (BEGIN, END):
        return stripped, _TOP
    if stripped == END_OF_FILE:
        return stripped, _UPDATE_HEAD
    m = _FILE_MARKER.match(stripped)
    if not m:
        return None
    kind, path = m.group(1), m.group(2)
    state = {"Add File": _ADD, "Delete File": _TOP}.get(kind, _UPDATE_HEAD)
    return f"*** {kind}: {path}", state


def _header(line: str) -> str:
    s = line.rstrip()
    m = _UNIFIED_HEADER.match(s) or _CLOSED_HEADER.match(s)
    if m:
        anchor = m.group(1).strip()
        return f"@@ {anchor}" if anchor else "@@"
    return s


def normalise_patch(text: str) -> NormalisedPatch:
    """Turn what a model emitted into the strict form v4a.lark reads (see the module docstring)."""
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    original = text.split("\n")
    first, last = 0, len(original) - 1
    while first <= last and not original[first].strip():
        first += 1
    while last >= first and not original[last].strip():
        last -= 1
    if last - first >= 1 and _HEREDOC.match(original[first].strip()):
        if original[last].strip().endswith("EOF"):
            first, last = first + 1, last - 1
            while first <= last and not original[first].strip():
                first += 1
            while last >= first and not original[last].strip():
                last -= 1

    out: list[str] = []
    keep: list[int] = []
    append, note = out.append, keep.append
    state = _TOP
    i = first
    while i <= last:
        line = original[i]
        c = line[:1]
        i += 1
        if c == "+" or c == "-":
            # The hot path: body lines are taken as they are.
            if state == _UPDATE_HEAD:
                state = _CHUNK
            append(line)
            note(i)
            continue
        if c == " " and state == _CHUNK and line[1:2] != " " and line[1:2] != "*":
            append(line)
            note(i)
            continue
        stripped = line.strip()
        if not stripped:
            if state == _CHUNK:
                # An empty line inside a chunk is an empty context line; " " already is one.
                append(" " if c == " " else "")
                note(i)
            elif state == _ADD:
                j = i
                while j <= last and not original[j].strip():
                    j += 1
                if j <= last and original[j][:1] == "+":
                    append("+")
                    note(i)
            continue
        if stripped[:3] == "***":
            marker = _marker(stripped)
            if marker is not None:
                append(marker[0])
                note(i)
                state = marker[1]
                continue
        elif c == "@" and stripped[:2] == "@@":
            append(_header(line))
            note(i)
            state = _CHUNK
            continue
        if c == " " and state in (_CHUNK, _UPDATE_HEAD):
            state = _CHUNK
        append(line)
        note(i)
    return NormalisedPatch("".join(s + "\n" for s in out), tuple(keep), tuple(original))


_EXPECTED = {
    "BEGIN": "'*** Begin Patch'",
    "ADD_FILE": "'*** Add File: <path>'",
    "DELETE_FILE": "'*** Delete File: <path>'",
    "UPDATE_FILE": "'*** Update File: <path>'",
    "MOVE_TO": "'*** Move to: <path>'",
    "HEADER": "'@@' or '@@ <anchor line>'",
    "CHUNK_BODY": "a chunk line starting with ' ' (context), '-' (removed) or '+' (added)",
    "ADD_BODY": "a '+' line of the new file",
    "EOF_MARKER": "'*** End of File'",
    "END": "'*** End Patch'",
    "$END": "the end of the patch",
}
_FILE_HEADERS = ("ADD_FILE", "DELETE_FILE", "UPDATE_FILE")


def _parse_error(message: str, patch_line: int, line: str, expected: list[str]) -> EditError:
    return EditError(
        Code.PARSE_ERROR,
        message,
        "Fix that line and send the whole patch again: it must be '*** Begin Patch', then file "
        "sections ('*** Add File: p' with '+' lines, '*** Delete File: p', '*** Update File: p' "
        "with '@@' chunks of ' '/'-'/'+' lines), then '*** End Patch'.",
        {"patchLine": patch_line, "line": line, "expected": expected},
    )


class _ToHunks:
    """Lark LALR callbacks: build the data model while parsing (no parse tree is made)."""

    def __init__(self) -> None:
        self.norm: NormalisedPatch | None = None

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
        return tuple(children[1:-1])

    def add_file(self, children: list[Any]) -> AddFile:
        header = children[0]
        body = str(children[1]) if len(children) > 1 else ""
        lines = tuple(s[1:] for s in body.split("\n")[:-1])
        return AddFile(self._path(header, "*** Add File: "), lines, self._line(header))

    def delete_file(self, children: list[Any]) -> DeleteFile:
        header = children[0]
        return DeleteFile(self._path(header, "*** Delete File: "), self._line(header))

    def update_file(self, children: list[Any]) -> UpdateFile:
        header = children[0]
        move_to = None
        rest = children[1:]
        if rest and getattr(rest[0], "type", None) == "MOVE_TO":
            move_to = self._path(rest[0], "*** Move to: ")
            rest = rest[1:]
        return UpdateFile(
            self._path(header, "*** Update File: "), move_to, tuple(rest), self._line(header)
        )

    def _chunk(self, anchor: str | None, body: Token, eof: bool, line: int) -> Chunk:
        old: list[str] = []
        new: list[str] = []
        ops: list[str] = []
        for s in str(body).split("\n")[:-1]:
            c = s[:1]
            if c == "+":
                new.append(s[1:])
                ops.append("+")
            elif c == "-":
                old.append(s[1:])
                ops.append("-")
            else:
                s = s[1:]
                old.append(s)
                new.append(s)
                ops.append(" ")
        return Chunk(anchor, tuple(old), tuple(new), eof, "".join(ops), line)

    def bare_chunk(self, children: list[Any]) -> Chunk:
        return self._chunk(None, children[0], len(children) > 1, self._line(children[0]))

    def chunk(self, children: list[Any]) -> Chunk:
        header = str(children[0])[:-1]
        anchor = header[3:] if header.startswith("@@ ") else None
        return self._chunk(anchor, children[1], len(children) > 2, self._line(children[0]))


_TRANSFORMER = _ToHunks()
_LOCK = threading.Lock()


@cache
def _lark() -> Lark:
    # Imported here so commands that never parse a patch do not pay for lark's import.
    from lark import Lark

    with open(GRAMMAR_PATH, encoding="utf-8") as f:
        grammar = f.read()
    return Lark(
        grammar,
        parser="lalr",
        lexer="contextual",
        transformer=_TRANSFORMER,
        propagate_positions=False,
        maybe_placeholders=False,
        cache=True,
    )


def parse_patch(text: str) -> Patch:
    """Parse a V4A patch into hunks, or raise `EditError(PARSE_ERROR)` saying where and why."""
    norm = normalise_patch(text)
    lines = norm.text.split("\n")[:-1]
    if not lines or lines[0] != BEGIN:
        n = norm.line_map[0] if norm.line_map else 1
        raise _parse_error(
            "Invalid patch: the first line of the patch must be '*** Begin Patch'.",
            n,
            norm.text_of(n),
            [_EXPECTED["BEGIN"]],
        )
    if len(lines) < 2 or lines[-1] != END:
        n = norm.line_map[-1] + (1 if len(lines) < 2 else 0)
        raise _parse_error(
            "Invalid patch: the last line of the patch must be '*** End Patch'.",
            n,
            norm.text_of(n),
            [_EXPECTED["END"]],
        )
    from lark.exceptions import UnexpectedInput

    with _LOCK:
        _TRANSFORMER.norm = norm
        try:
            patch: Patch = _lark().parse(norm.text)  # type: ignore[assignment]
        except UnexpectedInput as exc:
            raise _explain(exc, norm, lines) from None
        finally:
            _TRANSFORMER.norm = None
    if not patch:
        raise _parse_error(
            "Invalid patch: it has no file sections, so it would change nothing.",
            norm.line_map[-1],
            norm.text_of(norm.line_map[-1]),
            [_EXPECTED[name] for name in _FILE_HEADERS],
        )
    return patch


def _explain(exc: Any, norm: NormalisedPatch, lines: list[str]) -> EditError:
    """A PARSE_ERROR naming the original line, what it is, and what was expected there."""
    token = getattr(exc, "token", None)
    n_line = int(getattr(exc, "line", 0) or 0) or (
        int(token.line) if token is not None and token.line else len(lines)
    )
    allowed = set(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ())
    order = list(_EXPECTED)
    expected = [_EXPECTED[t] for t in order if t in allowed]
    n = norm.original_line(n_line)
    text = norm.text_of(n)
    prev = lines[n_line - 2] if n_line >= 2 else ""
    if prev.startswith(("*** Update File: ", "*** Move to: ")) and "HEADER" in allowed:
        # Codex: "Update file hunk for path 'p' is empty".
        path = prev.split(": ", 1)[1]
        return _parse_error(
            f"Invalid patch line {n - 1}: the Update File section for {path!r} has no chunk; "
            "an update needs at least one '@@' chunk of changed lines.",
            n,
            text,
            expected,
        )
    if "CHUNK_BODY" in allowed or "EOF_MARKER" in allowed and "HEADER" in allowed:
        why = (
            "is not a chunk line; every line of an update chunk starts with ' ' (context), "
            "'-' (removed) or '+' (added), and a new chunk starts with '@@'"
        )
    elif allowed & set(_FILE_HEADERS) and text.strip().startswith("***"):
        why = (
            "is not a valid file header; valid headers are '*** Add File: <path>', "
            "'*** Delete File: <path>' and '*** Update File: <path>'"
        )
    elif "ADD_BODY" in allowed:
        why = "is not part of the new file; every line of an Add File section starts with '+'"
    else:
        why = "is not valid here"
    return _parse_error(f"Invalid patch line {n}: {text!r} {why}.", n, text, expected)
