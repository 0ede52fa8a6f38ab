"""Text no file can hold: a lone surrogate anywhere, a NUL in what may become file content.

Such a request is well formed, so it is not a protocol error: it is refused as INVALID_ARGUMENT
(a result the agent reads) naming the argument and the position of the character.
"""

from __future__ import annotations

import re

from lsp_server.engine import errors

# JSON turns an escaped surrogate pair into one character, so any surrogate left is a lone one:
# it has no UTF-8 form, and editors would save it as U+FFFD while the result said ok.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _position(value: str, index: int) -> dict[str, int]:
    line = value.count("\n", 0, index)
    column = index - (value.rfind("\n", 0, index) + 1)
    # position: 0-based character index; line and column: 1-based, as an editor shows them.
    return {"position": index, "line": line + 1, "column": column + 1}


def check_text(where: str, value: str, content: bool) -> None:
    """Refuse text no file can hold: a lone surrogate anywhere, a NUL in file content.

    A NUL would make the file binary (refused for reading, editing and undo alike), so the
    agent's own edit could no longer be read or undone.
    """
    if not value.isascii():
        m = _SURROGATE.search(value)
        if m is not None:
            at = _position(value, m.start())
            raise errors.invalid_argument(
                f"{where} holds a lone UTF-16 surrogate (U+{ord(m.group()):04X}) at character "
                f"{at['position']} (line {at['line']}, column {at['column']}); it has no UTF-8 "
                "form and no file can hold it.",
                f"Send {where} as valid Unicode: encode astral characters (emoji) as a full "
                "surrogate pair or as UTF-8.",
                argument=where,
                reason="LONE_SURROGATE",
                **at,
            )
    bad = value.find("\0") if content else -1
    if bad >= 0:
        at = _position(value, bad)
        raise errors.invalid_argument(
            f"{where} holds a NUL character at character {at['position']} (line {at['line']}, "
            f"column {at['column']}); a file with a NUL is binary, and agent-edit refuses to "
            "read, edit or undo binary files, so this edit could never be checked or undone.",
            f"Remove the NUL from {where}; write binary data with other tools.",
            argument=where,
            reason="NUL",
            **at,
        )
