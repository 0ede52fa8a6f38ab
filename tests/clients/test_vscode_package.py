"""The VS Code extension's manifest and packaging, checked without VS Code: the Language Model
Tools it declares, the commands it contributes, its thinness bar, and the offline `.vsix` packer."""

from __future__ import annotations

import importlib.util
import json
import re
import zipfile
from pathlib import Path
from xml.etree import ElementTree

from lsp_server.engine.policy import SETTING_KEYS, PathPolicy
from lsp_server.lsp.settings import Settings

REPO = Path(__file__).resolve().parents[2]
EXT = REPO / "editor_clients" / "vscode"
PKG = json.loads((EXT / "package.json").read_text())
VERBS = ["read", "replace", "applyPatch", "write", "history", "undo"]


def _source() -> str:
    return "\n".join(p.read_text() for p in sorted((EXT / "src").glob("*.ts")))


def test_language_model_tools_declared_for_every_action() -> None:
    tools = {t["name"]: t for t in PKG["contributes"]["languageModelTools"]}
    assert set(tools) == {f"agentEdit_{v}" for v in VERBS}
    for tool in tools.values():
        assert re.fullmatch(r"[\w-]+", tool["name"])
        assert len(tool["modelDescription"]) > 80, tool["name"]
        schema = tool["inputSchema"]
        assert schema["type"] == "object"
        assert set(schema.get("required", [])) <= set(schema["properties"])
    assert tools["agentEdit_replace"]["inputSchema"]["required"] == ["path", "oldText", "newText"]
    assert tools["agentEdit_applyPatch"]["inputSchema"]["required"] == ["patch"]
    assert tools["agentEdit_undo"]["inputSchema"]["required"] == ["editId"]
    # Every declared tool is registered by the same verb list in the source.
    assert "const VERBS = ['read', 'replace', 'applyPatch', 'write', 'history', 'undo'];" in (
        _source()
    )


def test_contributed_commands_are_registered_and_named_for_users() -> None:
    commands = {c["command"]: c for c in PKG["contributes"]["commands"]}
    titles = {f"{c['category']}: {c['title']}" for c in commands.values()}
    assert {"Agent Edit: Show History", "Agent Edit: Undo Last Edit"} <= titles
    source = _source()
    for command in commands:
        assert f"registerCommand('{command}'" in source, command
    # Server commands are registered by vscode-languageclient; the client must not clash.
    assert not set(commands) & {f"agentEdit.{v}" for v in VERBS}


def test_extension_stays_thin() -> None:
    # Finding and checking the server, the history view and applying a patch by hand are
    # presentation; every edit decision stays in the server.
    # (750 until requests.ts: telling a request never sent, which changed nothing, from one left
    # without an answer, which may have, is the client's own report, not an edit decision. 850
    # until the refusal of a delete over a dirty document: what VS Code itself does with such a
    # document, discard its text, only the client knows, as the Neovim plugin does for Neovim.)
    lines = sum(len(p.read_text().splitlines()) for p in (EXT / "src").glob("*.ts"))
    assert lines <= 860, f"{lines} lines of TypeScript outside tests"
    assert (EXT / "package-lock.json").is_file()
    deps = PKG["dependencies"]
    assert deps == {"vscode-languageclient": deps["vscode-languageclient"]}
    assert deps["vscode-languageclient"].startswith("11.")


def test_vsix_packer_writes_what_vscode_reads(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "package_vsix", EXT / "scripts" / "package_vsix.py"
    )
    assert spec and spec.loader
    packer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(packer)
    ext = tmp_path / "ext"
    (ext / "dist").mkdir(parents=True)
    (ext / "dist" / "extension.js").write_text("exports.activate = () => {};\n")
    (ext / "README.md").write_text("# x & y\n")
    pkg = {
        "name": "demo",
        "publisher": "me",
        "version": "1.2.3",
        "displayName": "Demo <&>",
        "engines": {"vscode": "^1.101.0"},
        "files": ["dist/extension.js"],
        "extensionDependencies": ["a.b"],
    }
    (ext / "package.json").write_text(json.dumps(pkg))
    out = packer.build(ext, tmp_path / "demo.vsix")
    with zipfile.ZipFile(out) as zf:
        names = set(zf.namelist())
        assert names == {
            "[Content_Types].xml",
            "extension.vsixmanifest",
            "extension/package.json",
            "extension/dist/extension.js",
            "extension/README.md",
        }
        ns = {"v": "http://schemas.microsoft.com/developer/vsx-schema/2011"}
        manifest = ElementTree.fromstring(zf.read("extension.vsixmanifest"))
        identity = manifest.find("v:Metadata/v:Identity", ns)
        assert identity is not None
        assert (identity.get("Id"), identity.get("Publisher"), identity.get("Version")) == (
            "demo",
            "me",
            "1.2.3",
        )
        assert manifest.findtext("v:Metadata/v:DisplayName", namespaces=ns) == "Demo <&>"
        ElementTree.fromstring(zf.read("[Content_Types].xml"))
    # Same sources, same bytes.
    assert packer.build(ext, tmp_path / "again.vsix").read_bytes() == out.read_bytes()


def _server_settings() -> dict[str, object]:
    """Every setting the server reads, with its default: `Settings` and the path policy."""
    defaults = Settings()
    out: dict[str, object] = {key: getattr(defaults, attr) for key, attr in Settings._NAMES.items()}
    policy = PathPolicy.from_settings(["/"]).describe()
    out.update({key: policy[key] for key in SETTING_KEYS})
    return out


def test_every_server_setting_is_declared_with_its_default() -> None:
    props = PKG["contributes"]["configuration"]["properties"]
    json_type = {bool: "boolean", int: "integer", list: "array", tuple: "array"}
    for key, default in _server_settings().items():
        prop = props.get(f"agentEdit.{key}")
        assert prop is not None, f"agentEdit.{key} is not declared in package.json"
        assert len(prop["description"]) > 30, key
        assert prop["type"] == json_type[type(default)], key
        # The client sends its defaults on every start: they must be the server's own.
        assert prop["default"] == (list(default) if isinstance(default, tuple) else default), key
    # Client-only settings are the only others.
    server = {f"agentEdit.{k}" for k in _server_settings()}
    client_only = {"agentEdit.server.python", "agentEdit.server.command"}
    client_only |= {"agentEdit.tools.diagnosticsWaitMs", "agentEdit.trace.server"}
    assert set(props) == server | client_only


def test_settings_a_workspace_could_widen_are_machine_scoped() -> None:
    # The server is looked for in the workspace's .venv and run: never in an untrusted folder.
    assert PKG["capabilities"]["untrustedWorkspaces"]["supported"] is False
    props = PKG["contributes"]["configuration"]["properties"]
    # A cloned repository's .vscode/settings.json must not loosen the path policy or pick the
    # program that runs.
    for key in ("deny", "allow", "defaultDeny", "maxFileBytes", "server.python", "server.command"):
        assert props[f"agentEdit.{key}"].get("scope") == "machine", key


def test_history_view_has_its_own_container_and_an_empty_state() -> None:
    contributes = PKG["contributes"]
    (container,) = contributes["viewsContainers"]["activitybar"]
    assert (EXT / container["icon"]).is_file()
    assert [v["id"] for v in contributes["views"][container["id"]]] == ["agentEditHistory"]
    (welcome,) = contributes["viewsWelcome"]
    assert welcome["view"] == "agentEditHistory"
    assert "command:agentEdit.applyPatchFromClipboard" in welcome["contents"]
    for name in PKG["files"]:
        if not name.startswith("dist/"):
            assert (EXT / name).is_file(), name
