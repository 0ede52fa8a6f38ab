"""Benchmark: in-process `v4a.parse_patch`, best of N CPU times, on four patch shapes, optionally
A/B against another checkout (its `lsp_server` imported in the same process, runs alternating).

Workloads: bench_patch's "many" (1,000 files x 5 chunks, 46k lines) and "big" (1,000 chunks on
one file, 9k lines); "small" (3,000 files, one anchored one-line chunk each); "mixed" (1,000
each of Add File, Delete File and Update File with Move to and End of File). The A/B also
checks both give the same hunks (compared by repr: the classes are the two copies').

    .venv/bin/python bench/bench_parse.py [--runs 15] [--against /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent


def _small() -> str:
    out = ["*** Begin Patch\n"]
    for i in range(3000):
        out.append(f"*** Update File: s/f{i}.py\n@@ def f{i}():\n-    return {i}\n")
        out.append(f"+    return {i + 1}\n")
    out.append("*** End Patch\n")
    return "".join(out)


def _mixed() -> str:
    out = ["*** Begin Patch\n"]
    for i in range(1000):
        out.append(f"*** Add File: new/a{i}.py\n+x = {i}\n+y = {i}\n+\n+z = 1\n")
        out.append(f"*** Delete File: old/d{i}.py\n")
        out.append(f"*** Update File: u/m{i}.py\n*** Move to: v/m{i}.py\n@@\n a\n-b\n+c\n")
        out.append("*** End of File\n")
    out.append("*** End Patch\n")
    return "".join(out)


def workloads(tmp: str) -> dict[str, str]:
    sys.path.insert(0, str(HERE))
    import bench_patch

    root = Path(tmp)
    return {
        "many": bench_patch.make_many(root / "many"),
        "big": bench_patch.make_big(root / "big"),
        "small": _small(),
        "mixed": _mixed(),
    }


def _load(tree: Path) -> ModuleType:
    for name in [n for n in sys.modules if n == "lsp_server" or n.startswith("lsp_server.")]:
        del sys.modules[name]
    sys.path.insert(0, str(tree))
    try:
        return importlib.import_module("lsp_server.engine.v4a")
    finally:
        sys.path.pop(0)


def _best(parse: Any, text: str, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        c0 = time.process_time()
        parse(text)
        best = min(best, time.process_time() - c0)
    return best * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--against", type=Path, help="another checkout to A/B with (printed first)")
    args = ap.parse_args()
    mods = ([_load(args.against)] if args.against else []) + [_load(HERE.parent)]
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in workloads(tmp).items():
            answers = {repr(m.parse_patch(text)) for m in mods}
            assert len(answers) == 1, f"{name}: the checkouts parse it differently"
            best = [float("inf")] * len(mods)
            for _ in range(args.runs):  # alternating, so both share the machine's noise
                for k, m in enumerate(mods):
                    best[k] = min(best[k], _best(m.parse_patch, text, 1))
            figures = "  ".join(f"{b:7.2f} ms" for b in best)
            ratio = f"  {best[0] / best[-1]:.2f}x" if len(mods) > 1 else ""
            print(f"{name:6} {text.count(chr(10)):6} lines: {figures}{ratio}", flush=True)


if __name__ == "__main__":
    main()
