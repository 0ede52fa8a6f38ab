"""One declaration, two readings: an argument class gives both its JSON Schema and its checks.

An action's arguments are a frozen dataclass; each field's annotation is its type, its default the
default, and `field(metadata=doc(...))` its description. `parse_object` checks a raw JSON object
against that declaration and builds the instance; `object_schema` writes the same declaration as
JSON Schema (draft 2020-12). Because both read the one class, the schema a client is given and
the checks the server makes cannot drift apart.

What the schema does not spell out, the checks still make, the same for every field: a string
holds at most MAX_STRING characters, an integer is a safe JSON integer (|n| < 2**53) written
without a fraction (`1.0` is refused, though JSON Schema calls it an integer), and a field sent
as `null` counts as not sent. Those are limits of the transport, not of an action.

JSON names are the Python names in camelCase (`old_text` is `oldText`). Malformed input (wrong
type, missing or unknown field, a value outside an enum) raises `ContractError`, which each front
turns into its protocol's error (LSP: InvalidParams). Text no file can hold is different: it is
a well-formed request that cannot be carried out, so it is a domain refusal (see `text.py`).
"""

from __future__ import annotations

import dataclasses
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Union, get_args, get_origin, get_type_hints

from lsp_server.arguments import MAX_STRING as MAX_STRING
from lsp_server.arguments import ContractError as ContractError
from lsp_server.arguments import Field, check_object

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def doc(text: str, *, content: bool = False) -> dict[str, Any]:
    """Field metadata: its description (`{@read}` names another action's tool, so each front
    can use its own tool names) and whether the text may become file content (no NUL then)."""
    return {"doc": text, "content": content}


class Nested:
    """Base of argument objects inside an action's arguments (`expect`)."""

    # The message when none of the fields is given, or "" when none is needed.
    NEEDS_ONE_OF: ClassVar[str] = ""
    DOC: ClassVar[str] = ""


@dataclass(frozen=True)
class Kind:
    """A field's JSON type: string, integer, boolean, enum (of strings), object or map."""

    json: Literal["string", "integer", "boolean", "enum", "object", "map"]
    choices: tuple[str, ...] = ()
    cls: type[Nested] | None = None  # the class of an object, or of a map's values


@dataclass(frozen=True)
class Slot:
    """One field as the contract reads it."""

    attr: str
    name: str
    kind: Kind
    required: bool
    default: Any
    doc: str
    content: bool


_PLAIN = {str: "string", int: "integer", bool: "boolean"}


def _kind(tp: Any) -> Kind:
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        rest = [a for a in get_args(tp) if a is not type(None)]
        if len(rest) != 1:
            raise TypeError(f"only `X | None` unions are part of the contract, not {tp}")
        return _kind(rest[0])
    if tp in _PLAIN:
        return Kind(_PLAIN[tp])  # type: ignore[arg-type]
    if origin is Literal:
        return Kind("enum", tuple(str(a) for a in get_args(tp)))
    if origin in (Mapping, dict):
        key, value = get_args(tp)
        if key is not str or not (isinstance(value, type) and issubclass(value, Nested)):
            raise TypeError(f"a map in the contract is Mapping[str, Nested], not {tp}")
        return Kind("map", cls=value)
    if isinstance(tp, type) and issubclass(tp, Nested):
        return Kind("object", cls=tp)
    raise TypeError(f"{tp} is not a type the contract can export")


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


# Per class, read once: evaluating the annotations on every request would cost each command.
_SLOTS: dict[type, tuple[Slot, ...]] = {}


def slots(cls: type) -> tuple[Slot, ...]:
    """The fields of an argument class, in declaration order (the order of the checks)."""
    known = _SLOTS.get(cls)
    if known is None:
        known = _SLOTS[cls] = _read_slots(cls)
    return known


def _read_slots(cls: type) -> tuple[Slot, ...]:
    hints = get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        has_default = f.default is not dataclasses.MISSING
        out.append(
            Slot(
                attr=f.name,
                name=camel(f.name),
                kind=_kind(hints[f.name]),
                required=not has_default,
                default=f.default if has_default else None,
                doc=str(f.metadata.get("doc", "")),
                content=bool(f.metadata.get("content", False)),
            )
        )
    return tuple(out)


# -- JSON Schema -------------------------------------------------------------------------------

_TOOL_REF = re.compile(r"\{@(\w+)\}")


def refer(text: str, names: Mapping[str, str]) -> str:
    """`text` with each `{@action}` replaced by that action's tool name in `names`."""
    return _TOOL_REF.sub(lambda m: names[m.group(1)], text)


def _kind_schema(kind: Kind, names: Mapping[str, str]) -> dict[str, Any]:
    if kind.json == "enum":
        return {"type": "string", "enum": list(kind.choices)}
    if kind.json == "object":
        assert kind.cls is not None
        return object_schema(kind.cls, names)
    if kind.json == "map":
        assert kind.cls is not None
        value = {**object_schema(kind.cls, names)}
        if kind.cls.DOC:
            value = {"type": "object", "description": refer(kind.cls.DOC, names), **value}
        return {"type": "object", "additionalProperties": value}
    return {"type": kind.json}


def field_schema(slot: Slot, names: Mapping[str, str]) -> dict[str, Any]:
    schema = _kind_schema(slot.kind, names)
    out: dict[str, Any] = {"type": schema.pop("type")}
    if slot.doc:
        out["description"] = refer(slot.doc, names)
    if slot.default is not None:
        out["default"] = slot.default
    out.update(schema)
    return out


def object_schema(cls: type, names: Mapping[str, str]) -> dict[str, Any]:
    """The JSON Schema of an argument class (without `$schema`: it may be nested)."""
    fields = slots(cls)
    out: dict[str, Any] = {"type": "object"}
    required = [s.name for s in fields if s.required]
    if required:
        out["required"] = required
    out["properties"] = {s.name: field_schema(s, names) for s in fields}
    out["additionalProperties"] = False
    if issubclass(cls, Nested) and cls.NEEDS_ONE_OF:
        # With additionalProperties false and nulls meaning "not sent", one property is one of
        # the fields.
        out["minProperties"] = 1
    return out


# -- the checks --------------------------------------------------------------------------------
# They are lsp_server/arguments.py's, on each class's `Field`s: every request is checked there
# without these declarations, and here before the typed instance is built.

_FIELDS: dict[type, tuple[Field, ...]] = {}


def fields_of(cls: type) -> tuple[Field, ...]:
    """The fields of an argument class as the checks read them (arguments.Field)."""
    known = _FIELDS.get(cls)
    if known is None:
        known = _FIELDS[cls] = tuple(_field(s) for s in slots(cls))
    return known


def _field(s: Slot) -> Field:
    inner = s.kind.cls
    return Field(
        attr=s.attr,
        name=s.name,
        json=s.kind.json,
        required=s.required,
        choices=s.kind.choices,
        content=s.content,
        inner=() if inner is None else fields_of(inner),
        needs_one_of="" if inner is None else inner.NEEDS_ONE_OF,
    )


def _build(cls: type, values: dict[str, Any]) -> Any:
    """The instance of `cls` from checked values (`check_object`'s, nested ones as dicts)."""
    for s in slots(cls):
        inner = s.kind.cls
        if inner is None or s.attr not in values:
            continue
        value = values[s.attr]
        if s.kind.json == "object":
            values[s.attr] = _build(inner, value)
        else:
            values[s.attr] = {k: _build(inner, v) for k, v in value.items()}
    return cls(**values)


def parse_object(cls: type, raw: Any, label: str) -> Any:
    """The instance of `cls` that `raw` (a decoded JSON object) describes, or ContractError
    (the checks and their order: arguments.check_object)."""
    return _build(cls, check_object(fields_of(cls), raw, label))


def to_json(instance: Any) -> dict[str, Any]:
    """The JSON object of an argument instance: its fields that are set, under their JSON names."""
    out: dict[str, Any] = {}
    cls: type = type(instance)
    for s in slots(cls):
        value = getattr(instance, s.attr)
        if value is None:
            continue
        if s.kind.json == "object":
            value = to_json(value)
        elif s.kind.json == "map":
            value = {k: to_json(v) for k, v in value.items()}
        out[s.name] = value
    return out
