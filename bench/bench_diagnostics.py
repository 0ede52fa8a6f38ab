"""Benchmark: syntax diagnostics after a one-line edit in a 100k-line Python buffer.

Bar (issue 5): diagnostics published <= 150 ms after the edit. Prints medians of
- a full parse + error extraction (what a server without incremental parsing pays per edit),
- the incremental path per edit: LineEdit -> tree.edit, reparse, error extraction, and the
  "introduced by this edit" filter, for an edit that breaks the syntax and one that fixes it;
- the server's path (`lsp_server/lsp/diagnostics.py`, minus the JSON-RPC write): a planned
  replace (FileChange) analysed from whole texts (byte diff -> incremental reparse), with its
  problems converted to LSP diagnostics.

Run from the repository root: `/work/venv/bin/python bench/bench_diagnostics.py [--runs N]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_server.engine.model import LineEdit, apply_line_edits  # noqa: E402
from lsp_server.engine.planner import plan_replace  # noqa: E402
from lsp_server.engine.syntax import (  # noqa: E402
    DocumentSyntax,
    introduced_errors,
    load_language,
)
from lsp_server.engine.text import Snapshot, split_lines  # noqa: E402
from lsp_server.lsp.diagnostics import SyntaxDiagnostics, to_lsp_diagnostic  # noqa: E402


def make_buffer(n_lines: int) -> str:
    funcs = n_lines // 4
    return "".join(
        f"def f{i}(a, b):\n    x = [a, b, {i}]\n    return g(x, a) + {i}\n\n" for i in range(funcs)
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()

    text = make_buffer(args.lines)
    lines = split_lines(text)
    load_language("python")
    print(f"buffer: {len(lines) - 1:,} lines, {len(text.encode()):,} bytes; runs: {args.runs}")

    full: list[float] = []
    for _ in range(max(3, args.runs // 3)):
        t0 = time.perf_counter()
        DocumentSyntax("python", text).problems()
        full.append(time.perf_counter() - t0)

    syntax = DocumentSyntax("python", text)
    assert syntax.problems() == []
    target = len(lines) // 2 + 1  # a "    x = [a, b, i]" line in the middle
    good = lines[target]
    assert good.startswith("    x = ["), good
    bad = good.replace("]", "")

    breaking: list[float] = []
    fixing: list[float] = []
    messages: list[str] = []
    for _ in range(args.runs):
        for new, sink in ((bad, breaking), (good, fixing)):
            edit = LineEdit(target, target + 1, (new,))
            before = syntax.problems()
            t0 = time.perf_counter()
            syntax.apply_line_edits(lines, [edit])
            after = syntax.problems()
            introduced = introduced_errors(before, after, [edit])
            sink.append(time.perf_counter() - t0)
            lines = apply_line_edits(lines, [edit])
            if introduced:
                messages = [f"{p.line}:{p.column} {p.message}" for p in introduced]
    assert syntax.problems() == []

    print(f"full parse + extraction          median {ms(statistics.median(full))}")
    print(f"incremental, breaking edit       median {ms(statistics.median(breaking))}")
    print(f"incremental, fixing edit         median {ms(statistics.median(fixing))}")
    print(f"(worst incremental: {ms(max(breaking + fixing))}; bar: 150 ms)")
    print(f"introduced by the breaking edit: {messages}")

    # The server's path: whole texts in, diff -> incremental reparse, LSP diagnostics out.
    glue = SyntaxDiagnostics()
    snap = Snapshot("big.py", "".join(lines), source="buffer", version=1, given_lines=lines)
    glue.problems_of("/big.py", "python", snap.text)  # the warm parse didOpen starts
    server_path: list[float] = []
    for i in range(args.runs):
        old, new = (good, bad) if i % 2 == 0 else (bad, good)
        change = plan_replace(snap, old, new)
        t0 = time.perf_counter()
        after, introduced = glue.analyse(change, "/big.py", "python")
        _ = [to_lsp_diagnostic(p) for p in after]
        server_path.append(time.perf_counter() - t0)
        snap = Snapshot("big.py", change.new_text, "buffer", i + 2, given_lines=change.new_lines)
    print(f"server path (analyse + LSP diags) median {ms(statistics.median(server_path))}")


if __name__ == "__main__":
    main()
