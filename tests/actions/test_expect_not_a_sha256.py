"""An `expect.sha256` that cannot be any file's sha256 is refused as the bad argument it is.

Our own STALE message shows a sha256 cut to 12 digits; an agent that copied that prefix into
`expect` was refused STALE, "changed since it was read", over a file nobody had touched, and
again after every fresh read. A malformed token now gets INVALID_ARGUMENT naming `expect`,
nothing changed; a whole sha256 in either case still holds."""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server import actions
from lsp_server.actions import headless
from lsp_server.engine.results import wire

TEXT = b"one\ntwo\n"
SHA = hashlib.sha256(TEXT).hexdigest()
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_EDIT_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "f.txt").write_bytes(TEXT)
    return ws


def run(root: Path, action: str, args: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        async with headless.open(str(root)) as ctx:
            return wire(await actions.run(ctx, action, args))

    return asyncio.run(go())


BAD = [SHA[:12], SHA + "0", SHA[:63] + "g", " " + SHA[1:], SHA[:30] + "_" + SHA[31:], ""]


def _requests(token: str) -> list[tuple[str, dict[str, Any]]]:
    expect = {"sha256": token}
    return [
        ("replace", {"path": "f.txt", "oldText": "one", "newText": "1", "expect": expect}),
        ("write", {"path": "f.txt", "text": "x\n", "expect": expect}),
        (
            "applyPatch",
            {
                "patch": "*** Begin Patch\n*** Update File: f.txt\n@@\n-one\n+1\n*** End Patch\n",
                "expect": {"f.txt": expect},
            },
        ),
    ]


@pytest.mark.parametrize(
    "token", BAD, ids=["prefix", "long", "nonhex", "space", "underscore", "empty"]
)
def test_a_token_that_is_no_sha256_is_an_invalid_argument_and_nothing_changes(
    ws: Path, token: str
) -> None:
    for action, args in _requests(token):
        res = run(ws, action, args)
        assert res["ok"] is False and res["code"] == "INVALID_ARGUMENT", (action, res)
        assert res["details"]["argument"] == "expect", res
        assert "64 hexadecimal digits" in res["message"], res
        assert (ws / "f.txt").read_bytes() == TEXT


@pytest.mark.parametrize("token", [SHA, SHA.upper()])
def test_a_whole_sha256_in_either_case_still_holds(ws: Path, token: str) -> None:
    res = run(
        ws,
        "replace",
        {"path": "f.txt", "oldText": "one", "newText": "1", "expect": {"sha256": token}},
    )
    assert res["ok"] is True, res
    assert (ws / "f.txt").read_bytes() == b"1\ntwo\n"


def test_a_whole_sha256_of_other_text_is_still_stale(ws: Path) -> None:
    other = hashlib.sha256(b"other\n").hexdigest()
    res = run(
        ws,
        "replace",
        {"path": "f.txt", "oldText": "one", "newText": "1", "expect": {"sha256": other}},
    )
    assert res["ok"] is False and res["code"] == "STALE", res


def test_the_cli_says_what_is_wrong_with_a_copied_prefix(ws: Path, state: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lsp_server",
            "replace",
            "--root",
            str(ws),
            "--expect-sha256",
            SHA[:12],
            "f.txt",
            "one",
            "1",
        ],
        capture_output=True,
        text=True,
        env={"AGENT_EDIT_STATE_DIR": str(state), "PYTHONPATH": str(REPO), "PATH": ""},
        timeout=60,
    )
    assert proc.returncode != 0
    assert "INVALID_ARGUMENT" in proc.stderr and "is not a sha256" in proc.stderr, proc.stderr
    assert "STALE" not in proc.stderr
    assert (ws / "f.txt").read_bytes() == TEXT
