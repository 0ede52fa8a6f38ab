"""What the clients and docs hold of the contract, generated from it: nothing kept by hand.

- VS Code: package.json's `contributes.languageModelTools` (names, descriptions, inputSchema);
- Neovim: the Lua API's signatures in doc/agent_edit.txt and init.lua, and the help file of every
  argument, doc/agent_edit_arguments.txt;
- the README's table of the actions, between its contract markers.

`render(repo)` gives each file's new text; `python -m lsp_server.contract --write` writes them and
tests/clients/test_contract_drift.py fails while any file differs from its rendering.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsp_server.arguments import Field
from lsp_server.contract import describe, result_schema, schema
from lsp_server.contract.actions import ACTIONS, Action
from lsp_server.contract.spec import Slot, fields_of, object_schema, refer, slots

# -- VS Code -----------------------------------------------------------------------------------

VSCODE_NAMES = {name: f"agentEdit_{name}" for name in ACTIONS}
# What only VS Code shows: its icon and the sentence for the user (the model reads the
# description, which is the contract's).
_VSCODE_UI = {
    "read": ("$(file)", "Read a file as the editor shows it (unsaved changes included)."),
    "replace": ("$(replace)", "Replace exact text in a file through the editor, version-checked."),
    "applyPatch": ("$(diff)", "Apply a multi-file patch through the editor, all or nothing."),
    "write": ("$(new-file)", "Create or overwrite a whole file through the editor."),
    "history": ("$(history)", "Show this session's agent edits and their diffs."),
    "undo": ("$(discard)", "Undo one agent edit if its lines are unchanged since."),
}


def vscode_tools() -> list[dict[str, Any]]:
    """The `languageModelTools` block of the VS Code extension's package.json."""
    out = []
    for name, action in ACTIONS.items():
        icon, user = _VSCODE_UI[name]
        out.append(
            {
                "name": VSCODE_NAMES[name],
                "toolReferenceName": f"agentEdit{name[:1].upper()}{name[1:]}",
                "displayName": f"Agent Edit: {action.title}",
                "icon": icon,
                "modelDescription": refer(action.description, VSCODE_NAMES),
                "userDescription": user,
                "inputSchema": object_schema(action.arguments, VSCODE_NAMES),
                "canBeReferencedInPrompt": True,
                "tags": ["agent-edit", "edit"],
            }
        )
    return out


def render_package_json(text: str) -> str:
    package = json.loads(text)
    package["contributes"]["languageModelTools"] = vscode_tools()
    return json.dumps(package, indent=2, ensure_ascii=False) + "\n"


# -- signatures (Neovim, README) ---------------------------------------------------------------


def fields(action: Action) -> list[str]:
    """`path`, `startLine?`, ...: the argument names, `?` marking the optional ones."""
    return [s.name + ("" if s.required else "?") for s in slots(action.arguments)]


LUA_NAMES = {name: re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), name) for name in ACTIONS}


def lua_signature(action: Action, width: int = 78) -> str:
    """`    require("agent_edit").read({ path, startLine? })`, wrapped to `width`."""
    head = f'    require("agent_edit").{LUA_NAMES[action.name]}({{ '
    lines = textwrap.wrap(
        ", ".join(fields(action)) + " })",
        width=width - len(head),
        break_long_words=False,
        break_on_hyphens=False,
    )
    return "\n".join([head + lines[0]] + [" " * len(head) + rest for rest in lines[1:]])


def lua_signatures() -> str:
    return "\n".join(lua_signature(a) for a in ACTIONS.values()) + "\n"


_HELP_SIGNATURES = re.compile(
    r'^    require\("agent_edit"\)\.read\(.*?^    require\("agent_edit"\)\.undo\([^\n]*\n',
    re.DOTALL | re.MULTILINE,
)


def render_neovim_help(text: str) -> str:
    """doc/agent_edit.txt with its block of Lua API signatures regenerated."""
    if not _HELP_SIGNATURES.search(text):
        raise ValueError('doc/agent_edit.txt has no block of require("agent_edit") signatures')
    return _HELP_SIGNATURES.sub(lambda _: lua_signatures(), text, count=1)


_LUA_COMMENT = re.compile(r"^--- `agentEdit\.(\w+) \{[^}\n]*\}`$", re.MULTILINE)


def render_init_lua(text: str) -> str:
    """init.lua with each API function's `--- \\`agentEdit.verb {args}\\`` comment regenerated."""

    def one(m: re.Match[str]) -> str:
        action = ACTIONS[m.group(1)]
        return f"--- `{action.command} {{{', '.join(fields(action))}}}`"

    return _LUA_COMMENT.sub(one, text)


def _type_words(slot: Slot) -> str:
    kind = slot.kind
    if kind.json == "enum":
        return " | ".join(f'"{c}"' for c in kind.choices)
    if kind.json == "object":
        return "table { " + ", ".join(f"{s.name}?" for s in slots(kind.cls or object)) + " }"
    if kind.json == "map":
        return "table { [path] = expect }"
    return {"string": "string", "integer": "integer", "boolean": "boolean"}[kind.json]


def neovim_arguments_help() -> str:
    """doc/agent_edit_arguments.txt: every argument of every Lua API function."""
    names = {n: f"agent_edit.{LUA_NAMES[n]}()" for n in ACTIONS}
    out = [
        "*agent_edit_arguments.txt*  Arguments of the agent_edit Lua API",
        "",
        "Generated from the server's contract by `python -m lsp_server.contract --write`;",
        "do not edit (tests/clients/test_contract_drift.py fails on any difference).",
        "Each function takes one table; `?` marks an optional field. See |agent_edit-api|.",
        "",
    ]
    for name, action in ACTIONS.items():
        tag = f"*agent_edit-{LUA_NAMES[name]}*"
        title = f"{LUA_NAMES[name]}()"
        out += ["=" * 78, title + " " * max(1, 78 - len(title) - len(tag)) + tag, ""]
        out += textwrap.wrap(refer(action.description, names), 78) + [""]
        for s in slots(action.arguments):
            head = f"  {s.name}{'' if s.required else '?'}  ({_type_words(s)}"
            head += f", default {json.dumps(s.default)})" if s.default is not None else ")"
            out.append(head)
            out += textwrap.wrap(
                refer(s.doc, names), 78, initial_indent="      ", subsequent_indent="      "
            )
        out.append("")
    out.append(" vim:tw=78:ts=8:ft=help:norl:")
    return "\n".join(out) + "\n"


# -- README ------------------------------------------------------------------------------------

README_BEGIN = (
    "<!-- contract: generated by `python -m lsp_server.contract --write` from "
    "lsp_server/contract; do not edit -->\n"
)
README_END = "<!-- /contract -->\n"


def _readme_kind(slot: Slot) -> str:
    if slot.kind.json == "enum":
        return " (" + "/".join(f"`{c}`" for c in slot.kind.choices) + ")"
    if slot.kind.json == "object":
        return " (" + " or ".join(f"`{{{s.name}}}`" for s in slots(slot.kind.cls or object)) + ")"
    if slot.kind.json == "map":
        return " (per path)"
    return ""


def readme_table() -> str:
    rows = ["| command | arguments | what it does |", "|---|---|---|"]
    for action in ACTIONS.values():
        args = ", ".join(
            f"`{s.name}{'' if s.required else '?'}`{_readme_kind(s)}"
            for s in slots(action.arguments)
        )
        rows.append(f"| `{action.command}` | {args} | {action.summary} |")
    return "\n".join(rows) + "\n"


def render_readme(text: str) -> str:
    start, end = text.find(README_BEGIN), text.find(README_END)
    if start < 0 or end < start:
        raise ValueError("README.md has no contract markers")
    return text[: start + len(README_BEGIN)] + readme_table() + text[end:]


# -- the argument checks' table ---------------------------------------------------------------

FIELDS_BEGIN = "# BEGIN FIELDS: generated by `python -m lsp_server.contract --write`; do not edit\n"
FIELDS_END = "# END FIELDS\n"


def _field_source(f: Field, indent: str) -> list[str]:
    """`f` as the Python source of its `Field(...)` call, in lines of at most 100 characters."""
    head = [repr(f.attr), repr(f.name), repr(f.json)]
    if f.required:
        head.append("required=True")
    if f.choices:
        head.append(f"choices={f.choices!r}")
    if f.content:
        head.append("content=True")
    one = f"{indent}Field({', '.join(head)}),"
    if not f.inner and len(one) <= 100:
        return [one]
    out = [f"{indent}Field(", f"{indent}    {', '.join(head)},"]
    if f.inner:
        out.append(f"{indent}    inner=(")
        for i in f.inner:
            out += _field_source(i, indent + "        ")
        out.append(f"{indent}    ),")
    if f.needs_one_of:
        out.append(f"{indent}    needs_one_of={f.needs_one_of!r},")
    return out + [f"{indent}),"]


def fields_table() -> str:
    """The block of lsp_server/arguments.py that its checks (and the CLI's options) read."""
    out = ["FIELDS: dict[str, tuple[str, tuple[Field, ...]]] = {"]
    for name, action in ACTIONS.items():
        out.append(f"    {name!r}: ({action.command!r}, (")
        for f in fields_of(action.arguments):
            out += _field_source(f, "        ")
        out.append("    )),")
    return "\n".join(out + ["}"]) + "\n"


def render_arguments(text: str) -> str:
    start, end = text.find(FIELDS_BEGIN), text.find(FIELDS_END)
    if start < 0 or end < start:
        raise ValueError("lsp_server/arguments.py has no FIELDS markers")
    return text[: start + len(FIELDS_BEGIN)] + fields_table() + text[end:]


# -- all of it ---------------------------------------------------------------------------------

RENDERERS: dict[str, Callable[[str], str]] = {
    "editor_clients/vscode/package.json": render_package_json,
    "editor_clients/neovim/doc/agent_edit.txt": render_neovim_help,
    "editor_clients/neovim/doc/agent_edit_arguments.txt": lambda _: neovim_arguments_help(),
    "editor_clients/neovim/lua/agent_edit/init.lua": render_init_lua,
    "README.md": render_readme,
    "lsp_server/arguments.py": render_arguments,
}


def render(repo: Path) -> dict[str, tuple[str, str]]:
    """For each generated file: (its text now, the text the contract gives it)."""
    out = {}
    for rel, renderer in RENDERERS.items():
        path = repo / rel
        now = path.read_text(encoding="utf-8") if path.exists() else ""
        try:
            out[rel] = (now, renderer(now))
        except ValueError as exc:
            raise ValueError(f"{rel}: {exc}") from None
    return out


def export() -> dict[str, Any]:
    """Everything `python -m lsp_server.contract` prints."""
    return {
        "actions": {
            name: {
                "command": a.command,
                "description": describe(name),
                "inputSchema": schema(name),
                "outputSchema": result_schema(name),
            }
            for name, a in ACTIONS.items()
        },
        "vscode": {"languageModelTools": vscode_tools()},
    }
