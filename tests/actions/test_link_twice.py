"""A patch whose Delete File (or Move source) names a symbolic link, and whose other section
names the file that link points to, is refused whole: the Delete acts on the link itself
(actions/links.py), so the two sections name two files that are one, and what the patch means
(the link gone and a new file? the file rewritten?) is a guess. Before, Delete lnk + Add target
was merged into an update of target and the link survived: not what either section said."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire

DELETE_LINK_ADD_TARGET = (
    "*** Begin Patch\n*** Delete File: lnk\n*** Add File: target\n+new\n*** End Patch\n"
)
TWICE = {
    "delete link, add target": DELETE_LINK_ADD_TARGET,
    "delete link, add link": (
        "*** Begin Patch\n*** Delete File: lnk\n*** Add File: lnk\n+new\n*** End Patch\n"
    ),
    "delete link, update target": (
        "*** Begin Patch\n*** Delete File: lnk\n*** Update File: target\n@@\n-old\n+new\n"
        "*** End Patch\n"
    ),
    "update target, delete link": (
        "*** Begin Patch\n*** Update File: target\n@@\n-old\n+new\n*** Delete File: lnk\n"
        "*** End Patch\n"
    ),
    "move link, add target": (
        "*** Begin Patch\n*** Update File: lnk\n*** Move to: moved\n@@\n-old\n+new\n"
        "*** Add File: target\n+again\n*** End Patch\n"
    ),
}


def workspace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "target").write_text("old\n")
    os.symlink("target", root / "lnk")
    return root


def tree(root: Path) -> dict[str, str]:
    out = {}
    for name in sorted(os.listdir(root)):
        p = root / name
        if not name.startswith("."):
            out[name] = "-> " + os.readlink(p) if p.is_symlink() else p.read_text()
    return out


def run(root: Path, args: dict[str, Any]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, "applyPatch", args))

    return asyncio.run(go())


@pytest.mark.parametrize("dry_run", [False, True], ids=["apply", "dry-run"])
@pytest.mark.parametrize("patch", list(TWICE.values()), ids=list(TWICE))
def test_a_link_and_its_target_in_one_patch_are_refused_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, patch: str, dry_run: bool
) -> None:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    root = workspace(tmp_path / "ws")
    result = run(root, {"patch": patch, "dryRun": dry_run})
    assert result["ok"] is False and result["code"] == "INVALID_ARGUMENT", result
    assert result["details"]["argument"] == "patch"
    assert "lnk" in result["message"] and "target" in result["message"], result
    assert "link" in result["message"] and "nothing was changed" in result["message"]
    assert tree(root) == {"lnk": "-> target", "target": "old\n"}


def test_the_file_named_directly_twice_is_still_a_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Delete then Add of one name (no link section) stays the rewrite idiom (product.md 4),
    and a link that no Delete or Move names is only a way to its file."""
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    root = workspace(tmp_path / "ws")
    patch = "*** Begin Patch\n*** Delete File: target\n*** Add File: target\n+new\n*** End Patch\n"
    result = run(root, {"patch": patch})
    assert result["ok"], result
    assert tree(root) == {"lnk": "-> target", "target": "new\n"}
