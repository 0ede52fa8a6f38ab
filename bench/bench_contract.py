"""Benchmark: the cost of checking a command's arguments (lsp/arguments.parse), per request.

Every LSP command is checked against the contract before anything else runs; this prints the
median microseconds per check for three typical requests, and with `--against REV` the same for
that revision's lsp/arguments.py (loaded from git into a temporary module), in the same run.

    .venv/bin/python bench/bench_contract.py [--against 88c6be5]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lsp_server.lsp import arguments  # noqa: E402

REQUESTS: dict[str, tuple[str, tuple[Any, ...]]] = {
    "read": ("agentEdit.read", ({"path": "src/a.py"},)),
    "replace": (
        "agentEdit.replace",
        (
            {
                "path": "src/a.py",
                "oldText": "x = 1\n" * 20,
                "newText": "y\n",
                "expect": {"version": 3},
            },
        ),
    ),
    "applyPatch, 5k lines": (
        "agentEdit.applyPatch",
        (
            {
                "patch": "*** Begin Patch\n" + "+x\n" * 5000 + "*** End Patch\n",
                "expect": {"a": {"sha256": "ab" * 32}, "b": {"version": 1}},
            },
        ),
    ),
}


def load(rev: str) -> Any:
    text = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:lsp_server/lsp/arguments.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "arguments_then.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("arguments_then", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


def micros(parse: Any, command: str, args: tuple[Any, ...], n: int = 20_000) -> float:
    runs = timeit.repeat(lambda: parse(command, args), number=n, repeat=7)
    return statistics.median(runs) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--against", help="a revision whose lsp/arguments.py to time alongside")
    opts = ap.parse_args()
    then = load(opts.against) if opts.against else None
    print("arguments.parse, median microseconds per request")
    for label, (command, args) in REQUESTS.items():
        now = micros(arguments.parse, command, args)
        line = f"    {label:22} now {now:6.2f} us"
        if then is not None:
            line += f"   {opts.against} {micros(then.parse, command, args):6.2f} us"
        print(line)


if __name__ == "__main__":
    main()
