"""Review attacks on the endpoint's token check: a token that is not text the check can encode
(a lone surrogate, JSON-escaped) is refused DENIED like any wrong token, never a server failure
(IO_ERROR with a traceback in the log) that says what changed is in the history."""

from __future__ import annotations

import asyncio
import json

import pytest

from lsp_server.lsp.endpoint import Endpoint


@pytest.mark.parametrize("token", ["\ud800", "\udcff" * 64, "é" * 64, 5, None, ["x"]])
def test_token_that_cannot_match_is_denied(token):
    endpoint = Endpoint(None)  # type: ignore[arg-type]  # refused before the server is used
    line = json.dumps({"token": token, "session": "s", "action": "read", "args": {"path": "a"}})
    answer, keep = asyncio.run(endpoint._answer(line.encode()))
    assert answer["code"] == "DENIED" and answer["details"]["rule"] == "token", answer
    assert keep is False
