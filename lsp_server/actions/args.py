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

__all__ = ["InvalidArguments", "parse"]


def parse(name: str, raw: Any) -> dict[str, Any]:
    """The validated argument object of action `name`; `raw` is the object itself, or the list
    of `workspace/executeCommand` arguments (which must hold exactly that one object)."""
    given = tuple(raw) if isinstance(raw, list | tuple) else (raw,)
    return arguments.parse(f"agentEdit.{name}", given)
