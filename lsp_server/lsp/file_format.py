"""What an open document is saved as, where its text does not show it: line endings and BOM.

Editors send a buffer's text, not its file's bytes. Emacs shows a CRLF file with LF, and every
client leaves a BOM out of the text (and writes it back when it saves). So a `read` of an open
file said `eol: lf, bom: false` where the file had CRLF or a BOM, an `expect` with the file's
sha256 was STALE, and an undo on disk of a buffer edit dropped the BOM.

- `declare`: the client says it (`agentEdit/documentFormat {uri, eol?, bom?}`,
  editor_clients/PROTOCOL.md), held for that open only (a reopen forgets it); the Emacs
  package sends it.
- `declare` also takes `finalNewline`: Neovim's changes count a line break after the last line
  whatever 'eol' says, so the text of a buffer without one ('noeol', or an empty buffer, which
  Neovim sends as "\n") is known only from the client's word (DocumentStore.set_final_newline);
  with `lineCount`, also right after a `didOpen` whose text does not tell (a 'noeol' buffer
  whose last line is empty is sent as if it had a final newline).
- `with_file_bom`: without the client's word, the buffer's BOM is its file's.
- `saved_text`: what a save left on disk, as the text a buffer shows, so a save that changed
  the text (format on save, trimmed whitespace: editor_applier.py) is told, not hidden.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import stat
from typing import Any

from lsp_server.engine.text import Snapshot
from lsp_server.lsp.documents import Document, DocumentStore

log = logging.getLogger(__name__)

# Client -> server notification: how an open document will be saved (editor_clients/PROTOCOL.md).
DOCUMENT_FORMAT = "agentEdit/documentFormat"


def declare(store: DocumentStore, params: Any) -> Document | None:
    """`agentEdit/documentFormat` {uri, eol?, bom?, finalNewline?}: how the client will save
    an open document. Anything malformed is ignored, as a notification has no answer to carry
    an error. The document, if its text changed (a final line break gained or lost)."""
    # pygls hands an unknown method's params over as a namedtuple (any JSON value may come).
    fields: dict[str, Any] = {}
    if isinstance(params, dict):
        fields = params
    elif hasattr(params, "_asdict"):
        fields = params._asdict()
    uri = fields.get("uri")
    doc = store.get(uri) if isinstance(uri, str) else None
    if doc is None:
        log.warning("agentEdit/documentFormat for a document that is not open: %r", uri)
        return None
    eol, bom = fields.get("eol"), fields.get("bom")
    doc.eol = eol if eol in ("lf", "crlf", "cr") else None
    doc.bom = bom if isinstance(bom, bool) else None
    final = fields.get("finalNewline")
    count = fields.get("lineCount")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        count = None
    if isinstance(final, bool) and store.set_final_newline(doc, final, count):
        return doc
    return None


def with_file_bom(doc: Document, snap: Snapshot, path: str) -> Snapshot:
    """`snap` of open `doc`, with its file's BOM when the client did not say (VS Code, Neovim's
    'bomb' hide it from the text they send and write it back when they save). Recorded as the
    edit's, so an undo on disk keeps it."""
    if doc.bom is None and _disk_bom(path):
        return dataclasses.replace(snap, bom=True)
    return snap


def saved_text(path: str, cap: int, eol: str | None) -> tuple[str | None, str]:
    """The text of the file at `path` as a buffer would show it (BOM left out; with a declared
    `eol`, its line breaks as LF, as Emacs shows them), or None and why it cannot be read as
    such (unreadable, over `cap` bytes, not UTF-8: saved in another encoding)."""
    try:
        # O_NOFOLLOW: `path` is the real path the policy resolved; a link found there now was
        # put there since (what it points at, maybe outside the workspace, is not shown).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as exc:
        return None, f"it cannot be read ({exc.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, "it is not a regular file"
        chunks, size = [], 0
        while size <= cap and (chunk := os.read(fd, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        return None, f"it cannot be read ({exc.strerror})"
    finally:
        os.close(fd)
    if size > cap:
        return None, f"it is over the {cap:,}-byte cap"
    data = b"".join(chunks)
    try:
        text = data[3:].decode() if data.startswith(b"\xef\xbb\xbf") else data.decode()
    except UnicodeDecodeError:
        return None, "it is not UTF-8 (saved in another encoding?)"
    breaks = {"crlf": "\r\n", "cr": "\r"}.get(eol or "")
    return (text.replace(breaks, "\n") if breaks else text), ""


def _disk_bom(path: str) -> bool:
    """Whether the regular file at `path` starts with a UTF-8 BOM (False if unreadable)."""
    try:
        # Non-blocking: a FIFO swapped in for the file must not freeze the server.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 3) == b"\xef\xbb\xbf"
    except OSError:
        return False
    finally:
        os.close(fd)
