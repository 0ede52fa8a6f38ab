"""The MCP server on stdio (the official SDK's low-level server: we build each result ourselves,
so a refusal reaches the model whole instead of the SDK's bare "Error executing tool").

stdout belongs to the MCP stream: logging goes to stderr.
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING, Any

from lsp_server import __version__
from lsp_server.engine.results import refusal
from lsp_server.mcp import deep, signals
from lsp_server.mcp.drain import Drain
from lsp_server.mcp.handshake import GONE, INSTRUCTIONS, NAME
from lsp_server.mcp.router import Router
from lsp_server.mcp.surrogates import Repaired, encodable
from lsp_server.mcp.tools import BY_NAME, TOOLS, input_schema, model_text

if TYPE_CHECKING:
    from lsp_server.mcp.handshake import Early

log = logging.getLogger(__name__)


def build(root: str) -> Any:
    import anyio
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
        if deep.MARKER in (params.arguments or {}):  # a call nested too deep to read
            result = deep.refusal(spec.name)
            return _result(result, model_text(spec, result))
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
        answer = _result(result, model_text(spec, result))
        # A signal held past an edit's commit point: the server stops once this is written.
        # (Cancelled, by the client or the end of the connection: no answer of ours follows.)
        signals.answered(ctx.request_id, anyio.current_effective_deadline() == float("-inf"))
        return answer

    def _result(result: dict[str, Any], text: str) -> types.CallToolResult:
        # A lone surrogate (a refused request in the history, a buffer) would end the server.
        result, text = encodable(result), encodable(text)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structured_content=result,
            is_error=not result.get("ok"),
        )

    return Server(
        NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


async def serve(root: str, early: Early | None = None) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    server = build(root)
    if early is None:
        streams = stdio_server()
    else:
        # The wire handshake.py took: its replay of what it read, then the rest (public API).
        stdin, stdout = early.sdk_stdin(), early.sdk_stdout()
        streams = stdio_server(anyio.wrap_file(stdin), anyio.wrap_file(stdout))
    drain = Drain()  # every request read is answered before the end of stdin is passed on
    async with streams as (read, write):
        await server.run(
            drain.reader(Repaired(read, write)),
            drain.writer(write),
            server.create_initialization_options(),
        )


def main(root: str, early: Early | None = None) -> int:
    """Serve until the client closes stdin; `early` is the wire handshake.py took (its
    `main` is the CLI's entry), None to let the SDK's transport take fd 0/1 itself."""
    import anyio

    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    signals.install()  # before anyio.run: SIGINT is ours, not asyncio's (mcp/signals.py)
    try:
        try:
            anyio.run(serve, root, early)
        except* BrokenPipeError:
            # The SDK's own stdout (no `early`): the client closed its end before an answer.
            # handshake.py's writer drops such answers instead; here the SDK's writer task
            # died on it, which ends the server: quietly, as for any client that leaves.
            log.warning(GONE)
    except KeyboardInterrupt:
        pass
    return 0
