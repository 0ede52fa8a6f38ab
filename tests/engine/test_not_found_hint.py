"""NOT_FOUND's hint sends the agent to something that works: it said "agentEdit.read lists
what exists", but read reads one file and refuses a folder (INVALID_ARGUMENT)."""

from __future__ import annotations

import pytest

from lsp_server.engine.errors import EditError
from lsp_server.engine.planner import require_exists
from lsp_server.engine.text import absent


def test_the_hint_does_not_promise_a_listing() -> None:
    with pytest.raises(EditError) as exc:
        require_exists(absent("src/nope.py"))
    err = exc.value.to_result()
    assert err["code"] == "NOT_FOUND" and err["details"]["path"] == "src/nope.py"
    assert "list" not in err["hint"] and "agentEdit.write" in err["hint"]
