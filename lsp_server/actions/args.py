"""An action's arguments, checked: the one call every front makes (malformed: InvalidArguments).

The checks themselves are lsp_server/arguments.py's (the contract); fronts name actions the LSP
way ("read", "applyPatch", ...) and pass either the JSON object or LSP's argument list.
"""

from __future__ import annotations

from lsp_server import arguments
from lsp_server.arguments import InvalidArguments

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["InvalidArguments", "parse", "refusal_of"]


def parse(name: str, raw: Any) -> dict[str, Any]:
    """The validated argument object of action `name`; `raw` is the object itself, or the list
    of `workspace/executeCommand` arguments (which must hold exactly that one object)."""
    given = tuple(raw) if isinstance(raw, list | tuple) else (raw,)
    return arguments.parse(f"agentEdit.{name}", given)


def refusal_of(exc: InvalidArguments) -> dict[str, Any]:
    """A malformed call as the refusal the fronts that answer with a result send (the MCP server,
    the editor's endpoint): INVALID_ARGUMENT, `details.argument` the field at fault."""
    from lsp_server.engine.results import refusal

    return refusal(
        "INVALID_ARGUMENT",
        exc.message,
        "Fix the arguments (names and types as in the tool's schema) and call again.",
        argument=exc.argument,
    )
