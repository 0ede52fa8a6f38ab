"""engine/digests.py gives the digests hashlib's functions give (empty, small, large, fed in
parts, copied mid-way), whichever C code computes them: the interpreter's own `_sha256`/`_sha1`
for a process's first SMALL_BUDGET bytes, OpenSSL's (hashlib's functions) past them."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from lsp_server.engine import digests

REPO = Path(__file__).resolve().parents[2]
DATA = bytes(range(256)) * 20_000
CHUNKS = [b"", b"a", "é\udcff".encode("utf-8", "surrogatepass"), DATA[:5000], DATA]


@pytest.mark.parametrize("left", [digests.SMALL_BUDGET, 0], ids=["budget left", "spent"])
def test_the_same_digests(monkeypatch: pytest.MonkeyPatch, left: int) -> None:
    monkeypatch.setattr(digests, "_left", [left])
    monkeypatch.setattr(digests, "_openssl", {})
    for chunk in CHUNKS:
        assert digests.sha256(chunk).hexdigest() == hashlib.sha256(chunk).hexdigest()
        assert digests.sha1(chunk).hexdigest() == hashlib.sha1(chunk).hexdigest()
        h = digests.sha256_for(len(chunk))
        h.update(chunk[:1000])
        mid = h.copy()
        h.update(chunk[1000:])
        mid.update(b"x")
        assert h.hexdigest() == hashlib.sha256(chunk).hexdigest()
        assert mid.hexdigest() == hashlib.sha256(chunk[:1000] + b"x").hexdigest()
    empty = digests.sha256()  # no size given: one that takes any size
    empty.update(DATA)
    assert empty.hexdigest() == hashlib.sha256(DATA).hexdigest()


def test_past_the_budget_they_are_hashlibs_functions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digests, "_left", [digests.SMALL_BUDGET])
    monkeypatch.setattr(digests, "_openssl", {})
    small = digests.sha256(b"abc")
    large = digests.sha256(DATA)
    assert type(large) is type(hashlib.sha256())
    assert type(small) is not type(large) or digests._SMALL.get("sha256") is None
    # Once OpenSSL is loaded, it hashes everything (the fast one, at no load cost now).
    assert type(digests.sha256(b"abc")) is type(large)
    assert type(digests.sha1(b"abc")) is type(hashlib.sha1())


PROBE = """
import json, sys
from lsp_server.engine import digests, text
small = text.sha256_text("a small file\\n" * 100)
before = "_hashlib" in sys.modules
big = digests.sha256(b"x" * (digests.SMALL_BUDGET + 1)).hexdigest()
print(json.dumps([before, "_hashlib" in sys.modules, small, big]))
"""


def test_openssl_is_loaded_only_past_the_budget() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    before, after, small, big = json.loads(proc.stdout)
    assert not before and after
    assert small == hashlib.sha256(("a small file\n" * 100).encode()).hexdigest()
    assert big == hashlib.sha256(b"x" * (digests.SMALL_BUDGET + 1)).hexdigest()
