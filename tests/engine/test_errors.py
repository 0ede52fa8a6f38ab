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


def _inline_calls(source: str) -> list[int]:
    """The lines of `source` that call `EditError(...)` (as a name or an attribute)."""
    import ast

    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "EditError":
                lines.append(node.lineno)
    return lines


def test_no_refusal_is_built_inline_outside_errors_py() -> None:
    # Each refusal goes through its code's named constructor (errors.stale(...), ...), whose
    # keyword-only parameters are the details that code promises: an inline EditError(...)
    # could leave them out unnoticed.
    from pathlib import Path

    home = Path(errors.__file__).resolve()
    package = home.parents[1]
    inline = [
        f"{path.relative_to(package.parent)}:{line}"
        for path in sorted(package.rglob("*.py"))
        if path != home
        for line in _inline_calls(path.read_text(encoding="utf-8"))
    ]
    assert inline == []


def test_the_inline_check_sees_each_spelling_of_a_call_and_nothing_else() -> None:
    source = (
        '"""Raises `EditError(STALE)`."""\n'
        "raise EditError(Code.STALE, 'm')\n"
        "e = errors.EditError(Code.STALE, 'm', 'h')\n"
        "ok = isinstance(e, EditError)\n"
        "try:\n    pass\nexcept EditError as exc:\n    raise errors.stale('m', 'h') from exc\n"
    )
    assert _inline_calls(source) == [2, 3]


def test_an_os_error_takes_its_code_from_its_errno_and_only_the_details_given() -> None:
    import errno

    for number, code in [
        (errno.EACCES, Code.DENIED),
        (errno.EROFS, Code.DENIED),
        (errno.ENOENT, Code.NOT_FOUND),
        (errno.ENOTDIR, Code.NOT_FOUND),
        (errno.ENOSPC, Code.IO_ERROR),
    ]:
        err = errors.from_os_error(OSError(number, "x"), "Why.", "What next.", rolledBack=None)
        assert (err.code, err.details) == (code, {"rolledBack": None}), number
    # Not an OSError (a corrupt journal met by the rollback): the operating system's IO_ERROR.
    assert errors.from_os_error(ValueError("x"), "Why.", "Next.").code is Code.IO_ERROR


def test_a_conflict_with_another_editor_names_it_and_has_no_undo_lines() -> None:
    err = errors.open_elsewhere("Why.", "Next.", reason="R", editor="E", pid=7, paths=["a"])
    assert err.code is Code.CONFLICT
    assert err.details == {"reason": "R", "editor": "E", "pid": 7, "paths": ["a"]}
