"""The language server's disk side meeting an OS error the writer did not expect, at each of its
steps (the writer's test hook, tests/disk_hooks.py): a clear IO_ERROR result (never a JSON-RPC
error), nothing left behind in the workspace, the edit recorded once and settled, the buffers of
a mixed edit as they were, and the server still serving (actions/execute.py,
lsp/disk_side.py)."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from pytest_lsp import LanguageClient

from tests.editor_client import EDITORS, start_session
from tests.lsp.test_lsp_disk_side import CONTROL, PATCH, entry, hooked, no_temporaries

__all__ = ["hooked"]  # the fixture, shared with test_lsp_disk_side


def raise_at(point: str) -> None:
    """At `point` of the server's next disk apply, the writer meets OSError(EIO)."""
    CONTROL.write_text(json.dumps({"point": point, "raise": errno.EIO}))


@pytest.mark.asyncio
@pytest.mark.parametrize("point", ["resolved", "checked", "written"])
@pytest.mark.parametrize("kind", EDITORS)
async def test_an_os_error_on_the_disk_side_is_a_refusal_and_the_server_serves_on(
    hooked: LanguageClient, tmp_path: Path, kind: str, point: str
):
    ed = await start_session(hooked, kind, tmp_path)
    ed.write_file("shown.txt", "shown\n")
    closed = ed.write_file("closed.txt", "one\ntwo\n")
    ed.open("shown.txt")
    for p in ("shown.txt", "closed.txt"):
        await ed.command("agentEdit.read", {"path": p})
    raise_at(point)
    result = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert not CONTROL.exists()  # the error was raised at that step
    assert result["ok"] is False and result["code"] == "IO_ERROR", result
    assert "nothing was changed" in result["message"], result
    assert ed.text("shown.txt") == "shown\n"
    assert closed.read_text() == "one\ntwo\n"
    assert ed.apply_requests == []  # the editor was never asked
    no_temporaries(tmp_path)
    recorded = await entry(ed, result["details"]["editId"])
    assert recorded["outcome"] == "IO_ERROR", recorded
    # The server serves on, and the same edit goes through now.
    again = await ed.command("agentEdit.applyPatch", {"patch": PATCH})
    assert again["ok"], again
    assert ed.text("shown.txt") == "SHOWN\n" and closed.read_text() == "one\n2\n"
