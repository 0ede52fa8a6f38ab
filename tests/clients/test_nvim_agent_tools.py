"""The agent-edit tools for codecompanion.nvim and avante.nvim, in a real headless Neovim 0.11.

Neither plugin installs from a registry CI reaches, so the drivers call the tools exactly as each
plugin's own code does (tests/nvim/agent_plugins.lua reproduces the call sequence of
codecompanion's tool runner and avante's process_tool_use, with their sources cited there), with
the real agent-edit server behind them. Checked: the tool schemas equal the server's argument
schemas; an edit lands in the unsaved buffer, keeps the user's other unsaved text and does not
save it; refusals (STALE after typing, NO_MATCH, malformed arguments) reach the model's text
whole; faults (no answer, a throwing client, bytes that are not UTF-8, streaming input) end in one
clear result and no change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lsp_server import contract
from tests.neovim_runner import run_scenario

TOOL_SHORT_NAMES = ["read", "replace", "apply_patch", "write", "history", "undo"]


def first_json(text: str) -> dict[str, Any]:
    """The JSON object on the first line of a success text (the result without text/diff)."""
    value: dict[str, Any] = json.loads(text.split("\n", 1)[0])
    return value


def refusal_json(text: str) -> dict[str, Any]:
    """The whole result carried in a refusal text: its first line that is a JSON object."""
    for line in text.split("\n"):
        if line.startswith("{"):
            value: dict[str, Any] = json.loads(line)
            return value
    raise AssertionError(f"no result JSON in the model text:\n{text}")


def assert_whole_refusal(text: str, code: str) -> dict[str, Any]:
    """The model text names the code, the message and the hint, and carries the whole result."""
    result = refusal_json(text)
    assert result["ok"] is False and result["code"] == code, text
    assert text.startswith(f"{code}: {result['message']}\n"), text
    assert f"\nhint: {result['hint']}\n" in text, text
    assert "details" in result and "committed" in result, text
    return result


def expect_schema_ok(prop: dict[str, Any], want: dict[str, Any]) -> None:
    """The Lua expect schema names the contract's precondition fields with the same types."""
    assert set(prop["properties"]) == set(want["properties"])
    for name, field in want["properties"].items():
        assert prop["properties"][name]["type"] == field["type"], name


def test_tool_schemas_equal_the_servers_argument_schemas(tmp_path: Path) -> None:
    """The drift test: the ONE Lua spec table against the exported contract."""
    data = run_scenario("tool_specs", tmp_path)
    specs = {s["command"]: s for s in data["specs"]}
    commands = {f"agentEdit.{name}": name for name in contract.ACTIONS}
    assert set(specs) == set(commands), "a command without a tool, or a tool too many"
    assert [s["name"] for s in data["specs"]] == TOOL_SHORT_NAMES
    for command, name in commands.items():
        schema = contract.schema(name)
        params = specs[command]["parameters"]
        assert params["type"] == "object"
        assert set(params["properties"]) == set(schema["properties"]), command
        assert sorted(params.get("required") or []) == sorted(schema.get("required", [])), command
        for arg, want_prop in schema["properties"].items():
            prop = params["properties"][arg]
            want = {k: want_prop[k] for k in ("type", "enum") if k in want_prop}
            assert {k: prop.get(k) for k in want} == want, (command, arg)
            assert prop["description"], (command, arg)
            if arg == "expect" and command == "agentEdit.applyPatch":
                expect_schema_ok(prop["additionalProperties"], want_prop["additionalProperties"])
            elif arg == "expect":
                expect_schema_ok(prop, want_prop)
    edits = {s["name"] for s in data["specs"] if s["edits"]}
    assert edits == {"replace", "apply_patch", "write", "undo"}


def test_each_plugin_gets_the_one_spec_table(tmp_path: Path) -> None:
    data = run_scenario("tool_specs", tmp_path)
    assert data["setup_ran"] is True
    names = {"agent_edit_" + s["name"]: s for s in data["specs"]}
    # codecompanion: an OpenAI function schema per tool, named as its config key.
    assert set(data["codecompanion"]) == set(names)
    for name, tool in data["codecompanion"].items():
        spec = names[name]
        assert tool["tool_name"] == name
        assert tool["schema"]["type"] == "function"
        fn = tool["schema"]["function"]
        assert fn["name"] == name
        assert fn["description"] == spec["description"] == tool["description"]
        assert fn["parameters"] == spec["parameters"]
        assert tool["cmds"] == 1
        assert {"success", "error", "rejected", "cancelled", "prompt"} <= set(tool["outputs"])
    assert sorted(data["group"]["tools"]) == sorted(names)
    # avante: param.fields derived from the same schema, required first.
    assert set(data["avante"]) == set(names)
    for name, tool in data["avante"].items():
        spec = names[name]
        params = spec["parameters"]
        assert tool["description"] == spec["description"]
        assert tool["param"]["type"] == "table"
        fields = tool["param"]["fields"]
        assert {f["name"] for f in fields} == set(params["properties"])
        assert [f["name"] for f in fields if not f["optional"]] == params["required"]
        for f in fields:
            prop = params["properties"][f["name"]]
            assert f["type"] == prop["type"] and f["description"] == prop["description"]
            assert f.get("choices") == prop.get("enum")
            if prop["type"] == "object" and "properties" in prop:
                assert {g["name"] for g in f["fields"]} == set(prop["properties"])
        assert [r["name"] for r in tool["returns"]] == ["result", "error"]
        assert sorted(tool["param"].get("usage", {})) == sorted(params["required"])


def test_codecompanion_tools_edit_the_unsaved_buffer_and_report_refusals(tmp_path: Path) -> None:
    data = run_scenario("codecompanion_tools", tmp_path)
    assert data["modified_before"] is True
    for key in ("read", "replace", "stale", "no_match", "malformed", "with_null", "undo"):
        call = data[key]
        # Exactly one answer through output_cb, one message to the model.
        assert call["answers"] == 1 and call["outputs_added"] == 1, (key, call)
    read = data["read"]
    assert read["status"] == "success"
    summary = first_json(read["output"]["for_llm"])
    assert summary["source"] == "buffer" and summary["ok"] is True
    assert read["output"]["for_llm"].endswith("y = 2\n# typed by the user\n")

    replace = data["replace"]
    assert replace["status"] == "success"
    llm = replace["output"]["for_llm"]
    assert first_json(llm)["status"] == "applied"
    assert "\ndiff:\n" in llm and "-x = 1\n+x = 10\n" in llm
    assert replace["output"]["for_user"] == "agent_edit_replace app.py: applied (edit 1)"
    # Landed in the buffer beside the user's unsaved line; the file on disk is not written.
    after = data["after_replace"]
    assert after["lines"] == ["x = 10", "y = 2", "# typed by the user"]
    assert after["modified"] is True and after["disk"] == "x = 1\ny = 2\n"
    assert first_json(llm)["saved"] is False
    assert data["mark_after_replace"] == [2, 2], "the buffer was replaced, not edited"

    # Read, the user typed, then the edit computed from that read: STALE, whole, to the model.
    assert data["typed"] == ["x = 10  # user again", "y = 2", "# typed by the user"]
    stale = data["stale"]
    assert stale["status"] == "error"
    result = assert_whole_refusal(stale["output"]["for_llm"], "STALE")
    assert (
        result["details"]["expected"]["version"]
        == first_json(data["read2"]["output"]["for_llm"])["version"]
    )
    assert "refused: STALE" in stale["output"]["for_user"]

    no_match = assert_whole_refusal(data["no_match"]["output"]["for_llm"], "NO_MATCH")
    assert no_match["details"]["candidates"][0]["text"] == "y = 2"
    malformed = assert_whole_refusal(data["malformed"]["output"]["for_llm"], "RPC_ERROR")
    assert malformed["details"]["rpcCode"] == -32602
    assert "replaceAll must be true or false" in malformed["message"]
    assert data["with_null"]["status"] == "success"
    edits = data["after_edits"]
    assert edits["lines"] == ["x = 10  # user again", "y = 20", "# typed by the user"]
    assert edits["disk"] == "x = 1\ny = 2\n"

    for key in ("patch", "write", "history_nil", "history_empty", "history_diff"):
        assert data[key]["status"] == "success", data[key]
    assert first_json(data["patch"]["output"]["for_llm"])["files"][0]["path"] == "notes.md"
    assert first_json(data["write"]["output"]["for_llm"])["files"][0]["change"] == "add"
    history = first_json(data["history_nil"]["output"]["for_llm"])
    outcomes = [(e["action"], e["outcome"]) for e in history["entries"]]
    assert outcomes[:4] == [
        ("replace", "applied"),
        ("replace", "STALE"),
        ("replace", "NO_MATCH"),
        ("replace", "applied"),
    ]
    net = data["history_diff"]["output"]["for_llm"]
    assert net.startswith('{"ok":true}\ndiff:\n') and "\ndiff --git a/app.py b/app.py\n" in net
    # The user changed the first edit's line since: its undo is refused; the last one undoes.
    assert_whole_refusal(data["undo_conflict"]["output"]["for_llm"], "CONFLICT")
    assert data["undo"]["status"] == "success"
    undone = data["after_undo"]
    assert undone["lines"] == ["x = 10  # user again", "y = 2", "# typed by the user"]
    assert undone["modified"] is True and undone["disk"] == "x = 1\ny = 2\n"


def test_avante_tools_edit_the_unsaved_buffer_and_report_refusals(tmp_path: Path) -> None:
    data = run_scenario("avante_tools", tmp_path)
    assert data["modified_before"] is True
    assert [t["name"] for t in data["tools"]] == ["agent_edit_" + n for n in TOOL_SHORT_NAMES]
    read = data["read"]
    # Asynchronous: nil, nil returned, then on_complete once.
    assert read["returned_sync"] is False and read["completions"] == 1
    assert read["is_error"] is False
    assert first_json(read["content"])["source"] == "buffer"
    assert read["content"].endswith("-- typed by the user\n")
    assert read["logs"] == ["agent-edit read lib.lua"]

    # A streaming (partial) call changes nothing, and says so at once.
    assert data["after_streaming"]["lines"][0] == "local a = 1"
    assert data["streaming"]["returned_sync"] is True
    assert data["streaming"]["is_error"] is True

    replace = data["replace"]
    assert replace["is_error"] is False and replace["completions"] == 1
    assert first_json(replace["content"])["status"] == "applied"
    after = data["after_replace"]
    assert after["lines"] == ["local a = 10", "local b = 2", "return a + b", "-- typed by the user"]
    assert after["modified"] is True
    assert after["disk"] == "local a = 1\nlocal b = 2\nreturn a + b\n"

    stale = data["stale"]
    assert stale["is_error"] is True and stale["completions"] == 1
    assert_whole_refusal(stale["content"], "STALE")
    no_match = data["no_match"]
    assert no_match["is_error"] is True
    assert assert_whole_refusal(no_match["content"], "NO_MATCH")["details"]["candidates"]

    assert data["patch"]["is_error"] is False
    assert data["after_patch"]["lines"] == [
        "local a = 10 -- user again",
        "local b = 20",
        "return a + b",
        "-- typed by the user",
    ]
    assert data["after_patch"]["disk"] == "local a = 1\nlocal b = 2\nreturn a + b\n"
    assert data["write"]["is_error"] is False
    # A buffer that had no unsaved changes is saved after the edit, as save_after_edit says.
    assert first_json(data["clean"]["content"])["saved"] is True
    assert data["after_clean"] == {"lines": ["return 2"], "modified": False, "disk": "return 2\n"}
    assert first_json(data["history"]["content"])["total"] >= 4
    assert_whole_refusal(data["undo"]["content"], "INVALID_ARGUMENT")
    # avante's own confirmation was asked before each edit (its default auto-approves), never
    # before a read or the history; a "no" reaches the model as avante's declined text.
    assert [a["tool_name"] for a in data["asked"]] == [
        "agent_edit_replace",
        "agent_edit_replace",
        "agent_edit_replace",
        "agent_edit_apply_patch",
        "agent_edit_write",
        "agent_edit_replace",
        "agent_edit_undo",
        "agent_edit_write",
    ]
    assert data["asked"][0]["message"] == "Run agent_edit_replace lib.lua?"
    declined = data["declined"]
    assert declined["is_error"] is True
    assert declined["content"] == (
        "User declined agent_edit_write; nothing was changed. Reason: not this one"
    )
    assert data["declined_file"] is None


def test_tool_faults_end_in_one_clear_result(tmp_path: Path) -> None:
    data = run_scenario("agent_tools_faults", tmp_path)
    assert data["approval"] == {
        "agent_edit_read": False,
        "agent_edit_history": False,
        "agent_edit_replace": True,
        "agent_edit_apply_patch": True,
        "agent_edit_write": True,
        "agent_edit_undo": True,
    }
    # The server never answered: TIMEOUT reaches the model, once; the late answer is dropped.
    assert data["held"] is True
    timeout = data["timeout"]
    assert timeout["answers"] == 1 and timeout["outputs_added"] == 1
    result = assert_whole_refusal(timeout["output"]["for_llm"], "TIMEOUT")
    assert "may still have been applied" in result["hint"]
    assert data["outputs_after_late"] == 0

    thrown = assert_whole_refusal(data["thrown"]["output"]["for_llm"], "CLIENT_ERROR")
    assert "boom from a hook" in thrown["message"]
    assert data["thrown"]["answers"] == 1

    assert_whole_refusal(data["not_object"]["output"]["for_llm"], "INVALID_ARGUMENT")
    array = assert_whole_refusal(data["array"]["output"]["for_llm"], "RPC_ERROR")
    assert array["details"]["rpcCode"] == -32602
    bad = assert_whole_refusal(data["bad_utf8"]["output"]["for_llm"], "INVALID_ARGUMENT")
    assert bad["details"] == {"argument": "newText", "byte": 5}
    assert data["avante_bad_utf8"]["is_error"] is True
    avante_bad = assert_whole_refusal(data["avante_bad_utf8"]["content"], "INVALID_ARGUMENT")
    assert avante_bad["details"]["argument"] == "path"
    assert data["avante_bad_utf8"]["logs"] == ["agent-edit write (a path that is not UTF-8)"]
    assert_whole_refusal(data["avante_not_object"]["content"], "INVALID_ARGUMENT")

    assert data["prompt"] == "Run agent_edit_replace app.py?"
    assert data["rejected"]["for_llm"] == (
        "The user rejected agent_edit_replace; nothing was changed. Their reason: not now"
    )
    assert "cancelled agent_edit_replace" in data["cancelled"]["for_llm"]
    # The user typed while the edit was on its way: the editor refused it, the model is told.
    race = assert_whole_refusal(data["race"]["output"]["for_llm"], "CLIENT_REJECTED")
    assert "STALE" in race["message"]
    # None of it changed anything but the user's own typing.
    assert data["lines"] == ["x = 1", "# typed during the round trip"]
    assert data["disk"] == "x = 1\n"
    assert data["bad_file"] is None


@pytest.mark.parametrize("short", TOOL_SHORT_NAMES)
def test_every_tool_is_documented(short: str) -> None:
    repo = Path(__file__).resolve().parents[2]
    readme = (repo / "editor_clients" / "neovim" / "README.md").read_text()
    doc = (repo / "editor_clients" / "neovim" / "doc" / "agent_edit.txt").read_text()
    assert f"agent_edit_{short}" in readme
    assert f"agent_edit_{short}" in doc


def test_server_killed_mid_edit_answers_at_once_and_the_next_server_sees_the_buffers(
    tmp_path: Path,
) -> None:
    data = run_scenario("agent_tools_server_exit", tmp_path)
    assert data["server_pids"] == 1 and data["stopped"] is True
    # The pending call is answered by the exit (its timeout is longer than the driver waits).
    killed = data["killed"]
    assert killed["answers"] == 1 and killed["outputs_added"] == 1
    result = assert_whole_refusal(killed["output"]["for_llm"], "NO_SERVER")
    assert "exited" in result["message"] and result["details"]["signal"] == 9
    assert "may have been applied" in result["hint"]
    # (It had landed: the editor applied it as the server died.)
    assert data["after_kill"] == ["x = 4", "# unsaved, typed before the crash"]
    # The next call starts a server that is given the open buffer, unsaved text and all.
    read = data["read"]
    assert read["status"] == "success", read["output"]["for_llm"]
    assert first_json(read["output"]["for_llm"])["source"] == "buffer"
    assert read["output"]["for_llm"].endswith("\nx = 4\n# unsaved, typed before the crash\n")
    edit = data["edit"]
    assert edit["status"] == "success", edit["output"]["for_llm"]
    assert first_json(edit["output"]["for_llm"])["status"] == "applied"
    assert data["lines"] == ["x = 5", "# unsaved, typed before the crash"]
    assert data["disk"] == "x = 1\n"  # never written under the unsaved buffer
    assert data["clients"] == 1
    sync_read = data["sync_read"]
    assert sync_read["ok"] is True, sync_read
    assert sync_read["source"] == "buffer" and sync_read["text"].startswith("x = 5\n")
    assert data["third_pids"] == 1 and data["third_stopped"] is True
    sync_killed = data["sync_killed"]
    assert sync_killed["ok"] is False and sync_killed["code"] == "NO_SERVER", sync_killed
    assert "exited" in sync_killed["message"]
