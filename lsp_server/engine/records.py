"""What a usable edit-history journal record looks like, checked before replay takes it in.

The journal is a file anyone can edit, another version may have written, and a crash or a full
disk may have cut: replay (history/replay.py) must never stop a server start or crash
`history`/`undo` on it. Each record is checked here, whole, before any of it is applied, so a bad
record is skipped entirely (and counted) instead of leaving the history half-updated: the type of
every field replay reads, ids and line numbers as non-negative integers a float can hold (`1e400`,
`NaN` and 5,000-digit numbers never get this far: journal.py's parser refuses them), line edits
in order. `problem(rec)` returns why a record cannot be used, or None. A checkpoint's tracked
files are the exception: each is the net diff of one file, so `tracked_problem(data)` checks them
one by one and replay leaves out only a file that is wrong, not every file's net diff.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from typing import Any

MAX_INT = 2**53  # ids, line numbers, versions: what JSON readers agree on
KINDS = ("add", "update", "delete", "move")
TYPES = ("begin", "finish", "record", "checkpoint", "saved")


class _Bad(Exception):
    pass


def _int(v: Any, what: str, lo: int = 0) -> None:
    if type(v) is not int or not lo <= v < MAX_INT:
        raise _Bad(f"{what} is not an integer in range")


def _opt_int(v: Any, what: str) -> None:
    if v is not None:
        _int(v, what, -MAX_INT)


def _str(v: Any, what: str) -> None:
    if not isinstance(v, str):
        raise _Bad(f"{what} is not a string")


def _opt_str(v: Any, what: str) -> None:
    if v is not None:
        _str(v, what)


def _bool(v: Any, what: str) -> None:
    if v is not None and not isinstance(v, bool):
        raise _Bad(f"{what} is not a boolean")


def _list(v: Any, what: str) -> list[Any]:
    if v is None:
        return []
    if not isinstance(v, list):
        raise _Bad(f"{what} is not a list")
    return v


def _dict(v: Any, what: str) -> Mapping[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise _Bad(f"{what} is not an object")
    return v


def _obj(v: Any, what: str) -> Mapping[str, Any]:
    """An element of a list or a map's value: an object, never null (replay calls .get on it)."""
    if not isinstance(v, dict):
        raise _Bad(f"{what} is not an object")
    return v


def _strs(v: Any, what: str) -> None:
    # One C-level pass (`_str` a line would be a Python call each: a 1,000-hunk user edit's
    # lines made `_strs` half of `History.load`, see `_IS_STR`). With `journal._resolve`'s
    # `_LEAVES`: the journal of 8 CLI applies of bench_patch's 1,000-chunk patch, each on the
    # file put back by hand (a user edit), loaded in process, best of 4 x 4 alternating runs,
    # median 492 -> 421 ms.
    if not all(map(_IS_STR, _list(v, what))):
        raise _Bad(f"{what} is not a string")


def _edits(v: Any, what: str) -> None:
    """[[start, end, [lines]]...], sorted and not overlapping."""
    last = 0
    for e in _list(v, what):
        if not isinstance(e, list) or len(e) != 3:
            raise _Bad(f"{what} has a malformed edit")
        _int(e[0], what)
        _int(e[1], what)
        if e[0] > e[1] or e[0] < last:
            raise _Bad(f"{what} edits are out of order")
        last = e[1]
        _strs(e[2], what)


def _change(c: Any) -> None:
    c = _obj(c, "a change")
    _str(c.get("path"), "a change's path")
    if c.get("change") not in KINDS:
        raise _Bad("a change's kind is unknown")
    _opt_str(c.get("movedTo") or None, "movedTo")
    for key in ("bom", "newBom", "preimage"):
        _bool(c.get(key), key)
    for key in ("beforeSha256", "afterSha256", "beforeText", "afterText"):
        _opt_str(c.get(key), key)
    _int(c.get("lines", 0), "lines")
    hunks = _list(c.get("hunks"), "hunks")
    if not _plain_hunks(hunks):
        _hunks(hunks)


def _hunks(hunks: list[Any]) -> None:
    """A change record's hunks checked one by one: what is wrong, if anything."""
    last = 0
    for h in hunks:
        if not isinstance(h, list) or len(h) != 7:
            raise _Bad("a hunk is malformed")
        for i in range(3):
            _int(h[i], "a hunk's line")
        if h[0] > h[1] or h[0] < last:
            raise _Bad("hunks are out of order")
        last = h[1]
        for i in range(3, 7):
            _strs(h[i], "a hunk's lines")


def _plain_hunks(hunks: list[Any]) -> bool:
    """Whether every hunk passes `_hunks`'s checks, told with a few operations a hunk and one
    C-level pass over all their lines (False: the checks one by one say what is wrong).
    A 1,000-hunk change record made ~8 calls a hunk: replaying 16 of them (the history of 16
    CLI applies of bench_patch's 1,000-chunk patch) spent two thirds of `History.load` here."""
    last = 0
    for h in hunks:
        if type(h) is not list or len(h) != 7:
            return False
        a, b, x, l3, l4, l5, l6 = h
        if type(a) is not int or type(b) is not int or type(x) is not int:
            return False
        if not last <= a <= b < MAX_INT or not 0 <= x < MAX_INT:
            return False
        if type(l3) is not list or type(l4) is not list:
            return False
        if type(l5) is not list or type(l6) is not list:
            return False
        last = b
    lines = chain.from_iterable(chain.from_iterable(h[3:] for h in hunks))
    return all(map(_IS_STR, lines))


_IS_STR = str.__instancecheck__  # isinstance(x, str) as a C function `map` can call


def _snapshot_json(v: Any, what: str) -> None:
    v = _dict(v, what)
    _opt_str(v.get("text"), what)
    _bool(v.get("bom"), what)
    _bool(v.get("exists"), what)


def _begin(rec: Mapping[str, Any]) -> None:
    _opt_str(rec.get("time"), "time")
    _opt_str(rec.get("action"), "action")
    _dict(rec.get("args"), "args")
    for c in _list(rec.get("changes"), "changes"):
        _change(c)
    for f in _list(rec.get("files"), "files"):
        _str(_obj(f, "a file").get("path", ""), "a file's path")
    _opt_int(rec.get("undoes"), "undoes")
    _opt_int(rec.get("pid"), "pid")
    _opt_str(rec.get("pack"), "pack")
    for data in _dict(rec.get("baselines"), "baselines").values():
        _snapshot_json(_obj(data, "a baseline"), "a baseline")
        if "at" in data:  # its bytes in the record's pre-image pack (history/recording.py)
            at = data["at"]
            if not isinstance(at, list) or len(at) != 2 or rec.get("pack") is None:
                raise _Bad("a baseline's place in the pack is malformed")
            _int(at[0], "a baseline's offset")
            _int(at[1], "a baseline's size")
    for data in _dict(rec.get("user"), "user").values():
        data = _obj(data, "a user edit")
        if "rebase" in data:
            _snapshot_json(_obj(data["rebase"], "a rebase"), "a rebase")
        else:
            _edits(data.get("edits"), "user edits")
            _bool(data.get("bom"), "bom")


def _finish(rec: Mapping[str, Any]) -> None:
    _opt_str(rec.get("time"), "time")
    _opt_str(rec.get("outcome"), "outcome")
    _bool(rec.get("ok"), "ok")
    for c in _list(rec.get("committed"), "committed"):
        c = _obj(c, "a committed file")
        _opt_str(c.get("path"), "a committed path")
        _opt_str(c.get("state"), "a committed state")
    _dict(rec.get("error"), "error")
    _opt_str(rec.get("diff"), "diff")
    for version in _dict(rec.get("versions"), "versions").values():
        _opt_int(version, "a version")
    _opt_int(rec.get("undoneBy"), "undoneBy")


def _tracked(data: Any) -> None:
    data = _obj(data, "a tracked file")
    _str(data.get("origin"), "origin")
    _str(data.get("path"), "path")
    _opt_str(data.get("base"), "base")
    _opt_str(data.get("absentBase"), "absentBase")
    _edits(data.get("net"), "net")
    for key in ("baseBom", "lastExists", "lastBom", "uncertain"):
        _bool(data.get(key), key)
    _opt_int(data.get("lastVersion"), "lastVersion")
    _strs(data.get("notes"), "notes")
    for span in _list(data.get("spans"), "spans"):
        if not isinstance(span, list) or len(span) != 3:
            raise _Bad("a span is malformed")
        for x in span:
            _int(x, "a span")


def tracked_problem(data: Any) -> str | None:
    """Why replay cannot use one tracked file of a checkpoint, or None."""
    try:
        _tracked(data)
    except _Bad as bad:
        return str(bad)
    return None


def problem(rec: Any) -> str | None:
    """Why replay cannot use `rec`, or None when every field it reads has the right shape."""
    try:
        if not isinstance(rec, dict):
            raise _Bad("not an object")
        t = rec.get("t")
        if t not in TYPES:
            raise _Bad(f"unknown record type {str(t)[:40]!r}")
        if t == "checkpoint":
            _int(rec.get("nextId", 1), "nextId")
            _list(rec.get("tracked"), "tracked")  # each file on its own: `tracked_problem`
            _int(rec.get("retired", 0), "retired")
            for ids in _dict(rec.get("finishOrder"), "finishOrder").values():
                for x in _list(ids, "finishOrder"):
                    _int(x, "finishOrder", 1)
            return None
        _int(rec.get("id"), "id", 1)
        if t in ("begin", "record"):
            _begin(rec)
        if t in ("finish", "record"):
            _finish(rec)
        if t in ("saved", "record"):
            # What an editor's save changed after the edit (History.saved): update records.
            for c in _list(rec.get("saves"), "saves"):
                _change(c)
    except _Bad as bad:
        return str(bad)
    return None
