"""Real-Neovim tests of the document sync: the text the server holds must be the buffer's, after
Neovim sends a buffer's didOpen again and after the user's own writes (tests/nvim/sync_*.lua)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.neovim_runner import ok, run_scenario


@pytest.fixture(scope="module")
def reopen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_scenario("sync_reopen", tmp_path_factory.mktemp("sync_reopen"))


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_a_resent_did_open_keeps_the_text_and_the_next_edit_lands_as_asked(
    reopen: dict[str, Any],
) -> None:
    # A 'noeol' buffer whose last line is empty ("a\n") is sent in a didOpen as "a\n", the text
    # of an 'eol' buffer holding "a": after a restarted client the server read "a", and an
    # agent's write of "x\ny" left the buffer "x\ny\n\n" while the server said it held "x\ny".
    data = reopen
    assert data["noeol_before"]["text"] == "a\n"
    assert data["noeol_restarted"]["text"] == "a\n"
    assert data["noeol_restarted"]["sha256"] == _sha("a\n")
    write = ok(data["noeol_write"], data)
    assert write["files"][0]["sha256"] == _sha("x\ny")
    assert (data["noeol_lines"], data["noeol_eol"]) == (["x", "y"], False)
    assert data["noeol_buffer"] == "x\ny"
    assert data["noeol_after"]["text"] == "x\ny"
    # Detached and attached again to the running client: the same didOpen.
    assert data["reattach_buffer"] == "a\n"
    assert data["reattached"]["text"] == "a\n"


def test_an_empty_buffer_renamed_by_saveas_reads_empty(reopen: dict[str, Any]) -> None:
    # Neovim's didOpen after :saveas sends its empty buffer as "\n"; nothing told the server.
    data = reopen
    assert data["empty_before"]["text"] == ""
    assert data["empty_moved_disk"] == ""
    assert data["empty_moved"]["text"] == "" and data["empty_moved"]["sha256"] == _sha("")


def test_the_users_write_with_fixeol_gives_the_server_the_files_text(
    reopen: dict[str, Any],
) -> None:
    # :w with 'fixeol' writes the final newline 'eol' does not hold: the server kept "a" (its
    # sha256 not the file's), and an edit expecting the file's sha256 was refused STALE.
    data = reopen
    assert data["fix_before"]["text"] == "a"
    assert data["fix_disk"] == "a\n"
    assert data["fix_after"]["text"] == "a\n" and data["fix_after"]["sha256"] == _sha("a\n")
    assert data["fix_modified"] is False
    replace = ok(data["fix_replace"], data)
    assert replace["files"][0]["sha256"] == _sha("b\n")
    assert data["fix_lines"] == ["b"] and data["fix_buffer"] == "b\n"
    assert data["fix_final"]["text"] == "b\n"


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_scenario("sync_shapes", tmp_path_factory.mktemp("sync_shapes"))


def _same(data: dict[str, Any], name: str) -> dict[str, Any]:
    case: dict[str, Any] = data[name]
    assert case["read"] == case["buffer"], (name, case)
    return case


def test_a_change_leaving_one_empty_line_leaves_it_on_the_server(shapes: dict[str, Any]) -> None:
    # Neovim's sync (its special case for a buffer that became one empty line) sent `Gdd` on
    # lines "" and " " as the deletion of " " alone: the server held "\n\n", and every later
    # change and agent edit was placed on a line the buffer does not have.
    assert _same(shapes, "last_line_deleted")["buffer"] == "\n"
    assert _same(shapes, "first_line_deleted")["buffer"] == "\n"


def test_an_undo_back_to_the_empty_buffer_and_a_clear_after_a_reload_read_empty(
    shapes: dict[str, Any],
) -> None:
    assert _same(shapes, "undo_to_empty")["buffer"] == ""
    assert _same(shapes, "clear_after_reload")["buffer"] == ""


def test_an_agent_edit_keeps_the_end_of_a_noeol_buffer_whose_last_line_is_empty(
    shapes: dict[str, Any],
) -> None:
    # The plugin set 'eol' for an edit that did not touch the end ("P\nS\n" has its final
    # break in its lines): the buffer gained a newline the server's result did not show.
    case = _same(shapes, "noeol_empty_last_line")
    result = ok(case["result"], shapes)
    assert case["buffer"] == "P\n\nS\n" and case["eol"] is False
    assert result["files"][0]["sha256"] == _sha("P\n\nS\n")


def test_a_dos_buffer_showing_no_line_break_gets_crlf(shapes: dict[str, Any]) -> None:
    # One line, no newline, 'fileformat' dos: the server took "\n" for the break 'eol' adds,
    # and planned an agent's new lines with "\n" (PARTIAL: Neovim sent them back as CRLF).
    assert _same(shapes, "dos_one_line_eol")["buffer"] == "a\r\n"
    for name, text in (
        ("dos_one_line_write_crlf", "x\r\nS"),
        ("dos_one_line_write_lf", "x\r\nS\r\n"),
    ):
        case = _same(shapes, name)
        assert case["buffer"] == text, (name, case)
        assert ok(case["result"], shapes)["files"][0]["sha256"] == _sha(text)


def test_a_fileformat_change_changes_every_line_break_on_the_server(
    shapes: dict[str, Any],
) -> None:
    # Neovim sends nothing for :set ff=dos, and later changes only their own lines' breaks.
    assert _same(shapes, "to_dos")["buffer"] == "a\r\nb\r\n"
    assert _same(shapes, "to_dos_typed")["buffer"] == "a\r\nb\r\nc\r\n"
    assert _same(shapes, "to_unix")["buffer"] == "z\na\nb\n"


def test_random_typing_and_agent_edits_keep_the_servers_text_the_buffers(tmp_path: Path) -> None:
    # A model test on real Neovim (tests/nvim/sync_random.lua): per seed a file of some final
    # newline and line-ending shape, then random steps: the user's nvim_buf_set_text and
    # set_lines, typed line breaks, J, yank/put, undo and redo, :w, :e!, :saveas, 'eol',
    # 'fixeol' and 'fileformat' changes, clearing; the agent's writes, replaces and undos from
    # what it read. After every step the server's read must be the buffer's text exactly, and
    # an agent edit must leave the text its result names (a refusal: nothing). Bounded: about
    # 20 s; AGENT_EDIT_SYNC_SEEDS ("first:count") and AGENT_EDIT_SYNC_STEPS explore further.
    seeds = os.environ.get("AGENT_EDIT_SYNC_SEEDS", "1:30")
    steps = os.environ.get("AGENT_EDIT_SYNC_STEPS", "24")
    data = run_scenario(
        "sync_random", tmp_path, {"AGENT_EDIT_SEEDS": seeds, "AGENT_EDIT_STEPS": steps}
    )
    failures = data["failures"]
    assert not failures, json.dumps(failures[:3], ensure_ascii=False, indent=1)
    totals = data["totals"]
    assert totals["steps"] >= 500 or seeds != "1:30", totals
    assert totals["agent_ok"] > 50 or seeds != "1:30", totals  # the agent's edits did land
