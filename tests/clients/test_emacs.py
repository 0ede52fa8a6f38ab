"""Real-Emacs tests of the agent-edit Emacs package (editor_clients/emacs) and of plain eglot.

Each scenario is an elisp file in tests/emacs/ run by `emacs --batch -Q` (Emacs 30 with its own
eglot, installed by .ci/setup-emacs.sh) in a fresh workspace (a git repository in tmp_path), with
the real server from this worktree (`python -m lsp_server serve`, the Python running pytest). The
scenario acts like a user and an agent, writes what it observed as JSON and exits; the assertions
live here. With the package loaded, eglot starts the server from the package's
`eglot-server-programs` entry; the plain-eglot scenario (issue 14) adds the server by hand and uses
eglot's own applyEdit handling.

Each Emacs runs in its own process group and is killed with it (the server is its child) when it
overruns the hang guard; a scenario takes about a second.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "editor_clients" / "emacs"
SCENARIOS = Path(__file__).resolve().parents[1] / "emacs"
# A hang guard only, never an assertion about speed.
HANG_GUARD_S = 90
MIN_EMACS = 29


def find_emacs() -> str:
    """The Emacs to test: $AGENT_EDIT_EMACS, else `emacs` on PATH; it must be 29 or newer."""
    found = os.environ.get("AGENT_EDIT_EMACS") or shutil.which("emacs")
    if not found:
        pytest.fail("Emacs not found: run `bash .ci/setup-emacs.sh` (Emacs 30, bookworm-backports)")
    out = subprocess.run(
        [found, "--batch", "-Q", "--eval", "(princ emacs-major-version)"],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    if not out.stdout.strip().isdigit() or int(out.stdout) < MIN_EMACS:
        pytest.fail(f"{found} is Emacs {out.stdout!r}: {MIN_EMACS}+ is needed (.ci/setup-emacs.sh)")
    return found


@pytest.fixture(scope="module")
def emacs() -> str:
    return find_emacs()


def git_workspace(root: Path, files: dict[str, str]) -> Path:
    """A workspace folder that project.el takes for a project (a git repository) with `files`."""
    ws = root / "ws"
    ws.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(ws)], check=True, stdin=subprocess.DEVNULL)
    for name, text in files.items():
        path = ws / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return ws


def run_scenario(
    emacs: str,
    name: str,
    root: Path,
    files: dict[str, str],
    package: bool = True,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Runs tests/emacs/<name>.el in a fresh workspace; returns what it observed."""
    ws = git_workspace(root, files)
    out = root / "observed.json"
    home = root / "home"
    home.mkdir()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "AGENT_EDIT_PYTHON": sys.executable,
        "AGENT_EDIT_PACKAGE": str(PACKAGE) if package else "",
        "AGENT_EDIT_OUT": str(out),
        "AGENT_EDIT_SETTINGS": json.dumps(settings or {}),
        # Emacs, git and the server's journal all write under HOME / XDG: keep them in tmp.
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    proc = subprocess.Popen(
        [emacs, "--batch", "-Q", "-l", str(SCENARIOS / f"{name}.el")],
        cwd=ws,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=HANG_GUARD_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        output, _ = proc.communicate()
        pytest.fail(f"Emacs scenario {name} hung for {HANG_GUARD_S} s:\n{output}")
    finally:
        # The server is Emacs's child: nothing of the group outlives the test.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    context = f"emacs exit {proc.returncode}\noutput:\n{output}"
    assert out.exists(), f"the scenario wrote no observations\n{context}"
    data: dict[str, Any] = json.loads(out.read_text())
    context += f"\nevents (tail):\n{data.get('events', '')[-6000:]}"
    data["_context"] = context
    data["_ws"] = ws
    assert "elisp_error" not in data, f"Lisp error: {data['elisp_error']}\n{context}"
    return data


def ok(result: Any, data: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(result, dict), f"not a result object: {result!r}\n{data['_context']}"
    assert result.get("ok") is True, f"{json.dumps(result, indent=1)}\n{data['_context']}"
    return result


def refused(result: Any, data: dict[str, Any]) -> dict[str, Any]:
    assert isinstance(result, dict), f"not a result object: {result!r}\n{data['_context']}"
    assert result.get("ok") is False, f"{json.dumps(result, indent=1)}\n{data['_context']}"
    return result


def history_outcomes(history: dict[str, Any]) -> dict[int, str]:
    return {e["id"]: e["outcome"] for e in history["entries"]}


# -- with the package -----------------------------------------------------------------------------


def test_synchronous_replace_is_applied_and_verified(emacs: str, tmp_path: Path) -> None:
    files = {"doc.txt": "alpha\nbeta\ngamma\n", "wide.txt": "h\u00e9 \U0001f600 \nx \U0001f600 end"}
    data = run_scenario(emacs, "replace_sync", tmp_path, files)
    assert ok(data["read"], data)["source"] == "buffer"
    result = ok(data["replace"], data)
    # Never "nothing was changed" for an edit that landed: the change reached the server before
    # the applyEdit answer, so it verified the buffer.
    assert result["status"] == "applied"
    assert "-beta\n+BETA" in result["diff"]
    assert data["text"] == "alpha\nBETA\ngamma\n"
    assert history_outcomes(ok(data["history"], data)) == {result["editId"]: "applied"}
    # The buffer was clean before the edit, so the package saved it when the server asked.
    assert result["saved"] is True
    assert (data["_ws"] / "doc.txt").read_text() == "alpha\nBETA\ngamma\n"
    wide_result = ok(data["wide_replace"], data)
    assert wide_result["status"] == "applied"
    # The server reads the file back after the save: the package's save left it as verified.
    assert wide_result["saved"] is True and "changedOnSave" not in wide_result["files"][0]
    # Saved as verified: no final newline added, the trailing space kept (a save hook that
    # deletes trailing whitespace is installed).
    assert data["wide_text"] == "h\u00e9 \U0001f600 \nx \U0001f600 END"
    wide = (data["_ws"] / "wide.txt").read_text(encoding="utf-8")
    assert wide == "h\u00e9 \U0001f600 \nx \U0001f600 END"


@pytest.fixture(scope="module")
def typing(emacs: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    text = "alpha\nbeta\ngamma\n"
    return run_scenario(
        emacs, "typing", tmp_path_factory.mktemp("typing"), {"a.txt": text, "b.txt": text}
    )


def test_typing_before_the_edit_is_sent_first_so_the_edit_is_stale(
    typing: dict[str, Any],
) -> None:
    data = typing
    read = ok(data["a_read"], data)
    result = refused(data["a_replace"], data)
    # The package sent the typing before the command: the server saw the read was older.
    assert result["code"] == "STALE", result
    assert result["details"]["current"]["version"] != read["version"]
    assert data["a_text"] == "typed before\nalpha\nbeta\ngamma\n"


def test_typing_before_the_edit_then_a_read_lands_on_the_right_line(
    typing: dict[str, Any],
) -> None:
    data = typing
    assert ok(data["a_reread"], data)["text"] == "typed before\nalpha\nbeta\ngamma\n"
    assert ok(data["a_replace2"], data)["status"] == "applied"
    assert data["a_text2"] == "typed before\nalpha\nBETA\ngamma\n"


def test_typing_while_the_edit_travels_never_takes_the_versioned_edit(
    typing: dict[str, Any],
) -> None:
    data = typing
    result = refused(data["b_replace"], data)
    # Planned on version N, the buffer is at N+1 once the keystroke is sent: refused as a whole,
    # nothing applied (without the fix, eglot applies it one line off: "BETA" over "alpha").
    assert result["code"] in ("CLIENT_REJECTED", "STALE"), result
    assert "STALE" in json.dumps(result), result
    assert data["b_text"] == "typed meanwhile\nalpha\nbeta\ngamma\n"


@pytest.fixture(scope="module")
def patch(emacs: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    files = {
        "open.txt": "one\ntwo\n",
        "closed.txt": "uno\ndos\n",
        "gone.txt": "gone\n",
        "old.txt": "old\n",
    }
    return run_scenario(emacs, "patch", tmp_path_factory.mktemp("patch"), files)


def test_text_patch_across_an_open_and_a_closed_file(patch: dict[str, Any]) -> None:
    data = patch
    result = ok(data["text_result"], data)
    assert result["status"] == "applied"
    assert data["text_open_buffer"] == "one\nTWO\n"
    # The file that was not open is changed on disk, and no buffer is left behind for it
    # (plain eglot opens it and leaves it modified, unsaved).
    assert data["tree_before"]["closed"] == "uno\nDOS\n"
    assert data["text_closed_buffer"] is None
    assert data["text_modified_buffers"] == []


def test_add_delete_move_patch_works_or_changes_nothing(patch: dict[str, Any]) -> None:
    data = patch
    result = data["res_result"]
    tree = data["tree_after"]
    if result.get("ok") is True:
        assert tree["added"] == "fresh\n"
        assert tree["gone"] is None
        assert tree["old"] is None and tree["moved"] == "moved\n"
    else:
        # Refused: every file is as it was, and the agent learns why (eglot has no resource
        # operations; the package says so instead of eglot's "Internal error" half-way).
        assert tree == data["tree_before"], tree
        assert result["committed"] == [], result
        text = json.dumps(result)
        assert "resourceOperations" in text, result
    assert data["res_buffers"] == []


def test_add_delete_move_patch_works_or_is_refused_up_front(patch: dict[str, Any]) -> None:
    data = patch
    result = data["res_result"]
    if result.get("ok") is not True:
        assert "probably changed" not in json.dumps(result), result
        assert result.get("code") != "CLIENT_REJECTED", result
    assert result.get("ok") is True, result


def test_history_and_undo_commands(emacs: str, tmp_path: Path) -> None:
    data = run_scenario(emacs, "history_undo", tmp_path, {"lib.py": 'def f():\n    return "hi"\n'})
    edit = ok(data["replace"], data)
    assert data["view_mode"] == "diff-mode"
    assert data["view_read_only"] is True
    view = data["view_text"]
    assert "diff --git a/lib.py b/lib.py" in view
    assert '-    return "hi"' in view and '+    return "hello"' in view
    # diff-mode resolves the hunk to the workspace file (C-c C-c jumps to it).
    assert Path(data["hunk_file"]).resolve() == (data["_ws"] / "lib.py").resolve()
    assert f"# agent edit #{edit['editId']} replace applied" in data["entry_text"]
    assert '+    return "hello"' in data["entry_text"]
    undo = ok(data["undo"], data)
    assert undo["status"] == "applied"
    assert data["after_undo"] == 'def f():\n    return "hi"\n'
    assert '+    return "hello"' not in data["view_after_undo"]
    entries = {e["id"]: e for e in ok(data["history"], data)["entries"]}
    assert entries[edit["editId"]]["undoneBy"] == undo["editId"]
    assert entries[undo["editId"]]["action"] == "undo"


GPTEL_TOOLS = {
    "agent_edit_read": "read",
    "agent_edit_replace": "replace",
    "agent_edit_apply_patch": "applyPatch",
    "agent_edit_write": "write",
    "agent_edit_history": "history",
    "agent_edit_undo": "undo",
}


def snake(name: str) -> str:
    """The gptel tools' name of a contract argument: startLine is start_line."""
    return re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), name)


@pytest.fixture(scope="module")
def gptel(emacs: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("gptel")
    return run_scenario(emacs, "gptel_tools", root, {"notes.txt": "todo: write tests\n"})


def test_gptel_tool_arguments_are_the_contracts(gptel: dict[str, Any]) -> None:
    """The drift test: every gptel tool's arguments, in snake_case, are its command's in
    lsp_server.contract, in its order, with the same types, optional-ness and enums."""
    from lsp_server import contract

    tools = {t["name"]: t for t in gptel["tools"]}
    assert list(tools) == list(GPTEL_TOOLS), "a command without a tool, or a tool too many"
    assert set(GPTEL_TOOLS.values()) == set(contract.ACTIONS)
    for tool_name, action in GPTEL_TOOLS.items():
        schema = contract.schema(action)
        args = tools[tool_name]["args"]
        assert [a["name"] for a in args] == [snake(f) for f in schema["properties"]], tool_name
        required = set(schema.get("required", []))
        for arg, (field, want) in zip(args, schema["properties"].items(), strict=True):
            where = (tool_name, field)
            assert arg["type"] == want["type"], where
            assert arg["optional"] is (field not in required), where
            assert arg["enum"] == want.get("enum", []), where
            properties = [(p["name"], p["type"]) for p in arg["properties"]]
            wanted = [(k, v["type"]) for k, v in want.get("properties", {}).items()]
            assert properties == wanted, where
        # The tools that change files are the ones gptel asks about when told to confirm.
        assert tools[tool_name]["confirm"] is (action not in ("read", "history")), tool_name


def test_gptel_tools_called_as_gptel_calls_them(gptel: dict[str, Any]) -> None:
    data = gptel
    tools = {t["name"]: t for t in data["tools"]}
    assert set(tools) == set(GPTEL_TOOLS)
    for tool in tools.values():
        assert tool["has_function"] is True and tool["async"] is True
        assert tool["category"] == "agent-edit" and tool["description"]
    assert [a["name"] for a in tools["agent_edit_replace"]["args"]][:4] == [
        "path",
        "old_text",
        "new_text",
        "replace_all",
    ]
    # Tool results are JSON text for the model.
    read = ok(json.loads(data["read"]), data)
    assert read["text"] == "todo: write tests\n"
    replace = ok(json.loads(data["replace"]), data)
    assert replace["status"] == "applied"
    assert data["text"] == "done: write tests\n"
    # A refusal reaches the model whole: code, message and hint.
    no_match = refused(json.loads(data["no_match"]), data)
    assert no_match["code"] == "NO_MATCH" and no_match["message"] and no_match["hint"]
    assert ok(json.loads(data["patch"]), data)["status"] == "applied"
    assert data["text_after_patch"] == "shipped: write tests\n"
    # A flag the model sent as a string is refused, never read as true.
    string_flag = refused(json.loads(data["string_flag"]), data)
    assert string_flag["code"] in ("RPC_ERROR", "INVALID_ARGUMENT"), string_flag
    assert "replaceAll" in string_flag["message"], string_flag
    assert data["text_after_string_flag"] == "shipped: write tests\n"
    bad = refused(json.loads(data["bad_args"]), data)
    assert bad["code"] in ("RPC_ERROR", "INVALID_ARGUMENT"), bad
    assert "path" in bad["message"], bad
    # The arguments beyond the basic ones reach the server under its names.
    dry = ok(json.loads(data["dry_run"]), data)
    assert dry["status"] == "dry-run" or dry.get("dryRun") is True, dry
    assert refused(json.loads(data["stale_expect"]), data)["code"] == "STALE"
    bad_match = refused(json.loads(data["bad_match"]), data)
    assert "match" in bad_match["message"], bad_match
    assert not ok(json.loads(data["numbered"]), data)["text"].startswith("1\t")
    assert ok(json.loads(data["write"]), data)["status"] == "applied"
    assert len(ok(json.loads(data["history"]), data)["entries"]) == 1
    ok(json.loads(data["undo_dry"]), data)
    assert data["text_at_end"] == "shipped: write tests\n"


# -- plain eglot, no package (issue 14) ------------------------------------------------------------


@pytest.fixture(scope="module")
def plain(emacs: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    text = "alpha\nbeta\ngamma\n"
    files = {"sync.txt": text, "typed.txt": text, "gone.txt": "gone\n", "old.txt": "old\n"}
    # A short verification wait: plain eglot's didChange comes late, whatever the wait.
    return run_scenario(
        emacs,
        "plain_eglot",
        tmp_path_factory.mktemp("plain"),
        files,
        package=False,
        settings={"verifyTimeoutMs": 1000},
    )


def _said_nothing_changed(result: dict[str, Any]) -> bool:
    text = json.dumps(result)
    return result.get("code") == "NOT_APPLIED" or bool(re.search(r"nothing (was|is) changed", text))


def test_plain_eglot_synchronous_replace_is_reported_truthfully(plain: dict[str, Any]) -> None:
    data = plain
    result = data["sync_result"]
    assert data["sync_text"] == "alpha\nBETA\ngamma\n"  # eglot did apply it
    assert not _said_nothing_changed(result), result
    assert result.get("ok") is True or result.get("code") == "UNVERIFIED", result


def test_plain_eglot_wrong_line_landing_is_not_hidden(plain: dict[str, Any]) -> None:
    data = plain
    result = data["typed_result"]
    if data["typed_text"] != "typed\nalpha\nBETA\ngamma\n":
        # It landed somewhere else: the result must not say all is well, nor that nothing changed.
        assert result.get("ok") is not True, result
        assert not _said_nothing_changed(result), result


def test_plain_eglot_add_delete_move_works_or_is_refused_up_front(plain: dict[str, Any]) -> None:
    data = plain
    result = data["res_result"]
    tree = data["tree_after"]
    if result.get("ok") is True:
        assert tree == {"added": "fresh\n", "gone": None, "old": None, "moved": "moved\n"}
    else:
        assert tree == {"added": None, "gone": "gone\n", "old": "old\n", "moved": None}
        # Refused before anything was sent to the editor, with a reason that is not a guess.
        assert "probably changed" not in json.dumps(result), result
        assert result.get("code") not in ("CLIENT_REJECTED", "RPC_ERROR"), result


# -- attacks on the package's guarantees ----------------------------------------------------------


@pytest.fixture(scope="module")
def attacks(emacs: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    files = {
        "one.txt": "one\n",
        "two.txt": "two\n",
        "plain": "first\nsecond\n",
        "asked.txt": "x\n",
    }
    return run_scenario(emacs, "attacks", tmp_path_factory.mktemp("attacks"), files)


def test_unsaved_buffer_the_server_cannot_see_never_takes_a_disk_planned_edit(
    attacks: dict[str, Any],
) -> None:
    data = attacks
    assert data["plain_mode"] == "fundamental-mode" and data["plain_managed"] is None
    result = data["plain_result"]
    # The user's unsaved text stays as typed and the edit never lands at the disk's line numbers
    # in it; either the edit is refused (nothing changed) or it went to the disk only.
    assert data["plain_buffer"] == "unsaved line\nfirst\nsecond\n", data["plain_buffer"]
    if result.get("ok") is True:
        assert data["plain_disk"] == "first\nSECOND\n"
    else:
        assert data["plain_disk"] == "first\nsecond\n"
        assert "unsaved" in json.dumps(result), result


def test_declined_confirmation_is_reported_as_not_applied(attacks: dict[str, Any]) -> None:
    data = attacks
    result = refused(data["declined_result"], data)
    assert "declined" in json.dumps(result), result
    assert data["declined_text"] == "x\n"


def test_patch_with_a_stale_second_file_applies_nothing(attacks: dict[str, Any]) -> None:
    data = attacks
    result = refused(data["stale_result"], data)
    assert "two.txt" in json.dumps(result), result
    # Refused before the first file was touched: no rollback needed, none pretended. The package
    # advertises its refusals as transactional (it undoes what landed before refusing), so the
    # server says so: rejected, with two.txt "changed otherwise" by the user's typing. Without
    # that it could only call it PARTIAL ("some changes landed"), with nothing committed.
    assert result["code"] == "CLIENT_REJECTED", result
    states = {f["path"]: f["state"] for f in result["details"]["files"]}
    assert states == {"one.txt": "not-applied", "two.txt": "changed-otherwise"}, result
    assert result["committed"] == [], result
    assert data["stale_one"] == "one\n"
    assert data["stale_two"] == "typed\ntwo\n"


def test_users_unsaved_text_is_not_saved_when_the_server_asks(attacks: dict[str, Any]) -> None:
    data = attacks
    result = ok(data["dirty_result"], data)
    assert data["dirty_buffer"] == "ONE\nmine\n"
    assert data["dirty_modified"] is True
    assert data["dirty_disk"] == "one\n"
    assert result["saved"] is False


@pytest.fixture(scope="module")
def buffer_states(emacs: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    files = {
        "narrow.txt": "l1\nl2\nl3\nl4\nl5\n",
        "p%20q.txt": "percent\n",
        "p q.txt": "space\n",
        "one.txt": "one\n",
        "two.txt": "two\n",
        "save.txt": "s1\n",
        "died.txt": "d1\n",
        "pro%41j/a.txt": "inner\n",
        "proAj/a.txt": "decoy\n",
        "dos.txt": "one\r\ntwo\r\n",
        "killed.txt": "k1\n",
        "cr.txt": "x\ry\nz1\nz2\n",
    }
    return run_scenario(emacs, "buffer_states", tmp_path_factory.mktemp("states"), files)


def test_edit_outside_the_users_narrowing_is_applied_and_verified(
    buffer_states: dict[str, Any],
) -> None:
    data = buffer_states
    # It landed: the server must see it (not "refused, nothing was changed") and the buffer and
    # the server agree afterwards; the user's narrowing is kept.
    assert ok(data["narrow_result"], data)["status"] == "applied"
    assert data["narrow_text"] == "l1\nL2\nL2b\nl3\nl4\nl5\n"
    assert data["narrow_visible"] == "l4\nl5\n"
    assert ok(data["narrow_read"], data)["text"] == data["narrow_text"]


def test_a_percent_sign_in_a_file_name_names_that_file(buffer_states: dict[str, Any]) -> None:
    data = buffer_states
    # "p q.txt" is not open: its disk text, not the text of the buffer of "p%20q.txt".
    read = ok(data["space_read"], data)
    assert (read["source"], read["text"]) == ("disk", "space\n"), read
    # "p%20q.txt" is open: the edit goes into its buffer, over nothing the server has not seen,
    # and the user's unsaved typing is neither lost nor saved.
    result = ok(data["percent_result"], data)
    assert result["files"][0]["version"] is not None, result
    assert data["percent_text"] == "PERCENT\ntyped\n"
    assert data["percent_disk"] == "percent\n"


def test_a_patch_emacs_fails_part_way_is_refused_with_nothing_changed(
    buffer_states: dict[str, Any],
) -> None:
    data = buffer_states
    result = refused(data["readonly_result"], data)
    # The package undid the first file and answers a refusal it advertises as transactional:
    # the agent is told plainly that nothing changed (not PARTIAL, not UNVERIFIED) and why.
    assert result["code"] == "CLIENT_REJECTED", result
    assert "read-only" in result["message"], result
    assert result["committed"] == [], result
    states = {f["path"]: f["state"] for f in result["details"]["files"]}
    assert states == {"one.txt": "not-applied", "two.txt": "not-applied"}, result
    assert (data["readonly_one"], data["readonly_two"]) == ("one\n", "two\n")
    assert data["readonly_one_modified"] is None
    assert ok(data["readonly_one_read"], data)["text"] == "one\n"


def test_typing_after_the_edit_is_not_saved_with_it(buffer_states: dict[str, Any]) -> None:
    data = buffer_states
    assert data["save_typed"] is True, "the save request never came"
    result = ok(data["save_result"], data)
    # The buffer was clean before the edit, but the user typed before the save request came:
    # their text is not written behind their back, and the agent is not told its edit is saved.
    assert data["save_text"] == "S1\ntyped after\n"
    assert data["save_modified"] is True
    assert data["save_disk"] == "s1\n"
    assert result["saved"] is False, result
    assert result["files"][0]["saved"] is False, result


def test_a_percent_sign_in_the_project_folder_names_that_folder(
    buffer_states: dict[str, Any],
) -> None:
    data = buffer_states
    # The workspace is "pro%41j", not "proAj": its open buffer is read and edited.
    read = ok(data["folder_read"], data)
    assert (read["source"], read["text"]) == ("buffer", "inner\n"), read
    assert ok(data["folder_replace"], data)["status"] == "applied"
    assert data["folder_text"] == "INNER\n"
    assert data["folder_decoy"] == "decoy\n"


def test_crlf_text_written_into_a_crlf_files_buffer_is_saved_as_crlf(
    buffer_states: dict[str, Any],
) -> None:
    data = buffer_states
    assert data["dos_eol"] == 1  # dos: the buffer shows "\n", the file has CRLF
    assert ok(data["dos_write"], data)["status"] == "applied"
    # No CR characters in the buffer: saved as CR CR LF they were a corrupted file.
    assert data["dos_text"] == "ONE\ntwo\nthree\n"
    assert data["dos_disk"] == "ONE\r\ntwo\r\nthree\r\n"


def test_a_save_for_the_server_does_not_re_encode_the_file(buffer_states: dict[str, Any]) -> None:
    data = buffer_states
    result = ok(data["latin1_result"], data)
    # Latin-1 cannot hold the emoji: the buffer stays modified, unsaved, and the agent is told;
    # the file keeps its bytes (no prompt for a coding system, no UTF-8 re-encoding of "caf\xe9").
    assert result["saved"] is False, result
    assert data["latin1_modified"] is True
    assert bytes.fromhex(data["latin1_disk"]) == b"caf\xe9\nend\n"


def test_a_buffer_killed_unsaved_before_the_save_is_not_called_saved(
    buffer_states: dict[str, Any],
) -> None:
    data = buffer_states
    assert data["killed_killed"] is True, "the save request never came"
    result = ok(data["killed_result"], data)
    # The user threw the edit away with the buffer: the disk holds the old text, so not saved.
    assert data["killed_disk"] == "k1\n"
    assert result["saved"] is False, result


def test_a_lone_carriage_return_is_refused_not_miscounted(buffer_states: dict[str, Any]) -> None:
    data = buffer_states
    # eglot and LSP count lines differently from the lone CR on: the edit is refused up front
    # (nothing lands a line off), and so is a read whose text the server may have wrong.
    result = refused(data["cr_result"], data)
    assert result["code"] == "UNSUPPORTED", result
    assert result["committed"] == [], result
    assert "carriage return" in result["message"], result
    assert data["cr_text"] == "x\ry\nz1\nz2\n"
    assert refused(data["cr_read"], data)["code"] == "UNSUPPORTED"


def test_a_server_that_dies_mid_edit_is_not_reported_as_an_answer(
    buffer_states: dict[str, Any],
) -> None:
    data = buffer_states
    result = refused(data["died_result"], data)
    # Not "the server answered with a JSON-RPC error, check the arguments": it stopped, and the
    # agent must look before retrying (as the Neovim client says: NO_SERVER).
    assert result["code"] == "NO_SERVER", result
    assert "stopped" in result["message"], result
    assert "may have been applied" in result["hint"], result


def test_package_byte_compiles_without_warnings(emacs: str, tmp_path: Path) -> None:
    # Compiled from a copy: no .elc is left next to the source (a stale one would shadow it).
    shutil.copy(PACKAGE / "agent-edit.el", tmp_path / "agent-edit.el")
    proc = subprocess.run(
        [
            emacs,
            "--batch",
            "-Q",
            "-L",
            str(tmp_path),
            "--eval",
            "(setq byte-compile-error-on-warn t)",
            "-f",
            "batch-byte-compile",
            str(tmp_path / "agent-edit.el"),
        ],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "agent-edit.elc").exists()


def test_setup_script_is_quiet_and_does_nothing_when_emacs_is_there(emacs: str) -> None:
    # `emacs` found an Emacs >= 29, so the script must not touch apt, and says nothing.
    proc = subprocess.run(
        ["bash", str(REPO / ".ci" / "setup-emacs.sh")],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "AGENT_EDIT_EMACS": emacs},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == "" and proc.stderr == ""


def test_typing_right_after_the_edit_is_not_saved_with_it(emacs: str, tmp_path: Path) -> None:
    data = run_scenario(emacs, "save_typing", tmp_path, {"one.txt": "one\n"})
    result = ok(data["result"], data)
    assert data["buffer"] == "ONE\ntyped\n", data
    # Saved without the typing, or not saved: never the typing behind the user's back.
    assert "typed" not in data["disk"], data
    assert result["saved"] is (data["disk"] == "ONE\n"), data


def test_read_reports_the_line_endings_and_bom_the_file_is_saved_with(
    emacs: str, tmp_path: Path
) -> None:
    files = {
        "lf.txt": "one\ntwo\n",
        "crlf.txt": "one\r\ntwo\r\n",
        "bom.txt": "\ufeffone\ntwo\n",
        "bom_crlf.txt": "\ufeffone\r\ntwo\r\n",
    }
    data = run_scenario(emacs, "file_formats", tmp_path, files)
    for name, eol, bom in (
        ("lf", "lf", False),
        ("crlf", "crlf", False),
        ("bom", "lf", True),
        ("bom_crlf", "crlf", True),
    ):
        for how in ("plain", "read"):
            result = ok(data[f"{name}_{how}"], data)
            assert result["source"] == "buffer"
            # The text is what Emacs shows (LF); the file's own format is said beside it.
            assert result["text"] == "one\ntwo\n"
            assert (result["eol"], result["bom"]) == (eol, bom), (name, how, result)
    # The user chose LF for the CRLF file (C-x RET f): the read says so, and the save agrees.
    assert ok(data["converted_read"], data)["eol"] == "lf"
    assert ok(data["converted_replace"], data)["status"] == "applied"
    assert data["converted_disk"] == "ONE\ntwo\n"
