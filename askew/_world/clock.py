# SPDX-License-Identifier: Apache-2.0
"""world.clock: let virtual time pass, and say so when a call to do it was
never awaited (the commonest slip: `world.clock.advance(30)` without
`await` lets no time pass, and the test reads state that never came).

Nothing here reads a host clock; the World makes one Clock for its run.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings
from collections.abc import Coroutine, Generator
from typing import Any

from .._loop.config import check_seconds


class Clock:
    """world.clock: let virtual time pass."""

    def __init__(self, world: Any) -> None:
        self._world = world

    def advance(self, seconds: float) -> Advance:
        """Let `seconds` of virtual time pass, running everything due in
        them: `await world.clock.advance(30)`. Returns an awaitable (a
        coroutine, as asyncio.create_task takes it); one never awaited lets
        no time pass, warns, and the run's failure report says where."""
        seconds = check_seconds(seconds, "advance(seconds=...)")
        self._world._check_live()
        caller = sys._getframe(1)
        return Advance(self._world, seconds, caller.f_code.co_filename, caller.f_lineno)


class Advance(Coroutine[Any, Any, None]):
    """What world.clock.advance(s) returns: awaited (or made a task), it is
    asyncio.sleep(s); dropped unawaited, it tells the world, which puts a
    hint in the failure report, and warns as an unawaited coroutine does,
    saying what to write."""

    __slots__ = ("_file", "_inner", "_line", "_seconds", "_started", "_world")

    def __init__(self, world: Any, seconds: float, file: str, line: int) -> None:
        self._world = world
        self._seconds = seconds
        self._file = file
        self._line = line
        self._started = False
        self._inner: Coroutine[Any, Any, None] | None = None

    def _coro(self) -> Coroutine[Any, Any, None]:
        if self._inner is None:
            self._started = True
            self._inner = asyncio.sleep(self._seconds)
        return self._inner

    def __await__(self) -> Generator[Any, None, None]:
        return self._coro().__await__()

    def send(self, value: Any) -> Any:
        return self._coro().send(value)

    def throw(self, *args: Any) -> Any:
        return self._coro().throw(*args)

    def close(self) -> None:
        self._started = True  # closed on purpose: no hint
        if self._inner is not None:
            self._inner.close()

    def _text(self) -> str:
        return f"world.clock.advance({self._seconds:g})"

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(
            f"{self._text()} returns an awaitable, which has no attribute {name!r}: "
            f"write `await {self._text()}`"
        )

    def __del__(self) -> None:
        if self._started:
            return
        where = f"{os.path.basename(self._file)}:{self._line}"
        hint = (
            f"{self._text()} at {where} was never awaited, so no time passed there: "
            f"write `await {self._text()}`"
        )
        self._world._hint(hint)
        warnings.warn_explicit(hint, RuntimeWarning, self._file, self._line)
