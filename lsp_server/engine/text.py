"""Text snapshots: LSP line splitting, line endings, BOM, and the sha256 token of a file's content.

A snapshot is what the engine plans against: the text of an open buffer (with its version) or of a
file on disk. Lines follow LSP rules, split on `\\n`, `\\r\\n` and `\\r` only (never form feed or
U+2028, which Python's `str.splitlines` also splits on).

Line lists keep their terminators and always end with the final line, which has none (possibly
empty): "a\\nb" -> ["a\\n", "b"], "a\\n" -> ["a\\n", ""], "" -> [""]. So LSP line `i` is `lines[i]`
and `"".join(lines)` is the text again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from lsp_server.engine.errors import Code, EditError

BOM = "\ufeff"
_TERMINATOR = re.compile(r"\r\n|\r|\n")
# Binary sniffing looks where git does: a NUL byte in the first 8 KiB.
BINARY_SNIFF_BYTES = 8192
DEFAULT_MAX_BYTES = 10 * 1024 * 1024

Source = Literal["buffer", "disk", "absent"]


def split_lines(text: str) -> list[str]:
    """Split `text` into LSP lines with terminators; the last (unterminated) line always ends it."""
    if "\r" not in text:
        # Fast path, all in C: str.splitlines splits exactly as LSP does unless the text holds
        # one of the other characters it splits on. Each of those adds a piece, except one that
        # is the text's very last character (its piece is then the same unterminated last line
        # LSP has), so equal counts prove the pieces are LSP's lines.
        lines = text.splitlines(keepends=True)
        if len(lines) == text.count("\n") + (0 if not text or text[-1] == "\n" else 1):
            if not lines or lines[-1][-1] == "\n":
                lines.append("")
            return lines
        parts = text.split("\n")
        last = parts.pop()
        lines = [p + "\n" for p in parts]
        lines.append(last)
        return lines
    lines = []
    start = 0
    for m in _TERMINATOR.finditer(text):
        lines.append(text[start : m.end()])
        start = m.end()
    lines.append(text[start:])
    return lines


def terminator(line: str) -> str:
    """The line's own terminator ("" for the last line)."""
    if line.endswith("\r\n"):
        return "\r\n"
    if line.endswith("\n") or line.endswith("\r"):
        return line[-1]
    return ""


def content(line: str) -> str:
    """The line without its terminator."""
    return line[: len(line) - len(terminator(line))]


def keep_line_breaks(region: list[str], before: str | None, after: str | None) -> list[str]:
    """`region` (new lines going between the lines `before` and `after`) with no CR+LF joins.

    A line ending in a lone CR followed by an empty LF line would read back as one CRLF line:
    a line break would vanish and every later line number would shift. Lines assembled from
    different places (kept terminators, the file's first one) can meet like that in files with
    lone CRs, so the new lines are adjusted: an empty LF line after a CR becomes an empty CR
    line, and a new line ending in CR before an empty LF line ends in CRLF instead.
    """
    if not any(line.endswith("\r") for line in region) and not (before or "").endswith("\r"):
        return region
    out = list(region)
    for i, line in enumerate(out):
        prev = out[i - 1] if i else before
        if line == "\n" and prev is not None and prev.endswith("\r"):
            out[i] = "\r"
    if out and out[-1].endswith("\r") and after is not None and after.startswith("\n"):
        out[-1] += "\n"
    return out


def sha256_text(text: str) -> str:
    """The token of a content: sha256 of its UTF-8 text (BOM excluded, so buffer and disk agree)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# A big text's hash keeps its running state every this many characters, so an edit at offset k
# only needs the text from k on hashed again.
HASH_MARK_EVERY = 256 * 1024
HashMark = tuple[int, Any]  # (offset in characters, sha256 state over text[:offset])


def hash_with_marks(text: str, start: int = 0, state: Any = None) -> tuple[str, list[HashMark]]:
    """`sha256_text(text)`, resumed from `state` (the hash of `text[:start]`), with its marks."""
    h = state.copy() if state is not None else hashlib.sha256()
    marks: list[HashMark] = []
    pos, n = start, len(text)
    while pos < n:
        end = min(pos + HASH_MARK_EVERY, n)
        h.update(text[pos:end].encode("utf-8", "surrogatepass"))
        pos = end
        if pos < n:
            marks.append((pos, h.copy()))
    return h.hexdigest(), marks


def first_terminator(text: str) -> str | None:
    m = _TERMINATOR.search(text)
    return m.group(0) if m else None


def describe_eol(text: str) -> str:
    """`lf`, `crlf`, `cr`, `mixed` or `none`: the line-ending style `agentEdit.read` reports."""
    crlf = text.count("\r\n")
    cr = text.count("\r") - crlf
    lf = text.count("\n") - crlf
    kinds = [name for name, n in (("lf", lf), ("crlf", crlf), ("cr", cr)) if n]
    if not kinds:
        return "none"
    return kinds[0] if len(kinds) == 1 else "mixed"


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The content of one file as the engine saw it, with what identifies that exact content."""

    path: str
    text: str
    source: Source = "disk"
    version: int | None = None
    bom: bool = False
    # Lines can be handed over by a document store that already has them, to skip a re-split,
    # with its index from a character offset in `text` to a line number. Both are lent: valid
    # until `release_lines()`.
    given_lines: list[str] | None = field(default=None, repr=False)
    line_of: Callable[[int], int] | None = field(default=None, repr=False)

    @property
    def exists(self) -> bool:
        return self.source != "absent"

    @cached_property
    def lines(self) -> list[str]:
        return self.given_lines if self.given_lines is not None else split_lines(self.text)

    @cached_property
    def has_cr(self) -> bool:
        """Whether any line ends in CR (a store that tracks this can seed it: a 5 MB scan less)."""
        return "\r" in self.text

    @cached_property
    def sha256(self) -> str:
        return sha256_text(self.text)

    @cached_property
    def eol(self) -> str:
        """The terminator new lines take: the file's first one (Codex's rule), else `\\n`."""
        return first_terminator(self.text) or "\n"

    @classmethod
    def from_disk(cls, path: str, text: str, bom: bool) -> Snapshot:
        """`Snapshot(path, text, "disk", bom=bom)`, made in a third of the time (a CLI patch
        reads thousands of files): the fields go into the instance dict in one go instead of
        through the frozen dataclass's `__init__`, one `object.__setattr__` each."""
        snap = object.__new__(cls)
        snap.__dict__.update(
            path=path, text=text, source="disk", version=None, bom=bom, given_lines=None,
            line_of=None,
        )  # fmt: skip
        return snap

    def release_lines(self) -> None:
        """Stop using a line list lent by a document store (it will change under us).

        Later uses of `lines` split `text` again. Call it before anything awaits the editor.
        """
        object.__setattr__(self, "line_of", None)
        if self.given_lines is not None:
            object.__setattr__(self, "given_lines", None)
            self.__dict__.pop("lines", None)

    def token(self) -> dict[str, object]:
        return {"version": self.version, "sha256": self.sha256}


def absent(path: str) -> Snapshot:
    return Snapshot(path=path, text="", source="absent")


def decode_file(path: str, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> Snapshot:
    """Decode a file's bytes for editing, refusing what cannot round-trip byte for byte."""
    if len(data) > max_bytes:
        raise EditError(
            Code.TOO_LARGE,
            f"{path} is {len(data):,} bytes, over the {max_bytes:,}-byte cap for edits.",
            "Edit a smaller file, or raise the agentEdit.maxFileBytes setting if this is intended.",
            {"path": path, "size": len(data), "cap": max_bytes},
        )
    if data.find(b"\0", 0, BINARY_SNIFF_BYTES) >= 0:  # (a slice would copy 8 KiB)
        raise EditError(
            Code.BINARY,
            f"{path} looks binary (a NUL byte in its first {BINARY_SNIFF_BYTES} bytes).",
            "Binary files cannot be edited as text; leave this file alone.",
            {"path": path, "size": len(data)},
        )
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        text = data[3 if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start + (3 if bom else 0)  # an offset into the file, BOM included
        raise EditError(
            Code.INVALID_ENCODING,
            f"{path} is not valid UTF-8 (byte {at}: {data[at : at + 1]!r}); "
            "it will not be re-encoded.",
            "Edit it with a tool that knows its encoding, or convert it to UTF-8 first.",
            {"path": path, "offset": at},
        ) from None
    return Snapshot.from_disk(path, text, bom)


def encode_file(text: str, bom: bool) -> bytes:
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
