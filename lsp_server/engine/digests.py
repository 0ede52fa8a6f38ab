"""The digests the engine computes: sha256 (texts, blobs, files, the state folder's name) and
sha1 (a git blob id in a diff's header), as `hashlib` would give them, without its import.

`hashlib`'s import builds a constructor for every algorithm it offers (md5 to shake_256) and
loads `_blake2`, ~0.9 ms of a headless CLI run (bench/bench_startup.py, `-X importtime`: hashlib
0.56 + _blake2 0.31 ms; --instructions --rounds 3, hashlib -> this: 154.4 -> 153.0 M past
interpreter start) for two functions. OpenSSL's sha256 and sha1 come from `_hashlib`, when
calling them works (a FIPS build may refuse one), and from hashlib itself otherwise (a Python
without OpenSSL): each is the function hashlib's name would be.

A process's first `SMALL_BUDGET` bytes are hashed by the interpreter's own `_sha256`/`_sha1`
instead, and OpenSSL is loaded only past them. Loading `_hashlib` (libcrypto's dynamic load)
is ~4 ms, the largest single import of a one-line CLI edit (bench/bench_startup.py top list),
which hashes a few KiB in all; OpenSSL hashes ~13x faster per byte (5 MB: 4.9 ms against 65
ms), so anything larger takes it, and hashing the first bytes the slow way costs at most
~0.8 ms where OpenSSL is loaded after all. The budget is the one piece of process state here:
it only chooses which C code computes a digest, never the digest
(tests/engine/test_digests.py: the same digests both ways, fed whole, in parts, copied).
Instructions (callgrind, medians of 3, e498f5c -> this with startup's BLAKE2b code cache
digest): a one-line apply-patch, bench/bench_startup.py --instructions, 247.1 -> 236.6 M past
interpreter start (-4.2%; the ~4 MB library's page faults are not counted there); the
1,000-file apply, bench/bench_ab.py --instructions, 2096.0 -> 2099.9 M (+0.2%: its first 64
KiB at the slower rate); the 100k-line file 870.6 -> 869.1 M.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from hashlib import _Hash as Hasher  # what hashlib's sha256() and sha1() return

    Maker = Callable[..., Hasher]

# Bytes a process may hash with the interpreter's own functions before OpenSSL is loaded.
SMALL_BUDGET = 64 * 1024

# What is left of the budget (a one-item list: changed in place, never rebound). The history's
# pack thread hashes too; a race between the two only lets a few KiB more take the slower code.
_left = [SMALL_BUDGET]
_openssl: dict[str, Maker] = {}  # name -> OpenSSL's function (hashlib's), once loaded


def _builtin(name: str) -> Maker | None:
    """The interpreter's own constructor for `name`, or None (a Python built without it)."""
    try:
        fn: Maker
        if name == "sha256":
            from _sha256 import sha256 as fn  # type: ignore[import-not-found,no-redef]
        else:
            from _sha1 import sha1 as fn  # type: ignore[import-not-found,no-redef]
        fn(b"")
    except (ImportError, AttributeError, ValueError):
        return None
    return fn


_SMALL: dict[str, Maker | None] = {}  # name -> the built-in one (None: none), once looked up


def _large(name: str) -> Maker:
    """OpenSSL's function for `name`, as hashlib would pick it (its own where OpenSSL fails)."""
    fn = _openssl.get(name)
    if fn is None:
        try:
            import _hashlib

            fn = getattr(_hashlib, f"openssl_{name}")  # (a Callable: checked by the call)
            fn(usedforsecurity=False)  # as hashlib checks each OpenSSL constructor before use
        except (ImportError, AttributeError, ValueError):  # hashlib's own fallback then
            import hashlib

            fn = getattr(hashlib, name)
        _openssl[name] = fn
    return fn


def _maker(name: str, size: int) -> Maker:
    """The constructor to hash `size` bytes with: the built-in one while the budget lasts."""
    if name not in _SMALL:
        _SMALL[name] = _builtin(name)  # (a diff's sha1 only: not loaded by every command)
    small = _SMALL[name]
    if small is not None and 0 <= size <= _left[0] and not _openssl:
        _left[0] -= size
        return small
    return _large(name)


def sha256(data: bytes | None = None, /) -> Hasher:
    """A sha256 hasher over `data` (`hashlib.sha256(data)`). To feed one in parts, take it
    from `sha256_for`: without data, this one is OpenSSL's (the size to come is unknown)."""
    if data is None:
        return _large("sha256")()
    return _maker("sha256", len(data))(data)


def sha256_for(size: int) -> Hasher:
    """An empty sha256 hasher for `size` bytes to come (`update`), about."""
    return _maker("sha256", size)()


def sha1(data: bytes, /) -> Hasher:
    """A sha1 hasher over `data` (`hashlib.sha1(data)`)."""
    return _maker("sha1", len(data))(data)


__all__ = ["SMALL_BUDGET", "sha1", "sha256", "sha256_for"]
