"""The contract: its exported schemas are valid JSON Schema and say exactly what `parse` accepts.

The schema a client is given and the checks the server makes come from one declaration; the
property test below holds them to it: for any object (within the transport limits the module
docstring of contract/spec.py names), the schema validates it if and only if `parse` accepts it.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lsp_server import contract
from lsp_server.contract import ContractError, Expect, HistoryArgs, ReadArgs, ReplaceArgs
from lsp_server.contract.export import VSCODE_NAMES, export, vscode_tools
from lsp_server.engine.errors import Code, EditError
from lsp_server.engine.history import NET_FILES

V = jsonschema.Draft202012Validator


def test_every_exported_schema_is_valid_draft_2020_12() -> None:
    for name in contract.ACTIONS:
        for s in (contract.schema(name), contract.result_schema(name)):
            assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
            V.check_schema(s)
    for tool in vscode_tools():
        V.check_schema(tool["inputSchema"])
    json.dumps(export())  # all of it is JSON


def test_refusal_codes_are_the_engine_codes() -> None:
    refusal = contract.result_schema("replace")["oneOf"][1]
    assert refusal["properties"]["code"]["enum"] == [c.value for c in Code]


def test_descriptions_name_other_tools_by_each_fronts_names() -> None:
    assert "agentEdit.applyPatch" in contract.describe("replace")
    assert "agentEdit_applyPatch" in contract.describe("replace", VSCODE_NAMES)
    text = json.dumps(contract.schemas(VSCODE_NAMES))
    assert "{@" not in text and "agentEdit.read" not in text.replace("(from agentEdit.read)", "")


def test_parse_gives_typed_frozen_instances_with_the_defaults() -> None:
    r = contract.parse("replace", {"path": "a", "oldText": "x", "newText": "y"})
    assert r == ReplaceArgs(path="a", old_text="x", new_text="y")
    assert (r.replace_all, r.dry_run, r.match, r.expect) == (False, False, "exact", None)
    with pytest.raises(AttributeError):
        r.path = "b"  # type: ignore[misc]
    p = contract.parse("agentEdit.applyPatch", {"patch": "p", "expect": {"a": {"version": 3}}})
    assert p.expect == {"a": Expect(version=3)}
    assert contract.to_json(p) == {"patch": "p", "expect": {"a": {"version": 3}}, "dryRun": False}
    # null is "not sent", as it always was
    assert contract.parse("read", {"path": "a", "startLine": None}) == ReadArgs(path="a")


def test_defaults_are_the_servers() -> None:
    assert HistoryArgs().net_limit == NET_FILES
    assert HistoryArgs().limit == 200  # lsp/server.py's a.get("limit", 200)


@pytest.mark.parametrize(
    ("name", "raw", "argument", "reason"),
    [
        ("read", "a.txt", None, "NOT_AN_OBJECT"),
        ("read", {"path": "a", "bogus": 1}, "bogus", "UNKNOWN_FIELD"),
        ("replace", {"path": "a", "oldText": "x"}, "newText", "MISSING"),
        ("read", {"path": 5}, "path", "TYPE"),
        ("undo", {"editId": True}, "editId", "TYPE"),
        ("undo", {"editId": 2**60}, "editId", "OUT_OF_RANGE"),
        ("history", {"format": "xml"}, "format", "CHOICE"),
        ("write", {"path": "a", "text": "t", "expect": {}}, "expect", "MISSING"),
        ("write", {"path": "a", "text": "t", "expect": {"v": 1}}, "expect", "UNKNOWN_FIELD"),
        ("write", {"path": "a", "text": "t", "expect": {"version": "1"}}, "expect.version", "TYPE"),
        ("applyPatch", {"patch": "p", "expect": {"a": 1}}, "expect['a']", "TYPE"),
    ],
)
def test_malformed_names_the_argument_and_why(
    name: str, raw: Any, argument: str | None, reason: str
) -> None:
    with pytest.raises(ContractError) as caught:
        contract.parse(name, raw)
    assert (caught.value.argument, caught.value.reason) == (argument, reason)
    if argument:
        assert argument in caught.value.message


def test_text_no_file_can_hold_is_a_refusal_not_a_malformed_request() -> None:
    with pytest.raises(EditError) as caught:
        contract.parse("write", {"path": "a", "text": "x\0y"})
    assert caught.value.code == Code.INVALID_ARGUMENT
    assert caught.value.details["argument"] == "text"
    assert caught.value.details["reason"] == "NUL"
    with pytest.raises(EditError) as caught:
        contract.parse("read", {"path": "a\ud800"})
    assert caught.value.details["reason"] == "LONE_SURROGATE"
    contract.parse("read", {"path": "a\0"})  # a NUL in a path is the path policy's to refuse


# -- the schema says exactly what parse accepts ------------------------------------------------

FIELDS = sorted({f for n in contract.ACTIONS for f in contract.field_names(n)} | {"bogus"})
_scalar = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer()),
    st.sampled_from(["exact", "lenient", "json", "diff", "fuzzy", "", "a.txt"]),
)
_expect = st.dictionaries(st.sampled_from(["version", "sha256", "bogus"]), _scalar, max_size=3)
_value = st.one_of(
    _scalar,
    _expect,
    st.dictionaries(st.sampled_from(["a.txt", "b"]), st.one_of(_scalar, _expect), max_size=2),
    st.lists(_scalar, max_size=2),
)
_VALID = {
    "read": {"path": "a.txt"},
    "replace": {"path": "a.txt", "oldText": "a", "newText": "b"},
    "write": {"path": "a.txt", "text": "t"},
    "applyPatch": {"patch": "*** Begin Patch\n*** End Patch\n"},
    "history": {},
    "undo": {"editId": 1},
}


def test_the_two_documented_differences() -> None:
    # null means "not sent" to parse (clients send it for an unset option); the schema asks
    # clients to leave the field out. A number written with a fraction (1.0) is an integer to
    # JSON Schema but not to parse, as always: no JSON encoder writes an int that way.
    undo, read = V(contract.schema("undo")), V(contract.schema("read"))
    assert not read.is_valid({"path": "a", "startLine": None})
    assert _accepts("read", {"path": "a", "startLine": None})
    assert undo.is_valid({"editId": 1.0}) and not _accepts("undo", {"editId": 1.0})


def _accepts(name: str, raw: dict[str, Any]) -> bool:
    try:
        contract.parse(name, raw)
    except ContractError:
        return False
    return True


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.sampled_from(sorted(contract.ACTIONS)),
    st.dictionaries(st.sampled_from(FIELDS), _value, max_size=4),
    st.lists(st.sampled_from(FIELDS), max_size=2),
)
def test_schema_validates_exactly_what_parse_accepts(
    name: str, extra: dict[str, Any], dropped: list[str]
) -> None:
    raw = {**_VALID[name], **extra}
    for f in dropped:
        raw.pop(f, None)
    valid = V(contract.schema(name)).is_valid(raw)
    assert valid == _accepts(name, raw), (name, raw, valid)
