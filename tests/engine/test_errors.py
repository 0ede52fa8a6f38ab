"""engine/errors.py: one named constructor per code, each keeping the details product.md 2.1
promises for that code."""

from __future__ import annotations

import inspect
from typing import Any

from lsp_server.engine import errors
from lsp_server.engine.errors import CONSTRUCTORS, Code, EditError


def test_every_code_has_its_named_constructor() -> None:
    assert set(CONSTRUCTORS) == set(Code)
    for code, make in CONSTRUCTORS.items():
        assert make is getattr(errors, code.value.lower()), code


def _required_details(make: Any) -> dict[str, Any]:
    params = inspect.signature(make).parameters.values()
    return {
        p.name: [1] if p.name in ("lines", "candidates", "files") else f"<{p.name}>"
        for p in params
        if p.kind is p.KEYWORD_ONLY and p.default is p.empty
    }


def test_each_constructor_makes_its_code_with_its_details_and_extras() -> None:
    for code, make in CONSTRUCTORS.items():
        needed = _required_details(make)
        committed = needed.pop("committed", None)
        kwargs = {**needed, "extra": 7}
        if committed is not None:
            kwargs["committed"] = [{"path": "a", "state": "applied"}]
        err = make("Why.", "What next.", **kwargs)
        assert isinstance(err, EditError)
        result = err.to_result()
        assert result["code"] == code.value
        assert (result["message"], result["hint"]) == ("Why.", "What next.")
        for name, value in needed.items():
            assert result["details"][name] == value, (code, name)
        assert result["details"]["extra"] == 7
        assert result["committed"] == kwargs.get("committed", [])


def test_product_md_detail_fields_are_required_where_it_names_them() -> None:
    # product.md 2.1: lines for AMBIGUOUS, candidates for NO_MATCH, patchLine for PARSE_ERROR,
    # rule for the path policy, files for NOT_APPLIED and PARTIAL*, argument for INVALID_ARGUMENT.
    promised = {
        Code.AMBIGUOUS: "lines",
        Code.NO_MATCH: "candidates",
        Code.PARSE_ERROR: "patchLine",
        Code.OUTSIDE_WORKSPACE: "rule",
        Code.NOT_APPLIED: "files",
        Code.PARTIAL: "files",
        Code.PARTIAL_ROLLED_BACK: "files",
        Code.INVALID_ARGUMENT: "argument",
        Code.CONFLICT: "lines",
        Code.UNVERIFIED: "unconfirmed",
    }
    for code, name in promised.items():
        assert name in _required_details(CONSTRUCTORS[code]), code
