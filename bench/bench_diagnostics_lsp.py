"""Benchmark: syntax diagnostics through the real server over stdio, with an editor-like client.

Measures, for a one-line `agentEdit.replace`:
- in a 1,000-line Python buffer: the command round trip without diagnostics (the server as
  `python -m lsp_server serve`) and with them (the same server with the diagnostics hooks wired,
  `python -m tests.diagnostics_server`); bar (issue 5): with <= 1.2x without;
- in a 100k-line Python buffer: the time from the editor applying the edit (its applyEdit handler)
  to the publishDiagnostics for it arriving; bar: <= 150 ms.

Run from the repository root: `/work/venv/bin/python bench/bench_diagnostics_lsp.py [--runs N]`.
Once lsp_server/lsp/server.py calls the hooks itself, "without" has diagnostics too.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from lsprotocol import types as t  # noqa: E402
from pytest_lsp import make_test_lsp_client  # noqa: E402

from tests.editor_client import Editor, start_session  # noqa: E402


def python_buffer(n_lines: int) -> str:
    return "".join(
        f"def f{i}(a, b):\n    x = [a, b, {i}]\n    return g(x, a) + {i}\n\n"
        for i in range(n_lines // 4)
    )


async def session(module_args: list[str], root: Path) -> Editor:
    client = make_test_lsp_client()
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    await client.start_io(sys.executable, *module_args, env=env)
    return await start_session(client, "visual-studio-code", root)


async def stop(editor: Editor) -> None:
    await editor.client.shutdown_session()


async def round_trips(servers: list[list[str]], n_lines: int, runs: int) -> list[list[float]]:
    """Replace round trips per server; the servers take turns, so machine load hits both alike."""
    with tempfile.TemporaryDirectory() as tmp:
        editors = []
        for k, module_args in enumerate(servers):
            root = Path(tmp) / str(k)
            root.mkdir()
            editors.append(await session(module_args, root))
        try:
            for editor in editors:
                editor.write_file("m.py", python_buffer(n_lines))
                editor.open("m.py", language_id="python")
                await editor.command("agentEdit.read", {"path": "m.py"})
            times: list[list[float]] = [[] for _ in servers]
            for i in range(runs + 1):
                old, new = (
                    ("[a, b, 7]", "[a, b, -7]") if i % 2 == 0 else ("[a, b, -7]", "[a, b, 7]")
                )
                for k, editor in enumerate(editors):
                    t0 = time.perf_counter()
                    result = await editor.command(
                        "agentEdit.replace", {"path": "m.py", "oldText": old, "newText": new}
                    )
                    elapsed = time.perf_counter() - t0
                    assert result["ok"], result
                    if i:  # the first one warms caches
                        times[k].append(elapsed)
            return times
        finally:
            for editor in editors:
                await stop(editor)


async def publish_latency(n_lines: int, runs: int) -> tuple[list[float], list[float]]:
    """(editor applied -> publishDiagnostics arrived, whole command round trip) per edit."""
    with tempfile.TemporaryDirectory() as tmp:
        editor = await session(["-m", "tests.diagnostics_server"], Path(tmp))
        applied_at: list[float] = []
        apply = editor._apply

        async def timed_apply(params: t.ApplyWorkspaceEditParams) -> t.ApplyWorkspaceEditResult:
            applied_at.append(time.perf_counter())
            return await apply(params)

        editor._apply = timed_apply  # type: ignore[method-assign]
        try:
            editor.write_file("big.py", python_buffer(n_lines))
            editor.open("big.py", language_id="python")
            await editor.command("agentEdit.read", {"path": "big.py"})
            await asyncio.sleep(4)  # the warm parse started by didOpen
            uri = editor.uri("big.py")
            latencies, trips = [], []
            target = n_lines // 2 + 1
            for i in range(runs):
                good = f"[a, b, {target // 4}]"
                old, new = (good, good[:-1]) if i % 2 == 0 else (good[:-1], good)
                waiting = asyncio.ensure_future(_next_publish(editor, uri))
                t0 = time.perf_counter()
                result = await editor.command(
                    "agentEdit.replace", {"path": "big.py", "oldText": old, "newText": new}
                )
                trips.append(time.perf_counter() - t0)
                assert result["ok"], result
                published_at = await asyncio.wait_for(waiting, 30)
                latencies.append(published_at - applied_at[-1])
            return latencies, trips
        finally:
            await stop(editor)


async def _next_publish(editor: Editor, uri: str) -> float:
    while True:
        params = await editor.client.wait_for_notification(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        if params.uri == uri:
            return time.perf_counter()


def ms(xs: list[float]) -> str:
    return f"median {statistics.median(xs) * 1000:7.1f} ms (min {min(xs) * 1000:.1f})"


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--big-lines", type=int, default=100_000)
    args = ap.parse_args()

    without, with_diag = await round_trips(
        [["-m", "lsp_server", "serve"], ["-m", "tests.diagnostics_server"]], 1000, args.runs
    )
    ratio = statistics.median(with_diag) / statistics.median(without)
    print(f"1,000-line buffer, replace round trip without diagnostics: {ms(without)}")
    print(f"1,000-line buffer, replace round trip with diagnostics:    {ms(with_diag)}")
    print(f"ratio with/without: {ratio:.2f} (bar: <= 1.2)")

    latencies, trips = await publish_latency(args.big_lines, max(4, args.runs // 2))
    print(
        f"{args.big_lines:,}-line buffer, editor applied -> diagnostics published: {ms(latencies)}"
    )
    print(f"{args.big_lines:,}-line buffer, whole replace round trip: {ms(trips)} (bar: 150 ms)")


if __name__ == "__main__":
    asyncio.run(main())
