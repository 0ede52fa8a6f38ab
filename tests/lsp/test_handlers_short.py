"""Issue 15's bar for the LSP front: `create_server` and every handler short (a handler at most 10
lines of code, comments and docstrings not counted), so the logic lives in the actions, the
document store and the server's named methods, not in the registrations."""

from __future__ import annotations

import ast
from pathlib import Path

SERVER = Path(__file__).resolve().parents[2] / "lsp_server" / "lsp" / "server.py"
HANDLER_DECORATORS = {"feature", "command", "lsp_method"}


def _code_lines(source: str, node: ast.AST) -> int:
    """Lines of `node` holding code: not blank, not only a comment, not its docstring."""
    first, last = node.lineno, node.end_lineno  # type: ignore[attr-defined]
    body = getattr(node, "body", [])
    doc: set[int] = set()
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        doc = set(range(body[0].lineno, (body[0].end_lineno or body[0].lineno) + 1))
    lines = source.splitlines()
    return sum(
        1
        for i in range(first, last + 1)
        if i not in doc and lines[i - 1].strip() and not lines[i - 1].strip().startswith("#")
    )


def _decorator_name(d: ast.expr) -> str:
    target = d.func if isinstance(d, ast.Call) else d
    if isinstance(target, ast.Attribute):
        return target.attr
    return target.id if isinstance(target, ast.Name) else ""


def test_every_handler_is_at_most_ten_lines() -> None:
    source = SERVER.read_text()
    handlers = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(_decorator_name(d) in HANDLER_DECORATORS for d in n.decorator_list)
    ]
    assert len(handlers) >= 8  # initialize ... the document sync: the rule sees them
    long = {n.name: _code_lines(source, n) for n in handlers if _code_lines(source, n) > 10}
    assert not long, long


def test_create_server_is_short() -> None:
    source = SERVER.read_text()
    (create,) = [
        n
        for n in ast.parse(source).body
        if isinstance(n, ast.FunctionDef) and n.name == "create_server"
    ]
    assert _code_lines(source, create) <= 60
