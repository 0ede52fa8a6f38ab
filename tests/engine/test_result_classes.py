"""The answers' classes (engine/results.py) and the schemas exported from them agree: every field
`wire` can write is declared, in order, required exactly when it is never left out; a field left
out is never null; every code's refusal is an answer of every action."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import jsonschema
import pytest

from lsp_server import contract
from lsp_server.engine import errors
from lsp_server.engine.read_results import HistoryDiff, HistoryEntries, HistoryTexts, ReadResult
from lsp_server.engine.results import (
    OMIT,
    ChangedOnSave,
    EditResult,
    FileResult,
    Refusal,
    camel,
    wire,
)
from tests import result_schemas

FULL_FILE = FileResult(
    path="b.txt",
    change="move",
    moved_to="d.txt",
    version=3,
    sha256="0" * 64,
    saved=False,
    changed_on_save=ChangedOnSave(sha256="1" * 64, diff="d"),
)
# One instance per class with every field set (nothing left out), and the action it answers.
FULL: list[tuple[str, Any]] = [
    (
        "replace",
        EditResult(
            edit_id=4,
            status="applied",
            files=(FULL_FILE,),
            diff="d",
            diagnostics=[{"line": 1}],
            saved=True,
            diagnostics_pending=["a.txt"],
        ),
    ),
    (
        "read",
        ReadResult(
            path="a.txt",
            text="t",
            version=1,
            sha256="0" * 64,
            source="buffer",
            eol="lf",
            bom=False,
            lines=1,
            start_line=1,
            end_line=1,
        ),
    ),
    (
        "history",
        HistoryEntries(
            entries=[{"id": 1}],
            total=1,
            net=[],
            net_cut=True,
            net_files=9,
            net_note="n",
            skipped=2,
            skipped_note="s",
            dropped_note="o",
            journal_error="j",
        ),
    ),
    ("history", HistoryDiff(diff="d")),
    ("history", HistoryTexts(edit_id=1, files=[])),
    ("undo", Refusal(code="CONFLICT", message="m", hint="h", details={}, committed=[])),
]


def _branch(schema: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """The one object schema (of a success's anyOf, or the refusal) `answer` matches."""
    out = []
    for branch in schema["oneOf"]:
        for leaf in branch.get("anyOf", [branch]):
            if jsonschema.Draft202012Validator(leaf).is_valid(answer):
                out.append(leaf)
    assert len(out) == 1, (answer, out)
    return out[0]


@pytest.mark.parametrize(("action", "instance"), FULL, ids=[type(i).__name__ for _, i in FULL])
def test_every_field_is_declared_in_order_and_required_unless_left_out(
    action: str, instance: Any
) -> None:
    answer = wire(instance)
    result_schemas.check(action, answer)
    leaf = _branch(contract.result_schema(action), answer)
    assert list(leaf["properties"]) == list(answer)  # the same names, in wire order
    omitted = {camel(f.name) for f in dataclasses.fields(type(instance)) if f.metadata.get(OMIT)}
    assert leaf["required"] == [k for k in answer if k not in omitted]
    v = jsonschema.Draft202012Validator(contract.result_schema(action))
    for name in leaf["required"]:  # a required field missing is no answer
        assert not v.is_valid({k: x for k, x in answer.items() if k != name}), name
    for name in omitted:  # left out is fine; null is not what `wire` ever writes for it
        assert v.is_valid({k: x for k, x in answer.items() if k != name}), name
        assert not v.is_valid({**answer, name: None}), name


def test_a_field_left_out_is_absent_and_a_null_one_stays_null() -> None:
    deleted = FileResult(path="a.txt", change="delete", sha256=None)
    assert wire(deleted) == {"path": "a.txt", "change": "delete", "sha256": None}
    read = wire(dataclasses.replace(FULL[1][1], version=None))
    assert "version" in read and read["version"] is None
    assert "editId" not in wire(HistoryTexts(files=[]))
    # `wire` gives a fresh object each time: a front adding `via` changes no other answer.
    r = FULL[0][1]
    first = wire(r)
    first["via"] = "disk"
    first["files"][0]["path"] = "x"
    assert "via" not in wire(r) and wire(r)["files"][0]["path"] == "b.txt"


def _dummy(p: inspect.Parameter) -> Any:
    ann = str(p.annotation)
    if ann.startswith("int"):
        return 1
    if ann.startswith("list"):
        return [{"path": "a.txt", "state": "applied"}] if p.name == "committed" else []
    return "x"


@pytest.mark.parametrize("code", list(errors.Code), ids=str)
def test_every_codes_refusal_is_an_answer_of_every_action(code: errors.Code) -> None:
    ctor = errors.CONSTRUCTORS[code]
    needed = {
        name: _dummy(p)
        for name, p in inspect.signature(ctor).parameters.items()
        if p.kind is p.KEYWORD_ONLY and p.default is p.empty
    }
    err = ctor(f"{code} happened.", "Do this.", **needed)
    answer = err.to_result()
    assert answer == wire(err.refusal()) and answer["code"] == str(code)
    assert list(answer) == ["ok", "code", "message", "hint", "details", "committed"]
    for action in contract.ACTIONS:
        result_schemas.check(action, answer)


def test_a_code_no_engine_defines_is_no_answer() -> None:
    forged = wire(Refusal(code="NOPE", message="m", hint="", details={}, committed=[]))
    assert result_schemas.problems("replace", forged)
    stray = {**wire(HistoryDiff(diff="")), "netcut": True}  # a key built outside the classes
    assert result_schemas.problems("history", stray) == ["netcut: declared by no result class"]


def test_a_field_the_history_renders_undeclared_is_refused_not_dropped() -> None:
    rendered = {"ok": True, "entries": [], "total": 0, "net": []}
    assert wire(HistoryEntries.of(rendered)) == rendered
    with pytest.raises(TypeError, match="netSummary"):
        HistoryEntries.of({**rendered, "netSummary": "x"})
