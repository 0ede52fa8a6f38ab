"""Real-Neovim tests: what the plugin does around an agent edit must not write, widen or report
more than the edit did (saving, renaming, choosing the workspace, the user's messages)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from tests.neovim_runner import ok, run_scenario


def test_save_after_edit_skips_files_changed_on_disk_and_typing_after_the_edit(
    tmp_path: Path,
) -> None:
    data = run_scenario("save_guards", tmp_path)
    # Control: a clean buffer is saved with the agent's edit.
    assert ok(data["clean"], data)["saved"] is True
    assert data["clean_disk"] == "one\nTWO\n"
    # The file changed on disk under the clean buffer: the edit lands in the buffer, the other
    # program's text stays on disk, and the agent is told the file is not saved.
    external = ok(data["external"], data)
    assert data["external_lines"] == ["ONE", "two"]
    assert data["external_disk"] == "one\ntwo\nwritten by another program\n"
    assert external["saved"] is False and external["files"][0]["saved"] is False
    # A read-only buffer ('readonly', as :view makes it) is not written either.
    viewed = ok(data["viewed"], data)
    assert data["viewed_lines"] == ["ONE", "two"]
    assert data["viewed_disk"] == "one\ntwo\n"
    assert viewed["saved"] is False
    # The user typed between the edit and the save: nothing is written behind their back.
    typed = ok(data["typed"], data)
    assert data["typed_lines"] == ["ONE", "two", "# typed by the user"]
    assert data["typed_modified"] is True
    assert data["typed_disk"] == "one\ntwo\n"
    assert typed["saved"] is False and typed["files"][0]["saved"] is False


def test_move_of_a_buffer_with_unsaved_text_is_refused_before_anything(tmp_path: Path) -> None:
    data = run_scenario("move_unsaved", tmp_path)
    ok(data["read"], data)
    result = data["patch"]
    assert result["ok"] is False, result
    assert result["code"] == "CLIENT_REJECTED", result
    assert "unsaved changes" in result["message"], result
    # Nothing moved or written: the typing stays unsaved, in the buffer of a.txt.
    assert data["disk_b"] is None
    assert data["disk_a"] == "alpha\nbeta\ngamma\n"
    assert data["name"].endswith("/a.txt")
    assert data["lines"] == ["alpha typed by the user", "beta", "gamma"]
    assert data["modified"] is True


def test_absolute_path_in_another_repository_is_not_served(tmp_path: Path) -> None:
    data = run_scenario("outside_repo", tmp_path)
    for key in ("read", "replace", "write"):
        assert data[key]["ok"] is False, data[key]
        assert data[key]["code"] == "OUTSIDE_WORKSPACE", data[key]
    assert data["other_disk"] == "secret = 1\n"
    assert data["other_new_exists"] is False
    assert data["roots"] == [data["_workspace"]]


def test_patch_command_never_says_nothing_changed_after_a_timeout(tmp_path: Path) -> None:
    data = run_scenario("patch_command_uncertain", tmp_path)
    assert data["result"]["code"] == "TIMEOUT", data["result"]
    assert data["lines"] == ["alpha", "BETA", "gamma"]
    assert "nothing changed" not in data["messages"]
    assert "did not complete: TIMEOUT" in data["messages"]


def test_refusal_of_a_multi_file_patch_says_nothing_changed(tmp_path: Path) -> None:
    data = run_scenario("refusal_multi_file", tmp_path)
    typed = data["typed"]
    assert typed["ok"] is False and typed["code"] == "CLIENT_REJECTED", typed
    assert "STALE" in typed["message"] and typed["committed"] == [], typed
    assert data["typed_lines"] == {"a": ["alpha", "beta"], "b": ["one", "two typed"]}
    outcomes = [e["outcome"] for e in data["typed_history"]["entries"]]
    assert outcomes == ["CLIENT_REJECTED"], outcomes
    # Neovim's apply failed after changing a.txt: an error answer, checked and rolled back.
    failed = data["failed"]
    assert failed["ok"] is False and failed["code"] == "PARTIAL_ROLLED_BACK", failed
    assert data["failed_lines"] == {"a": ["alpha", "beta"], "b": ["one", "two typed"]}


def test_nested_repository_buffers_are_seen_by_the_enclosing_workspace_server(
    tmp_path: Path,
) -> None:
    data = run_scenario("nested_repo", tmp_path)
    # The workspace's server reads the buffers (the user's unsaved text), not the disk.
    for key, text in (("read_x", "int x = 100;\nint y = 2;\n"), ("read_z", "int z = 5;\n")):
        read = ok(data[key], data)
        assert read["source"] == "buffer" and read["text"] == text, read
    assert ok(data["main_edit"], data)["editId"] == 1
    assert ok(data["own_read"], data)["text"] == "int x = 100;\nint y = 3;\n"
    assert ok(data["own_edit"], data)["editId"] == 1  # the nested server's own history
    assert data["after_edits"] == ["int x = 200;", "int y = 3;"]
    # The lens of the workspace server's edit 1 undoes that edit, not the nested server's 1.
    assert data["after_undo"] == ["int x = 200;", "int y = 2;"]
    assert data["disk_x"] == "int x = 1;\nint y = 2;\n"


def test_mixed_line_endings_keep_the_server_in_step_and_unsafe_edits_are_refused(
    tmp_path: Path,
) -> None:
    data = run_scenario("mixed_line_endings", tmp_path)
    # The server's copy is the buffer after every kind of typing around the CRs.
    assert data["synced"] == {k: True for k in ("Go", "ggjddp", "ggJ", "gg$x", "uuuu")}
    assert data["lines_before_edits"] == ["a", "b\r", "c\r", "d\r"]
    assert ok(data["lf_edit"], data)["status"] == "applied"
    assert data["lf_synced"] is True
    for key in ("crlf_edit", "lone_edit"):
        result = data[key]
        assert result["ok"] is False and result["code"] == "CLIENT_REJECTED", result
        assert "carriage return" in result["message"], result
    assert data["lines_after"] == ["A", "b\r", "c\r", "d\r"]
    assert data["lone_synced"] == {k: True for k in ("GAz", "ggA!", "Go")}
    assert data["lone_lines"] == ["x\ry!", "zz", ""]


def test_arguments_json_cannot_carry_are_refused_once(tmp_path: Path) -> None:
    data = run_scenario("api_unsendable", tmp_path)
    assert data["sync_ok"] is True, data["sync"]
    assert data["sync"]["code"] == "INVALID_ARGUMENT", data["sync"]
    assert len(data["calls"]) == 1, data["calls"]
    assert data["calls"][0]["code"] == "INVALID_ARGUMENT", data["calls"]


def test_relative_path_stays_in_the_current_workspace_after_its_server_exits(
    tmp_path: Path,
) -> None:
    data = run_scenario("relative_after_exit", tmp_path)
    assert ok(data["before"], data)["text"] == "this workspace\n"
    assert ok(data["after"], data)["text"] == "this workspace\n"


def test_save_keeps_a_missing_final_newline(tmp_path: Path) -> None:
    data = run_scenario("no_final_newline_save", tmp_path)
    for name, disk in (("lf", "ONE\ntwo"), ("crlf", "ONE\r\ntwo")):
        case = data[name]
        result = ok(case["result"], data)
        assert result["saved"] is True
        # What lands on disk is the text the server verified: no newline added by 'fixeol'.
        assert case["disk"] == disk
        assert result["files"][0]["sha256"] == case["disk_sha256"]
        assert case["fixeol"] is True


def test_an_edit_removing_or_adding_the_final_newline_lands_exactly(tmp_path: Path) -> None:
    # Neovim keeps the final newline in 'eol' and its didChange always counts one: such edits
    # were refused (CLIENT_REJECTED), and an empty file read as "\n".
    data = run_scenario("final_newline_edits", tmp_path)
    for name, before, after, lines, eol in (
        ("write", "x\n", "y", ["y"], False),
        ("empty", "", "hello", ["hello"], False),
        ("newline_only", "\n", "", [""], False),
        ("crlf", "a\r\nb\r\n", "a\r\nb", ["a", "b"], False),
        ("replace", "one\ntwo\n", "one\ntwo", ["one", "two"], False),
        ("kept", "one\ntwo\n", "one\nTWO\n", ["one", "TWO"], True),
        ("added", "x", "y\n", ["y"], True),
        ("added_by_replace", "one\ntwo", "one\ntwo\n", ["one", "two"], True),
        ("appended_no_newline", "one\ntwo", "one\ntwo\nthree", ["one", "two", "three"], False),
        ("into_empty", "", "hello\n", ["hello"], True),
        ("newline_into_empty", "", "\n", [""], True),
        ("empty_line_kept", "a\n\n", "A\n\n", ["A", ""], True),
    ):
        case = data[name]
        assert case["before"] == before, (name, case)
        result = ok(case["result"], data)
        # Verified (not PARTIAL or UNVERIFIED), saved with exactly the text the server saw.
        assert result["saved"] is True, (name, result)
        assert (case["lines"], case["eol"], case["modified"]) == (lines, eol, False), (name, case)
        assert case["disk"] == after and case["after"] == after, (name, case)
        assert result["files"][0]["sha256"] == hashlib.sha256(after.encode()).hexdigest()
        # Undo restores the final newline (or its absence), in the buffer and on disk.
        assert ok(case["undo"], data)["saved"] is True, (name, case)
        assert case["undo_read"] == before and case["undo_disk"] == before, (name, case)
    # Neovim's own undo and redo: 'eol' goes back and forth with the lines.
    for name, before, after, lines_before, lines_after in (
        ("native_removed", "one\ntwo\n", "one\ntwo", ["one", "two"], ["one", "two"]),
        ("native_added", "x", "y\n", ["x"], ["y"]),
    ):
        case = data[name]
        ok(case["result"], data)
        assert case["undone"] == {"lines": lines_before, "text": before}, (name, case)
        assert case["redone"] == {"lines": lines_after, "text": after}, (name, case)


def test_an_empty_file_reads_empty_and_the_users_final_newline_is_seen(tmp_path: Path) -> None:
    # An empty file read as "\n" (Neovim's one empty line, its didChange counting a newline),
    # and the server never saw the user's :set noeol.
    data = run_scenario("empty_file", tmp_path)
    empty_sha = hashlib.sha256(b"").hexdigest()
    assert data["empty"] == {"text": "", "sha256": empty_sha, "source": "buffer"}
    assert data["newline"]["text"] == "\n"  # one newline is not an empty file
    assert data["typed"]["text"] == "hello\n"
    assert data["cleared"]["text"] == "" and data["cleared"]["sha256"] == empty_sha
    assert data["newline_noeol"]["text"] == ""
    assert data["noeol"]["text"] == "a\nb"
    assert data["noeol_typed"]["text"] == "a\nb\nc"
    assert data["eol_again"]["text"] == "a\nb\nc\n"
    assert data["noeol_lua"]["text"] == "a\nb\nc"


def test_delete_of_a_buffer_with_unsaved_text_is_refused_before_anything(tmp_path: Path) -> None:
    # Neovim's delete_file force-deletes the buffer: the user's typing was gone from the editor.
    data = run_scenario("delete_unsaved", tmp_path)
    ok(data["read"], data)
    result = data["patch"]
    assert result["ok"] is False, result
    assert result["code"] == "CLIENT_REJECTED", result
    assert "unsaved changes" in result["message"], result
    assert data["disk_a"] == "alpha\nbeta\n"
    assert data["loaded"] is True and data["modified"] is True
    assert data["lines"] == ["alpha typed by the user", "beta"]
    # A buffer without unsaved text: its file is deleted, as asked.
    assert ok(data["clean"], data)["status"] == "applied"
    assert data["disk_c"] is None


def test_a_save_hook_that_changes_the_text_is_reported_and_undone(tmp_path: Path) -> None:
    # A BufWritePre autocmd trims trailing whitespace when the plugin saves after the edit. On
    # main the result said saved: true with the sha256 of the edit's text (trailing spaces),
    # and the undo was CONFLICT.
    data = run_scenario("save_hooks", tmp_path)
    result = ok(data["result"], data)
    assert data["disk"] == "p = 1\nq = 0\n" and data["buffer"] == ["p = 1", "q = 0"], data
    (f,) = result["files"]
    assert result["saved"] is False and f["saved"] is False, result
    assert f["changedOnSave"]["sha256"] == hashlib.sha256(data["disk"].encode()).hexdigest()
    ok(data["undo"], data)
    assert data["undone_disk"] == "p = 0\nq = 0\n" and data["undone_buffer"] == ["p = 0", "q = 0"]
