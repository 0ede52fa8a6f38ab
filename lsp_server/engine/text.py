"""Text snapshots: LSP line splitting, line endings, BOM, and the sha256 token of a file's content.

A snapshot is what the engine plans against: the text of an open buffer (with its version) or of a
file on disk. Lines follow LSP rules, split on `\\n`, `\\r\\n` and `\\r` only (never form feed or
U+2028, which Python's `str.splitlines` also splits on).

Line lists keep their terminators and always end with the final line, which has none (possibly
empty): "a\\nb" -> ["a\\n", "b"], "a\\n" -> ["a\\n", ""], "" -> [""]. So LSP line `i` is `lines[i]`
and `"".join(lines)` is the text again.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from lsp_server.engine import errors
from lsp_server.engine.digests import sha256, sha256_for
from lsp_server.engine.values import slot_setters

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any, Literal, TypeAlias

BOM = "\ufeff"
_TERMINATOR = re.compile(r"\r\n|\r|\n")
# Binary sniffing looks where git does: a NUL byte in the first 8 KiB.
BINARY_SNIFF_BYTES = 8192
DEFAULT_MAX_BYTES = 10 * 1024 * 1024

Source: TypeAlias = "Literal['buffer', 'disk', 'absent']"  # quoted: no typing at run time


# What `str.splitlines` splits on besides `\n` and `\r`: LSP does not (the module docstring).
# Those above U+007F cannot be in an ASCII text (`str.isascii` reads a flag: no scan).
_OTHER_BREAKS = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e")
_OTHER_WIDE_BREAKS = ("\x85", "\u2028", "\u2029")


def splitlines_is_lsp(text: str) -> bool:
    """Whether `str.splitlines` splits `text` at the LSP line ends only: it holds none of the
    other characters splitlines splits on (CR aside: LSP splits on it too)."""
    return not any(map(text.__contains__, _OTHER_BREAKS)) and (
        text.isascii() or not any(map(text.__contains__, _OTHER_WIDE_BREAKS))
    )


def split_lines(text: str) -> list[str]:
    """Split `text` into LSP lines with terminators; the last (unterminated) line always ends it."""
    if "\r" not in text:
        # Fast path, all in C: str.splitlines splits exactly as LSP does when the text holds
        # none of the other characters it splits on, each looked for by a one-character `in`
        # (memchr). It compared `text.count("\n")` with the pieces before: a per-character
        # loop, 1.5 ms against 0.25 ms for the five `in`s on a 100k-line file (best of 30, in
        # process); callgrind, c75b687 -> 3b27cca: parse+plan+diff in process of
        # bench_patch's big workload 605.4 -> 582.8 M instructions, the 1,000 files 1082.1 ->
        # 1076.6 M; whole CLI applies (`bench/bench_ab.py --instructions`, both after a run
        # that wrote the code cache) big 811.0 -> 788.1 M, the 1,000 files 2191.9 -> 2154.2 M.
        if splitlines_is_lsp(text):
            lines = text.splitlines(keepends=True)
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
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# A big text's hash keeps its running state every this many characters, so an edit at offset k
# only needs the text from k on hashed again.
HASH_MARK_EVERY = 256 * 1024
HashMark = tuple[int, "Any"]  # (offset in characters, sha256 state over text[:offset])


def hash_with_marks(text: str, start: int = 0, state: Any = None) -> tuple[str, list[HashMark]]:
    """`sha256_text(text)`, resumed from `state` (the hash of `text[:start]`), with its marks."""
    h = state.copy() if state is not None else sha256_for(len(text) - start)
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


@dataclass(frozen=True, slots=True, init=False)
class DiskRead:
    """What `files.read_snapshot` saw of a file on disk, carried by the snapshot it made.

    `files.apply_plan` refuses (STALE), under the workspace lock, a file whose inode, size,
    mtime or ctime moved since (a save in place that puts the mtime back, `touch -r`, still
    moves the ctime), compares bytes when a same-size save could have kept them (a change
    within one timestamp tick before `read_ns`), and journals `data` as the pre-image. Carried
    by the snapshot, not kept aside: a long-lived server must not hold every file it read.
    """

    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    read_ns: int  # the time the read started: a save after it is stamped no earlier
    data: bytes  # the bytes `text` was decoded from (UTF-8 and the BOM round-trip exactly)
    # The permission bits (`stat.S_IMODE`), None where not known: what an undone delete gives
    # the file back (a 0600 secret came back 0644, readable by every user).
    mode: int | None

    # One per file read (values.slot_setters: 1.3 -> 0.5 us each, best of 7 in process).
    def __init__(
        self,
        ino: int,
        size: int,
        mtime_ns: int,
        ctime_ns: int,
        read_ns: int,
        data: bytes,
        mode: int | None = None,
    ) -> None:
        _set_ino(self, ino)
        _set_size(self, size)
        _set_mtime_ns(self, mtime_ns)
        _set_ctime_ns(self, ctime_ns)
        _set_read_ns(self, read_ns)
        _set_data(self, data)
        _set_mode(self, mode)


_set_ino, _set_size, _set_mtime_ns, _set_ctime_ns, _set_read_ns, _set_data, _set_mode = (
    slot_setters(DiskRead, "ino", "size", "mtime_ns", "ctime_ns", "read_ns", "data", "mode")
)


@dataclass(frozen=True)
class LinkRead:
    """A symbolic link named by a Delete File (or a Move's source), as `files.note_link` saw
    it: that plan removes the link itself, never its target, and is STALE if the link moved."""

    ino: int
    mtime_ns: int
    target: str


class LentLines:
    """A line list (and its offset -> line index) lent by a document store, until `release()`.

    The store mutates its list on the next change, so a holder releases it before it awaits
    the editor; the snapshot then splits its own text again. Deliberately mutable: what a
    frozen snapshot may read changes when the loan ends, and only through `release()`.
    """

    __slots__ = ("lines", "line_of")

    def __init__(self, lines: list[str], line_of: Callable[[int], int] | None) -> None:
        self.lines: list[str] | None = lines
        self.line_of: Callable[[int], int] | None = line_of

    def release(self) -> None:
        self.lines = self.line_of = None


@dataclass(frozen=True, eq=False)
class Snapshot:
    """The content of one file as the engine saw it, with what identifies that exact content."""

    path: str
    text: str
    source: Source = "disk"
    version: int | None = None
    bom: bool = False
    # The line ending the file is saved with, when the client declared it (a buffer whose text
    # does not show it: Emacs shows a CRLF file with LF); None: as the text shows.
    declared_eol: str | None = None
    # The line break the buffer's text takes for new lines where it shows none yet (an empty or
    # one-line buffer): a client whose text carries its file's line endings (Neovim sends its
    # 'fileformat' breaks) declared them. None: `\n`, as before (Emacs shows CRLF as LF).
    shown_eol: str | None = None
    # Lines a caller already has (the split of `text`, kept as they are), to skip a re-split.
    given_lines: list[str] | None = field(default=None, repr=False)
    # Lines lent by a document store, valid until `release_lines()` (see `LentLines`).
    lent: LentLines | None = field(default=None, repr=False)
    # The sha256 of `text` when the store already knows it (a 100k-line hash less).
    known_sha256: str | None = field(default=None, repr=False)
    # False when the store knows no line ends in CR (a 5 MB scan less).
    may_have_cr: bool = field(default=True, repr=False)
    # What `files.read_snapshot` saw (None for a buffer, an absent file, a text made in memory).
    disk: DiskRead | None = field(default=None, repr=False)
    # The symbolic link this snapshot's path names, when a plan removes it as a link.
    link: LinkRead | None = field(default=None, repr=False)

    @property
    def exists(self) -> bool:
        return self.source != "absent"

    @property
    def lines(self) -> list[str]:
        lent = self.lent
        if lent is not None and lent.lines is not None:
            return lent.lines
        if self.given_lines is not None:
            return self.given_lines
        return self._split_lines

    @cached_property
    def _split_lines(self) -> list[str]:
        return split_lines(self.text)

    def lines_if_split(self) -> list[str] | None:
        """`lines` when they are at hand (lent, given, or split already), else None (nothing is
        split): for a caller that can do without the whole line list (undo/changes.py)."""
        lent = self.lent
        if lent is not None and lent.lines is not None:
            return lent.lines
        if self.given_lines is not None:
            return self.given_lines
        return self.__dict__.get("_split_lines")  # where `cached_property` keeps it once made

    @property
    def line_of(self) -> Callable[[int], int] | None:
        """The store's index from a character offset in `text` to a line number, while lent."""
        lent = self.lent
        return lent.line_of if lent is not None and lent.lines is not None else None

    @cached_property
    def has_cr(self) -> bool:
        """Whether any line ends in CR."""
        return self.may_have_cr and "\r" in self.text

    @cached_property
    def sha256(self) -> str:
        return self.known_sha256 if self.known_sha256 is not None else sha256_text(self.text)

    def sha256_if_known(self) -> str | None:
        """`sha256` if it was given or computed already, else None (nothing is hashed)."""
        known = self.__dict__.get("sha256")  # where `cached_property` keeps it once computed
        return known if isinstance(known, str) else self.known_sha256

    @cached_property
    def eol(self) -> str:
        """The terminator new lines take: the file's first one (Codex's rule), else the one the
        buffer's text shows (`shown_eol`), else `\\n`."""
        return first_terminator(self.text) or self.shown_eol or "\n"

    def release_lines(self) -> None:
        """Stop using a line list lent by a document store (it will change under us).

        Later uses of `lines` split `text` again. Call it before anything awaits the editor.
        """
        if self.lent is not None:
            self.lent.release()

    def token(self) -> dict[str, object]:
        return {"version": self.version, "sha256": self.sha256}


def absent(path: str) -> Snapshot:
    return Snapshot(path=path, text="", source="absent")


def decode_file(
    path: str, data: bytes, max_bytes: int = DEFAULT_MAX_BYTES, disk: DiskRead | None = None
) -> Snapshot:
    """Decode a file's bytes for editing, refusing what cannot round-trip byte for byte;
    `disk`, what the reader saw (its `data` is `data`), goes with the snapshot."""
    if len(data) > max_bytes:
        # A reader reads one byte over the cap, no more: the file's size is what it saw.
        size = max(len(data), disk.size) if disk is not None else len(data)
        raise errors.too_large(
            f"{path} is {size:,} bytes, over the {max_bytes:,}-byte cap for edits.",
            "Edit a smaller file, or raise the agentEdit.maxFileBytes setting if this is intended.",
            path=path,
            size=size,
            cap=max_bytes,
        )
    if data.find(b"\0", 0, BINARY_SNIFF_BYTES) >= 0:  # (a slice would copy 8 KiB)
        raise errors.binary(
            f"{path} looks binary (a NUL byte in its first {BINARY_SNIFF_BYTES} bytes).",
            "Binary files cannot be edited as text; leave this file alone.",
            path=path,
            size=len(data),
        )
    bom = data.startswith(b"\xef\xbb\xbf")
    try:
        text = data[3 if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError as exc:
        at = exc.start + (3 if bom else 0)  # an offset into the file, BOM included
        raise errors.invalid_encoding(
            f"{path} is not valid UTF-8 (byte {at}: {data[at : at + 1]!r}); "
            "it will not be re-encoded.",
            "Edit it with a tool that knows its encoding, or convert it to UTF-8 first.",
            path=path,
            offset=at,
        ) from None
    return Snapshot(path, text, "disk", None, bom, disk=disk)


def encode_file(text: str, bom: bool) -> bytes:
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8")
