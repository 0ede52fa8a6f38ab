"""Starting `agent-edit mcp` under the MCP SDK's own stdio client, with the test runtime and
state folders (so it finds the test's editor-like servers and nobody else's)."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from lsp_server.mcp.tools import BY_NAME
from tests import result_schemas
from tests.editor_client import REPO, RUNTIME_DIR, STATE_DIR


def mcp_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["AGENT_EDIT_STATE_DIR"] = STATE_DIR
    env.setdefault("AGENT_EDIT_RUNTIME_DIR", RUNTIME_DIR)
    return env


@asynccontextmanager
async def mcp_session(root: Path, errlog: Any = None) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lsp_server", "mcp", "--root", str(root)],
        env=mcp_env(),
        cwd=str(root),
    )
    kwargs = {"errlog": errlog} if errlog is not None else {}
    async with stdio_client(params, **kwargs) as (read, write), ClientSession(read, write) as s:
        await s.initialize()
        yield s


async def call(s: ClientSession, tool: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """(structuredContent, the text the model reads); isError must match ok."""
    res = await s.call_tool(tool, args)
    out = res.structured_content
    assert isinstance(out, dict), res
    assert res.is_error == (not out["ok"]), res
    if tool in BY_NAME:
        result_schemas.check(BY_NAME[tool].action, out)  # as `outputSchema` promises
    text = res.content[0].text  # type: ignore[union-attr]
    return out, text
