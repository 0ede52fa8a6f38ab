"""Review of mcp/drain.py: the end of stdin held back exactly as long as the SDK still owes an
answer; never shorter (an answer dropped for work that was done), never longer (a 60 s hang).

Each case feeds the Drain the messages the SDK's stdio transport yields, then asks whether
`all_answered` is still waiting once every task is blocked (no clock: anyio's
`wait_all_tasks_blocked`).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from lsp_server.mcp.drain import Drain
from tests.mcp.mcp_helpers import mcp_env


def _msg(raw: str) -> SessionMessage:
    return SessionMessage(types.jsonrpc_message_adapter.validate_json(raw, by_name=False))


def _request(ident: str) -> SessionMessage:
    return _msg(f'{{"jsonrpc":"2.0","id":{ident},"method":"tools/list"}}')


def _answer(ident: str) -> SessionMessage:
    return _msg(f'{{"jsonrpc":"2.0","id":{ident},"result":{{}}}}')


def _cancel(ident: str) -> SessionMessage:
    params = '{"requestId":' + ident + "}"
    return _msg('{"jsonrpc":"2.0","method":"notifications/cancelled","params":' + params + "}")


def _holds(drain: Drain) -> bool:
    """Whether the drain still holds EOF back once nothing else can happen."""
    done = False

    async def main() -> None:
        nonlocal done
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                nonlocal done
                await drain.all_answered()
                done = True

            tg.start_soon(wait)
            await anyio.wait_all_tasks_blocked()
            tg.cancel_scope.cancel()

    anyio.run(main)
    return not done


def _fed(read: list[SessionMessage], wrote: list[SessionMessage] | None = None) -> Drain:
    drain = Drain()
    for item in read:
        drain.read(item)
    for item in wrote or []:
        drain.wrote(item)
    return drain


def test_the_harness_sees_both_outcomes() -> None:
    assert _holds(_fed([_request("1")]))
    assert not _holds(_fed([_request("1")], [_answer("1")]))


def test_a_cancel_naming_the_id_as_a_string_settles_it() -> None:
    # The SDK coerces "1" to 1 (coerce_request_id) and cancels request 1: no answer will come.
    assert not _holds(_fed([_request("1"), _cancel('"1"')]))
    assert not _holds(_fed([_request('"7"'), _cancel("7")]))


def test_a_cancel_the_sdk_ignores_settles_nothing() -> None:
    # `true` and 1.0 cancel nothing in the SDK (as_request_id); request 1 is still answered.
    for junk in ("true", "1.0", "null", '{"a":1}'):
        assert _holds(_fed([_request("1"), _cancel(junk)])), junk


def test_a_duplicate_id_stays_due_until_its_second_answer() -> None:
    assert _holds(_fed([_request("5"), _request("5")], [_answer("5")]))
    assert not _holds(_fed([_request("5"), _request("5")], [_answer("5"), _answer("5")]))


def test_string_and_int_ids_of_one_value_are_two_requests() -> None:
    both = [_request('"1"'), _request("1")]
    assert _holds(_fed(both, [_answer('"1"')]))
    assert not _holds(_fed(both, [_answer('"1"'), _answer("1")]))


def test_ids_of_every_kind_the_sdk_takes() -> None:
    for ident in ("0", "-3", "123456789012345678901234567890", '""', '"\\u00e9"', '"x y"'):
        assert _holds(_fed([_request(ident)])), ident
        assert not _holds(_fed([_request(ident)], [_answer(ident)])), ident


def test_a_late_cancel_after_the_answer_is_harmless() -> None:
    drain: Any = _fed([_request("1"), _request("2")], [_answer("1")])
    drain.read(_cancel("1"))
    assert _holds(drain)  # 2 is still due
    drain.wrote(_answer("2"))
    assert not _holds(drain)


def _serve(tmp_path: Path, lines: list[str]) -> tuple[dict[Any, Any], str]:
    """`agent-edit mcp` fed `lines` and then EOF at once: its answers by id, and stderr."""
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "review", "version": "0"},
        },
    }
    wire = [json.dumps(init), '{"jsonrpc":"2.0","method":"notifications/initialized"}', *lines]
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "mcp", "--root", str(tmp_path)],
        input="".join(line + "\n" for line in wire),
        capture_output=True,
        text=True,
        env=mcp_env(),
        cwd=str(tmp_path),
        timeout=120,  # a safety net only: a hang fails here instead of blocking the suite
    )
    answers = {}
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if "id" in message:
            answers[json.dumps(message["id"])] = message
    return answers, done.stderr


def test_a_cancel_naming_a_list_does_not_end_the_server(tmp_path: Path) -> None:
    # The old drain put the requestId into a set: a list raised TypeError in the read loop,
    # the server died and the request read before got no answer.
    answers, err = _serve(
        tmp_path,
        [
            '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
            '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[1]}}',
            '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
        ],
    )
    assert "Traceback" not in err, err
    assert "result" in answers["1"] and "result" in answers["2"], (answers, err)


def test_the_drain_outwaits_the_editor(tmp_path: Path) -> None:
    # A call through the editor waits ANSWER_TIMEOUT_S (120 s) and then answers TIMEOUT, "the
    # edit may still land"; a drain ending first gave the SDK's bare "Connection closed" instead.
    probe = (
        "from lsp_server.mcp import drain, router; "
        "print(drain.DRAIN_LIMIT_S > router.ANSWER_TIMEOUT_S)"
    )
    for timeout in ("", "30", "600"):
        env = {**mcp_env(), "AGENT_EDIT_MCP_TIMEOUT_S": timeout}
        out = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
        )
        assert out.stdout.strip() == "True", (timeout, out.stdout, out.stderr)
