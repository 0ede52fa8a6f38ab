"""What an agent may name: the checks on a path's string, made before any file is looked at.

Malformed names (empty, NUL, control or bidi characters, lone surrogates, over-long names or
paths, Windows streams and device names) are refused as `INVALID_ARGUMENT` or `DENIED`, never
"cleaned up" into some other file. `refuse` builds every refusal of the path policy: the rule in
`details.rule` and in the message, and never a hint at how to get around it.
"""

from __future__ import annotations

import re

from lsp_server.engine import errors
from lsp_server.engine.errors import Code, EditError

MAX_INPUT_CHARS = 8192  # longer "paths" are refused before any work is done on them
MAX_PATH_BYTES = 4095  # PATH_MAX - 1 on Linux
MAX_NAME_BYTES = 255  # NAME_MAX on Linux, macOS and NTFS
# DRIVE, WINDOWS_DEVICE and CONTROL are compiled on first use (`re`'s cache keeps them), not on
# import: a CLI run whose paths are all plain relative names never needs them (~0.8 ms).
DRIVE = r"^[A-Za-z]:"
WINDOWS_DEVICE = r"^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\..*)?$"
# Bidi embedding/override/isolate controls: a name using them displays as a different name
# ("Trojan Source"), so the user reviewing a diff would see something other than what changed.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
# C0 and C1 controls (Unicode category Cc), line and paragraph separators, bidi controls.
CONTROL = f"[\x00-\x1f\x7f-\x9f\u2028\u2029{_BIDI}]"


def parts(path: str) -> list[str]:
    return [p for p in path.replace("\\", "/").split("/") if p]


def show(given: str) -> str:
    return repr(given if len(given) <= 120 else given[:100] + "..." + given[-17:])


def refuse(code: Code, rule: str, given: str, why: str, argument: str = "path") -> EditError:
    hints = {
        Code.OUTSIDE_WORKSPACE: "Only files inside the workspace folders can be read or edited.",
        Code.DENIED: "This file is off limits to agent edits; leave it alone.",
    }
    hint = hints.get(code, f"Send `{argument}` as a workspace-relative or absolute file path.")
    message = f"{argument} {show(given)} {why} (path policy rule: {rule})."
    path = given[:1024]
    if code is Code.OUTSIDE_WORKSPACE:
        return errors.outside_workspace(message, hint, rule=rule, path=path, argument=argument)
    if code is Code.DENIED:
        return errors.denied(message, hint, rule=rule, path=path, argument=argument)
    # The path policy refuses with these three codes only.
    assert code is Code.INVALID_ARGUMENT, code
    return errors.invalid_argument(message, hint, rule=rule, path=path, argument=argument)


def check_string(s: str, given: str, argument: str) -> str:
    if len(s) > MAX_INPUT_CHARS:
        raise refuse(
            Code.INVALID_ARGUMENT,
            "path-too-long",
            given,
            f"is {len(s):,} characters long, more than any real path",
            argument,
        )
    if not s.strip():
        raise refuse(Code.INVALID_ARGUMENT, "empty-path", given, "is empty", argument)
    if "\0" in s:
        raise refuse(Code.INVALID_ARGUMENT, "nul-byte", given, "contains a NUL character", argument)
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise refuse(
            Code.INVALID_ARGUMENT,
            "invalid-unicode",
            given,
            "contains a lone surrogate, which no file name can hold",
            argument,
        ) from None
    bad = re.search(CONTROL, s)
    if bad:
        raise refuse(
            Code.INVALID_ARGUMENT,
            "control-character",
            given,
            f"contains the control character U+{ord(bad.group(0)):04X}, which would make the "
            "name display as something else in diffs and messages",
            argument,
        )
    return s


def check_lengths(s: str, given: str, argument: str) -> None:
    if len(s.encode("utf-8")) > MAX_PATH_BYTES:
        raise refuse(
            Code.INVALID_ARGUMENT,
            "path-too-long",
            given,
            f"is longer than {MAX_PATH_BYTES} bytes once resolved",
            argument,
        )
    for part in parts(s):
        if len(part.encode("utf-8")) > MAX_NAME_BYTES:
            raise refuse(
                Code.INVALID_ARGUMENT,
                "name-too-long",
                given,
                f"has a name longer than {MAX_NAME_BYTES} bytes",
                argument,
            )


def check_windows_names(s: str, given: str, argument: str) -> None:
    for part in parts(s)[1 if re.match(DRIVE, s) else 0 :]:
        if ":" in part:
            raise refuse(
                Code.INVALID_ARGUMENT,
                "windows-stream",
                given,
                "names an alternate data stream (':' in a name)",
                argument,
            )
        if re.match(WINDOWS_DEVICE, part.rstrip(". ").lower()):
            raise refuse(
                Code.DENIED,
                "windows-device-name",
                given,
                "names a Windows device, not a file",
                argument,
            )
