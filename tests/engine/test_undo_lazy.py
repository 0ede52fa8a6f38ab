"""The undo package loads undo and rollback planning by their first use (undo/__init__.py's
PEP 562 `__getattr__`): every name it exported is still there, the same object as in its
module, and a name it never had is an AttributeError (an ImportError for `from ... import`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_every_exported_name_is_its_modules_object() -> None:
    import lsp_server.engine.undo as undo
    from lsp_server.engine.undo import changes, reverting, rollback

    for name in undo.__all__:
        value = getattr(undo, name)
        home = next(m for m in (changes, reverting, rollback) if hasattr(m, name))
        assert value is getattr(home, name), name


def test_an_unknown_name_is_refused() -> None:
    import lsp_server.engine.undo as undo

    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        undo.nothing  # noqa: B018
    with pytest.raises(ImportError):
        from lsp_server.engine.undo import nothing  # type: ignore[attr-defined]  # noqa: F401


def test_the_package_alone_loads_neither_and_a_name_loads_its_module() -> None:
    probe = (
        "import sys\n"
        "import lsp_server.engine.undo as undo\n"
        "from lsp_server.engine.undo import ChangeRecord, line_diff, record_change\n"
        "print(sorted(m for m in sys.modules if m.startswith('lsp_server.engine.undo.')))\n"
        "from lsp_server.engine.undo import plan_rollback\n"
        "print(sorted(m for m in sys.modules if m.startswith('lsp_server.engine.undo.')))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    first, second = proc.stdout.splitlines()
    assert first == "['lsp_server.engine.undo.changes']"
    assert second == (
        "['lsp_server.engine.undo.changes', 'lsp_server.engine.undo.reverting', "
        "'lsp_server.engine.undo.rollback']"
    )
