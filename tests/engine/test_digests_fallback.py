"""engine/digests.py on a Python whose OpenSSL does not serve sha256/sha1 as `_hashlib`'s
functions: none at all (`_hashlib` missing) or one that refuses a digest (a FIPS build's
ValueError). Then both names are hashlib's own, whatever hashlib fell back to, and the digests
the engine writes (a text's sha256, a diff's `index` blob ids) are the same as with OpenSSL.
Each case in a fresh interpreter, `_hashlib` taken away or changed before anything imports it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from lsp_server.engine import diffing, text

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PROBE = """
import json, sys
{setup}
from lsp_server.engine import diffing, digests, text
import hashlib
digests._left[0] = 0  # past the budget: the large-input functions, as after 64 KiB
print(json.dumps([
    digests._large("sha256") is hashlib.sha256,
    digests._large("sha1") is hashlib.sha1,
    [getattr(digests._large(n), "__module__", None) for n in ("sha256", "sha1")],
    text.sha256_text("caf\\u00e9\\udcff\\n"),
    diffing.blob_sha1("a\\nb\\n", bom=True),
]))
"""

NO_OPENSSL = "sys.modules['_hashlib'] = None  # as a Python built without OpenSSL"
FIPS_SHA1 = """
import _hashlib
def refuse(*args, **kwargs):
    raise ValueError("[digital envelope routines] unsupported")
_hashlib.openssl_sha1 = refuse  # as a FIPS build refuses a digest"""


@pytest.mark.parametrize("setup", [NO_OPENSSL, FIPS_SHA1], ids=["no-openssl", "fips-sha1"])
def test_the_fallback_is_hashlibs_and_gives_the_same_digests(setup: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": REPO}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE.format(setup=setup)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    same_256, same_1, modules, digest, blob = json.loads(proc.stdout)
    assert same_256 and same_1  # hashlib's names, whatever they are on this Python
    # The fallback was taken: no OpenSSL function at all, or not the one that refuses.
    assert modules[1] != "_hashlib" and (setup != NO_OPENSSL or modules[0] != "_hashlib")
    assert digest == text.sha256_text("caf\u00e9\udcff\n")
    assert blob == diffing.blob_sha1("a\nb\n", bom=True)
