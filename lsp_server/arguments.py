"""Validation of an action's arguments (every front's): malformed requests are `InvalidArguments`.

Each command takes one JSON object, checked against the action's declaration in
`lsp_server.contract` (the one source of the exported schemas too): types strictly (a number is
not a path, `true` is not a number), unknown fields refused, so an agent's typo is reported
instead of ignored. These are protocol errors, unlike domain failures, which are result
objects: the LSP front answers JSON-RPC -32602 InvalidParams, the CLI a usage error, the MCP
server an error result. Transport-neutral: no pygls here. Text no file can hold (a lone
surrogate anywhere, a NUL in content) is such a domain failure: INVALID_ARGUMENT naming the
argument and the position.
"""

from __future__ import annotations

from typing import Any

from lsp_server import contract
from lsp_server.contract import MAX_STRING, check_text

__all__ = ["MAX_STRING", "InvalidArguments", "check_text", "invalid", "parse", "parse_typed"]


class InvalidArguments(ValueError):
    """A malformed request: not an object, an unknown field, a wrong type (each front maps it)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def invalid(message: str) -> InvalidArguments:
    return InvalidArguments(message)


def parse_typed(command: str, args: tuple[Any, ...]) -> tuple[dict[str, Any], Any]:
    """The argument object of `command` as sent and as its typed contract instance."""
    if len(args) != 1 or not isinstance(args[0], dict):
        raise invalid(
            f"{command} takes exactly one argument, a JSON object with fields "
            f"{', '.join(contract.field_names(command))}"
        )
    try:
        typed = contract.parse(command, args[0])
    except contract.ContractError as exc:
        raise invalid(exc.message) from None
    return args[0], typed


def parse(command: str, args: tuple[Any, ...]) -> dict[str, Any]:
    """The validated argument object of `command` (as sent), or InvalidArguments saying what
    is wrong."""
    return parse_typed(command, args)[0]
