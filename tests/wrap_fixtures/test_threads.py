"""Executor work as asyncio and anyio users write it.

Blocking work handed to a thread runs inline when wrapped. Work that, from
its thread, waits for the loop cannot run inline (the loop's own thread
would wait for itself): wrapped, it must fail naming the wait, never hang.
"""

import asyncio
import threading

import pytest


def test_blocking_work_in_to_thread():
    async def main():
        return await asyncio.to_thread(sum, range(10))

    assert asyncio.run(main()) == 45


def test_blocking_work_in_the_default_executor():
    async def main():
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, sorted, [3, 1, 2])

    assert asyncio.run(main()) == [1, 2, 3]


async def answer():
    await asyncio.sleep(0.01)
    return 42


def test_worker_runs_a_coroutine_on_the_loop_and_waits():
    async def main():
        loop = asyncio.get_running_loop()
        return await asyncio.to_thread(
            lambda: asyncio.run_coroutine_threadsafe(answer(), loop).result()
        )

    assert asyncio.run(main()) == 42


def test_worker_calls_back_into_the_loop_and_waits():
    async def main():
        loop = asyncio.get_running_loop()
        done = threading.Event()

        def work():
            loop.call_soon_threadsafe(done.set)
            done.wait()
            return "woken"

        return await loop.run_in_executor(None, work)

    assert asyncio.run(main()) == "woken"


def test_worker_uses_anyio_from_thread_run():
    anyio = pytest.importorskip("anyio")
    from anyio import from_thread, lowlevel

    async def main():
        token = lowlevel.current_token()
        return await asyncio.to_thread(from_thread.run, answer, token=token)

    assert anyio.run(main) == 42
