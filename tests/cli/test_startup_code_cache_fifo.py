"""startup._load_code given a FIFO where the code cache's file should be (made by mistake, or by
another user in a shared AGENT_EDIT_STATE_DIR): ignored at once, as the journal's and the
blobs' readers ignore one (journal._open_regular), never an open that waits for a writer, which
would hang every headless command at its start."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest

from lsp_server import startup


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_cache_file_is_ignored_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / f"dataclasses-{sys.implementation.cache_tag}.bin"
    os.mkfifo(fifo, 0o600)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(startup._load_code(str(fifo))), daemon=True)
    reader.start()
    # A guard, not a measurement: the load returns at once or it waits for a writer for ever.
    reader.join(60)
    if reader.is_alive():
        # Let the blocked open go (a reader is waiting, so a non-blocking writer's open works).
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join()
        pytest.fail("the cache's load blocked on a FIFO until a writer opened it")
    assert got == [{}]
