"""The clients and docs hold the contract as lsp_server.contract exports it, with no drift.

package.json's Language Model Tools, the Neovim help and Lua comments, and the README's table are
generated from the contract (`python -m lsp_server.contract --write`); each test here fails on any
difference and names the file and the first lines that differ.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import pytest

from lsp_server import contract
from lsp_server.contract.export import RENDERERS, VSCODE_NAMES
from lsp_server.engine.policy import SETTING_KEYS
from lsp_server.lsp.settings import Settings

REPO = Path(__file__).resolve().parents[2]


def _first_difference(now: str, wanted: str) -> str:
    diff = difflib.unified_diff(
        now.splitlines(), wanted.splitlines(), "in the file", "from the contract", lineterm=""
    )
    return "\n".join(list(diff)[:40])


@pytest.mark.parametrize("rel", sorted(RENDERERS))
def test_generated_file_equals_the_contract(rel: str) -> None:
    path = REPO / rel
    now = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        wanted = RENDERERS[rel](now)
    except ValueError as exc:
        pytest.fail(f"{rel}: {exc}")
    assert now == wanted, (
        f"{rel} drifted from lsp_server/contract; run `python -m lsp_server.contract --write`:\n"
        + _first_difference(now, wanted)
    )


def test_vscode_tool_schemas_are_the_exported_schemas() -> None:
    # The bar of issue 15, said directly: each tool's inputSchema is the exported schema.
    package = json.loads((REPO / "editor_clients/vscode/package.json").read_text())
    tools = {t["name"]: t for t in package["contributes"]["languageModelTools"]}
    assert set(tools) == set(VSCODE_NAMES.values())
    for name, tool_name in VSCODE_NAMES.items():
        exported = contract.schema(name, VSCODE_NAMES)
        del exported["$schema"]
        assert tools[tool_name]["inputSchema"] == exported, tool_name
        assert tools[tool_name]["modelDescription"] == contract.describe(name, VSCODE_NAMES)


def test_neovim_docs_name_every_argument() -> None:
    help_text = (REPO / "editor_clients/neovim/doc/agent_edit.txt").read_text()
    init = (REPO / "editor_clients/neovim/lua/agent_edit/init.lua").read_text()
    for name in contract.ACTIONS:
        fields = contract.field_names(name)
        documented = re.search(rf"^--- `agentEdit\.{name} \{{([^}}]*)\}}`$", init, re.M)
        assert documented, f"init.lua has no `agentEdit.{name} {{...}}` comment"
        assert [f.rstrip("?") for f in documented.group(1).split(", ")] == fields
        lua = re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), name)
        signature = re.search(rf'require\("agent_edit"\)\.{lua}\(\{{ (.*?) \}}\)', help_text, re.S)
        assert signature, f"agent_edit.txt has no signature of {lua}"
        listed = [f.strip().rstrip("?") for f in signature.group(1).split(",")]
        assert listed == fields, lua


def test_readme_table_lists_every_argument() -> None:
    readme = (REPO / "README.md").read_text()
    for name, action in contract.ACTIONS.items():
        row = re.search(rf"^\| `{re.escape(action.command)}` \| (.*?) \|", readme, re.M)
        assert row, f"README has no row for {action.command}"
        listed = re.findall(r"(?:^|, )`(\w+)\??`", row.group(1))
        assert listed == contract.field_names(name), action.command


def test_protocol_md_names_every_custom_method_and_capability_used() -> None:
    protocol = (REPO / "editor_clients/PROTOCOL.md").read_text()
    sources = [*(REPO / "lsp_server").rglob("*.py"), *(REPO / "editor_clients").rglob("*.ts")]
    sources += [*(REPO / "editor_clients").rglob("*.lua"), *(REPO / "editor_clients").rglob("*.el")]
    methods = {m for p in sources for m in re.findall(r"agentEdit/\w+", p.read_text())}
    assert methods >= {"agentEdit/historyChanged", "agentEdit/saveDocuments"}
    for method in sorted(methods):
        assert f"`{method}`" in protocol, f"PROTOCOL.md does not describe {method}"
    for capability in ("resourceOperations", "failureHandling", "refreshSupport", "clientInfo"):
        assert capability in protocol
    # the settings a client may send are the server's
    for key in [*Settings._NAMES, *SETTING_KEYS]:
        assert f"`{key}`" in protocol, key


def test_every_client_says_nothing_changed_for_the_same_codes() -> None:
    """A client tells a person "nothing was changed" only after the codes the server means so
    by (errors.NOTHING_CHANGED): the Neovim plugin's table and the VS Code extension's list."""
    from lsp_server.engine.errors import NOTHING_CHANGED

    want = {str(c) for c in NOTHING_CHANGED}
    init = (REPO / "editor_clients/neovim/lua/agent_edit/init.lua").read_text()
    table = re.search(r"^local NOTHING_CHANGED = \{(.*?)^\}", init, re.M | re.S)
    assert table, "init.lua has no NOTHING_CHANGED table"
    assert set(re.findall(r"^\s*([A-Z_]+) = true,", table.group(1), re.M)) == want
    patch = (REPO / "editor_clients/vscode/src/patch.ts").read_text()
    listed = re.search(r"const NOTHING_CHANGED = new Set\(\[(.*?)\]\)", patch, re.S)
    assert listed, "patch.ts has no NOTHING_CHANGED set"
    assert set(re.findall(r"'([A-Z_]+)'", listed.group(1))) == want
