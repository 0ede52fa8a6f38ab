"""Benchmark: syntax diagnostics after one-line edits of Python buffers, engine and server path.

Per size (default 1k / 10k / 100k lines), medians of, separately for
- clean -> clean edits (a value changed: what most agent edits are),
- breaking edits (a ']' dropped from a clean file),
- fixes (the ']' put back into the broken file),
the cost on the request path (`DocumentSyntax.apply_line_edits` + `check()`: a region check, or
nothing when a whole check is due) and, where a whole check follows off the request path, that
(`parse_detached`, run in a worker thread by the server). For comparison, the whole incremental
reparse every edit used to cost (`problems()` on the same edits). Then the server's path
(`SyntaxDiagnostics.analyse` of a planned replace, as `publish_after_edit` runs it).

Run from the repository root: `.venv/bin/python bench/bench_diagnostics.py [--runs N]`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_server.engine.model import LineEdit  # noqa: E402
from lsp_server.engine.planner import plan_replace  # noqa: E402
from lsp_server.engine.syntax import DocumentSyntax, load_language  # noqa: E402
from lsp_server.engine.text import Snapshot, split_lines  # noqa: E402
from lsp_server.lsp.diagnostics import SyntaxDiagnostics  # noqa: E402


def make_buffer(n_lines: int) -> str:
    return "".join(
        f"def f{i}(a, b):\n    x = [a, b, {i}]\n    return g(x, a) + {i}\n\n"
        for i in range(n_lines // 4)
    )


def med(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1000:8.2f} ms" if xs else "       -   "


def engine(n_lines: int, runs: int) -> None:
    text = make_buffer(n_lines)
    lines = split_lines(text)
    syn = DocumentSyntax("python", text, region_above=0)
    old = DocumentSyntax("python", text)  # the whole incremental reparse per edit
    assert syn.problems() == [] and old.problems() == []
    k = len(lines) // 2 + 1
    good = lines[k]
    assert good.startswith("    x = ["), good
    other = good.replace("]", " + 1]")
    bad = good.replace("]", "")
    rows: dict[str, dict[str, list[float]]] = {
        kind: {"request": [], "whole": [], "old": []} for kind in ("clean", "break", "fix")
    }
    current = good
    for i in range(runs):
        steps = [("clean", other if current == good else good)]
        current = steps[0][1]
        steps += [("break", bad), ("fix", current)]
        for kind, new in steps:
            edit = [LineEdit(k, k + 1, (new,))]
            t0 = time.perf_counter()
            syn.apply_line_edits(None, edit)
            check = syn.check()
            rows[kind]["request"].append(time.perf_counter() - t0)
            if check.status == "pending" or check.problems:
                t0 = time.perf_counter()
                syn.parse_detached()
                rows[kind]["whole"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            old.apply_line_edits(None, edit)
            old.problems()
            rows[kind]["old"].append(time.perf_counter() - t0)
            if i == 0:
                print(f"    {kind:5}: check says {check.status}, {len(check.problems)} problem(s)")
    for kind, row in rows.items():
        print(
            f"  {kind:5} request path {med(row['request'])} | whole check off the path "
            f"{med(row['whole'])} | before (whole reparse per edit) {med(row['old'])}"
        )


def server_path(n_lines: int, runs: int) -> None:
    text = make_buffer(n_lines)
    glue = SyntaxDiagnostics()
    snap = Snapshot("big.py", text, source="buffer", version=1)
    glue.problems_of("/big.py", "python", text)  # the parse didOpen starts
    syn = glue.syntax("/big.py")
    assert syn is not None
    syn.text_id = snap.sha256
    k = n_lines // 8
    good, other = f"[a, b, {k}]", f"[a, b, -{k}]"
    times: list[float] = []
    for i in range(runs):
        old, new = (good, other) if i % 2 == 0 else (other, good)
        change = plan_replace(snap, old, new)
        change.new_sha256  # noqa: B018 - carry_out has it before diagnostics run
        t0 = time.perf_counter()
        analysis = glue.analyse(change, "/big.py", "python")
        times.append(time.perf_counter() - t0)
        assert not analysis.pending and not analysis.introduced, analysis
        snap = Snapshot("big.py", change.new_text, "buffer", i + 2)
        snap.__dict__["sha256"] = change.new_sha256
    print(f"  server path (analyse of a planned replace) {med(times)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    load_language("python")
    for n in (int(s) for s in args.sizes.split(",")):
        print(f"{n:,} lines ({len(make_buffer(n).encode()):,} bytes), {args.runs} runs:")
        engine(n, args.runs)
        server_path(n, args.runs)


if __name__ == "__main__":
    main()
