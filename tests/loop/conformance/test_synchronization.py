# SPDX-License-Identifier: Apache-2.0
"""Lock, Event, Semaphore and Condition: mutual exclusion, FIFO lock waiters, wake-ups, and the
errors each raises when misused.
"""

from __future__ import annotations

import asyncio

import pytest

from .conftest import TICK, settle


def test_lock_gives_mutual_exclusion(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> int:
        lock = asyncio.Lock()
        inside = 0
        most = 0

        async def worker() -> None:
            nonlocal inside, most
            for _ in range(3):
                async with lock:
                    inside += 1
                    most = max(most, inside)
                    await asyncio.sleep(0)
                    inside -= 1

        await asyncio.gather(*(worker() for _ in range(5)))
        return most

    assert loop.run_until_complete(main()) == 1


def test_lock_waiters_acquire_in_the_order_they_started_waiting(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> list[int]:
        lock = asyncio.Lock()
        order: list[int] = []

        async def waiter(i: int) -> None:
            async with lock:
                order.append(i)

        await lock.acquire()
        tasks = []
        for i in range(5):
            tasks.append(loop.create_task(waiter(i)))
            await settle()
        lock.release()
        await asyncio.gather(*tasks)
        return order

    assert loop.run_until_complete(main()) == [0, 1, 2, 3, 4]


def test_releasing_an_unlocked_lock_raises(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        lock = asyncio.Lock()
        assert not lock.locked()
        with pytest.raises(RuntimeError, match="Lock is not acquired"):
            lock.release()
        await lock.acquire()
        assert lock.locked()
        lock.release()

    loop.run_until_complete(main())


def test_event_set_wakes_every_waiter(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> list[bool]:
        ev = asyncio.Event()
        waiters = [loop.create_task(ev.wait()) for _ in range(4)]
        await settle()
        assert not any(w.done() for w in waiters)
        assert not ev.is_set()
        ev.set()
        return await asyncio.gather(*waiters)

    assert loop.run_until_complete(main()) == [True] * 4


def test_event_wait_returns_at_once_when_set_and_blocks_after_clear(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> None:
        ev = asyncio.Event()
        ev.set()
        assert await ev.wait() is True
        ev.clear()
        waiter = loop.create_task(ev.wait())
        await settle()
        assert not waiter.done()
        ev.set()
        assert await waiter is True

    loop.run_until_complete(main())


def test_semaphore_bounds_concurrency(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> int:
        sem = asyncio.Semaphore(2)
        inside = 0
        most = 0

        async def worker() -> None:
            nonlocal inside, most
            async with sem:
                inside += 1
                most = max(most, inside)
                await asyncio.sleep(TICK)
                inside -= 1

        await asyncio.gather(*(worker() for _ in range(6)))
        return most

    assert loop.run_until_complete(main()) == 2


def test_semaphore_locked_and_value_checks(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        with pytest.raises(ValueError):
            asyncio.Semaphore(-1)
        sem = asyncio.Semaphore(1)
        assert not sem.locked()
        await sem.acquire()
        assert sem.locked()
        sem.release()
        sem.release()  # an unbounded semaphore may be released past its initial value
        assert not sem.locked()

    loop.run_until_complete(main())


def test_bounded_semaphore_refuses_too_many_releases(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        sem = asyncio.BoundedSemaphore(1)
        await sem.acquire()
        sem.release()
        with pytest.raises(ValueError, match="BoundedSemaphore released too many times"):
            sem.release()

    loop.run_until_complete(main())


def test_condition_notify_wakes_one_waiter_at_a_time(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        cond = asyncio.Condition()
        woken: list[int] = []

        async def waiter(i: int) -> None:
            async with cond:
                await cond.wait()
                woken.append(i)

        tasks = [loop.create_task(waiter(i)) for i in range(3)]
        await settle()
        async with cond:
            cond.notify(1)
        await settle()
        assert len(woken) == 1
        async with cond:
            cond.notify_all()
        await asyncio.gather(*tasks)
        assert sorted(woken) == [0, 1, 2]

    loop.run_until_complete(main())


def test_condition_wait_for_returns_once_the_predicate_holds(
    loop: asyncio.AbstractEventLoop,
) -> None:
    async def main() -> int:
        cond = asyncio.Condition()
        state = {"n": 0}

        async def consumer() -> int:
            async with cond:
                await cond.wait_for(lambda: state["n"] >= 3)
                return state["n"]

        c = loop.create_task(consumer())
        for _ in range(3):
            await settle()
            assert not c.done()
            async with cond:
                state["n"] += 1
                cond.notify_all()
        return await c

    assert loop.run_until_complete(main()) == 3


def test_condition_requires_its_lock(loop: asyncio.AbstractEventLoop) -> None:
    async def main() -> None:
        cond = asyncio.Condition()
        with pytest.raises(RuntimeError, match="cannot notify on un-acquired lock"):
            cond.notify()
        with pytest.raises(RuntimeError, match="cannot wait on un-acquired lock"):
            await cond.wait()

    loop.run_until_complete(main())
