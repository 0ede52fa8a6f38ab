"""Review (rtrust): a Move whose source names a symbolic link moves the link itself
(actions/links.py), so `Update File: lnk` + `Move to: target` (the file lnk points to) asks for
the link to go and its text to land on `target`, a file that exists. Before the fix the section
was planned as an update of target and answered ok: the link stayed, and the result's
`change: update` was not what the patch asked. Now it is refused whole like a link and its
target named by two sections (INVALID_ARGUMENT, nothing changed), through the CLI's context and
in a dry run alike."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire
from tests import result_schemas

PATCH = (
    "*** Begin Patch\n*** Update File: lnk\n*** Move to: target\n@@\n-old\n+new\n*** End Patch\n"
)


def run(root: Path, args: dict[str, Any]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, "applyPatch", args))

    return asyncio.run(go())


@pytest.mark.parametrize("dry_run", [False, True], ids=["apply", "dry-run"])
def test_a_link_moved_onto_its_own_target_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dry_run: bool
) -> None:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    root = tmp_path / "ws"
    root.mkdir()
    (root / "target").write_text("old\n")
    os.symlink("target", root / "lnk")
    result = run(root, {"patch": PATCH, "dryRun": dry_run})
    result_schemas.check("applyPatch", result)
    assert result["ok"] is False and result["code"] == "INVALID_ARGUMENT", result
    assert result["details"]["link"] == "lnk" and result["details"]["path"] == "target"
    assert "nothing was changed" in result["message"], result
    assert os.readlink(root / "lnk") == "target"
    assert (root / "target").read_text() == "old\n"
