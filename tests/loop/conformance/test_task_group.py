# SPDX-License-Identifier: Apache-2.0
"""asyncio.TaskGroup: it waits for every child, groups their errors, cancels the siblings of a
failing child and the children of a cancelled parent, and refuses tasks once finished.
"""

from __future__ import annotations

import asyncio

import pytest

from .conftest import TICK, cancel_once_started


def test_task_group_waits_for_all_children(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> list[int]:
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(asyncio.sleep(n * TICK, result=n)) for n in (3, 1, 2)]
        assert all(t.done() for t in tasks)
        return [t.result() for t in tasks]

    assert loop.run_until_complete(main()) == [3, 1, 2]


def test_task_group_child_error_raises_exception_group_and_cancels_siblings(
    loop: asyncio.AbstractEventLoop,
) -> None:
    sibling: list[str] = []

    async def boom() -> None:
        await asyncio.sleep(TICK)
        raise ValueError("child")

    async def long() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            sibling.append("cancelled")
            raise

    async def main() -> None:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(boom())
            tg.create_task(long())

    with pytest.raises(ExceptionGroup) as info:
        loop.run_until_complete(main())
    assert [type(e) for e in info.value.exceptions] == [ValueError]
    assert str(info.value.exceptions[0]) == "child"
    assert sibling == ["cancelled"]


def test_task_group_collects_every_child_error(loop: asyncio.AbstractEventLoop) -> None:
    async def fail(exc: Exception) -> None:
        await asyncio.sleep(TICK)
        raise exc

    async def main() -> None:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(fail(ValueError("a")))
            tg.create_task(fail(KeyError("b")))

    with pytest.raises(ExceptionGroup) as info:
        loop.run_until_complete(main())
    assert {type(e) for e in info.value.exceptions} == {ValueError, KeyError}


def test_task_group_body_error_cancels_children_and_is_grouped(
    loop: asyncio.AbstractEventLoop,
) -> None:
    children: list[asyncio.Task[None]] = []

    async def main() -> None:
        async with asyncio.TaskGroup() as tg:
            children.append(tg.create_task(asyncio.sleep(10)))
            await asyncio.sleep(0)
            raise RuntimeError("body")

    with pytest.raises(ExceptionGroup) as info:
        loop.run_until_complete(main())
    assert [str(e) for e in info.value.exceptions] == ["body"]
    assert children[0].cancelled()


def test_cancelling_the_parent_cancels_task_group_children(loop: asyncio.AbstractEventLoop) -> None:
    children: list[asyncio.Task[None]] = []

    async def body() -> None:
        async with asyncio.TaskGroup() as tg:
            children.append(tg.create_task(asyncio.sleep(10)))
            children.append(tg.create_task(asyncio.sleep(10)))

    async def main() -> asyncio.Task[None]:
        parent = loop.create_task(body())
        await cancel_once_started(parent)
        return parent

    assert loop.run_until_complete(main()).cancelled()
    assert len(children) == 2
    assert all(c.cancelled() for c in children)


def test_task_group_refuses_new_tasks_once_finished(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        async with asyncio.TaskGroup() as tg:
            pass
        coro = asyncio.sleep(0)
        try:
            with pytest.raises(RuntimeError, match="is finished"):
                tg.create_task(coro)
        finally:
            coro.close()

    loop.run_until_complete(main())
