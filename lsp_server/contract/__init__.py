"""The request and result contract of the six actions, written once for every front.

`parse(name, raw)` checks a decoded JSON argument object and returns its typed, frozen instance
(`ReplaceArgs`, ...), raising `ContractError` for a malformed one (fronts make it their protocol's
error) and `EditError` INVALID_ARGUMENT for text no file can hold (a result). `schema(name)` and
`schemas()` export the same declarations as JSON Schema (draft 2020-12); `result_schema(name)`
is the shape of the answers. `python -m lsp_server.contract` prints them, and the VS Code
manifest, the Neovim help and the README are generated from them (see `export.py`).

No pygls, lsprotocol or mcp here: the LSP server, the CLI and the MCP server all read this.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lsp_server.arguments import check_text
from lsp_server.contract.actions import (
    ACTIONS,
    Action,
    ApplyPatchArgs,
    Expect,
    HistoryArgs,
    ReadArgs,
    ReplaceArgs,
    UndoArgs,
    WriteArgs,
)
from lsp_server.contract.spec import (
    MAX_STRING,
    SCHEMA_DIALECT,
    ContractError,
    object_schema,
    parse_object,
    refer,
    slots,
    to_json,
)

__all__ = [
    "ACTIONS",
    "MAX_STRING",
    "Action",
    "ApplyPatchArgs",
    "ContractError",
    "Expect",
    "HistoryArgs",
    "ReadArgs",
    "ReplaceArgs",
    "UndoArgs",
    "WriteArgs",
    "action",
    "check_text",
    "describe",
    "field_names",
    "lsp_names",
    "parse",
    "result_schema",
    "result_schemas",
    "schema",
    "schemas",
    "to_json",
]


def action(name: str) -> Action:
    """The action called `name` ("replace") or `agentEdit.<name>`; KeyError for any other."""
    return ACTIONS[name.removeprefix("agentEdit.")]


def lsp_names() -> dict[str, str]:
    """Each action's tool name as the LSP server knows it: its command, `agentEdit.<name>`."""
    return {name: a.command for name, a in ACTIONS.items()}


def field_names(name: str) -> list[str]:
    """The JSON names of an action's arguments, in declaration order."""
    return [s.name for s in slots(action(name).arguments)]


def parse(name: str, raw: Any) -> Any:
    """The typed arguments of action `name` that `raw` describes (see the module docstring)."""
    a = action(name)
    return parse_object(a.arguments, raw, a.command)


def schema(name: str, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The JSON Schema of action `name`'s argument object. `names` maps each action to the tool
    name the descriptions should use for it (default: the LSP commands). The words for the
    action itself are `action(name).description` (with `describe`)."""
    body = object_schema(action(name).arguments, names or lsp_names())
    return {"$schema": SCHEMA_DIALECT, **body}


def describe(name: str, names: Mapping[str, str] | None = None) -> str:
    """The action's description for a model, naming other actions by their tool names."""
    return refer(action(name).description, names or lsp_names())


def schemas(names: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Every action's argument schema, by action name."""
    return {name: schema(name, names) for name in ACTIONS}


def result_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of every answer of action `name`: its success or the refusal (generated
    from engine/results.py's classes when first asked: a CLI run never needs them)."""
    from lsp_server.contract.results import REFUSAL, SUCCESS

    return {
        "$schema": SCHEMA_DIALECT,
        "type": "object",
        "oneOf": [SUCCESS[action(name).name], REFUSAL],
    }


def result_schemas() -> dict[str, dict[str, Any]]:
    return {name: result_schema(name) for name in ACTIONS}
