"""Column conversions between Python string indices and LSP positions in a negotiated encoding.

Exact for astral characters: one emoji is 1 Python index, 2 UTF-16 units and 4 UTF-8 bytes.
Only the one line being converted is looked at, and ASCII lines take a shortcut.
"""

from __future__ import annotations

from lsp_server.engine.text import content

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"


def _width(ch: str, encoding: str) -> int:
    o = ord(ch)
    if encoding == UTF16:
        return 2 if o > 0xFFFF else 1
    if encoding == UTF8:
        return 1 if o < 0x80 else 2 if o < 0x800 else 3 if o < 0x10000 else 4
    return 1


def to_index(line: str, column: int, encoding: str) -> int:
    """Python index into `line` for an LSP column; past the line's end means its end (LSP rule).

    One exception: on a line ending in CRLF, the column just past the content is the place
    between the CR and the LF. Neovim and Emacs show a CRLF line of a file with mixed endings
    as a line ending in a CR character (^M) and place their didChange positions by that line:
    a change through its end reaches past the CR. Clamped before the CR, the change would leave
    the old CR in the store beside the one the change brings ("c\r\r\n"): the store would no
    longer hold what the editor shows, and every edit verified against it would fail.
    """
    text = content(line)
    if column <= 0:
        return 0
    if encoding == UTF32 or text.isascii():
        width = len(text)
        if column <= width:
            return column
    else:
        units = 0
        for i, ch in enumerate(text):
            if units >= column:
                return i
            units += _width(ch, encoding)
        width = units
    if column == width + 1 and line.endswith("\r\n"):
        return len(text) + 1
    return len(text)


def to_column(line: str, index: int, encoding: str) -> int:
    """LSP column for a Python index into `line`."""
    prefix = line[:index]
    if encoding == UTF32 or prefix.isascii():
        return len(prefix)
    return sum(_width(ch, encoding) for ch in prefix)


def index_in(segment: str, column: int, encoding: str) -> int:
    """Python index into `segment`, a line without terminator in which every character counts
    (a CR too), for a column; past its end means its end."""
    if column <= 0:
        return 0
    if encoding == UTF32 or segment.isascii():
        return min(column, len(segment))
    units = 0
    for i, ch in enumerate(segment):
        if units >= column:
            return i
        units += _width(ch, encoding)
    return len(segment)
