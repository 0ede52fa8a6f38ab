"""The open-buffer store: what the editor shows now, kept from didOpen/didChange in O(change).

pygls's own TextDocument re-splits the whole text on every incremental change (17 ms per keystroke
at 100k lines) and splits on form feed and U+2028 like `str.splitlines`; this store keeps a list of
LSP lines and splices only the lines a change touches. Text and its sha256 are computed on demand
and cached per version, since commands need them far less often than keystrokes arrive.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from lsp_server.engine.text import Snapshot, sha256_text, split_lines
from lsp_server.lsp.positions import to_index


@dataclass
class Document:
    uri: str
    path: str
    language_id: str
    version: int
    lines: list[str]
    _text: str | None = field(default=None, repr=False)
    _sha256: str | None = field(default=None, repr=False)

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = "".join(self.lines)
        return self._text

    @property
    def sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = sha256_text(self.text)
        return self._sha256

    def set_known_text(self, text: str, sha256: str | None = None) -> None:
        """Seed the caches with text known to equal the lines (saves a join after our own edit)."""
        self._text = text
        self._sha256 = sha256

    def snapshot(self) -> Snapshot:
        # A shallow copy: the store mutates `lines` in place on the next change.
        snap = Snapshot(
            path=self.path,
            text=self.text,
            source="buffer",
            version=self.version,
            given_lines=list(self.lines),
        )
        if self._sha256 is not None:
            snap.__dict__["sha256"] = self._sha256
        return snap

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
        prefix = lines[sl][:s_idx]
        suffix = lines[el][e_idx:]
        # A lone CR next to an inserted or exposed LF becomes one CRLF terminator: re-split the
        # neighbouring line too, so the store matches what the editor's text splits into.
        if sl > 0 and lines[sl - 1].endswith("\r"):
            sl -= 1
            prefix = lines[sl] + prefix
        joined = prefix + text + suffix
        if joined.endswith("\r") and el < last:
            el += 1
            joined += lines[el]
        new = split_lines(joined)
        if el < last:
            new.pop()  # the joined piece ends with a terminator; the next line follows it
        lines[sl : el + 1] = new
        self._text = None
        self._sha256 = None


class DocumentStore:
    """Open documents by URI and by file-system path."""

    def __init__(self, uri_to_path: Callable[[str], str | None]) -> None:
        self._by_uri: dict[str, Document] = {}
        self._by_path: dict[str, Document] = {}
        self._uri_to_path = uri_to_path

    def open(self, uri: str, language_id: str, version: int, text: str) -> Document:
        path = self._uri_to_path(uri) or uri
        doc = Document(uri, path, language_id, version, split_lines(text))
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

    def by_path(self, path: str) -> Document | None:
        return self._by_path.get(path)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._by_uri.values()))

    def __len__(self) -> int:
        return len(self._by_uri)
