"""Loops made by asyncio.Runner, asyncio.new_event_loop and the policy."""

import asyncio

import pytest


def test_runner_keeps_one_loop_across_runs():
    with asyncio.Runner() as runner:
        first = runner.run(asyncio.sleep(0.1, "one"))
        loop = runner.get_loop()
        second = runner.run(asyncio.sleep(0.2, "two"))
        assert runner.get_loop() is loop
    assert (first, second) == ("one", "two")


def test_new_event_loop_run_until_complete():
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(asyncio.sleep(0.05, 42)) == 42
    finally:
        loop.close()


def test_call_later_fires_in_order():
    fired = []

    async def main():
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        loop.call_later(0.3, fired.append, "c")
        loop.call_later(0.1, fired.append, "a")
        loop.call_later(0.2, fired.append, "b")
        loop.call_later(0.4, done.set_result, None)
        await done

    asyncio.run(main())
    assert fired == ["a", "b", "c"]


def test_task_group_collects_results():
    async def main():
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(asyncio.sleep(i / 100, i)) for i in range(5)]
        return [t.result() for t in tasks]

    assert asyncio.run(main()) == [0, 1, 2, 3, 4]


def test_cancelled_task_raises_cancelled_error():
    async def main():
        task = asyncio.create_task(asyncio.sleep(100))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
