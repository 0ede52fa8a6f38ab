"""A document's UTF-8 source as tree-sitter rows in blocks: edits, offsets and reads in O(edit).

Tree-sitter counts rows at `\\n` only. Keeping the source as one `bytes` costs a copy of the whole
file per edit (~1-5 ms at 100k lines, page faults included) and a newline count per point; here
rows sit in blocks of at most `MAX_BLOCK` rows with their byte sizes, so an edit rebuilds only
the blocks it touches, a row's offset is a walk over ~100 block sizes, and a parse can read the
text in chunks (which lets py-tree-sitter release the GIL between reads).

Blocks are never mutated once built (an edit puts new lists in their place), so `frozen()` is a
shallow copy that a worker thread can read while the event loop records later edits.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_BLOCK = 1024
# What one read hands tree-sitter: py-tree-sitter drops the GIL between reads.
READ_CHUNK = 32 * 1024
MAX_READ = 64 * 1024


def split_rows(source: bytes) -> list[bytes]:
    """`source` as rows ending in `\\n`, the last one unterminated (maybe empty)."""
    if b"\r" not in source:
        rows = source.splitlines(keepends=True)  # C speed; without CR it splits at LF only
        if not rows or rows[-1].endswith(b"\n"):
            rows.append(b"")
        return rows
    parts = source.split(b"\n")
    rows = [p + b"\n" for p in parts[:-1]]
    rows.append(parts[-1])
    return rows


class Rows:
    """The rows of one source; the last row is the unterminated rest (maybe `b""`)."""

    def __init__(self, source: bytes = b"", *, _blocks: list[list[bytes]] | None = None) -> None:
        if _blocks is None:
            rows = split_rows(source)
            _blocks = [rows[i : i + MAX_BLOCK] for i in range(0, len(rows), MAX_BLOCK)]
        self._blocks = _blocks
        self._sizes = [sum(map(len, b)) for b in _blocks]
        self._counts = [len(b) for b in _blocks]
        # Each block's rows joined, made on the first read of it (reads are a parse's hot path).
        self._joined: list[bytes | None] = [None] * len(_blocks)

    def frozen(self) -> Rows:
        """A copy that later edits of this one do not change (O(blocks))."""
        copy = Rows.__new__(Rows)
        copy._blocks = list(self._blocks)
        copy._sizes = list(self._sizes)
        copy._counts = list(self._counts)
        copy._joined = list(self._joined)
        return copy

    def __len__(self) -> int:
        return sum(self._counts)

    @property
    def size(self) -> int:
        return sum(self._sizes)

    def to_bytes(self) -> bytes:
        return b"".join(b"".join(b) for b in self._blocks)

    def _block_of_row(self, row: int) -> tuple[int, int, int]:
        """(block index, first row of that block, byte offset of that block) holding `row`."""
        first = offset = 0
        for k, count in enumerate(self._counts):
            if row < first + count:
                return k, first, offset
            first += count
            offset += self._sizes[k]
        k = len(self._counts) - 1
        return k, first - self._counts[k], offset - self._sizes[k]

    def _block_of_offset(self, byte: int) -> tuple[int, int, int]:
        first = offset = 0
        for k, size in enumerate(self._sizes):
            if byte < offset + size:
                return k, first, offset
            first += self._counts[k]
            offset += size
        k = len(self._sizes) - 1
        return k, first - self._counts[k], offset - self._sizes[k]

    def offset_of_row(self, row: int) -> int:
        """The byte offset where `row` starts (the size when `row` is past the last one)."""
        if row >= len(self):
            return self.size
        k, first, offset = self._block_of_row(row)
        return offset + sum(map(len, self._blocks[k][: row - first]))

    def point_at(self, byte: int) -> tuple[int, int]:
        """Tree-sitter's (row, byte column) of a byte offset."""
        k, first, offset = self._block_of_offset(byte)
        for i, r in enumerate(self._blocks[k]):
            if byte < offset + len(r) or i == len(self._blocks[k]) - 1:
                return (first + i, byte - offset)
            offset += len(r)
        return (first, 0)  # unreachable: a block is never empty

    def row(self, row: int) -> bytes:
        k, first, _ = self._block_of_row(row)
        return self._blocks[k][row - first]

    def rows(self, start: int, stop: int) -> list[bytes]:
        """Rows [start, stop)."""
        out: list[bytes] = []
        k, first, _ = self._block_of_row(start)
        i = start - first
        while len(out) < stop - start and k < len(self._blocks):
            out.extend(self._blocks[k][i : i + stop - start - len(out)])
            k += 1
            i = 0
        return out

    def read(self, byte: int, _point: object = None) -> bytes:
        """Up to ~READ_CHUNK bytes from `byte` on (b"" at the end): tree-sitter's read callback.

        A slice (at most MAX_READ) of the block holding `byte`, joined once and cached, plus the
        next blocks while that is shorter than READ_CHUNK: ~10 microseconds per read.
        """
        if byte >= self.size:
            return b""
        k, _, offset = self._block_of_offset(byte)
        pieces: list[bytes] = []
        got = 0
        while k < len(self._blocks) and got < READ_CHUNK:
            joined = self._joined[k]
            if joined is None:
                joined = self._joined[k] = b"".join(self._blocks[k])
            start = byte - offset if not pieces else 0
            piece = joined[start : start + MAX_READ]
            pieces.append(piece)
            got += len(piece)
            k += 1
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def replace(self, start: int, old_end: int, new: bytes) -> None:
        """Replace bytes [start, old_end) with `new`; only the touched blocks are rebuilt."""
        r0, c0 = self.point_at(start)
        r1, c1 = self.point_at(old_end)
        first_row = self.row(r0)
        last_row = first_row if r1 == r0 else self.row(r1)
        new_rows = split_rows(first_row[:c0] + new + last_row[c1:])
        if r1 + 1 < len(self):
            new_rows.pop()  # row r1 kept its terminator: the row after it follows, not b""
        self.replace_rows(r0, r1 + 1, new_rows)

    def replace_rows(self, start: int, stop: int, new_rows: Sequence[bytes]) -> None:
        """Rows [start, stop) become `new_rows` (each ends in `\\n` unless it ends the source)."""
        k0, first0, _ = self._block_of_row(start)
        k1, first1, _ = self._block_of_row(max(start, stop - 1))
        merged = (
            self._blocks[k0][: start - first0]
            + list(new_rows)
            + self._blocks[k1][max(stop, start) - first1 :]
        )
        if k1 == len(self._blocks) - 1 and (not merged or merged[-1].endswith(b"\n")):
            merged.append(b"")  # the source ends with a terminator: an empty last row follows
        chunks = [merged[i : i + MAX_BLOCK] for i in range(0, len(merged), MAX_BLOCK)] or [[b""]]
        self._blocks[k0 : k1 + 1] = chunks
        self._sizes[k0 : k1 + 1] = [sum(map(len, c)) for c in chunks]
        self._counts[k0 : k1 + 1] = [len(c) for c in chunks]
        self._joined[k0 : k1 + 1] = [None] * len(chunks)
