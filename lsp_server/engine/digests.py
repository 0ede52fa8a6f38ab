"""The digests the engine computes: sha256 (texts, blobs, files, the state folder's name) and
sha1 (a git blob id in a diff's header), as `hashlib` would give them, without its import.

`hashlib`'s import builds a constructor for every algorithm it offers (md5 to shake_256) and
loads `_blake2`, ~0.9 ms of a headless CLI run (bench/bench_startup.py, `-X importtime`: hashlib
0.56 + _blake2 0.31 ms; --instructions --rounds 3, hashlib -> this: 154.4 -> 153.0 M past
interpreter start) for two functions. Its `sha256` and `sha1` are OpenSSL's, from
`_hashlib`, when calling them works (a FIPS build may refuse one): taken the same way here, and
from hashlib itself otherwise (a Python without OpenSSL), so each is the function hashlib's
name would be.
"""

try:
    from _hashlib import openssl_sha1 as sha1
    from _hashlib import openssl_sha256 as sha256

    sha1(usedforsecurity=False)  # as hashlib checks each OpenSSL constructor before using it
    sha256(usedforsecurity=False)
except (ImportError, AttributeError, ValueError):  # hashlib's own fallback then
    from hashlib import sha1, sha256

__all__ = ["sha1", "sha256"]
