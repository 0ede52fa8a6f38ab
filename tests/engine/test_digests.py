"""engine/digests.py gives the functions hashlib's names would: the same digests (empty, small,
large, fed in parts, copied mid-way) and, where OpenSSL serves them, the very same functions."""

from __future__ import annotations

import hashlib

from lsp_server.engine import digests


def test_the_same_functions_as_hashlib() -> None:
    assert digests.sha256 is hashlib.sha256
    assert digests.sha1 is hashlib.sha1


def test_the_same_digests() -> None:
    data = bytes(range(256)) * 20_000
    for chunk in (b"", b"a", "é\udcff".encode("utf-8", "surrogatepass"), data):
        assert digests.sha256(chunk).hexdigest() == hashlib.sha256(chunk).hexdigest()
        assert digests.sha1(chunk).hexdigest() == hashlib.sha1(chunk).hexdigest()
    h = digests.sha256()
    h.update(data[:1000])
    mid = h.copy()
    h.update(data[1000:])
    mid.update(b"x")
    assert h.hexdigest() == hashlib.sha256(data).hexdigest()
    assert mid.hexdigest() == hashlib.sha256(data[:1000] + b"x").hexdigest()
