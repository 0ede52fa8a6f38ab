"""The MCP server on stdio (the official SDK's low-level server: we build each result ourselves,
so a refusal reaches the model whole instead of the SDK's bare "Error executing tool").

stdout belongs to the MCP stream: logging goes to stderr.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from lsp_server import __version__
from lsp_server.engine.results import refusal
from lsp_server.mcp.router import Router
from lsp_server.mcp.surrogates import Repaired, encodable
from lsp_server.mcp.tools import BY_NAME, TOOLS, input_schema, model_text

log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "agent-edit edits files safely. Read a file (read) before editing it. Use replace for a "
    "local change, apply_patch for several changes or files at once, write for a new file or a "
    "full rewrite. Edits are checked against the text the user sees (the editor's unsaved "
    "buffers when an editor runs agent-edit): a STALE refusal means the file changed since you "
    "read it: read it again. Every refusal says why and what to do; nothing is changed by a "
    "refused edit. history lists the edits, undo reverts one."
)


def build(root: str) -> Any:
    import mcp_types as types
    from mcp.server.lowlevel import Server

    router = Router(root)
    tools = [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=input_schema(spec.command),
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=not spec.read_only,
                idempotent_hint=spec.read_only,
                open_world_hint=False,
            ),
        )
        for spec in TOOLS
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        spec = BY_NAME.get(params.name)
        if spec is None:
            result = refusal(
                "INVALID_ARGUMENT",
                f"There is no tool {params.name!r}.",
                f"Use one of: {', '.join(BY_NAME)}.",
                argument="name",
            )
            return _result(result, f"INVALID_ARGUMENT: {result['message']} {result['hint']}")
        try:
            result = await router.call(spec.action, params.arguments or {})
        except Exception as exc:  # noqa: BLE001 - the model gets a reason, never a bare error
            log.exception("agent-edit mcp: %s failed", spec.name)
            result = refusal(
                "IO_ERROR",
                f"agent-edit failed unexpectedly ({type(exc).__name__}: {exc}); what changed, "
                "if anything, is in the history.",
                "Check the files with read and history before trying again.",
            )
        return _result(result, model_text(spec, result))

    def _result(result: dict[str, Any], text: str) -> types.CallToolResult:
        # A lone surrogate (a refused request in the history, a buffer) would end the server.
        result, text = encodable(result), encodable(text)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=result,
            is_error=not result.get("ok"),
        )

    return Server(
        "agent-edit",
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(root: str) -> None:
    from mcp.server.stdio import stdio_server

    server = build(root)
    async with stdio_server() as (read, write):
        await server.run(Repaired(read), write, server.create_initialization_options())


def main(root: str) -> int:
    import anyio

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    try:
        anyio.run(serve, root)
    except KeyboardInterrupt:
        pass
    return 0
