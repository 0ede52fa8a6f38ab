"""Every answer a test sees, checked against the result schema `python -m lsp_server.contract`
exports: the editor test client checks each `agentEdit.*` answer (tests/editor_client.py), the
MCP helper each tool's structuredContent (tests/mcp/mcp_helpers.py), test_fronts the three
fronts' answers, so the suite's whole sample of answers is checked, not a hand-picked few.

Beyond the schema (which leaves room for fields a front adds), `check` refuses a field that is
declared nowhere: a key built outside engine/results.py's classes would otherwise slip through.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema

# What a front adds to the answer's JSON object (mcp/router.py, cli.py, lsp/endpoint.py).
FRONT_FIELDS = frozenset({"via", "note", "recovered", "_open"})


@cache
def _exported() -> dict[str, Any]:
    from lsp_server.contract.export import export

    return {name: a["outputSchema"] for name, a in export()["actions"].items()}


@cache
def _validator(action: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_exported()[action])


def _declared(schema: dict[str, Any]) -> set[str]:
    names = set(schema.get("properties", {}))
    for key in ("oneOf", "anyOf"):
        for branch in schema.get(key, []):
            names |= _declared(branch)
    return names


def problems(action: str, answer: Any) -> list[str]:
    """Why `answer` is not an answer of `action` as exported (empty: it is)."""
    action = action.removeprefix("agentEdit.")
    out = sorted(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
        for e in _validator(action).iter_errors(answer)
    )
    if isinstance(answer, dict):
        extra = set(answer) - _declared(_exported()[action]) - FRONT_FIELDS
        out += [f"{k}: declared by no result class" for k in sorted(extra)]
    return out


def check(action: str, answer: Any) -> None:
    found = problems(action, answer)
    assert not found, (action, found, answer)
