"""`agent-edit mcp` benchmarks (issue 16 bars).

(a) A one-line replace in an open 100-line buffer, and a read of it (each caller its own
    file), through `agent-edit mcp` (SDK stdio client -> the MCP process -> the editor's
    server's endpoint -> applyEdit -> didChange -> verified) against the same LSP command's
    round trip from the editor itself.
    Bar: MCP <= 1.5x LSP + 10 ms.
(b) `agent-edit mcp` start-up: spawn to the `initialize` answer, against `agent-edit --help`'s
    whole run. Bar: <= 1.5x. The answer comes before the MCP SDK has loaded
    (lsp_server/mcp/handshake.py); also printed, with no bar: spawn to the answer of a
    `tools/list` sent right after `notifications/initialized` (the SDK loaded and serving).

Prints medians; run from the repository root: `python bench/bench_mcp.py`.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from examples.mini_editor import MiniEditor  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def make_text(n: int) -> str:
    return "".join(f"    value_{i} = compute(alpha, beta, gamma) + {i}\n" for i in range(n))


def env(tmp: str) -> dict[str, str]:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(REPO) + os.pathsep + e.get("PYTHONPATH", "")
    e["AGENT_EDIT_STATE_DIR"] = str(Path(tmp) / "state")
    e["AGENT_EDIT_RUNTIME_DIR"] = str(Path(tmp) / "run")
    return e


async def bench_calls(reps: int) -> dict[str, float]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        (root / "a.txt").write_text(make_text(100))  # the editor's own agent edits this one
        (root / "b.txt").write_text(make_text(100))  # the MCP client this one
        os.environ.update(env(tmp))  # the editor's server (MiniEditor) inherits it
        editor = MiniEditor(root)
        await editor.start(state_dir=str(Path(tmp) / "state"))
        try:
            editor.open("a.txt", "plaintext")
            editor.open("b.txt", "plaintext")
            await editor.command("agentEdit.read", {"path": "a.txt"})
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "lsp_server", "mcp", "--root", str(root)],
                env=env(tmp),
                cwd=str(root),
            )
            async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
                await s.initialize()
                res = await s.call_tool("read", {"path": "b.txt"})
                assert res.structured_content and res.structured_content["via"] == "editor"
                out: dict[str, list[float]] = {k: [] for k in ("lsp", "mcp", "lsp-r", "mcp-r")}
                texts = {"lsp": ["value_50 = compute", "value_50 = recompute"]}
                texts["mcp"] = list(texts["lsp"])
                for _ in range(reps):
                    for how in ("lsp", "mcp"):
                        cur, other = texts[how]
                        path = "a.txt" if how == "lsp" else "b.txt"
                        args = {"path": path, "oldText": cur, "newText": other}
                        start = time.perf_counter()
                        if how == "lsp":
                            result = await editor.command("agentEdit.replace", args)
                        else:
                            result = (await s.call_tool("replace", args)).structured_content
                        out[how].append(time.perf_counter() - start)
                        assert result and result["ok"], result
                        texts[how] = [other, cur]
                    start = time.perf_counter()
                    await editor.command("agentEdit.read", {"path": "a.txt"})
                    out["lsp-r"].append(time.perf_counter() - start)
                    start = time.perf_counter()
                    await s.call_tool("read", {"path": "b.txt"})
                    out["mcp-r"].append(time.perf_counter() - start)
        finally:
            await editor.stop()
    return {k: statistics.median(v[3:]) * 1000 for k, v in out.items()}


def bench_startup(reps: int) -> tuple[float, float, float]:
    init = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        }
    )
    then = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    then += b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
    mcp_times, help_times, ready_times = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        e = env(tmp)
        for _ in range(reps):
            start = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "lsp_server", "mcp", "--root", tmp],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=e,
            )
            assert proc.stdin and proc.stdout
            proc.stdin.write(init.encode() + b"\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            mcp_times.append(time.perf_counter() - start)
            assert b'"result"' in line, line
            proc.stdin.write(then)
            proc.stdin.flush()
            line = proc.stdout.readline()
            ready_times.append(time.perf_counter() - start)
            assert b'"tools"' in line, line
            proc.stdin.close()
            proc.wait(30)
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "lsp_server", "--help"], env=e, capture_output=True
            )
            help_times.append(time.perf_counter() - start)
    mcp_ms, help_ms, ready_ms = (
        statistics.median(t) * 1000 for t in (mcp_times, help_times, ready_times)
    )
    return mcp_ms, help_ms, ready_ms


def main() -> None:
    got = asyncio.run(bench_calls(40))
    print("(a) through the editor's server, open 100-line buffer (median)")
    for what, lsp, mcp in (("replace", "lsp", "mcp"), ("read", "lsp-r", "mcp-r")):
        bar = 1.5 * got[lsp] + 10
        verdict = "within" if got[mcp] <= bar else "OVER"
        print(
            f"    {what:<8} LSP {got[lsp]:7.2f} ms   MCP {got[mcp]:7.2f} ms   "
            f"ratio {got[mcp] / got[lsp]:.2f}x   bar {bar:.2f} ms: {verdict}"
        )
    mcp_ms, help_ms, ready_ms = bench_startup(7)
    verdict = "within" if mcp_ms <= 1.5 * help_ms else "OVER"
    print("(b) start-up (median)")
    print(
        f"    agent-edit mcp to initialize answer {mcp_ms:7.1f} ms   agent-edit --help "
        f"{help_ms:7.1f} ms   ratio {mcp_ms / help_ms:.2f}x   bar 1.5x: {verdict}"
    )
    print(f"    agent-edit mcp to tools/list answer {ready_ms:7.1f} ms (the SDK loaded; no bar)")


if __name__ == "__main__":
    main()
