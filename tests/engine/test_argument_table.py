"""The checks' field table (lsp_server/arguments.py's generated FIELDS) is the contract's own
declarations, field for field: requests checked from it are checked as `contract.parse` checks
them (the rendered text is compared too, by tests/clients/test_contract_drift.py)."""

from __future__ import annotations

import pytest

from lsp_server import arguments, contract
from lsp_server.contract.spec import fields_of


def test_the_table_is_the_contracts_fields() -> None:
    assert list(arguments.FIELDS) == list(contract.ACTIONS)
    for name, action in contract.ACTIONS.items():
        assert arguments.FIELDS[name] == (action.command, fields_of(action.arguments))


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("replace", {"path": "a", "oldText": "x", "newText": "y", "expect": {}}),
        ("applyPatch", {"patch": "p", "expect": {"a": {"sha256": 1}}}),
        ("history", {"format": "text"}),
        ("undo", {"editId": 1.0}),
    ],
)
def test_a_malformed_request_gets_the_contracts_message(name: str, raw: dict[str, object]) -> None:
    with pytest.raises(contract.ContractError) as typed:
        contract.parse(name, raw)
    with pytest.raises(arguments.InvalidArguments) as checked:
        arguments.parse(f"agentEdit.{name}", (raw,))
    assert checked.value.message == typed.value.message
