"""Review (rtrust): the language server's disk side meeting an exception that is not an OSError
(a UnicodeEncodeError from the writer's test hook, tests/disk_hooks.py), at a step before any
file changed and after the closed file was renamed into place (the open one's buffer was
changed by then). Before the fix it escaped `execute`: a JSON-RPC error instead of a result, the
entry unfinished, the writer's leftovers kept until the next apply. Now the disk side is rolled
back at once and the entry settled: IO_ERROR "nothing was changed" before any change, and
UNVERIFIED naming the buffer once the editor applied its part; the server serves on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.editor_client import start_session
from tests.lsp.test_lsp_disk_side import CONTROL, PATCH, entry, hooked, no_temporaries

__all__ = ["hooked"]  # the fixture, shared with test_lsp_disk_side


@pytest.mark.asyncio
@pytest.mark.parametrize("point", ["written", "renamed"])
async def test_a_non_os_error_on_the_disk_side_is_settled_and_the_server_serves_on(
    hooked: LanguageClient, tmp_path: Path, point: str
):
    ed = await start_session(hooked, "visual-studio-code", tmp_path)
    ed.write_file("shown.txt", "shown\n")
    closed = ed.write_file("closed.txt", "one\ntwo\n")
    ed.open("shown.txt")
    for p in ("shown.txt", "closed.txt"):
        await ed.command("agentEdit.read", {"path": p})
    CONTROL.write_text(json.dumps({"point": point, "raise": "unicode"}))
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert not CONTROL.exists()  # the error was raised at that step
    assert closed.read_text() == "one\ntwo\n"  # the disk side rolled back, at once
    no_temporaries(tmp_path)
    recorded = await entry(ed, result["details"]["editId"])
    if point == "written":
        assert result["ok"] is False and result["code"] == "IO_ERROR", result
        assert "nothing was changed" in result["message"], result
        assert ed.text("shown.txt") == "shown\n"
        assert recorded["outcome"] == "IO_ERROR", recorded
        again = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
        assert again["ok"], again
        assert ed.text("shown.txt") == "SHOWN\n" and closed.read_text() == "one\n2\n"
        return
    # After the editor applied its part: never "nothing was changed"; the buffer that changed
    # is named, and the entry is settled as that.
    assert result["ok"] is False and result["code"] == "UNVERIFIED", result
    assert "nothing was changed" not in result["message"]
    assert result["details"]["unconfirmed"] == ["shown.txt"], result
    assert [c["path"] for c in result["committed"]] == ["shown.txt"], result
    assert recorded["outcome"] == "UNVERIFIED", recorded
    read = await ed.command("agentEdit.read", {"path": "closed.txt"})  # the server serves on
    assert read["ok"] and read["text"] == "one\ntwo\n", read
