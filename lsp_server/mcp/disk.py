"""The headless side of `agent-edit mcp`: the language server's own command handlers, run in
this process with no editor attached.

With no buffers open, every file goes through the server's disk writer (atomic, journaled, the
workspace lock), and the history is the workspace's journal that the editor shows when it starts.
What the server would send an editor (notifications, diagnostics) goes nowhere. This module and
`lsp_server.lsp.endpoint.run_action` are the one adapter onto the command handlers (to be
replaced by the actions layer's `headless.open(root)` / `actions.run`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsp_server.lsp.endpoint import run_action
from lsp_server.lsp.session import Session

if TYPE_CHECKING:
    from lsp_server.lsp.server import AgentEditServer


class _Nowhere:
    """A writer for the LSP messages of a server with no client."""

    def write(self, data: bytes) -> None:
        pass

    def close(self) -> None:
        pass


def headless_server(root: str) -> AgentEditServer:
    """A language server for the workspace `root` with no editor: the disk is all it sees."""
    from lsprotocol import types as t
    from pygls.workspace import Workspace

    from lsp_server.lsp.server import create_server
    from lsp_server.lsp.settings import initial_policy
    from lsp_server.lsp.workspace_paths import WorkspacePaths

    server = create_server()
    server.protocol.set_writer(_Nowhere())  # type: ignore[arg-type]
    server.protocol.client_capabilities = t.ClientCapabilities()
    server.protocol._workspace = Workspace(None)
    policy, _problems = initial_policy([root], None)
    server.paths = WorkspacePaths(policy)
    server.open_history()
    return server


async def run(server: AgentEditServer, session: Session, action: str, args: Any) -> dict[str, Any]:
    return await run_action(server, session, action, args)
