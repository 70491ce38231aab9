# SPDX-License-Identifier: Apache-2.0
"""Contexts: tasks run in a copy of the creating context, callbacks in the context current at
the call, and an explicit `context=` wins over both.
"""

from __future__ import annotations

import asyncio
import contextvars

from .conftest import settle, var


def test_a_task_runs_in_a_copy_of_the_creating_context(loop: asyncio.AbstractEventLoop) -> None:
    async def child() -> str:
        seen = var.get()
        var.set("child")
        return seen

    async def main() -> tuple[str, str]:
        var.set("parent")
        seen = await loop.create_task(child())
        return seen, var.get()

    assert loop.run_until_complete(main()) == ("parent", "parent")


def test_create_task_with_context_runs_in_that_context(loop: asyncio.AbstractEventLoop) -> None:
    ctx = contextvars.copy_context()
    ctx.run(var.set, "given")

    async def child() -> str:
        var.set("changed by child")
        return "done"

    async def main() -> None:
        t = loop.create_task(child(), context=ctx)
        assert await t == "done"
        assert ctx[var] == "changed by child"
        assert var.get() == "unset"

    loop.run_until_complete(main())


def test_call_soon_copies_the_context_at_the_time_of_the_call(
    loop: asyncio.AbstractEventLoop,
) -> None:
    seen: list[str] = []

    async def main() -> None:
        var.set("at call")
        loop.call_soon(lambda: seen.append(var.get()))
        var.set("after call")
        await settle()

    loop.run_until_complete(main())
    assert seen == ["at call"]


def test_call_soon_with_context_runs_in_that_context(loop: asyncio.AbstractEventLoop) -> None:
    ctx = contextvars.copy_context()
    ctx.run(var.set, "explicit")
    seen: list[str] = []

    def cb() -> None:
        seen.append(var.get())
        var.set("changed in callback")

    loop.call_soon(cb, context=ctx)
    loop.run_until_complete(settle())
    assert seen == ["explicit"]
    assert ctx[var] == "changed in callback"
    assert var.get() == "unset"


def test_done_callback_with_context_runs_in_that_context(loop: asyncio.AbstractEventLoop) -> None:
    ctx = contextvars.copy_context()
    ctx.run(var.set, "done-ctx")
    seen: list[str] = []

    async def main() -> None:
        fut = loop.create_future()
        fut.add_done_callback(lambda f: seen.append(var.get()), context=ctx)
        fut.set_result(None)
        await settle()

    loop.run_until_complete(main())
    assert seen == ["done-ctx"]
