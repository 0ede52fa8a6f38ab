"""A text read from standard input or a file (PATCH `-`, OLD/NEW/TEXT `@-` or `@file`) is read
no further than a text may be long: an endless input (`yes | agent-edit apply-patch -`) was read
until memory ran out (a MemoryError traceback, or the OOM killer), the size check only after."""

from __future__ import annotations

import io
import sys

import pytest

from lsp_server import arguments, cli


class Endless(io.RawIOBase):
    """A pipe that never ends, counting what was taken from it."""

    taken = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buf: bytearray | memoryview) -> int:  # type: ignore[override]
        n = len(buf)
        buf[:n] = b"y" * n
        self.taken += n
        return n


def test_an_endless_stdin_is_refused_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arguments, "MAX_STRING", 1000)
    raw = Endless()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(raw)))
    with pytest.raises(cli.UsageError, match="over the 1,000-character limit"):
        cli._read_text("-", "PATCH")
    assert raw.taken <= 4 * 1000 + io.DEFAULT_BUFFER_SIZE


def test_a_text_up_to_the_limit_is_read_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(arguments, "MAX_STRING", 1000)
    text = "é" * 1000  # 2,000 bytes: under the byte cap, the character limit decides later
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    assert cli._read_text("-", "PATCH") == text
