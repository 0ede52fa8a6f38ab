"""A headless patch acts on the files its sections name: a symbolic link named elsewhere in the
request (an `expect` key, another section's Move to) never turns a Delete File of the file it
points to into a removal of the link."""

from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path
from typing import Any

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire


def _run(root: Path, args: dict[str, Any]) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, "applyPatch", args))

    return asyncio.run(go())


def _tree(root: Path) -> dict[str, str]:
    out = {}
    for name in sorted(os.listdir(root)):
        p = root / name
        if name.startswith("."):
            continue
        out[name] = "-> " + os.readlink(p) if p.is_symlink() else p.read_text()
    return out


def test_expect_naming_a_link_does_not_redirect_a_delete(tmp_path: Path) -> None:
    (tmp_path / "target.txt").write_text("keep me\n")
    os.symlink("target.txt", tmp_path / "lnk")
    sha = hashlib.sha256(b"keep me\n").hexdigest()
    patch = "*** Begin Patch\n*** Delete File: target.txt\n*** End Patch\n"
    result = _run(tmp_path, {"patch": patch, "expect": {"lnk": {"sha256": sha}}})
    assert result["ok"], result
    # Before: the link was removed (reported as `lnk`) and target.txt, the file named, kept.
    assert [f["path"] for f in result["files"]] == ["target.txt"]
    assert _tree(tmp_path) == {"lnk": "-> target.txt"}


def test_delete_of_the_link_itself_still_removes_the_link(tmp_path: Path) -> None:
    (tmp_path / "target.txt").write_text("keep me\n")
    os.symlink("target.txt", tmp_path / "lnk")
    sha = hashlib.sha256(b"keep me\n").hexdigest()
    patch = "*** Begin Patch\n*** Delete File: lnk\n*** End Patch\n"
    # target.txt named directly outside the patch: the patch's own Delete of the link decides.
    result = _run(tmp_path, {"patch": patch, "expect": {"target.txt": {"sha256": sha}}})
    assert result["ok"], result
    assert [f["path"] for f in result["files"]] == ["lnk"]
    assert _tree(tmp_path) == {"target.txt": "keep me\n"}
