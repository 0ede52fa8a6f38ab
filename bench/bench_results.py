"""Benchmark: what building an answer's JSON object costs per request, A/B between checkouts.

For each checkout given (a folder holding an `lsp_server` package: this one by default, or a
`git archive` of another revision), a fresh process imports that package and times, per
request, what every front pays to make an answer: an edit's success for a one-line replace
(built, completed with `saved` as the disk applier does, and turned into its JSON object), a
read's, and a refusal's. Where the checkout's results are typed (engine/results.py `wire`), that
includes `wire`; before, the dict was the JSON object. Prints the median microseconds of each.

    python bench/bench_results.py [--rounds N] [TREE ...]
    e.g.  git archive 0941b12 | tar -x -C /tmp/base && python bench/bench_results.py /tmp/base .
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

PROBE = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from lsp_server.engine import results
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.planner import plan_replace
from lsp_server.engine.text import Snapshot

typed = hasattr(results, "wire")
ReadResult = getattr(results, "ReadResult", None)
if typed and ReadResult is None:  # read's answer has a module of its own now
    from lsp_server.engine.read_results import ReadResult
snap = Snapshot("a.py", "".join(f"x_{i} = {i}\n" for i in range(100)))
change = plan_replace(snap, "x_50 = 50\n", "x_50 = -50\n")
diff = "diff --git a/a.py b/a.py\n"
err = EditError(Code.STALE, "a.py changed since it was read.", "Read it again.", {"path": "a.py"})
rounds = int(sys.argv[2])

def edit():
    r = results.success(7, "applied", [change], {}, diff=diff)
    if typed:
        from dataclasses import replace
        return results.wire(replace(r, saved=True))
    r["saved"] = True
    return r

def read():
    fields = dict(path="a.py", text=snap.text, version=None, sha256=snap.sha256, source="disk",
                  eol="lf", bom=False, lines=100, start_line=1, end_line=100)
    if typed:
        return results.wire(ReadResult(**fields))
    return {"ok": True, "path": "a.py", "text": snap.text, "version": None, "sha256": snap.sha256,
            "source": "disk", "eol": "lf", "bom": False, "lines": 100, "startLine": 1,
            "endLine": 100}

def refusal():
    return err.to_result()

out = {}
for name, fn in (("edit", edit), ("read", read), ("refusal", refusal)):
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(100):
            fn()
        times.append((time.perf_counter() - t) / 100 * 1e6)
    out[name] = statistics.median(times)
print(json.dumps({"typed": typed, **out}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("trees", nargs="*", default=[str(REPO)])
    args = ap.parse_args()
    for tree in args.trees:
        proc = subprocess.run(
            [sys.executable, "-c", PROBE, str(Path(tree).resolve()), str(args.rounds)],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(proc.stdout)
        kind = "typed + wire" if r["typed"] else "dicts"
        print(
            f"{tree} ({kind}): edit {r['edit']:.2f} us, read {r['read']:.2f} us, "
            f"refusal {r['refusal']:.2f} us per answer (median)"
        )


if __name__ == "__main__":
    main()
