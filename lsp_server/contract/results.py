"""The shapes of the answers (product.md 2.1) as JSON Schema, generated from their classes.

The answers are the typed classes of engine/results.py; this reads them (field types, which
fields a JSON object may leave out, descriptions) and writes one schema per class, as spec.py
does for the arguments. So the answer a front sends (`results.wire`) and the schema a client is
given (the MCP server's `outputSchema`) come from one declaration.

A schema names the fields every answer has and leaves room for more: a front may add its own
(`via`, `recovered`, ...) without breaking a client that validates. A field left out when it is
None is optional; any other field is required, `null` allowed where its type allows None.
Codes are the enum of engine/errors.py's `Code`, defined there once.
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from lsp_server.engine.read_results import HistoryDiff, HistoryEntries, HistoryTexts, ReadResult
from lsp_server.engine.results import OMIT, EditResult, FileResult, Refusal, camel, declared

_PLAIN = {str: "string", int: "integer", bool: "boolean"}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if not isinstance(kind, str):
        raise TypeError(f"a result field that may be null needs a plain type, not {schema}")
    return {**schema, "type": [kind, "null"]}


def _type_schema(tp: Any) -> dict[str, Any]:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        rest = [a for a in get_args(tp) if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"only `X | None` unions are part of a result, not {tp}")
        return _nullable(_type_schema(rest[0]))
    if tp in _PLAIN:
        return {"type": _PLAIN[tp]}
    if origin is Literal:
        values = get_args(tp)
        if len(values) == 1 and isinstance(values[0], bool):
            return {"const": values[0]}
        if all(isinstance(v, str) for v in values):
            return {"type": "string", "enum": list(values)}
        raise TypeError(f"{tp} is not a literal a result can export")
    if origin in (list, tuple):
        args = [a for a in get_args(tp) if a is not Ellipsis]
        return {"type": "array", "items": _type_schema(args[0])}
    if origin is dict or tp is dict:
        return {"type": "object"}
    if isinstance(tp, type) and declared(tp):
        return object_schema(tp)
    raise TypeError(f"{tp} is not a type a result can export")


def object_schema(cls: type) -> dict[str, Any]:
    """The JSON Schema of a result class (`@result` in engine/results.py)."""
    # engine/results.py imports typing's names only for type checkers (the CLI's start-up):
    # its annotations are evaluated here with them.
    hints = get_type_hints(cls, localns={"Any": Any, "Literal": Literal})
    required: list[str] = []
    properties: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        name = camel(f.name)
        schema = _type_schema(hints[f.name])
        if f.metadata.get(OMIT):
            # Left out rather than null: the value, when it is there, is never null.
            kind = schema.get("type")
            if isinstance(kind, list):
                schema = {**schema, "type": kind[0]}
        else:
            required.append(name)
        choices = f.metadata.get("choices")
        if choices:
            schema = {**schema, "enum": list(choices)}
        if f.metadata.get("doc"):
            schema = {**schema, "description": f.metadata["doc"]}
        properties[name] = schema
    return {"type": "object", "required": required, "properties": properties}


REFUSAL: dict[str, Any] = object_schema(Refusal)
READ_OK: dict[str, Any] = object_schema(ReadResult)
FILE: dict[str, Any] = object_schema(FileResult)
EDIT_OK: dict[str, Any] = object_schema(EditResult)
HISTORY_OK: dict[str, Any] = {
    "anyOf": [object_schema(c) for c in (HistoryEntries, HistoryDiff, HistoryTexts)]
}

SUCCESS: dict[str, dict[str, Any]] = {
    "read": READ_OK,
    "replace": EDIT_OK,
    "write": EDIT_OK,
    "applyPatch": EDIT_OK,
    "undo": EDIT_OK,
    "history": HISTORY_OK,
}
