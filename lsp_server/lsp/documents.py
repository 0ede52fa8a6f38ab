"""The open-buffer store: what the editor shows now, kept from didOpen/didChange in O(change).

pygls's own TextDocument re-splits the whole text on every incremental change (17 ms per keystroke
at 100k lines) and splits on form feed and U+2028 like `str.splitlines`; this store keeps a list of
LSP lines and splices only the lines a change touches. Text and its sha256 are computed on demand
and cached per version, since commands need them far less often than keystrokes arrive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lsp_server.engine.text import (
    HashMark,
    LentLines,
    Snapshot,
    hash_with_marks,
    split_lines,
    terminator,
)
from lsp_server.lsp.positions import index_in, to_index

BLOCK = 512


@dataclass
class ChangeWatch:
    """Which lines of a document changed since the watch began, at O(change) cost per change.

    `ranges` are disjoint, sorted `[cur_start, cur_end, orig_start, orig_end]`: current lines
    [cur_start, cur_end) replaced what were lines [orig_start, orig_end) when the watch began.
    Every other line is, by construction, the very same line as then. This is what lets an
    edit be verified in time proportional to the edit instead of comparing a 100k-line buffer.
    """

    ranges: list[list[int]] = field(default_factory=list)
    # A full-text change (or a reopen) happened: nothing is known line by line any more.
    whole: bool = False

    def record(self, a: int, b: int, k: int) -> None:
        """Current lines [a, b) were replaced by `k` lines."""
        rs = self.ranges
        i = 0
        shift = 0
        while i < len(rs) and rs[i][1] < a:
            shift += (rs[i][1] - rs[i][0]) - (rs[i][3] - rs[i][2])
            i += 1
        j = i
        while j < len(rs) and rs[j][0] <= b:
            j += 1
        merged = rs[i:j]
        if merged and merged[0][0] <= a:
            cs, os_ = merged[0][0], merged[0][2]
        else:
            cs, os_ = a, a - shift
        if merged and merged[-1][1] >= b:
            ce, oe = merged[-1][1], merged[-1][3]
        else:
            inner = sum((r[1] - r[0]) - (r[3] - r[2]) for r in merged)
            ce, oe = b, b - shift - inner
        delta = k - (b - a)
        for r in rs[j:]:
            r[0] += delta
            r[1] += delta
        rs[i:j] = [[cs, ce + delta, os_, oe]]


@dataclass
class Document:
    uri: str
    path: str
    language_id: str
    version: int
    lines: list[str]
    _text: str | None = field(default=None, repr=False)
    _sha256: str | None = field(default=None, repr=False)
    watches: list[ChangeWatch] = field(default_factory=list, repr=False)
    # Conservative: once a CR was seen the document may hold one; a false True only costs a scan.
    may_have_cr: bool = True
    # Character length of each block of BLOCK lines, for the valid prefix of blocks: finding the
    # line of an offset walks ~200 block sums and one block instead of counting 5 MB of newlines.
    _blocks: list[int] = field(default_factory=list, repr=False)
    # sha256 states part-way through the text (valid prefix): see text.hash_with_marks.
    _marks: list[HashMark] = field(default_factory=list, repr=False)
    # Which open of the store this is (didOpen to didClose): versions count only within one.
    open_id: int = 0
    # How many didChange notifications this open has had: tells whether the editor has shown
    # the buffer since some moment (an unverified edit is settled only by a fresh report).
    reports: int = 0
    # How many lines end in a lone CR (a line break for LSP, a character for Neovim and Emacs).
    lone_cr: int = 0
    # The file's format as the client declared it for this open (agentEdit/documentFormat):
    # the line ending it saves with (`lf`, `crlf`, `cr`) and whether it writes a BOM. Emacs
    # shows a CRLF file with LF and strips a BOM, so its text alone cannot tell. None: not said.
    eol: str | None = None
    bom: bool | None = None
    # The client places its changes as if one more line break followed the text, one the text
    # does not have (Neovim's incremental sync always counts a break after the last line, even
    # with 'noeol' or in an empty buffer): `DocumentStore.change` maps its changes onto the text.
    phantom_break: bool = False
    # The client's text carries the line ending it declared (`eol`): Neovim sends its
    # 'fileformat' breaks, so new lines of a buffer showing none yet take that one.
    shows_eol: bool = False

    def count_lone_cr(self) -> None:
        self.lone_cr = sum(1 for x in self.lines if x.endswith("\r")) if self.may_have_cr else 0

    def watch(self) -> ChangeWatch:
        w = ChangeWatch()
        self.watches.append(w)
        return w

    def unwatch(self, w: ChangeWatch) -> None:
        if w in self.watches:
            self.watches.remove(w)

    def line_of_offset(self, offset: int) -> int:
        """The line holding character `offset` of the text (the last line if past the end)."""
        lines, blocks = self.lines, self._blocks
        pos = 0
        k = 0
        while True:
            if k == len(blocks):
                if k * BLOCK >= len(lines):
                    return len(lines) - 1
                blocks.append(sum(map(len, lines[k * BLOCK : (k + 1) * BLOCK])))
            if pos + blocks[k] > offset:
                break
            pos += blocks[k]
            k += 1
        line = k * BLOCK
        for text in lines[line : line + BLOCK]:
            pos += len(text)
            if pos > offset:
                return line
            line += 1
        return min(line, len(lines) - 1)

    def replace_all(self, text: str) -> None:
        self._blocks.clear()
        self._marks = []
        self.may_have_cr = "\r" in text
        self.lines = split_lines(text)
        self.count_lone_cr()
        self.set_known_text(text)
        for w in self.watches:
            w.whole = True

    def replace_lf_range(
        self, start: tuple[int, int], end: tuple[int, int], text: str, encoding: str
    ) -> None:
        """Apply one incremental change whose positions count lines by LF alone, a CR being a
        character: how Neovim and Emacs place them (`DocumentStore.lf_lines`). Used only while
        the document holds a lone CR, where that differs from LSP lines; O(document)."""
        whole = self.text
        crlf = self.shows_eol and self.eol == "crlf"  # Neovim's 'fileformat' dos
        a, b = sorted(
            (_lf_offset(whole, start, encoding, crlf), _lf_offset(whole, end, encoding, crlf))
        )
        self.replace_all(whole[:a] + text + whole[b:])

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self.lines)
        return self._text

    @property
    def sha256(self) -> str:
        if self._sha256 is None:
            self._sha256, self._marks = hash_with_marks(self.text)
        return self._sha256

    def hash_start(self, offset: int) -> tuple[int, Any]:
        """Where hashing a text equal to this one up to `offset` can resume: (position, state)."""
        best: tuple[int, Any] = (0, None)
        for mark in self._marks:
            if mark[0] > offset:
                break
            best = mark
        return best

    def set_known_text(
        self, text: str, sha256: str | None = None, marks: list[HashMark] | None = None
    ) -> None:
        """Seed the caches with text known to equal the lines (saves a join after our own edit).

        `marks` are hash states of this text from a resumed hash; the ones still held (before
        the first change) are kept with them.
        """
        self._text = text
        self._sha256 = sha256
        if marks is None:
            self._marks = []
        elif marks:
            self._marks = [m for m in self._marks if m[0] < marks[0][0]] + marks

    def _offset_of_line(self, line: int) -> int:
        lines, blocks = self.lines, self._blocks
        k = line // BLOCK
        while len(blocks) < k:
            j = len(blocks)
            blocks.append(sum(map(len, lines[j * BLOCK : (j + 1) * BLOCK])))
        return sum(blocks[:k]) + sum(map(len, lines[k * BLOCK : line]))

    def snapshot(self, path: str | None = None) -> Snapshot:
        """The buffer as a snapshot, named `path` (default: the document's own path)."""
        # The line list is lent, not copied (a copy costs ~1.5 ms at 100k lines): the store
        # mutates it on the next change, so holders call `release_lines()` before they await.
        return Snapshot(
            path=self.path if path is None else path,
            text=self.text,
            source="buffer",
            version=self.version,
            bom=bool(self.bom),
            declared_eol=self.eol,
            shown_eol=_BREAKS.get(self.eol or "") if self.shows_eol else None,
            lent=LentLines(self.lines, self.line_of_offset),
            known_sha256=self._sha256,
            may_have_cr=self.may_have_cr,
        )

    def replace_range(
        self, start: tuple[int, int], end: tuple[int, int], text: str, encoding: str
    ) -> None:
        """Apply one incremental change; positions past the end clamp to the end (LSP rule)."""
        lines = self.lines
        last = len(lines) - 1
        sl, sc = start
        el, ec = end
        if (el, ec) < (sl, sc):
            sl, sc, el, ec = el, ec, sl, sc
        if sl > last:
            sl, sc = last, 1 << 30
        if el > last:
            el, ec = last, 1 << 30
        sl = max(sl, 0)
        el = max(el, 0)
        s_idx = to_index(lines[sl], sc, encoding)
        e_idx = to_index(lines[el], ec, encoding)
        if sl == el and s_idx > e_idx:
            # Columns past a CRLF line's content: just past it is the place after the CR, any
            # further one clamps before it (positions.to_index), so the two can cross.
            s_idx, e_idx = e_idx, s_idx
        if "\r" in text:
            self.may_have_cr = True
        prefix = lines[sl][:s_idx]
        piece = prefix + text
        if e_idx == 0 and (el > sl or s_idx == 0) and piece.endswith("\n"):
            # The change ends at a line start and leaves that line whole: splice before it, so
            # only the lines really replaced are touched (and watched).
            stop = el
            joined = piece
        else:
            stop = el + 1
            joined = piece + lines[el][e_idx:]
        # A lone CR next to an inserted or exposed LF becomes one CRLF terminator: re-split the
        # neighbouring line too, so the store matches what the editor's text splits into.
        if sl > 0 and joined.startswith("\n") and lines[sl - 1].endswith("\r"):
            sl -= 1
            joined = lines[sl] + joined
        if (
            stop == el + 1
            and joined.endswith("\r")
            and el < last
            and lines[el + 1].startswith("\n")
        ):
            stop += 1
            joined += lines[el + 1]
        new = split_lines(joined)
        if stop <= last:
            new.pop()  # the joined piece ends with a terminator; the next line follows it
        if self._marks:
            start_offset = self._offset_of_line(sl)
            while self._marks and self._marks[-1][0] > start_offset:
                self._marks.pop()
        blocks = self._blocks
        if len(new) == stop - sl:
            for j in range(sl, min(stop, len(blocks) * BLOCK)):
                blocks[j // BLOCK] += len(new[j - sl]) - len(lines[j])
        else:
            del blocks[sl // BLOCK :]  # later blocks now hold other lines: recount them lazily
        if self.may_have_cr:
            self.lone_cr += sum(1 for x in new if x.endswith("\r")) - sum(
                1 for x in lines[sl:stop] if x.endswith("\r")
            )
        lines[sl:stop] = new
        for w in self.watches:
            w.record(sl, stop, len(new))
        self._text = None
        self._sha256 = None


def _lf_offset(text: str, position: tuple[int, int], encoding: str, crlf: bool = False) -> int:
    """Offset in `text` of a position whose lines are split by LF alone; past a line's end is
    its end (before its LF, or, `crlf`, the CR of its CRLF: the client's line break), past the
    last line is the end of the text."""
    line, column = position
    pos = 0
    for _ in range(max(line, 0)):
        nl = text.find("\n", pos)
        if nl < 0:
            return len(text)
        pos = nl + 1
    nl = text.find("\n", pos)
    segment = text[pos : len(text) if nl < 0 else nl]
    if crlf and nl >= 0 and segment.endswith("\r"):
        segment = segment[:-1]
    return pos + index_in(segment, column, encoding)


# A column past every line's end: positions clamp to the end of the line, before its break.
_LINE_END = 1 << 30
_BREAKS = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}


def _ends_with_break(lines: list[str]) -> bool:
    return len(lines) > 1 and lines[-1] == ""


def _trailing_break(text: str) -> str:
    return "\r\n" if text.endswith("\r\n") else text[-1:] if text[-1:] in ("\n", "\r") else ""


def _off_the_phantom(
    doc: Document, start: tuple[int, int], text: str, last: int
) -> tuple[tuple[int, int], tuple[int, int], str] | None:
    """A change of a `phantom_break` document that reaches past its text (into the line break
    the client counts after it), as the change of the text it makes; None: it changes nothing.

    The client's text is ours plus that break, and stays so after the change (Neovim's changes
    always leave a break after the last line): so the change's own final break is the one the
    client keeps counting, and a change starting after the phantom break turns it into a real
    one before its text. `last`: the text's last line as the client counts lines."""
    end_of_text = (last, _LINE_END)
    brk = _trailing_break(text)
    if start[0] > last:
        return (end_of_text, end_of_text, brk + text[: -len(brk)]) if text else None
    if brk:
        return start, end_of_text, text[: -len(brk)]
    if not text and start[1] == 0 and start[0] > 0:
        # Lines deleted through the end: the break before them becomes the phantom one.
        return (start[0] - 1, _LINE_END), end_of_text, ""
    # Not the client's model (its text would end without a break): take the change as it is.
    doc.phantom_break = False
    return start, end_of_text, text


def lf_lines_by_name(client_name: str | None) -> bool:
    """Whether the client places positions by lines split by LF alone (a lone CR being a
    character of the line): Neovim and Emacs do (their buffers show it as ^M); VS Code splits
    on CR as LSP says, and a client not known is taken to follow LSP."""
    name = (client_name or "").lower()
    return any(known in name for known in ("neovim", "nvim", "emacs", "eglot"))


def final_break_in_changes_by_name(client_name: str | None) -> bool:
    """Whether the client's incremental changes count a line break after the last line even
    when the text has none: Neovim's do (its sync works on lines, each ending with a break;
    only its didOpen leaves the break out of a 'noeol' buffer)."""
    name = (client_name or "").lower()
    return "neovim" in name or "nvim" in name


class DocumentStore:
    """Open documents by URI and by file-system path."""

    def __init__(self, uri_to_path: Callable[[str], str | None]) -> None:
        self._by_uri: dict[str, Document] = {}
        self._by_path: dict[str, Document] = {}
        self._uri_to_path = uri_to_path
        self._opens = 0
        # The client counts lines by LF alone (lf_lines_by_name): set at initialize.
        self.lf_lines = False
        # The client's changes count a line break after the last line whether the text has one
        # or not (final_break_in_changes_by_name): set at initialize.
        self.final_break_in_changes = False

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        path = self._uri_to_path(uri) or uri
        doc = Document(uri, path, language_id, version, split_lines(text))
        # Neovim's didOpen sends the text as it is ('noeol': no final line break), its changes
        # then count one after the last line.
        doc.phantom_break = self.final_break_in_changes and not _ends_with_break(doc.lines)
        doc.shows_eol = self.final_break_in_changes
        doc.may_have_cr = "\r" in text
        doc.count_lone_cr()
        doc.set_known_text(text)  # the first read (and the parse on open) need no join
        self._opens += 1
        doc.open_id = self._opens
        self.close(uri)
        self._by_uri[uri] = doc
        self._by_path[path] = doc
        return doc

    def close(self, uri: str) -> Document | None:
        doc = self._by_uri.pop(uri, None)
        if doc is not None and self._by_path.get(doc.path) is doc:
            del self._by_path[doc.path]
        return doc

    def get(self, uri: str) -> Document | None:
        return self._by_uri.get(uri)

    def change(
        self,
        uri: str,
        version: int,
        changes: list[tuple[tuple[int, int] | None, tuple[int, int] | None, str]],
        encoding: str,
    ) -> Document | None:
        """A didChange: each change as (start, end, text), positions as (line, character) in
        `encoding`, both None for a whole new text; the document, or None if it is not open."""
        doc = self._by_uri.get(uri)
        if doc is None:
            return None
        if changes and version <= doc.version:
            # LSP wants a higher version with every change; a client that sends none (or a
            # lower one) has a version that no longer tells contents apart, and a read token
            # from before would pass on it alone (planner.check_precondition). Counted as a new
            # open, as after a reopen: such a token is checked by its sha256 (session.for_open).
            self._opens += 1
            doc.open_id = self._opens
        for start, end, text in changes:
            if start is None or end is None:
                doc.replace_all(text)
                doc.phantom_break = self.final_break_in_changes and not _ends_with_break(doc.lines)
                continue
            # The client's line count: a lone CR is no line break for one that counts by LF.
            count = len(doc.lines) - (doc.lone_cr if self.lf_lines else 0)
            if doc.phantom_break and end[0] >= count:
                mapped = _off_the_phantom(doc, start, text, count - 1)
                if mapped is None:
                    continue
                start, end, text = mapped
            if self.lf_lines and doc.lone_cr:
                # Past a lone CR this client's line numbers are not LSP's.
                doc.replace_lf_range(start, end, text, encoding)
            else:
                doc.replace_range(start, end, text, encoding)
        doc.version = version
        doc.reports += 1
        return doc

    def set_final_newline(self, doc: Document, has: bool, line_count: int | None = None) -> bool:
        """The client says whether the text ends with the line break its changes count after
        the last line (`agentEdit/documentFormat` `finalNewline`): the text gains or loses that
        break, the client's own text staying what it was. True if the text changed; the
        document then counts as reopened, so a version handed out before proves nothing.

        `line_count` (`lineCount`): how many lines the client's changes count, so how many line
        breaks its text has, the one after the last line included. With it the text's own
        breaks tell whether the break is in the text, whatever was assumed at `didOpen`:
        Neovim sends a 'noeol' buffer whose last line is empty ("a" and "", its changes
        counting "a\n\n") as "a\n", the very text of an 'eol' buffer holding "a"."""
        extra = None  # how many breaks the text has beyond the ones it should (-1, 0, 1)
        if line_count is not None:
            breaks = len(doc.lines) - 1 - (doc.lone_cr if self.lf_lines else 0)
            extra = breaks - (line_count if has else line_count - 1)
            if extra not in ((-1, 0) if has else (0, 1)):
                extra = None  # not the text the client counted: keep to what was assumed
        if extra is None:
            if doc.phantom_break != has:
                return False
            extra = -1 if has else 1
        doc.phantom_break = not has
        last = len(doc.lines) - 1
        if extra < 0:
            brk = _BREAKS.get(doc.eol or "") or (terminator(doc.lines[-2]) if last else "")
            doc.replace_range((last, _LINE_END), (last, _LINE_END), brk or "\n", "utf-16")
        elif extra > 0 and _ends_with_break(doc.lines):
            doc.replace_range((last - 1, _LINE_END), (last, 0), "", "utf-16")
        else:
            return False
        self._opens += 1
        doc.open_id = self._opens
        return True

    def by_path(self, path: str) -> Document | None:
        return self._by_path.get(path)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._by_uri.values()))

    def __len__(self) -> int:
        return len(self._by_uri)
