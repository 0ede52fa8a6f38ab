"""An earlier commit's engine, taken from git and imported beside today's under another package
name, for differential tests (the same inputs through both must give the same answers).

Needs the repository's history: `engine_from_git` returns None where `git archive` cannot give
the commit (a shallow clone), and the tests skip rather than fail.
"""

from __future__ import annotations

import importlib
import io
import os
import subprocess
import sys
import tarfile
from types import ModuleType

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def engine_from_git(
    commit: str, package: str, modules: tuple[str, ...], base: str
) -> dict[str, ModuleType] | None:
    """`lsp_server/engine` of `commit`, extracted under `base` as the package `package` (each
    `lsp_server.` import in it renamed), and its `modules` imported: {name: module}."""
    try:
        out = subprocess.run(
            ["git", "-C", ROOT, "archive", commit, "lsp_server/__init__.py", "lsp_server/engine"],
            capture_output=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    with tarfile.open(fileobj=io.BytesIO(out.stdout)) as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            data = tar.extractfile(member).read()  # type: ignore[union-attr]
            name = package + member.name[len("lsp_server") :]
            if name.endswith(".py"):
                data = data.replace(b"lsp_server.", package.encode() + b".")
            path = os.path.join(base, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
    sys.path.insert(0, base)
    try:
        return {m: importlib.import_module(f"{package}.engine.{m}") for m in modules}
    finally:
        sys.path.remove(base)
