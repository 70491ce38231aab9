# SPDX-License-Identifier: Apache-2.0
"""Debug mode: set_debug/get_debug, the checks debug mode adds to call_soon, and (askew only)
PYTHONASYNCIODEBUG turning it on for a new SimLoop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from .conftest import askew_only


def test_set_debug_is_reflected_by_get_debug(loop: asyncio.AbstractEventLoop) -> None:
    assert isinstance(loop.get_debug(), bool)
    loop.set_debug(True)
    assert loop.get_debug() is True
    loop.set_debug(False)
    assert loop.get_debug() is False


def test_debug_mode_refuses_coroutines_and_non_callables_in_call_soon(
    loop: asyncio.AbstractEventLoop,
) -> None:
    loop.set_debug(True)

    async def coro_fn() -> None:
        pass

    with pytest.raises(TypeError, match="coroutines cannot be used with call_soon"):
        loop.call_soon(coro_fn)
    with pytest.raises(TypeError, match="a callable object was expected by call_soon"):
        loop.call_soon(1)  # type: ignore[arg-type]


@askew_only
def test_pythonasynciodebug_turns_debug_on(
    monkeypatch: pytest.MonkeyPatch, new_loop: Callable[[], asyncio.AbstractEventLoop]
) -> None:
    monkeypatch.setenv("PYTHONASYNCIODEBUG", "1")
    debug_loop = new_loop()
    try:
        assert debug_loop.get_debug()
    finally:
        debug_loop.close()
