"""The frozen slots value types (values.slot_setters: LineEdit, Chunk, UpdateFile, DiskRead)
refuse every write as the frozen dataclasses they replaced did: FrozenInstanceError (an
AttributeError) for a field or any other name, set or deleted, and a subclass's own attributes
still settable while its fields are not.

dataclass(slots=True) makes a new class after writing the frozen `__setattr__`/`__delattr__`,
which keep naming the class it replaced (CPython 3.11): a write of a name that is not a field
then reached `super(<the old class>, self)` and raised TypeError ("obj must be an instance or
subtype of type"), not the AttributeError a caller of a frozen value type catches."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lsp_server.engine.model import LineEdit
from lsp_server.engine.text import DiskRead
from lsp_server.engine.v4a import Chunk, UpdateFile

VALUES: list[Any] = [
    LineEdit(1, 2, ("a\n",), (3, 4)),
    Chunk(None, ("a",), ("b",)),
    UpdateFile("a.txt", None, ()),
    DiskRead(1, 2, 3, 4, 5, b"x"),
]


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_every_write_is_refused_as_frozen(value: Any) -> None:
    field = dataclasses.fields(value)[0].name
    before = dataclasses.astuple(value)
    for name in (field, "not_a_field"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(value, name)
    assert dataclasses.astuple(value) == before


@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_a_subclass_keeps_its_own_attributes(value: Any) -> None:
    class Sub(type(value)):  # type: ignore[misc]
        pass

    sub = Sub(*dataclasses.astuple(value, tuple_factory=tuple))
    field = dataclasses.fields(value)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(sub, field, 1)
    sub.note = "kept"  # as on a subclass of the frozen dataclass before: not a field
    assert sub.note == "kept"
    del sub.note
    assert sub == Sub(*dataclasses.astuple(value))


def _frozen_slots_classes() -> list[type]:
    """Every frozen slots dataclass the engine defines."""
    import importlib
    import pkgutil

    import lsp_server.engine as engine

    out = []
    for info in pkgutil.walk_packages(engine.__path__, "lsp_server.engine."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            params = getattr(obj, "__dataclass_params__", None)
            if (
                isinstance(obj, type)
                and obj.__module__ == module.__name__
                and params is not None
                and params.frozen
                and "__slots__" in obj.__dict__
            ):
                out.append(obj)
    return out


@pytest.mark.parametrize("cls", _frozen_slots_classes(), ids=lambda c: c.__qualname__)
def test_every_frozen_slots_class_refuses_a_write_as_frozen(cls: type) -> None:
    """Not only the four above: results, edit texts, change records (the same 3.11 quirk)."""
    value = object.__new__(cls)  # no field needed: the write is refused before any is read
    for name in (dataclasses.fields(cls)[0].name, "not_a_field"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, 1)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(value, name)
