"""The MCP Inspector CLI (npm @modelcontextprotocol/inspector, installed by
.ci/setup-mcp-inspector.sh) against `agent-edit mcp`: tools/list and tools/call, asserted on its
JSON output and exit status. Skipped locally when it is not installed; fails in CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.mcp.mcp_helpers import mcp_env

DIR = Path(os.environ.get("AGENT_EDIT_MCP_INSPECTOR", "/opt/agent-edit-mcp-inspector"))
BIN = DIR / "inspector-2.12.0" / "node_modules" / ".bin" / "mcp-inspector"


@pytest.fixture
def inspector() -> Path:
    if not BIN.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{BIN} is missing: .ci/setup-mcp-inspector.sh installs it")
        pytest.skip("the MCP Inspector is not installed (.ci/setup-mcp-inspector.sh)")
    return BIN


def run(inspector: Path, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(inspector), "--cli", sys.executable, "-m", "lsp_server", "mcp", *args],
        capture_output=True,
        text=True,
        cwd=str(root),
        env=mcp_env(),
        timeout=120,
    )


def test_inspector_lists_and_calls_tools(inspector, tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    out = run(inspector, tmp_path, "--method", "tools/list")
    assert out.returncode == 0, out
    tools = {t["name"]: t for t in json.loads(out.stdout)["tools"]}
    assert set(tools) == {"read", "replace", "write", "apply_patch", "history", "undo"}
    assert tools["read"]["annotations"]["readOnlyHint"] is True
    assert tools["replace"]["annotations"]["destructiveHint"] is True
    assert tools["replace"]["inputSchema"]["required"] == ["path", "oldText", "newText"]

    args = json.dumps({"path": "a.py", "oldText": "x = 1", "newText": "x = 2"})
    out = run(
        inspector,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "replace",
        "--tool-args-json",
        args,
    )
    assert out.returncode == 0, out
    result = json.loads(out.stdout)
    assert result["isError"] is False
    assert result["structuredContent"]["ok"] is True
    assert result["structuredContent"]["via"] == "disk"
    assert "+x = 2" in result["content"][0]["text"]
    assert (tmp_path / "a.py").read_text() == "x = 2\n"

    # A refusal: isError (the Inspector exits 5) with the whole refusal as the text.
    out = run(
        inspector,
        tmp_path,
        "--method",
        "tools/call",
        "--tool-name",
        "replace",
        "--tool-args-json",
        args,
    )
    assert out.returncode == 5, out
    result = json.loads(out.stdout.split('\n{"error"')[0])
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("NO_MATCH: ") and "hint: " in text
    assert "Error executing tool" not in text
