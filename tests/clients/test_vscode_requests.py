"""The VS Code extension's tool results when the server gives none: a request never sent says
nothing was changed; one sent and left without an answer never says so.

A tool call made while the server's start had failed (a wrong Python, the common first run)
waited for the server without end; stopped by the person, it was still sent, and its edit
landed, once they fixed the setting. And a call whose server died mid-request answered
`ok: false` with no word that the edit may have landed. src/tools.ts over src/requests.ts,
bundled with esbuild and run in Node against a stand-in of the few `vscode` parts they touch
(tests/vscode/requests); the real extension host is tested in test_vscode_e2e.py."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
EXT = REPO / "editor_clients" / "vscode"
HERE = REPO / "tests" / "vscode" / "requests"
TOOLS = Path(os.environ.get("AGENT_EDIT_VSCODE_TOOLS", "/opt/agent-edit-vscode"))


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    node, esbuild = TOOLS / "node-bin" / "node", EXT / "node_modules" / ".bin" / "esbuild"
    missing = [str(p) for p in (node, esbuild) if not p.exists()]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: run `bash .ci/setup-vscode.sh` first")
    out = tmp_path_factory.mktemp("vscode-requests") / "scenarios.js"
    env = dict(os.environ, PATH=f"{node.parent}{os.pathsep}{os.environ['PATH']}")
    subprocess.run(
        [str(esbuild), str(HERE / "scenarios.ts"), "--bundle", "--platform=node", "--format=cjs",
         f"--alias:vscode={HERE / 'vscode_stub.js'}", f"--outfile={out}", "--log-level=warning"],
        check=True, env=env, timeout=60,
    )  # fmt: skip
    proc = subprocess.run(
        [str(node), str(out)], capture_output=True, text=True, env=env, timeout=60, check=True
    )
    seen: dict[str, Any] = {}
    for line in proc.stdout.splitlines():
        seen.update(json.loads(line))
    return seen


def scenario(seen: dict[str, Any], name: str) -> Any:
    assert name in seen, f"scenario {name}: the call never settled"
    return seen[name]


def test_a_call_while_the_start_has_failed_answers_at_once_and_sends_nothing(
    seen: dict[str, Any],
) -> None:
    got = scenario(seen, "failedStart")
    assert got["sent"] == 0
    res = got["result"]
    assert res["ok"] is False and res["code"] == "NO_SERVER", res
    assert res["committed"] == [] and "nothing was changed" in res["message"], res
    assert "agentEdit.server.python" in res["hint"], res


def test_a_call_cancelled_while_the_server_starts_is_never_sent(seen: dict[str, Any]) -> None:
    got = scenario(seen, "cancelledWhileStarting")
    assert got["sent"] == 0, "a cancelled call was sent once the server ran"
    res = got["result"]
    assert res["ok"] is False and res["code"] == "CANCELLED", res
    assert res["committed"] == [] and "nothing was changed" in res["message"], res


def test_a_call_waits_for_a_start_under_way(seen: dict[str, Any]) -> None:
    got = scenario(seen, "waitsForAStartUnderWay")
    assert got["sentBefore"] == 0 and got["sent"] == ["agentEdit.write"], got
    assert got["result"]["ok"] is True and got["result"]["editId"] == "e1", got


def test_a_new_start_after_a_failed_one_is_waited_for(seen: dict[str, Any]) -> None:
    got = scenario(seen, "aNewStartAfterAFailedOne")
    assert got["sent"] == 1 and got["result"]["ok"] is True, got


def test_an_edit_left_without_an_answer_never_says_nothing_was_changed(
    seen: dict[str, Any],
) -> None:
    res = scenario(seen, "noAnswer_write")
    assert res["ok"] is False and res["code"] == "SERVER_ERROR", res
    assert "committed" not in res, res
    assert "nothing was changed" not in json.dumps(res)
    assert "may or may not have been applied" in res["hint"], res
    assert "Connection got disposed" in res["message"], res
    read = scenario(seen, "noAnswer_read")
    assert read["code"] == "SERVER_ERROR" and "may or may not" not in read["hint"], read


def test_invalid_params_changed_nothing(seen: dict[str, Any]) -> None:
    res = scenario(seen, "invalidParams")
    assert res["ok"] is False and res["code"] == "INVALID_ARGUMENT" and res["committed"] == [], res
