"""Validation of an action's arguments (every front's): malformed requests are `InvalidArguments`.

Each command takes one JSON object, checked against the action's declaration in
`lsp_server.contract` (the one source of the exported schemas too): types strictly (a number is
not a path, `true` is not a number), unknown fields refused, so an agent's typo is reported
instead of ignored. These are protocol errors, unlike domain failures, which are result
objects: the LSP front answers JSON-RPC -32602 InvalidParams, the CLI a usage error, the MCP
server an error result. Transport-neutral: no pygls here. Text no file can hold (a lone
surrogate anywhere, a NUL in content) is such a domain failure: INVALID_ARGUMENT naming the
argument and the position.

The checks read `FIELDS`, each action's arguments as plain `Field`s, generated from the contract's
declarations (the block at the end of this module: `python -m lsp_server.contract --write`
rewrites it, `--check` and tests/clients/test_contract_drift.py fail while it differs), and the
contract's own `parse` runs these same checks before it builds its typed instance. So a request,
and the CLI's option parser, need none of the declarations (their dataclasses, `typing`'s
evaluation of their annotations, the schemas). bench/bench_startup.py --instructions --rounds 2,
the contract (main) -> this table (5b54f77): a small `agent-edit apply-patch` 303.0 -> 270.2 M
instructions past interpreter start (-11%), 114 -> 109 modules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from lsp_server.engine import errors

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "FIELDS",
    "MAX_STRING",
    "ContractError",
    "Field",
    "InvalidArguments",
    "check_object",
    "check_text",
    "invalid",
    "parse",
    "parse_typed",
]

# A generous cap: whole-file writes of the largest editable file (10 MiB) plus JSON overhead.
MAX_STRING = 64 * 1024 * 1024
SAFE_INT = 2**53


class InvalidArguments(ValueError):
    """A malformed request: not an object, an unknown field, a wrong type (each front maps it).
    `argument` is the field at fault (None for the object itself): the fronts that answer with
    a refusal put it in `details.argument`, which agents rely on (never guessed from `message`)."""

    def __init__(self, message: str, argument: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.argument = argument


def invalid(message: str, argument: str | None = None) -> InvalidArguments:
    return InvalidArguments(message, argument)


class ContractError(ValueError):
    """A malformed request: `argument` is the field at fault (None for the object itself) and
    `reason` one of NOT_AN_OBJECT, UNKNOWN_FIELD, MISSING, TYPE, TOO_LONG, OUT_OF_RANGE, CHOICE."""

    def __init__(self, message: str, argument: str | None, reason: str) -> None:
        super().__init__(message)
        self.message = message
        self.argument = argument
        self.reason = reason


@dataclass(frozen=True)
class Field:
    """One argument as the checks read it (lsp_server/contract/spec.py derives it from a field's
    declaration)."""

    attr: str  # the Python name (`old_text`)
    name: str  # the JSON name (`oldText`)
    json: str  # string, integer, boolean, enum (of strings), object or map (of objects)
    required: bool = False
    choices: tuple[str, ...] = ()  # of an enum
    content: bool = False  # the text may become file content (no NUL then)
    inner: tuple[Field, ...] = ()  # the fields of an object, or of a map's values
    needs_one_of: str = ""  # of an object (or a map's values): the message when none is given


def parse_typed(command: str, args: tuple[Any, ...]) -> tuple[dict[str, Any], Any]:
    """The argument object of `command` as sent and as its typed contract instance."""
    # Here, not at the top: only callers of the typed instance need the declarations.
    from lsp_server import contract

    raw = parse(command, args)
    return raw, contract.parse(command, raw)


def parse(command: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """The validated argument object of `command` (as sent), or InvalidArguments saying what
    is wrong."""
    label, fields = FIELDS[command.removeprefix("agentEdit.")]
    if len(args) != 1 or not isinstance(args[0], dict):
        raise invalid(
            f"{command} takes exactly one argument, a JSON object with fields "
            f"{', '.join(f.name for f in fields)}"
        )
    try:
        check_object(fields, args[0], label)
    except ContractError as exc:
        raise invalid(exc.message, exc.argument) from None
    return args[0]


# -- the checks --------------------------------------------------------------------------------

_TYPE_NAMES = {
    "string": "a string",
    "enum": "a string",
    "integer": "an integer",
    "boolean": "true or false",
    "object": "an object",
    "map": "an object",
}


def _right_type(f: Field, value: Any) -> bool:
    if f.json in ("string", "enum"):
        return isinstance(value, str)
    if f.json == "integer":
        return isinstance(value, int) and not isinstance(value, bool)  # JSON true is no number
    if f.json == "boolean":
        return isinstance(value, bool)
    return isinstance(value, dict)


def _check_value(where: str, value: Any, f: Field) -> None:
    """Type, transport limits, text no file can hold, enum: in that order, as always."""
    if not _right_type(f, value):
        raise ContractError(
            f"{where} must be {_TYPE_NAMES[f.json]}, got {type(value).__name__}",
            where,
            "TYPE",
        )
    if isinstance(value, str):
        if len(value) > MAX_STRING:
            raise ContractError(
                f"{where} is {len(value):,} characters, over the {MAX_STRING:,} limit",
                where,
                "TOO_LONG",
            )
        check_text(where, value, f.content)
        if f.choices and value not in f.choices:
            raise ContractError(
                f"{where} must be one of {', '.join(f.choices)}, got {value!r}",
                where,
                "CHOICE",
            )
    elif isinstance(value, int) and not isinstance(value, bool):
        if not -SAFE_INT < value < SAFE_INT:
            raise ContractError(f"{where} is out of range", where, "OUT_OF_RANGE")


def _unknown(raw: dict[str, Any], fields: tuple[Field, ...]) -> list[str]:
    known = {f.name for f in fields}
    return sorted(k for k in raw if k not in known)


def _nested(where: str, raw: dict[str, Any], outer: Field) -> dict[str, Any]:
    fields = outer.inner
    unknown = _unknown(raw, fields)
    if unknown:
        raise ContractError(
            f"{where} has no field {', '.join(map(repr, unknown))}; "
            f"use {' or '.join(f.name for f in fields)}",
            where,
            "UNKNOWN_FIELD",
        )
    if outer.needs_one_of and all(raw.get(f.name) is None for f in fields):
        raise ContractError(f"{where} needs {outer.needs_one_of}", where, "MISSING")
    values: dict[str, Any] = {}
    for f in fields:
        value = raw.get(f.name)
        if value is not None:
            _check_value(f"{where}.{f.name}", value, f)
            values[f.attr] = value
    return values


def _deep(f: Field, value: dict[str, Any]) -> Any:
    if f.json == "object":
        return _nested(f.name, value, f)
    out = {}
    for key, token in value.items():
        check_text(f.name, key, False)
        where = f"{f.name}[{key!r}]"
        if not isinstance(token, dict):
            names = " or ".join(i.name for i in f.inner)
            raise ContractError(f"{where} must be an object with {names}", where, "TYPE")
        out[key] = _nested(where, token, f)
    return out


def check_object(fields: tuple[Field, ...], raw: Any, label: str) -> dict[str, Any]:
    """The values `raw` (a decoded JSON object) gives `fields`, by Python name (an object's as
    such a dict too, a map's as a dict of them), or ContractError saying what is wrong.

    The order of the checks is part of the contract (it decides which of two faults is named,
    and whether a request is malformed or refused): unknown fields, then each field in
    declaration order, then what is inside the object-valued fields.
    """
    if not isinstance(raw, dict):
        raise ContractError(
            f"{label} takes one JSON object with fields {', '.join(f.name for f in fields)}",
            None,
            "NOT_AN_OBJECT",
        )
    unknown = _unknown(raw, fields)
    if unknown:
        raise ContractError(
            f"{label} has no field {', '.join(map(repr, unknown))}; "
            f"its fields are {', '.join(f.name for f in fields)}",
            unknown[0],
            "UNKNOWN_FIELD",
        )
    values: dict[str, Any] = {}
    for f in fields:
        value = raw.get(f.name)
        if value is None:
            if f.required:
                raise ContractError(f"{label} needs the field {f.name!r}", f.name, "MISSING")
            continue
        _check_value(f.name, value, f)
        values[f.attr] = value
    for f in fields:
        if f.attr in values and f.json in ("object", "map"):
            values[f.attr] = _deep(f, values[f.attr])
    return values


# -- text no file can hold ---------------------------------------------------------------------
# Such a request is well formed, so it is not a protocol error: it is refused as
# INVALID_ARGUMENT (a result the agent reads) naming the argument and the position.

# JSON turns an escaped surrogate pair into one character, so any surrogate left is a lone one:
# it has no UTF-8 form, and editors would save it as U+FFFD while the result said ok. Compiled
# on the first text that is not ASCII (most are: an ASCII-only run never compiles it);
# bench/bench_startup.py --instructions --rounds 3, 8ebcad6 -> this: 176.8 -> 174.1 M past start.
_SURROGATE = "[\ud800-\udfff]"


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
        m = re.search(_SURROGATE, value)  # re's own cache keeps the compiled pattern
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


# -- generated ---------------------------------------------------------------------------------
# Each action: (its command, its fields in declaration order), from lsp_server/contract.
# fmt: off
# BEGIN FIELDS: generated by `python -m lsp_server.contract --write`; do not edit
FIELDS: dict[str, tuple[str, tuple[Field, ...]]] = {
    'read': ('agentEdit.read', (
        Field('path', 'path', 'string', required=True),
        Field('start_line', 'startLine', 'integer'),
        Field('end_line', 'endLine', 'integer'),
        Field('line_numbers', 'lineNumbers', 'boolean'),
    )),
    'replace': ('agentEdit.replace', (
        Field('path', 'path', 'string', required=True),
        Field('old_text', 'oldText', 'string', required=True, content=True),
        Field('new_text', 'newText', 'string', required=True, content=True),
        Field('replace_all', 'replaceAll', 'boolean'),
        Field(
            'expect', 'expect', 'object',
            inner=(
                Field('version', 'version', 'integer'),
                Field('sha256', 'sha256', 'string'),
            ),
            needs_one_of='version (a buffer version) or sha256 (from agentEdit.read)',
        ),
        Field('dry_run', 'dryRun', 'boolean'),
        Field('match', 'match', 'enum', choices=('exact', 'lenient')),
    )),
    'applyPatch': ('agentEdit.applyPatch', (
        Field('patch', 'patch', 'string', required=True, content=True),
        Field(
            'expect', 'expect', 'map',
            inner=(
                Field('version', 'version', 'integer'),
                Field('sha256', 'sha256', 'string'),
            ),
            needs_one_of='version (a buffer version) or sha256 (from agentEdit.read)',
        ),
        Field('dry_run', 'dryRun', 'boolean'),
    )),
    'write': ('agentEdit.write', (
        Field('path', 'path', 'string', required=True),
        Field('text', 'text', 'string', required=True, content=True),
        Field(
            'expect', 'expect', 'object',
            inner=(
                Field('version', 'version', 'integer'),
                Field('sha256', 'sha256', 'string'),
            ),
            needs_one_of='version (a buffer version) or sha256 (from agentEdit.read)',
        ),
        Field('dry_run', 'dryRun', 'boolean'),
    )),
    'history': ('agentEdit.history', (
        Field('format', 'format', 'enum', choices=('json', 'diff')),
        Field('edit_id', 'editId', 'integer'),
        Field('limit', 'limit', 'integer'),
        Field('texts', 'texts', 'boolean'),
        Field('net_limit', 'netLimit', 'integer'),
    )),
    'undo': ('agentEdit.undo', (
        Field('edit_id', 'editId', 'integer', required=True),
        Field('dry_run', 'dryRun', 'boolean'),
    )),
}
# END FIELDS
# fmt: on
