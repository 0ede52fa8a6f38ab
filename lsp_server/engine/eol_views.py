"""One file, two texts: its CRLF (or CR) lines as the disk holds them, and as Emacs shows them.

Emacs shows a file saved with CRLF (`buffer-file-coding-system` ...-dos) with LF line ends, and
its client declares the real ones (`Snapshot.declared_eol`). So the same content reaches the
engine in two shapes, depending on whether the buffer is open: `one\\ntwo\\n` from the buffer,
`one\\r\\ntwo\\r\\n` from the disk once it is closed (or before it was opened). What an agent saw
in one shape must still count when the file is seen in the other, or:

- a read of the open buffer, then the user closes it: every edit was refused `STALE`, "changed
  since it was read", over a file nobody had touched (the read's sha256 is the LF text's);
- an edit recorded in one shape could not be undone in the other: `CONFLICT` listing lines whose
  `expected` and `current` read the same (`TWO` and `TWO`), as only their line ends differed.

Only a file whose lines all end alike is taken for the other shape of the same content: a mixed
file is shown by Emacs as it is (a CR where there is one), so it has one shape only.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsp_server.engine.text import Snapshot, content, describe_eol, sha256_text, terminator

_BREAK = {"crlf": "\r\n", "cr": "\r"}


def shown_as_lf(snap: Snapshot) -> str | None:
    """The terminator the file of buffer `snap` has where its text shows `\\n` (Emacs shows a
    CRLF file with LF and its client declares `crlf`), else None. Not a buffer whose text
    carries its file's breaks (`shown_eol`: Neovim's 'fileformat' dos), even while it shows
    none (empty, one line): its undo was written with LF breaks, and Neovim's buffer then
    read "changed otherwise" (PARTIAL) though the undo had landed."""
    if snap.source != "buffer" or snap.declared_eol not in _BREAK or snap.has_cr:
        return None
    if snap.shown_eol is not None:
        return None
    return _BREAK[snap.declared_eol]


def uniform_break(text: str) -> str | None:
    """`\\r\\n` or `\\r` when every line of `text` ends so, else None (LF, mixed, one line)."""
    style = describe_eol(text)
    return _BREAK.get(style)


def lf_view_sha256(snap: Snapshot) -> str | None:
    """The sha256 Emacs's buffer of this content reports: its text with every CRLF (or CR) as
    LF, when all its lines end so (else None). A read of that buffer names this content."""
    brk = uniform_break(snap.text) if snap.has_cr else None
    if brk is None:
        return None
    return sha256_text(snap.text.replace(brk, "\n"))


def line_break_map(snap: Snapshot, recorded: Sequence[str]) -> tuple[str, str] | None:
    """(from, to): how the terminators of `recorded` lines (an edit's, from its history) become
    `snap`'s, when they are the same file in its other shape; None when nothing is to change.

    The lines were recorded from the disk (CRLF) and `snap` is Emacs's LF buffer of it, or they
    were recorded from that buffer (LF) and `snap` is the file on disk, all its lines CRLF. Every
    recorded line break must be the other shape's: lines with both are not the same file."""
    shown = shown_as_lf(snap)
    if shown is not None:
        old, new = shown, "\n"
    else:
        brk = uniform_break(snap.text) if snap.has_cr else None
        if brk is None:
            return None
        old, new = "\n", brk
    ends = {terminator(line) for line in recorded} - {""}
    return (old, new) if ends == {old} else None


def same_lines(snap: Snapshot, recorded: Sequence[str]) -> bool:
    """Whether `recorded` lines (what the agent's edits left, from its history) are `snap`'s
    in the file's other shape, line by line: each line break LF or the file's own, as the edits
    were made in the buffer or on the disk (a history may hold both)."""
    lines = snap.lines
    if len(lines) != len(recorded):
        return False
    shown = shown_as_lf(snap)
    brk = shown or (uniform_break(snap.text) if snap.has_cr else None)
    if brk is None:
        return False
    either = ("\n", brk)
    for have, had in zip(lines, recorded, strict=True):
        if have != had and not (
            terminator(had) in either
            and terminator(have) in either
            and content(have) == content(had)
        ):
            return False
    return True


def map_line_breaks(lines: Sequence[str], how: tuple[str, str]) -> tuple[str, ...]:
    """`lines` with each `how[0]` terminator as `how[1]` (see `line_break_map`)."""
    old, new = how
    return tuple(content(x) + new if terminator(x) == old else x for x in lines)
