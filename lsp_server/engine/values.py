"""Frozen value types that cost what a slots object costs to make: `slot_setters`.

A plan makes one `LineEdit` per edit and a parse one `Chunk` per chunk: thousands per patch
(5,000 each for issue 3's 1,000-file patch). A frozen dataclass's generated `__init__` sets each
field through `object.__setattr__` looked up on a global (frozen classes refuse `self.x = v`),
into a fresh `__dict__`: ~0.9 us for LineEdit's 4 fields, ~1.5 us for Chunk's 7. Declared
`@dataclass(frozen=True, slots=True, init=False)` with an `__init__` of their own, they keep
every dataclass behaviour (fields, `replace`, eq, hash, repr, assignment refused) and set each
field once, while constructing, through its slot's own descriptor (`slot_setters`): what
`object.__setattr__` would end up calling, without the lookups: 0.28 and 0.35 us (best of 7
of 5,000 constructions, in process). Nothing is written after construction: the fields are set
exactly where the dataclass's own `__init__` would set them. Also UpdateFile and DiskRead (one
per file section, one per file read).

Measured with callgrind on bench_patch's workloads, 03eec8d -> c75b687 (LineEdit and Chunk
only): parse, resolve and read, plan and diff in process (one run, GC off): the 1,000 files
1125.6 -> 1082.1 M instructions (the parse alone 266.4 -> 238.7 M), the 100k-line file
615.1 -> 605.4 M; one whole CLI apply of the big file (fresh state folders) 932.5 -> 922.1 M.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError

TYPE_CHECKING = False  # typing's constant without importing typing (lsp_server/startup.py)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")


def slot_setters(cls: type, *names: str) -> tuple[Callable[[Any, Any], None], ...]:
    """The `__set__` of each of `cls`'s slots `names` (the member descriptors of a slots class),
    for its `__init__` to set its fields with while it constructs the object; and `cls`'s
    refusal of writes made right when it is a frozen dataclass (`_refuse_writes`)."""
    out = []
    for name in names:
        descriptor = cls.__dict__[name]
        assert type(descriptor).__name__ == "member_descriptor", (cls, name)
        out.append(descriptor.__set__)
    params = getattr(cls, "__dataclass_params__", None)
    if params is not None and params.frozen:
        _refuse_writes(cls)
    return tuple(out)


def frozen_writes_refused(cls: T) -> T:
    """Class decorator, above `@dataclass(frozen=True, slots=True)`: writes refused as a frozen
    dataclass's (FrozenInstanceError) for any name, not TypeError (`_refuse_writes`)."""
    _refuse_writes(cls)  # type: ignore[arg-type]
    return cls


def _refuse_writes(cls: type) -> None:
    """`cls`'s `__setattr__`/`__delattr__` as a frozen dataclass's, naming `cls` itself.

    dataclass(slots=True) makes a new class after it wrote those two, and they keep naming the
    class it replaced (CPython 3.11): a write of a name that is not a field reached
    `super(<that class>, self)` and raised TypeError, not FrozenInstanceError (an
    AttributeError), and a subclass could set no attribute of its own
    (tests/engine/test_values_frozen_writes.py). Neither runs while constructing: the slots'
    setters do that."""
    fields = frozenset(cls.__dataclass_fields__)  # type: ignore[attr-defined]
    owner: Any = cls  # (mypy reads a closure's `type` argument to super() as an instance)

    def __setattr__(self: object, name: str, value: Any) -> None:
        if type(self) is cls or name in fields:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(owner, self).__setattr__(name, value)

    def __delattr__(self: object, name: str) -> None:
        if type(self) is cls or name in fields:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(owner, self).__delattr__(name)

    for method in (__setattr__, __delattr__):
        method.__qualname__ = f"{cls.__qualname__}.{method.__name__}"
        setattr(cls, method.__name__, method)
