"""Shared fixtures: a real agent-edit server over stdio with an editor-like client.

`client` is a fresh server process per test; `editor` starts an LSP session on it in a temporary
workspace, parametrised over the VS Code / Neovim / Emacs presets (each answers a stale edit its
own way); `vscode` is the same with only the VS Code preset.
"""

from __future__ import annotations

import gc
import os

import pytest
import pytest_asyncio
import pytest_lsp
from hypothesis import settings
from pytest_lsp import LanguageClient

from tests.editor_client import EDITORS, Editor, server_config, start_session

# CI explores a fixed set of examples (derandomized), so a landing is judged on reproducible runs;
# local runs keep exploring new random examples.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


def pytest_collection_finish(session: pytest.Session) -> None:
    # This process is the editor of every LSP test. Its full garbage collections, over the whole
    # suite's collected items, took up to 670 ms on a 2-core machine (gc.callbacks, whole suite):
    # longer than the 400 ms applyTimeoutMs the fault tests give a server. What collection made
    # lives to the end of the run: frozen, it is no longer walked by every full collection.
    gc.collect()
    gc.freeze()


@pytest_lsp.fixture(config=server_config())
async def client(lsp_client: LanguageClient):
    yield lsp_client
    await lsp_client.shutdown_session()


@pytest_asyncio.fixture(params=EDITORS)
async def editor(client: LanguageClient, request: pytest.FixtureRequest, tmp_path) -> Editor:
    return await start_session(client, request.param, tmp_path)


@pytest_asyncio.fixture
async def vscode(client: LanguageClient, tmp_path) -> Editor:
    return await start_session(client, "visual-studio-code", tmp_path)
