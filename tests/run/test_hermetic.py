# SPDX-License-Identifier: Apache-2.0
"""Hermetic runs (issue 22): a reported seed replays alone, and the end of a
run never fails a correct program.

A 3-node replicated store over asyncio streams (a leader, two followers,
clients that use wait_for, a crash and restart, a partition) is swept under
swarm and every 50th seed replayed alone with the same trace hash; the same
store with a planted quorum bug is still found, by default and by swarm.
Around it, one claim per class: futures hash by creation number, what an
earlier run left is dropped, the end of a run is teardown, process-global
generators are reset, and a failure that does not replay alone says so and
is not analysed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import types
import uuid
from pathlib import Path
from typing import Any

import pytest

import askew
from askew import _core
from askew._loop.config import RunConfig
from askew._loop.loop import SETTLE_ROUNDS, SimLoop
from askew._report.report import simulation_failure
from askew._run import onerun, runner

pytestmark = pytest.mark.usefixtures("clean_env")
REPO = Path(__file__).resolve().parents[2]


# ---- the store ------------------------------------------------------------------


async def follower(node: Any) -> None:
    node.data = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                seq, key, value = line.decode().split()
                node.data[key] = value
                writer.write(f"ACK {seq}\n".encode())
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    await asyncio.start_server(handle, None, 7000)
    await asyncio.sleep(3600)


class Link:
    """The leader's connection to one follower: one reader task resolves
    each write's future (a plain loop.create_future()) when its ACK comes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.writer: asyncio.StreamWriter | None = None
        self.waiting: dict[int, asyncio.Future[str]] = {}

    async def run(self) -> None:
        while True:
            try:
                reader, self.writer = await asyncio.open_connection(self.name, 7000)
            except OSError:
                await asyncio.sleep(0.1)
                continue
            try:
                while line := await reader.readline():
                    fut = self.waiting.pop(int(line.split()[1]), None)
                    if fut is not None and not fut.done():
                        fut.set_result(self.name)
            except ConnectionError:
                pass
            finally:
                self.writer.close()
                self.writer = None
                for fut in self.waiting.values():
                    if not fut.done():
                        fut.set_exception(ConnectionResetError(self.name))
                self.waiting.clear()
            await asyncio.sleep(0.1)

    async def replicate(self, seq: int, key: str, value: str) -> str:
        if self.writer is None:
            raise ConnectionResetError(self.name)
        fut = asyncio.get_running_loop().create_future()
        self.waiting[seq] = fut
        self.writer.write(f"{seq} {key} {value}\n".encode())
        return await fut


async def leader(node: Any, followers: list[str], quorum: int) -> None:
    node.data = {}
    links = [Link(f) for f in followers]
    pumps = [asyncio.create_task(link.run()) for link in links]
    seq = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal seq
        try:
            while line := await reader.readline():
                _, key, value = line.decode().split()
                seq += 1
                tasks = [asyncio.ensure_future(link.replicate(seq, key, value)) for link in links]
                done, pending = await asyncio.wait(tasks, timeout=0.5)
                for task in pending:
                    task.cancel()
                acks = sum(1 for t in done if not t.cancelled() and t.exception() is None)
                if acks >= quorum:
                    node.data[key] = value
                    writer.write(b"OK\n")
                else:
                    writer.write(b"ERR\n")
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            writer.close()

    await asyncio.start_server(serve, None, 6379)
    await asyncio.gather(*pumps)


async def client(node: Any, acked: list[str], delays: list[float]) -> None:
    await asyncio.sleep(0.5)
    reader, writer = await asyncio.open_connection("lead", 6379)
    for k, delay in enumerate(delays):
        await asyncio.sleep(delay)
        key = f"k{node.id}-{k}"
        writer.write(f"SET {key} v{k}\n".encode())
        try:
            if await asyncio.wait_for(reader.readline(), 1) == b"OK\n":
                acked.append(key)
        except TimeoutError:
            pass


async def store(world: askew.World, quorum: int) -> None:
    """Every acknowledged write is on a follower: true with quorum 2 (both
    followers), false with 1 once a follower that acked alone crashes."""
    f1 = world.spawn(follower, name="f1")
    f2 = world.spawn(follower, name="f2")
    lead = world.spawn(leader, ["f1", "f2"], quorum, name="lead")
    acked: list[str] = []
    for _ in range(2):
        world.spawn(client, acked, [world.random.uniform(0, 0.3) for _ in range(8)])

    async def watcher() -> None:  # the test body's own leftover tasks
        while True:
            try:
                await asyncio.wait_for(asyncio.sleep(world.random.uniform(0, 0.2)), 0.1)
            except TimeoutError:
                pass

    watchers = [asyncio.create_task(watcher()) for _ in range(2)]
    await world.clock.advance(seconds=world.random.uniform(0.5, 2))
    async with world.partition({lead.id, f1.id}, {f2.id}):
        await world.clock.advance(seconds=world.random.uniform(0, 1))
        if world.random.random() < 0.5:
            world.faults.crash(f1)
            await world.clock.advance(seconds=0.2)
            world.faults.restart(f1)
    await world.clock.advance(seconds=world.random.uniform(0, 2))
    assert watchers
    lost = [k for k in acked if k not in f1.data and k not in f2.data]
    assert not lost, f"acknowledged writes lost: {lost}"


def test_every_50th_seed_of_2000_swarmed_runs_of_the_store_replays_alone_with_its_hash() -> None:
    hashes: dict[int, int] = {}

    @askew.simulate(seed=22, iterations=2000, swarm=True)
    async def test_store(world: askew.World) -> None:
        await store(world, quorum=2)
        hashes[world.seed] = world._loop.trace_hash

    outcomes, _ = runner.run_iterations(test_store, 22, 0, 2000)
    assert [o.report for o in outcomes if o.report] == []  # the correct store never fails
    swept = dict(hashes)
    for i in range(0, 2000, 50):
        seed = runner.iteration_seed(22, i)
        askew.Replay.run(test_store, seed)
        assert hashes[seed] == swept[seed], (i, seed)


_UNDER_EXEC = """
import json, sys
sys.path.insert(0, sys.argv[1])
import askew, test_hermetic as t
from askew._run import runner

hashes = {}

@askew.simulate(seed=23, iterations=400, swarm=True)
async def test_store(world):
    await t.store(world, quorum=2)
    hashes[world.seed] = world._loop.trace_hash

outcomes, _ = runner.run_iterations(test_store, 23, 0, 400)
swept = dict(hashes)
seeds = [runner.iteration_seed(23, i) for i in range(0, 400, 50)]
for seed in seeds:
    askew.Replay.run(test_store, seed)
diverged = [seed for seed in seeds if hashes[seed] != swept[seed]]
print(json.dumps([askew.preload_active(), [o.headline for o in outcomes if o.headline], diverged]))
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not (REPO / "askew" / "libaskew-preload.so").is_file(),
    reason="needs Linux and the built preload (run `make`)",
)
def test_under_askew_exec_swarmed_store_seeds_replay_alone_with_their_hash() -> None:
    # Here, not at the top: a child imports this module without conftest.
    from conftest import hang_guard

    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKEW_")}
    env.pop("PYTEST_ADDOPTS", None)
    if not os.environ.get("ASKEW_ASAN"):  # under `make asan`, libasan stays first
        env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = str(REPO)
    here = str(Path(__file__).resolve().parent)
    proc = subprocess.run(
        [sys.executable, "-m", "askew._run.exec", sys.executable, "-c", _UNDER_EXEC, here],
        env=env,
        capture_output=True,
        text=True,
        timeout=hang_guard(600),
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    live, failures, diverged = json.loads(proc.stdout.splitlines()[-1])
    assert live and failures == [] and diverged == []


@pytest.mark.parametrize("swarm", [False, True])
def test_the_store_with_a_planted_quorum_bug_is_found_and_its_seed_replays_alone(
    swarm: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASKEW_CHECK_REPLAY", "1")

    @askew.simulate(seed=22, iterations=400, swarm=swarm)
    async def test_store(world: askew.World) -> None:
        await store(world, quorum=1)

    with pytest.raises(askew.SimulationFailure) as info:
        test_store()
    assert "acknowledged writes lost" in info.value.report
    assert "\n  replays alone: yes\n  replay: " in info.value.report
    assert info.value.replays_alone is True


# ---- futures and epochs -------------------------------------------------------------


def test_plain_futures_hash_by_creation_number_so_wait_orders_them_alike_alone() -> None:
    orders: dict[int, list[list[int]]] = {}

    @askew.simulate(seed=5, iterations=6)
    async def test(world: askew.World) -> None:
        loop = asyncio.get_running_loop()
        futs = [loop.create_future() for _ in range(40)]
        assert [hash(f) for f in futs] == [f._askew_seq for f in futs]  # type: ignore[attr-defined]
        for k, fut in enumerate(futs):
            loop.call_later(0.001 * (k % 3), fut.set_result, k)
        done, _ = await asyncio.wait(futs, timeout=0.0015)
        orders.setdefault(world.seed, []).append([f.result() for f in done])

    test()
    seed = runner.iteration_seed(5, 4)
    askew.Replay.run(test, seed)
    assert orders[seed][0] == orders[seed][1]  # in the sweep, and alone


def _second_of_two_runs(first: Any, second: Any) -> Any:
    """Run `first` (seed 1), then `second` (seed 2) on the same loop: the
    second run's outcome."""
    loop = SimLoop(1)
    try:
        onerun.run_once(loop, first, 1, (), {})
        return onerun.run_once(loop, second, 2, (), {})
    finally:
        loop.close()


def test_a_callback_of_a_future_from_an_earlier_run_is_dropped_and_counted() -> None:
    kept: list[asyncio.Future[int]] = []
    woke: list[int] = []

    async def first(world: askew.World) -> None:
        fut = asyncio.get_running_loop().create_future()
        fut.add_done_callback(lambda f: woke.append(f.result()))
        kept.append(fut)
        await asyncio.sleep(0)

    async def second(world: askew.World) -> None:
        kept[0].set_result(1)  # its callback is the first run's code: not run here
        await world.clock.advance(1)

    outcome = _second_of_two_runs(first, second)
    assert woke == []
    assert outcome.failure is None and outcome.stale == 1
    outcome.failure = AssertionError("a failure of the second run")
    report = simulation_failure(second, 2, 0, outcome, RunConfig()).report
    assert "note: 1 leftover(s) of earlier runs on this loop (a callback, a finalizer)" in report


def test_a_task_of_an_earlier_run_destroyed_in_a_later_one_is_not_its_failure() -> None:
    held: list[Any] = []

    async def first(world: askew.World) -> None:
        async def boom() -> None:
            raise ValueError("from the first run")

        held.append(asyncio.ensure_future(boom()))
        await asyncio.sleep(0)

    async def second(world: askew.World) -> None:
        held.clear()  # the first run's task, its error never retrieved, goes now
        await world.clock.advance(1)

    outcome = _second_of_two_runs(first, second)
    assert outcome.failure is None and outcome.teardown == []
    assert outcome.stale == 1


# ---- the end of a run ---------------------------------------------------------------


def test_test_body_tasks_that_swallow_their_cancellation_never_fail_the_run() -> None:
    # 3.11's wait_for can swallow a cancellation; the leftovers settle in
    # SETTLE_ROUNDS rounds of cancelling again, inside the run, then the
    # dead zone closes whatever still runs.
    once: list[float] = []
    always: list[float] = []

    @askew.simulate(seed=3, iterations=5)
    async def test(world: askew.World) -> None:
        async def stubborn(log: list[float], gives_up: bool) -> None:
            while True:
                try:
                    await asyncio.sleep(0.05)
                except asyncio.CancelledError:
                    log.append(world.now)  # still inside the run: the world answers
                    if gives_up and len(log) % 2 == 0:
                        raise

        left = [
            asyncio.create_task(stubborn(once, True)),
            asyncio.create_task(stubborn(always, False)),
        ]
        await world.clock.advance(1)
        assert not any(t.done() for t in left)

    test()
    assert len(once) == 2 * 5
    assert len(always) == SETTLE_ROUNDS * 5


def test_what_user_code_does_in_the_dead_zone_moves_no_clock() -> None:
    seen: list[tuple[float, float]] = []

    async def sender(node: Any) -> None:
        try:
            await asyncio.sleep(1000)
        finally:
            before = time.monotonic()
            time.sleep(5)  # frozen: no virtual time passes
            node.send(1, "after the verdict")
            seen.append((before, time.monotonic()))

    async def receiver(node: Any) -> None:
        node.got = []
        while True:
            node.got.append((await node.recv()).payload)

    @askew.simulate(seed=4, iterations=3)
    async def test(world: askew.World) -> None:
        world.spawn(sender)
        world.spawn(receiver)
        await world.clock.advance(1)

    test()
    assert len(seen) == 3 and all(a == b for a, b in seen)


# ---- process-global state -----------------------------------------------------------


class _FakeNumpyRandom(types.ModuleType):
    """What Scope.reseed uses of numpy.random's legacy global generator."""

    def __init__(self) -> None:
        super().__init__("numpy.random")
        self.state: Any = "host"

    def seed(self, words: list[int]) -> None:
        self.state = ("seeded", tuple(words))

    def get_state(self) -> Any:
        return self.state

    def set_state(self, state: Any) -> None:
        self.state = state


def test_numpys_legacy_generator_is_reseeded_from_the_run_stream_and_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake = _FakeNumpyRandom()
    monkeypatch.setitem(sys.modules, "numpy.random", fake)
    states: list[Any] = []

    @askew.simulate(seed=9, iterations=3)
    async def test(world: askew.World) -> None:
        states.append(fake.state)
        fake.state = "drawn from"  # a draw changes it: the next run starts afresh

    test()
    words = [
        int(_core.seed_stream(runner.iteration_seed(9, i), _core.STREAM_NUMPY)) for i in range(3)
    ]
    assert states == [("seeded", (w & 0xFFFFFFFF, w >> 32)) for w in words]
    assert fake.state == "host"


def test_real_numpy_draws_the_same_numbers_alone_as_in_a_sweep() -> None:
    np = pytest.importorskip("numpy")
    drawn: dict[int, list[int]] = {}

    @askew.simulate(seed=9, iterations=4)
    async def test(world: askew.World) -> None:
        drawn.setdefault(world.seed, []).append(int(np.random.randint(0, 2**31)))

    before = np.random.get_state()[1].copy()
    test()
    seed = runner.iteration_seed(9, 3)
    askew.Replay.run(test, seed)
    assert drawn[seed][0] == drawn[seed][1]
    assert (np.random.get_state()[1] == before).all()


def test_uuid1_forgets_its_last_timestamp_at_every_run_start() -> None:
    uuid._last_timestamp = 2**62  # type: ignore[attr-defined]
    seen: list[Any] = []

    @askew.simulate(seed=1, iterations=2)
    async def test(world: askew.World) -> None:
        seen.append(uuid._last_timestamp)  # type: ignore[attr-defined]
        uuid._last_timestamp = 12345  # type: ignore[attr-defined]

    try:
        test()
        assert seen == [None, None]
        assert uuid._last_timestamp == 2**62  # type: ignore[attr-defined]
    finally:
        uuid._last_timestamp = None  # type: ignore[attr-defined]


# ---- a failure that does not replay alone -------------------------------------------

_CACHE: dict[str, int] = {}


def test_a_failure_that_depends_on_an_earlier_iteration_says_so_and_is_not_analysed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASKEW_SHRINK", "1")
    _CACHE.clear()

    async def pinger(node: Any) -> None:
        while True:
            await asyncio.sleep(0.1)
            node.send(1, "ping")

    @askew.simulate(seed=7, iterations=5)
    async def test(world: askew.World) -> None:
        world.spawn(pinger)
        world.spawn(lambda node: asyncio.sleep(10))
        async with world.partition({0}, {1}):  # a fault for the analysis to try
            await world.clock.advance(0.5)
        _CACHE["runs"] = _CACHE.get("runs", 0) + 1
        world.log.emit(f"runs so far {_CACHE['runs']}")
        assert _CACHE["runs"] < 3  # the third run in this process fails: any seed

    with pytest.raises(askew.SimulationFailure) as info:
        test()
    report = info.value.report
    assert info.value.iteration == 2 and info.value.replays_alone is False
    assert "  which faults mattered: not analysed: the seed re-run unchanged" in report
    assert "\n  replays alone: no: alone, in a fresh world, it fails otherwise; " in report
    assert "first divergent event #" in report and "runs so far 3" in report
    # The two runs alone (the fourth and fifth in this process) differ too.
    assert "likely cause: the run is not deterministic even alone" in report
    assert report.index("which faults mattered") < report.index("replays alone")


def test_askew_sweep_prints_no_seed_as_reproducible_that_it_did_not_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from askew._run import sweep

    @askew.simulate(seed=1, iterations=3)
    async def test(world: askew.World) -> None:
        assert world.seed == 1, "fails but for the base seed"

    checked, _ = runner.run_iterations(test, 1, 0, 3)
    assert [o.replays_alone for o in checked] == [None, True, True]
    monkeypatch.setenv("ASKEW_CHECK_REPLAY", "0")
    unchecked, _ = runner.run_iterations(test, 1, 0, 3)
    assert [o.replays_alone for o in unchecked] == [None, None, None]
    lines = [
        sweep._alone_line(sweep.Failure(o.iteration, o.seed, "", "", o.replays_alone))
        for o in (checked[1], unchecked[1])
    ]
    assert lines == [
        "  replays alone: yes",
        "  replays alone: not checked (ASKEW_CHECK_REPLAY=0)",
    ]
    assert "\n  replays alone: yes\n" in (checked[1].report or "")
