"""LineEdit, Chunk, UpdateFile and DiskRead, made through values.slot_setters, are still
frozen dataclasses: every field as given (positionally or by name, defaults as before),
assignment and deletion refused, no `__dict__` to put a field into, eq/hash/repr/replace/
fields/pickle/copy as a dataclass's."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from lsp_server.engine.model import LineEdit
from lsp_server.engine.text import DiskRead
from lsp_server.engine.v4a import Chunk, UpdateFile
from lsp_server.engine.values import slot_setters


def test_line_edit_fields_defaults_and_keywords() -> None:
    e = LineEdit(3, 5, ("a\n",), (10, 20))
    assert (e.start, e.end, e.new_lines, e.offsets) == (3, 5, ("a\n",), (10, 20))
    assert LineEdit(1, 1, ()).offsets is None
    assert LineEdit(start=1, end=2, new_lines=("x",), offsets=None) == LineEdit(1, 2, ("x",))
    assert [f.name for f in dataclasses.fields(LineEdit)] == [
        "start",
        "end",
        "new_lines",
        "offsets",
    ]
    with pytest.raises(TypeError):
        LineEdit(1, 2)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        LineEdit(1, 2, (), None, 5)  # type: ignore[call-arg]


def test_chunk_fields_defaults_and_keywords() -> None:
    c = Chunk("def f():", ("a",), ("b",), True, "-+", 7, ("x", "y"))
    assert (c.anchor, c.old_lines, c.new_lines, c.is_end_of_file, c.ops, c.patch_line) == (
        "def f():",
        ("a",),
        ("b",),
        True,
        "-+",
        7,
    )
    assert c.anchors == ("x", "y")
    d = Chunk(None, (), ("b",))
    assert (d.is_end_of_file, d.ops, d.patch_line, d.nested_anchors, d.anchors) == (
        False,
        "",
        0,
        (),
        (),
    )
    assert Chunk(anchor="a", old_lines=(), new_lines=(), ops="+").anchors == ("a",)


@pytest.mark.parametrize(
    "value",
    [
        LineEdit(0, 1, ("z\n",), (0, 2)),
        Chunk("a", ("o",), ("n",), False, "-+", 3, ()),
        UpdateFile("p", None, (Chunk(None, ("o",), ()),), 2),
        DiskRead(1, 2, 3, 4, 5, b"ab"),
    ],
)
def test_frozen_and_a_dataclass_still(value: object) -> None:
    name = dataclasses.fields(value)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, name, 99)
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(value, name)
    with pytest.raises((AttributeError, TypeError)):
        value.extra = 1  # type: ignore[attr-defined]
    assert not hasattr(value, "__dict__")  # nowhere to put a field beside the slots
    same = dataclasses.replace(value)  # type: ignore[type-var]
    assert same == value and hash(same) == hash(value) and same is not value
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.deepcopy(value) == value and copy.copy(value) == value
    assert repr(value).startswith(type(value).__name__ + "(")
    other = dataclasses.replace(value, **{name: 42})  # type: ignore[type-var]
    assert other != value and getattr(other, name) == 42


def test_update_file_and_disk_read_fields() -> None:
    u = UpdateFile("a.py", "b.py", (), 4)
    assert (u.path, u.move_to, u.chunks, u.patch_line) == ("a.py", "b.py", (), 4)
    assert UpdateFile(path="a", move_to=None, chunks=()).patch_line == 0
    d = DiskRead(ino=1, size=2, mtime_ns=3, ctime_ns=4, read_ns=5, data=b"x")
    assert (d.ino, d.size, d.mtime_ns, d.ctime_ns, d.read_ns, d.data) == (1, 2, 3, 4, 5, b"x")


def test_slot_setters_only_take_slots() -> None:
    class Plain:
        x = 1

    with pytest.raises(AssertionError):
        slot_setters(Plain, "x")
    with pytest.raises(KeyError):
        slot_setters(LineEdit, "missing")
