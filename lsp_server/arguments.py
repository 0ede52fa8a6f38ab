"""Validation of an action's arguments (every front's): malformed requests are `InvalidArguments`.

Each command takes one JSON object. Types are checked strictly (a number is not a path, `true` is
not a number) and unknown fields are refused, so an agent's typo is reported instead of ignored.
These are protocol errors (the LSP front answers JSON-RPC -32602 InvalidParams, the CLI a usage
error), unlike domain failures, which are result objects. Transport-neutral: no pygls here.
Text no file can hold (a lone surrogate anywhere, a NUL in content) is such a domain failure:
INVALID_ARGUMENT naming the argument and the position.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from lsp_server.engine.errors import Code, EditError

# A generous cap: whole-file writes of the largest editable file (10 MiB) plus JSON overhead.
MAX_STRING = 64 * 1024 * 1024


@dataclass(frozen=True)
class Field:
    """One argument's accepted JSON types, and whether it must be given."""

    types: tuple[type, ...]
    required: bool = False


STR = (str,)
BOOL = (bool,)
INT = (int,)
OBJ = (dict,)

SCHEMAS: dict[str, dict[str, Field]] = {
    "agentEdit.read": {
        "path": Field(STR, True),
        "startLine": Field(INT),
        "endLine": Field(INT),
        "lineNumbers": Field(BOOL),
    },
    "agentEdit.replace": {
        "path": Field(STR, True),
        "oldText": Field(STR, True),
        "newText": Field(STR, True),
        "replaceAll": Field(BOOL),
        "expect": Field(OBJ),
        "dryRun": Field(BOOL),
        "match": Field(STR),
    },
    "agentEdit.write": {
        "path": Field(STR, True),
        "text": Field(STR, True),
        "expect": Field(OBJ),
        "dryRun": Field(BOOL),
    },
    "agentEdit.applyPatch": {
        "patch": Field(STR, True),
        "expect": Field(OBJ),
        "dryRun": Field(BOOL),
    },
    "agentEdit.history": {
        "format": Field(STR),
        "editId": Field(INT),
        "limit": Field(INT),
        "texts": Field(BOOL),
        "netLimit": Field(INT),
    },
    "agentEdit.undo": {
        "editId": Field(INT, True),
        "dryRun": Field(BOOL),
    },
}

EXPECT_FIELDS: dict[str, Field] = {"version": Field(INT), "sha256": Field(STR)}
CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("agentEdit.replace", "match"): ("exact", "lenient"),
    ("agentEdit.history", "format"): ("json", "diff"),
}


# Text that may become file content: a NUL in it would make the file binary (refused for reading,
# editing and undo alike), so the agent's own edit could no longer be read or undone.
CONTENT_FIELDS = frozenset({"oldText", "newText", "text", "patch"})
# JSON turns an escaped surrogate pair into one character, so any surrogate left is a lone one:
# it has no UTF-8 form, and editors would save it as U+FFFD while the result said ok.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _position(value: str, index: int) -> dict[str, int]:
    line = value.count("\n", 0, index)
    column = index - (value.rfind("\n", 0, index) + 1)
    # position: 0-based character index; line and column: 1-based, as an editor shows them.
    return {"position": index, "line": line + 1, "column": column + 1}


def check_text(where: str, value: str, content: bool) -> None:
    """Refuse text no file can hold: a lone surrogate anywhere, a NUL in file content."""
    if value.isascii():
        bad = value.find("\0") if content else -1
    else:
        m = _SURROGATE.search(value)
        if m is not None:
            at = _position(value, m.start())
            raise EditError(
                Code.INVALID_ARGUMENT,
                f"{where} holds a lone UTF-16 surrogate (U+{ord(m.group()):04X}) at character "
                f"{at['position']} (line {at['line']}, column {at['column']}); it has no UTF-8 "
                "form and no file can hold it.",
                f"Send {where} as valid Unicode: encode astral characters (emoji) as a full "
                "surrogate pair or as UTF-8.",
                {"argument": where, "reason": "LONE_SURROGATE", **at},
            )
        bad = value.find("\0") if content else -1
    if bad >= 0:
        at = _position(value, bad)
        raise EditError(
            Code.INVALID_ARGUMENT,
            f"{where} holds a NUL character at character {at['position']} (line {at['line']}, "
            f"column {at['column']}); a file with a NUL is binary, and agent-edit refuses to "
            "read, edit or undo binary files, so this edit could never be checked or undone.",
            f"Remove the NUL from {where}; write binary data with other tools.",
            {"argument": where, "reason": "NUL", **at},
        )


class InvalidArguments(ValueError):
    """A malformed request: not an object, an unknown field, a wrong type (each front maps it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def invalid(message: str) -> InvalidArguments:
    return InvalidArguments(message)


def _type_name(types: tuple[type, ...]) -> str:
    return {str: "a string", bool: "true or false", int: "an integer", dict: "an object"}[types[0]]


def _check_value(where: str, value: Any, spec: Field) -> None:
    ok = isinstance(value, spec.types)
    if spec.types == INT and isinstance(value, bool):
        ok = False  # JSON true is not a number
    if not ok:
        raise invalid(f"{where} must be {_type_name(spec.types)}, got {type(value).__name__}")
    if isinstance(value, str) and len(value) > MAX_STRING:
        raise invalid(f"{where} is {len(value):,} characters, over the {MAX_STRING:,} limit")
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**53) < value < 2**53:
        raise invalid(f"{where} is out of range")


def parse(command: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """The validated argument object of `command`, or InvalidArguments saying what is wrong."""
    schema = SCHEMAS[command]
    if len(args) != 1 or not isinstance(args[0], dict):
        raise invalid(
            f"{command} takes exactly one argument, a JSON object with fields {', '.join(schema)}"
        )
    obj: dict[str, Any] = args[0]
    unknown = sorted(set(obj) - set(schema))
    if unknown:
        raise invalid(
            f"{command} has no field {', '.join(map(repr, unknown))}; "
            f"its fields are {', '.join(schema)}"
        )
    for name, spec in schema.items():
        if name not in obj or obj[name] is None:
            if spec.required:
                raise invalid(f"{command} needs the field {name!r}")
            continue
        _check_value(name, obj[name], spec)
        if isinstance(obj[name], str):
            check_text(name, obj[name], name in CONTENT_FIELDS)
        choices = CHOICES.get((command, name))
        if choices and obj[name] not in choices:
            raise invalid(f"{name} must be one of {', '.join(choices)}, got {obj[name]!r}")
    expect = obj.get("expect")
    if expect is not None and command != "agentEdit.applyPatch":
        _check_expect("expect", expect)
    elif expect is not None:
        for path, token in expect.items():
            check_text("expect", path, False)
            if not isinstance(token, dict):
                raise invalid(f"expect[{path!r}] must be an object with version or sha256")
            _check_expect(f"expect[{path!r}]", token)
    return obj


def _check_expect(where: str, expect: dict[str, Any]) -> None:
    unknown = sorted(set(expect) - set(EXPECT_FIELDS))
    if unknown:
        raise invalid(
            f"{where} has no field {', '.join(map(repr, unknown))}; use version or sha256"
        )
    if expect.get("version") is None and expect.get("sha256") is None:
        raise invalid(f"{where} needs version (a buffer version) or sha256 (from agentEdit.read)")
    for name, spec in EXPECT_FIELDS.items():
        if expect.get(name) is not None:
            _check_value(f"{where}.{name}", expect[name], spec)
            if isinstance(expect[name], str):
                check_text(f"{where}.{name}", expect[name], False)
