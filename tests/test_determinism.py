# SPDX-License-Identifier: Apache-2.0
"""Determinism is tested, not assumed: a seed names one run (its log and
trace hash) in one process, across processes with different PYTHONHASHSEED,
alone or deep in a sweep; strategies order what they promise to; time,
os.urandom and the global random module are the seed's inside a run."""

from __future__ import annotations

import ast
import asyncio
import functools
import os
import random
import textwrap
import time
from typing import Any

import pytest
from conftest import json_in_hash_seeds, run_sim

import askew
from askew import _core

pytestmark = pytest.mark.usefixtures("clean_env")

EPOCH = 1577836800


async def gossip(node: Any, peers: int) -> None:
    node.heard = []
    while True:
        msg = await node.recv(timeout=0.3)
        if msg is None:
            node.send(node._askew_world.random.randrange(peers), ("hi", node.id))
        else:
            node.heard.append(msg.src)


async def scenario(world: askew.World) -> None:
    """A bit of everything that a seed decides: scheduling, latency, loss,
    partitions, crashes, TaskGroup and gather over sets of tasks."""
    nodes = [world.spawn(gossip, 4) for _ in range(4)]
    world.net.configure(latency=(0.0, 0.2), loss=0.1, duplicate=0.05)
    order: list[int] = []

    async def worker(i: int) -> None:
        for _ in range(3):
            await asyncio.sleep(0)
            order.append(i)

    async with asyncio.TaskGroup() as tg:
        for i in range(5):
            tg.create_task(worker(i))
    await asyncio.gather(*(worker(i) for i in range(5, 8)))
    world.log.emit(f"order {order}")
    async with world.partition({0, 1}, {2, 3}):
        await world.clock.advance(2)
    world.faults.crash(nodes[world.random.randrange(4)])
    await world.clock.advance(2)
    world.log.emit(f"heard {[n.heard for n in nodes]}")


def trace_of(seed: int, body: Any = scenario, **config: Any) -> tuple[int, list[str]]:
    out: list[tuple[int, list[str]]] = []

    async def wrapped(world: askew.World) -> None:
        await body(world)
        out.append((world.log.hash, [str(e) for e in world.log]))

    run_sim(wrapped, seed=seed, **config)
    return out[0]


def test_the_same_seed_gives_an_identical_trace_hash_and_log() -> None:
    first = trace_of(42)
    assert trace_of(42) == first
    assert trace_of(42) == first
    assert len(first[1]) > 20


def test_thirty_seeds_give_many_distinct_runs() -> None:
    traces = [trace_of(seed) for seed in range(30)]
    hashes = {h for h, _ in traces}
    # The test body is one loop: its own order is asyncio's whatever the
    # seed; what the nodes heard varies with interleaving, latency and loss.
    orders = {next(t for t in log if "order" in t).split("order ")[1] for _, log in traces}
    heard = {next(t for t in log if "heard" in t) for _, log in traces}
    assert len(hashes) == 30
    assert len(orders) == 1
    assert len(heard) >= 10


_CHILD = textwrap.dedent(
    """
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import test_determinism as t
    print(json.dumps(t.trace_of(1234)))
    """
)


def test_a_seed_gives_the_same_hash_in_processes_with_different_hash_seeds() -> None:
    results = json_in_hash_seeds(_CHILD, hash_seeds=("0", "1", "12345"))
    assert results[0] == results[1] == results[2]
    assert results[0][0] == trace_of(1234)[0]


def test_a_seed_replayed_alone_equals_the_same_seed_deep_in_a_sweep() -> None:
    swept: dict[int, tuple[int, list[str]]] = {}

    @askew.simulate(seed=9, iterations=58)
    async def sweep(world: askew.World) -> None:
        await scenario(world)
        swept[world.seed] = (world.log.hash, [str(e) for e in world.log])

    sweep()
    seed = _core.seed_iteration(9, 57)
    assert trace_of(seed) == swept[seed]

    alone: list[int] = []

    async def record(world: askew.World) -> None:
        await scenario(world)
        alone.append(world.log.hash)

    askew.Replay.run(record, seed=seed)
    assert alone == [swept[seed][0]]


# ---- strategies -----------------------------------------------------------------


async def round_robin(world: askew.World) -> None:
    order: list[tuple[int, int]] = []

    async def worker(i: int) -> None:
        for r in range(3):
            order.append((i, r))
            await asyncio.sleep(0)

    await asyncio.gather(*(worker(i) for i in range(6)))
    world.log.emit(repr(order))


@functools.cache
def _order(seed: int, strategy: str) -> list[tuple[int, int]]:
    _, log = trace_of(seed, round_robin, strategy=strategy)
    return ast.literal_eval(log[-1].split("world   ", 1)[1])  # type: ignore[no-any-return]


def _stock_order() -> list[tuple[int, int]]:
    order: list[tuple[int, int]] = []

    async def worker(i: int) -> None:
        for r in range(3):
            order.append((i, r))
            await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(*(worker(i) for i in range(6)))

    asyncio.run(main())
    return order


def test_fifo_keeps_asyncios_order_for_every_seed() -> None:
    stock = _stock_order()
    assert all(_order(seed, "fifo") == stock for seed in range(10))


def test_faithful_keeps_asyncios_order_within_one_loop_for_every_seed() -> None:
    stock = _stock_order()
    assert all(_order(seed, "faithful") == stock for seed in range(10))


def test_interleave_interleaves_but_keeps_the_order_of_callbacks_from_one_step() -> None:
    stock = _stock_order()
    orders = [_order(seed, "interleave") for seed in range(10)]
    assert any(o != stock for o in orders)
    for o in orders:
        # gather() starts all six tasks from one step: their first steps keep FIFO order
        assert [i for i, r in o if r == 0] == list(range(6))
        assert sorted(o) == sorted(stock)


def test_shuffle_permutes_even_callbacks_from_one_step() -> None:
    firsts = {tuple(i for i, r in _order(seed, "shuffle") if r == 0) for seed in range(10)}
    assert len(firsts) > 1
    interleaves = [_order(seed, "interleave") for seed in range(10)]
    shuffles = [_order(seed, "shuffle") for seed in range(10)]
    assert interleaves != shuffles


# ---- time, entropy and the global random module inside a run -------------------------


def test_time_reads_inside_a_run_are_virtual() -> None:
    async def body(world: askew.World) -> None:
        for _ in range(2):
            await world.clock.advance(12.5)
            now = world.now
            assert time.time() == EPOCH + now
            assert time.monotonic() == now
            assert time.perf_counter() == now
            assert time.time_ns() == (EPOCH + int(now)) * 10**9 + round(now % 1 * 1e9)
            assert time.monotonic_ns() == round(now * 1e9)
            assert time.perf_counter_ns() == round(now * 1e9)
        assert world.now == 25.0

    run_sim(body, strategy="fifo")  # exact times: no CPU time, no overshoot


def _entropy(seed: int) -> tuple[bytes, float, int]:
    out: list[tuple[bytes, float, int]] = []

    async def body(world: askew.World) -> None:
        await world.clock.advance(1)
        out.append((os.urandom(16), random.random(), random.randrange(10**9)))

    run_sim(body, seed=seed)
    return out[0]


def test_os_urandom_and_the_global_random_module_are_seeded_per_run() -> None:
    a = _entropy(5)
    assert _entropy(5) == a
    b = _entropy(6)
    assert a[0] != b[0] and a[1] != b[1]
    assert len(a[0]) == 16


def test_each_iteration_of_a_sweep_reseeds_the_global_random_module() -> None:
    draws: dict[int, float] = {}

    @askew.simulate(seed=3, iterations=4)
    async def test(world: askew.World) -> None:
        draws[world.seed] = random.random()

    test()
    assert len(set(draws.values())) == 4
    last = _core.seed_iteration(3, 3)
    assert _entropy(last)[1] == draws[last]


def test_a_gauss_value_cached_by_one_run_never_reaches_the_next() -> None:
    # random.gauss draws two values and keeps one for the next call; the
    # reseed at each run must drop it, as random.seed() does.
    draws: list[float] = []

    @askew.simulate(seed=11, iterations=2)
    async def test(world: askew.World) -> None:
        draws.append(random.gauss(0, 1))

    test()
    askew.Replay.run(test, seed=_core.seed_iteration(11, 1))
    assert draws[1] == draws[2]


def test_os_urandom_drawn_while_importing_does_not_shift_the_runs_stream(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A module that draws entropy when first imported is imported in only the
    # first iteration of a sweep: its draw must not move the bytes the run
    # reads after it, or an iteration's seed would not replay alone.
    (tmp_path / "draws_os_urandom_at_import.py").write_text("import os\nKEY = os.urandom(16)\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    async def main(do_import: bool) -> str:
        if do_import:
            import draws_os_urandom_at_import  # noqa: F401

        return os.urandom(8).hex()

    plain = askew.run(main(False), seed=5)
    first_import = askew.run(main(True), seed=5)
    again = askew.run(main(True), seed=5)
    assert plain == first_import == again
    import draws_os_urandom_at_import as module

    assert len(module.KEY) == 16


def test_tasks_are_numbered_by_the_loop_that_makes_them_and_only_by_it() -> None:
    """The creation number (the hash) goes with create_task, on its C and its
    Python path alike; a Task made directly or by a user's factory has none,
    whatever was made just before it."""
    loop = askew.new_event_loop()

    async def body() -> list[tuple[str, int]]:
        async def nothing() -> None:
            pass

        fast = asyncio.get_running_loop().create_task(nothing())
        slow = asyncio.get_running_loop().create_task(nothing(), name=None, context=None)
        refused = nothing()
        with pytest.raises(TypeError):
            asyncio.get_running_loop().create_task(refused, bogus=1)  # type: ignore[call-arg]
        refused.close()
        direct = _core.Task(nothing(), loop=asyncio.get_running_loop())
        loop.set_task_factory(lambda lp, coro, **kw: _core.Task(coro, loop=lp, **kw))
        made = asyncio.get_running_loop().create_task(nothing())
        loop.set_task_factory(None)
        tasks = [fast, slow, direct, made]
        await asyncio.gather(*tasks)
        return [(t.get_name(), t._askew_seq) for t in tasks]

    try:
        got = loop.run_until_complete(body())
    finally:
        loop.close()
    assert got[0][1] >= 1
    assert got[1][1] == got[0][1] + 1
    assert got[2][1] == 0
    assert got[3][1] == 0
    # The refused one used up a number too.
    assert got[3][0] == f"Task-{got[1][1] + 2}"
