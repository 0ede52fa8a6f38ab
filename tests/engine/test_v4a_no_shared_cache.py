"""Wording a syntax error builds lark's parser; it must not read or write lark's grammar cache,
a pickle at a predictable name in the shared temporary folder (`/tmp/.lark_cache_<user>_...`):
any local user could plant one there first, and `pickle.load` would run their code as ours."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from lsp_server.engine import v4a
from lsp_server.engine.errors import Code, EditError


def test_a_syntax_error_leaves_the_temp_folder_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "gettempdir", lambda: str(tmp_path))
    with pytest.raises(EditError) as err:
        v4a.parse_patch("*** Begin Patch\n*** Update File: a\nnot a chunk line\n*** End Patch\n")
    assert err.value.code == Code.PARSE_ERROR
    assert err.value.details["patchLine"] == 2  # the section with no chunk
    # Before: lark wrote (and on the next error loaded) .lark_cache_<user>_<sha>_3_11.tmp here.
    assert os.listdir(tmp_path) == []
