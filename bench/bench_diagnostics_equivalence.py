"""The region-check equivalence property over many random edits, every shipped grammar.

Runs tests/syntax_corpus.py `differential` (the property the CI test samples): random edits of
real-looking files; after each, the region check and a full parse. It stops with an
AssertionError at the first violation (a clean region where the full parse finds errors, or
errors after the fallback that differ from the full parse's). Prints the counts per grammar:
clean regions, regions with errors (and how many of those already equal the full parse's
introduced errors; how many were errors where the file is clean), and fallbacks.

Run from the repository root:
    .venv/bin/python bench/bench_diagnostics_equivalence.py [--edits-per-file 100] [--files 4]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_server.engine.syntax import GRAMMARS  # noqa: E402
from tests.syntax_corpus import differential  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--edits-per-file", type=int, default=100)
    ap.add_argument("--files", type=int, default=4, help="random seeds per grammar")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    total: dict[str, int] = {}
    t0 = time.perf_counter()
    for language in sorted(GRAMMARS):
        counts: dict[str, int] = {}
        for k in range(args.files):
            stats = differential(language, args.seed * 1000 + k, args.edits_per_file)
            for key, value in stats.items():
                counts[key] = counts.get(key, 0) + value
        for key, value in counts.items():
            total[key] = total.get(key, 0) + value
        print(f"{language:11} {counts}")
    print(f"all         {total}  ({time.perf_counter() - t0:.1f} s): property held")


if __name__ == "__main__":
    main()
