# SPDX-License-Identifier: Apache-2.0
"""Tasks: names, create_task, current_task and all_tasks, custom task factories, and eager
start (3.12+), to which the SimLoop is held by the stock loop's own signature.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import re
from typing import Any

import pytest

from .conftest import TICK, needs_312, var

# Whether this Python's own loop accepts `create_task(..., eager_start=True)` (3.14, and
# `**kwargs` on late 3.13 patch releases). The SimLoop is held to the stock loop's signature.
_STOCK_CREATE_TASK_PARAMS = inspect.signature(asyncio.BaseEventLoop.create_task).parameters
STOCK_CREATE_TASK_TAKES_EAGER_START = "eager_start" in _STOCK_CREATE_TASK_PARAMS or any(
    p.kind is inspect.Parameter.VAR_KEYWORD for p in _STOCK_CREATE_TASK_PARAMS.values()
)


def test_default_task_names_are_numbered(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> list[str]:
        tasks = [loop.create_task(asyncio.sleep(0)) for _ in range(3)]
        await asyncio.gather(*tasks)
        return [t.get_name() for t in tasks]

    names = loop.run_until_complete(main())
    numbers = []
    for name in names:
        m = re.fullmatch(r"Task-(\d+)", name)
        assert m is not None, name
        numbers.append(int(m.group(1)))
    assert numbers == sorted(numbers)
    assert len(set(numbers)) == 3


def test_task_name_can_be_given_and_changed(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        t = loop.create_task(asyncio.sleep(0), name="worker")
        assert t.get_name() == "worker"
        t.set_name("renamed")
        assert t.get_name() == "renamed"
        t2 = asyncio.create_task(asyncio.sleep(0), name="via-asyncio")
        assert t2.get_name() == "via-asyncio"
        await asyncio.gather(t, t2)

    loop.run_until_complete(main())


def test_create_task_returns_an_asyncio_task_with_its_coroutine(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def work() -> int:
        return 9

    async def main() -> None:
        coro = work()
        t = loop.create_task(coro)
        assert isinstance(t, asyncio.Task)
        assert t.get_loop() is loop
        assert t.get_coro() is coro
        assert await t == 9

    loop.run_until_complete(main())


def test_create_task_refuses_a_non_coroutine(loop: asyncio.AbstractEventLoop) -> None:
    with pytest.raises(TypeError, match="coroutine was expected"):
        loop.create_task(1)  # type: ignore[arg-type]


def test_current_task_is_the_running_task(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        me = asyncio.current_task()
        assert me is not None
        assert asyncio.current_task(loop) is me

        async def child() -> asyncio.Task[Any] | None:
            return asyncio.current_task()

        t = loop.create_task(child())
        assert await t is t
        assert asyncio.current_task() is me

    loop.run_until_complete(main())
    assert asyncio.current_task(loop) is None


def test_all_tasks_lists_exactly_the_pending_tasks(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        me = asyncio.current_task()
        sleeper = loop.create_task(asyncio.sleep(10))
        finished = loop.create_task(asyncio.sleep(0))
        await finished
        assert asyncio.all_tasks() == {me, sleeper}
        assert asyncio.all_tasks(loop) == {me, sleeper}
        sleeper.cancel()
        await asyncio.gather(sleeper, return_exceptions=True)
        assert asyncio.all_tasks() == {me}

    loop.run_until_complete(main())
    pending = loop.create_task(asyncio.sleep(0))
    assert asyncio.all_tasks(loop) == {pending}
    loop.run_until_complete(pending)
    assert asyncio.all_tasks(loop) == set()


def test_task_factory_is_none_by_default_and_resettable(loop: asyncio.AbstractEventLoop) -> None:
    def factory(task_loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        return asyncio.Task(coro, loop=task_loop, **kw)

    assert loop.get_task_factory() is None
    loop.set_task_factory(factory)
    assert loop.get_task_factory() is factory
    loop.set_task_factory(None)
    assert loop.get_task_factory() is None
    with pytest.raises(TypeError):
        loop.set_task_factory(1)  # type: ignore[arg-type]


def test_a_custom_task_factory_makes_every_task(loop: asyncio.AbstractEventLoop) -> None:
    calls: list[tuple[asyncio.AbstractEventLoop, dict[str, Any]]] = []

    class MyTask(asyncio.Task):  # type: ignore[type-arg]
        pass

    def factory(task_loop: asyncio.AbstractEventLoop, coro: Any, **kw: Any) -> asyncio.Task[Any]:
        calls.append((task_loop, kw))
        return MyTask(coro, loop=task_loop, **kw)

    loop.set_task_factory(factory)
    ctx = contextvars.copy_context()
    ctx.run(var.set, "factory-ctx")

    async def read_var() -> str:
        return var.get()

    async def main() -> None:
        t = loop.create_task(asyncio.sleep(0, result=1), name="named")
        assert isinstance(t, MyTask)
        assert t.get_name() == "named"
        assert await t == 1
        t2 = asyncio.create_task(asyncio.sleep(0, result=2))
        assert isinstance(t2, MyTask)
        assert await t2 == 2
        t3 = loop.create_task(read_var(), context=ctx)
        assert await t3 == "factory-ctx"

    main_task = loop.create_task(main())
    assert isinstance(main_task, MyTask)
    loop.run_until_complete(main_task)
    assert len(calls) == 4
    assert all(task_loop is loop for task_loop, _ in calls)
    assert calls[-1][1].get("context") is ctx


@needs_312
def test_eager_task_factory_runs_a_task_to_its_first_await_at_once(
    loop: asyncio.AbstractEventLoop,
) -> None:
    steps: list[str] = []

    async def instant() -> str:
        steps.append("instant ran")
        return "instant"

    async def suspends() -> str:
        steps.append("suspends started")
        await asyncio.sleep(TICK)
        steps.append("suspends resumed")
        return "suspends"

    async def main() -> None:
        loop.set_task_factory(asyncio.eager_task_factory)  # type: ignore[attr-defined]
        assert loop.get_task_factory() is asyncio.eager_task_factory  # type: ignore[attr-defined]
        t1 = loop.create_task(instant())
        assert steps == ["instant ran"]
        assert t1.done()
        assert t1.result() == "instant"
        t2 = loop.create_task(suspends())
        assert steps == ["instant ran", "suspends started"]
        assert not t2.done()
        assert t2 in asyncio.all_tasks()
        assert await t2 == "suspends"
        assert steps[-1] == "suspends resumed"

    loop.run_until_complete(main())


@needs_312
def test_an_eager_task_is_current_while_it_runs_eagerly(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        loop.set_task_factory(asyncio.eager_task_factory)  # type: ignore[attr-defined]
        seen: list[asyncio.Task[Any] | None] = []
        me = asyncio.current_task()

        async def who() -> None:
            seen.append(asyncio.current_task())

        t = loop.create_task(who(), name="eager-one")
        assert seen == [t]
        assert t.get_name() == "eager-one"
        assert asyncio.current_task() is me

    loop.run_until_complete(main())


@needs_312
def test_eager_factory_does_not_start_tasks_while_the_loop_is_stopped(
    loop: asyncio.AbstractEventLoop,
) -> None:
    started: list[bool] = []

    async def body() -> None:
        started.append(True)

    loop.set_task_factory(asyncio.eager_task_factory)  # type: ignore[attr-defined]
    t = loop.create_task(body())
    assert started == []
    assert not t.done()
    loop.run_until_complete(t)
    assert started == [True]


@needs_312
def test_create_eager_task_factory_uses_the_given_task_class(
    loop: asyncio.AbstractEventLoop,
) -> None:
    class MyTask(asyncio.Task):  # type: ignore[type-arg]
        pass

    async def main() -> None:
        loop.set_task_factory(asyncio.create_eager_task_factory(MyTask))  # type: ignore[attr-defined]
        t = loop.create_task(asyncio.sleep(0, result=5))
        assert isinstance(t, MyTask)
        assert await t == 5

    loop.run_until_complete(main())


@needs_312
def test_task_constructor_eager_start_runs_eagerly_on_a_running_loop(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> None:
        steps: list[str] = []

        async def body() -> int:
            steps.append("ran")
            return 1

        t = asyncio.Task(body(), loop=loop, eager_start=True)  # type: ignore[call-arg]
        assert steps == ["ran"]
        assert t.done()
        assert t.result() == 1

    loop.run_until_complete(main())


@pytest.mark.skipif(
    not STOCK_CREATE_TASK_TAKES_EAGER_START,
    reason="this Python's loop.create_task has no eager_start",
)
def test_create_task_eager_start_runs_eagerly(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        steps: list[str] = []

        async def body() -> int:
            steps.append("ran")
            return 1

        t = loop.create_task(body(), eager_start=True)  # type: ignore[call-arg]
        assert steps == ["ran"]
        assert t.done()

    loop.run_until_complete(main())
