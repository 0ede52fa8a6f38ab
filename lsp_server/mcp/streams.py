"""Wrappers around the SDK's stdio streams: what every one must keep of the stream it wraps.

The SDK's dispatcher uses a read stream as an async iterator and context manager and reads its
`last_context` (the sender's contextvars); a write stream by `send` and as a context manager.
`Receiving` and `Sending` keep all of that, so a wrapper (surrogates.Repaired, drain.py's)
only says what it does to an item.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any


class Closing:
    """Closing the wrapper closes the stream it wraps; `async with` closes it on the way out."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class Receiving(Closing):
    """A read stream: `receive` (override it; anyio.EndOfStream at the end), iteration."""

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        return await self._inner.receive()

    def __aiter__(self) -> Receiving:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class Sending(Closing):
    """A write stream: `send` (override it)."""

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
