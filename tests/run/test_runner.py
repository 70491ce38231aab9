# SPDX-License-Identifier: Apache-2.0
"""The runner: @askew.simulate, iteration seeds, the environment, failure
reports (DESIGN §5), replay, deadlocks, budgets and determinism checks."""

from __future__ import annotations

import asyncio
import gc
import inspect
import itertools
import os
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import replay_comparable, run_pytest, run_sim

import askew
from askew import _core
from askew._loop.loop import SimLoop
from askew._run import onerun
from askew.errors import BudgetExceeded, DeadlockError, NondeterminismError, SimulationFailure

pytestmark = pytest.mark.usefixtures("clean_env")

HERE = os.path.abspath(__file__)


def this_nodeid() -> str:
    return os.environ["PYTEST_CURRENT_TEST"].rsplit(" (", 1)[0]


# ---- the decorated function -----------------------------------------------------


def test_simulate_returns_a_plain_sync_function_with_the_world_left_out_of_its_signature() -> None:
    @askew.simulate(seed=1, iterations=2)
    async def test_thing(world: askew.World, tmp_path: Path, answer: int) -> None:
        """Docstring kept."""

    assert not inspect.iscoroutinefunction(test_thing)
    assert list(inspect.signature(test_thing).parameters) == ["tmp_path", "answer"]
    assert not hasattr(test_thing, "__wrapped__")
    assert test_thing.__name__ == "test_thing"
    assert test_thing.__doc__ == "Docstring kept."
    assert test_thing.__module__ == __name__


def test_pytest_collects_simulated_tests_and_passes_them_their_other_fixtures(
    tmp_path: Path,
) -> None:
    proc = run_pytest(
        tmp_path,
        """
        import pytest
        import askew

        @pytest.fixture
        def answer():
            return 42

        @askew.simulate(seed=1, iterations=3)
        async def test_with_fixtures(world, tmp_path, answer):
            assert answer == 42 and tmp_path.is_dir()
            await world.clock.advance(1)

        @askew.simulate
        async def test_bare_decorator(world):
            await world.clock.advance(1)

        @askew.simulate()
        async def test_called_without_arguments(world):
            assert world.now < 0.001  # a step or two of CPU time
        """,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout


def test_bare_simulate_runs_the_default_number_of_iterations() -> None:
    seeds: list[int] = []

    @askew.simulate
    async def test(world: askew.World) -> None:
        seeds.append(world.seed)

    test()
    assert len(seeds) == 100 and len(set(seeds)) == 100


def test_decorating_a_sync_function_is_a_type_error_naming_it() -> None:
    def test_not_async(world: askew.World) -> None:
        pass

    with pytest.raises(TypeError, match=r"test_not_async.*not a coroutine function"):
        askew.simulate(seed=1)(test_not_async)
    with pytest.raises(TypeError, match="test_not_async"):
        askew.simulate(test_not_async)


def test_a_test_without_a_world_parameter_is_a_type_error() -> None:
    async def test_no_world() -> None:
        pass

    with pytest.raises(TypeError, match=r"test_no_world must take the world"):
        askew.simulate(seed=1)(test_no_world)


# ---- seeds and iterations ----------------------------------------------------------


def _seeds_of(**kwargs: Any) -> list[int]:
    seeds: list[int] = []

    @askew.simulate(**kwargs)
    async def test(world: askew.World) -> None:
        seeds.append(world.seed)

    test()
    return seeds


def test_iteration_zero_runs_the_seed_itself_and_iteration_i_runs_seed_iteration() -> None:
    seeds = _seeds_of(seed=1234, iterations=5)
    assert seeds == [1234] + [_core.seed_iteration(1234, i) for i in range(1, 5)]


def test_askew_seed_and_askew_iterations_override_the_decorator(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ASKEW_SEED", "77")
    monkeypatch.setenv("ASKEW_ITERATIONS", "2")
    assert _seeds_of(seed=1, iterations=5) == [77, _core.seed_iteration(77, 1)]
    monkeypatch.setenv("ASKEW_SEED", "0x10")
    monkeypatch.delenv("ASKEW_ITERATIONS")
    assert _seeds_of(seed=1, iterations=3)[0] == 16


def test_seed_none_draws_a_fresh_base_per_call_of_the_test() -> None:
    first = _seeds_of(seed=None, iterations=1)
    second = _seeds_of(seed=None, iterations=1)
    assert first != second


def test_with_seed_none_the_failure_report_names_the_drawn_seed() -> None:
    seen: list[int] = []

    @askew.simulate(iterations=1)
    async def test(world: askew.World) -> None:
        seen.append(world.seed)
        raise AssertionError("always")

    with pytest.raises(SimulationFailure) as info:
        test()
    assert info.value.seed == seen[0]
    assert f"(seed={seen[0]}, iteration=0," in str(info.value)
    assert f"ASKEW_SEED={seen[0]} ASKEW_ITERATIONS=1" in str(info.value)


# ---- a failure deep in a sweep, and its replay ------------------------------------


async def node_main(node: Any) -> None:
    node.last = None
    while True:
        msg = await node.recv(timeout=1)
        if msg is not None:
            node.last = msg.payload
        else:
            node.broadcast(("tick", node.id))


@askew.simulate(seed=5, iterations=100)
async def flaky(world: askew.World) -> None:
    for _ in range(3):
        world.spawn(node_main)
    world.net.configure(latency=(0.0, 0.5), loss=0.1)
    await world.clock.advance(3)
    world.log.emit("drawing")
    assert world.random.randrange(40) != 0, "unlucky draw"


def test_replay_run_reproduces_a_failure_found_deep_in_a_sweep() -> None:
    with pytest.raises(SimulationFailure) as swept:
        flaky()
    original = swept.value
    assert original.iteration == 75
    assert original.seed == _core.seed_iteration(5, 75)

    with pytest.raises(SimulationFailure) as replayed:
        askew.Replay.run(flaky, seed=original.seed)
    again = replayed.value
    assert again.iteration == 0
    assert again.trace_hash == original.trace_hash
    assert (again.time, again.steps) == (original.time, original.steps)
    assert replay_comparable(again.report) == replay_comparable(original.report)
    assert "recent events" in again.report and "net" in again.report


def test_replay_ignores_askew_seed_and_askew_iterations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASKEW_SEED", "1")
    monkeypatch.setenv("ASKEW_ITERATIONS", "50")
    seeds: list[int] = []

    async def body(world: askew.World) -> None:
        seeds.append(world.seed)

    askew.Replay.run(body, seed=99)
    assert seeds == [99]


_FLAKY_MODULE = """
    import askew

    async def node_main(node):
        node.last = None
        while True:
            msg = await node.recv(timeout=1)
            if msg is not None:
                node.last = msg.payload
            else:
                node.broadcast(("tick", node.id))

    @askew.simulate(seed=5, iterations=100)
    async def test_flaky(world):
        for _ in range(3):
            world.spawn(node_main)
        world.net.configure(latency=(0.0, 0.5), loss=0.1)
        await world.clock.advance(3)
        world.log.emit("drawing")
        assert world.random.randrange(40) != 0, "unlucky draw"

    def test_other():
        pass
"""


def _report_in(output: str) -> str:
    start = output.index("askew.errors.SimulationFailure: ")
    end = output.index("\n", output.index("  replay: ", start))
    return output[start:end]


def test_the_replay_line_from_the_shell_reproduces_the_failure(tmp_path: Path) -> None:
    first = run_pytest(tmp_path, _FLAKY_MODULE, "--tb=native", env={"PYTHONHASHSEED": "0"})
    assert first.returncode == 1, first.stdout + first.stderr
    report = _report_in(first.stdout)
    seed = _core.seed_iteration(5, 75)
    assert f"(seed={seed}, iteration=75," in report
    replay = f"ASKEW_SEED={seed} ASKEW_ITERATIONS=1 pytest 'test_mod.py::test_flaky'"
    assert report.endswith(f"  replay: {replay}")

    again = run_pytest(
        tmp_path,
        _FLAKY_MODULE,
        "--tb=native",
        "-k",
        "flaky",
        env={"ASKEW_SEED": str(seed), "ASKEW_ITERATIONS": "1", "PYTHONHASHSEED": "0"},
    )
    assert again.returncode == 1
    assert "1 failed, 1 deselected" in again.stdout
    assert replay_comparable(_report_in(again.stdout)) == replay_comparable(report)


# ---- the failure report -----------------------------------------------------------


async def elector(node: Any) -> None:
    node.leader = None
    while True:
        msg = await node.recv(timeout=5)
        if msg is None:
            node.emit("timed out, claiming leadership")
            node.leader = node.id
            await node.broadcast(("claim", node.id))
        elif msg.payload[0] == "claim":
            node.leader = max(node.leader if node.leader is not None else -1, msg.payload[1])


@askew.simulate(seed=8, iterations=1)
async def split_brain(world: askew.World) -> None:
    nodes = [world.spawn(elector) for _ in range(4)]
    async with world.partition({0, 1}, {2, 3}):
        await world.clock.advance(12)
    assert len({n.leader for n in nodes}) == 1


_REPORT = re.compile(
    r"""assert len\(\{n\.leader for n in nodes\}\) == 1
  \(seed=8, iteration=0, t=12\.0000\d\ds, steps=\d+\)

  faults
     0\.000s  net     partition \{0, 1\} \| \{2, 3\}
    12\.000s  net     heal

  nodes
(?P<nodes>(  +\d  alive    leader=\d\n){4})
  state over time \(what each node holds at the failure, since when\)
(    node \d: leader \d since \d+\.\d{6}s, was (None|\d) from \d+\.\d{6}s\n){4}
  recent events
(    \.\.\. earlier ones: .*\n)?(?P<events>((    {0,4}\d+\.\d{3}s  \S+\s+.*|    \.\.\.)\n)+)
  which faults mattered \(4 re-runs\)
    needed      #0     0\.000s  partition \{0, 1\} \| \{2, 3\}  \(passes without it\)
  draws: fails the same way with every latency at its link's minimum; .*
  shrunk: fails the same way with only #0, every latency .*
  replay shrunk: ASKEW_SUPPRESS=latency:min,\S+ ASKEW_SEED=8 .*
  the smallest failing run needs: partition \{0, 1\} \| \{2, 3\}

  replays alone: yes
  replay: ASKEW_SEED=8 ASKEW_ITERATIONS=1 pytest '(?P<nodeid>[^']+)'(
  note: PYTHONHASHSEED is random .*)?$"""
)


def test_the_failure_report_has_the_shape_of_design_section_5() -> None:
    with pytest.raises(SimulationFailure) as info:
        split_brain()
    exc = info.value
    match = _REPORT.fullmatch(exc.report)
    assert match, exc.report
    assert str(exc) == exc.report
    assert match["nodeid"] == this_nodeid()
    events = match["events"].splitlines()
    # The tail, after the older events that set what the nodes hold.
    tail = events[len(events) - events[::-1].index("    ...") :] if "    ..." in events else events
    assert len(tail) <= 12
    older = events[: len(events) - len(tail)]
    assert all("[sets node" in line for line in older if line != "    ...")
    assert any("[sets node" in line for line in events)
    assert any("dropped: partitioned" in line and "  net     " in line for line in events)
    assert any("  node    " in line and "timed out, claiming leadership" in line for line in events)
    assert events[-1].split("s  ", 1)[1].startswith("assert  ")
    assert (exc.seed, exc.iteration) == (8, 0)
    assert exc.time is not None and 12.0 <= exc.time < 12.001
    assert exc.steps is not None and f"steps={exc.steps})" in exc.report
    assert exc.replay == f"ASKEW_SEED=8 ASKEW_ITERATIONS=1 pytest '{this_nodeid()}'"


def test_outside_pytest_the_replay_line_is_a_replay_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_CURRENT_TEST")
    with pytest.raises(SimulationFailure) as info:
        split_brain()
    assert "  replay: askew.Replay.run(split_brain, seed=8)" in info.value.report.splitlines()


def test_simulation_failure_is_an_assertion_error_chained_to_the_original() -> None:
    class Boom(Exception):
        pass

    async def body(world: askew.World) -> None:
        raise Boom("kaput")

    with pytest.raises(AssertionError) as info:
        run_sim(body, seed=3)
    exc = info.value
    assert isinstance(exc, SimulationFailure)
    assert isinstance(exc.__cause__, Boom)
    assert exc.report.splitlines()[0] == "Boom: kaput"


def test_an_assertion_message_is_kept_in_the_events() -> None:
    async def body(world: askew.World) -> None:
        await world.clock.advance(1.5)
        assert world.now < 1, "too late"

    with pytest.raises(SimulationFailure) as info:
        run_sim(body)
    lines = info.value.report.splitlines()
    assert lines[0] == 'assert world.now < 1, "too late"'
    assert "     1.500s  assert  too late" in lines


# ---- deadlocks, budgets, errors in tasks -------------------------------------------


def test_a_deadlock_raises_deadlock_error_listing_every_pending_task_and_its_line() -> None:
    async def waiter(node: Any) -> None:
        await asyncio.Event().wait()  # never set

    async def body(world: askew.World) -> None:
        world.spawn(waiter)
        world.spawn(waiter)
        await asyncio.get_running_loop().create_future()  # nobody sets it

    with pytest.raises(DeadlockError) as info:
        run_sim(body, seed=4)
    exc = info.value
    assert isinstance(exc, SimulationFailure)
    assert isinstance(exc.__cause__, DeadlockError)
    text = str(exc)
    assert "deadlock: nothing is ready and no timer is pending" in text
    body_line = inspect.getsourcelines(body)[1] + 3
    assert f"Task-1 waits at {HERE}:{body_line} in body()" in text
    assert re.search(r"node-0 waits at .*locks\.py:\d+ in wait\(\)", text)
    assert re.search(r"node-1 waits at .*locks\.py:\d+ in wait\(\)", text)
    assert re.search(r"\(seed=4, iteration=0, t=0\.0000\d\ds", text)  # a few steps' CPU time


def test_the_step_budget_turns_a_livelock_into_budget_exceeded_with_the_seed() -> None:
    async def body(world: askew.World) -> None:
        while True:
            await asyncio.sleep(0)

    with pytest.raises(BudgetExceeded) as info:
        run_sim(body, seed=6, max_steps=500)
    assert isinstance(info.value, SimulationFailure)
    assert info.value.seed == 6
    assert "step budget exceeded" in str(info.value) and "max_steps=500" in str(info.value)
    assert info.value.steps == 500


def test_the_time_budget_turns_an_endless_sleeper_into_budget_exceeded() -> None:
    async def body(world: askew.World) -> None:
        while True:
            await asyncio.sleep(1)

    with pytest.raises(BudgetExceeded) as info:
        run_sim(body, seed=6, max_time=10)
    assert "virtual time budget exceeded" in str(info.value)
    assert info.value.seed == 6 and info.value.time is not None and info.value.time <= 10


def test_an_exception_in_a_node_task_fails_the_run_naming_the_node() -> None:
    async def fine(node: Any) -> None:
        await asyncio.sleep(100)

    async def broken(node: Any) -> None:
        await asyncio.sleep(1)
        raise KeyError("missing")

    async def body(world: askew.World) -> None:
        world.spawn(fine)
        world.spawn(broken)
        await world.clock.advance(10)

    with pytest.raises(SimulationFailure) as info:
        run_sim(body)
    assert info.value.report.startswith("node 1 raised KeyError: 'missing'\n")
    assert isinstance(info.value.__cause__, KeyError)
    assert info.value.time is not None and 1.0 <= info.value.time < 1.001


def test_an_unhandled_exception_in_a_stray_task_fails_the_run() -> None:
    async def stray() -> None:
        await asyncio.sleep(1)
        raise ValueError("nobody awaited me")

    async def body(world: askew.World) -> None:
        asyncio.get_running_loop().create_task(stray())
        await world.clock.advance(5)

    with pytest.raises(SimulationFailure) as info:
        run_sim(body)
    assert info.value.report.startswith("ValueError: nobody awaited me")


def test_an_exception_in_a_plain_callback_fails_the_run() -> None:
    async def body(world: askew.World) -> None:
        asyncio.get_running_loop().call_later(1, lambda: 1 / 0)
        await world.clock.advance(5)

    with pytest.raises(SimulationFailure, match="ZeroDivisionError"):
        run_sim(body)


# ---- the determinism check ------------------------------------------------------------


def test_check_determinism_passes_a_deterministic_test() -> None:
    runs: list[int] = []

    @askew.simulate(seed=2, iterations=3, check_determinism=True)
    async def test(world: askew.World) -> None:
        runs.append(world.seed)
        for _ in range(3):
            world.spawn(node_main)
        await world.clock.advance(3)

    test()
    assert runs == [s for s in _seeds_of(seed=2, iterations=3) for _ in range(2)]


def _nondeterministic() -> Any:
    calls = itertools.count()

    async def test(world: askew.World) -> None:
        world.log.emit("start")
        world.log.emit("odd" if next(calls) % 2 else "even")

    return test


def test_check_determinism_names_the_first_diverging_event() -> None:
    with pytest.raises(NondeterminismError) as info:
        askew.simulate(seed=3, iterations=2, check_determinism=True)(_nondeterministic())()
    text = str(info.value)
    assert "seed 3 (iteration 0) ran twice with different traces" in text
    assert "first difference at logged event #1" in text
    assert re.search(r"run 1: +0\.000s  world   even", text)
    assert re.search(r"run 2: +0\.000s  world   odd", text)


def test_askew_check_determinism_env_turns_the_check_on(monkeypatch: pytest.MonkeyPatch) -> None:
    test = askew.simulate(seed=3, iterations=1)(_nondeterministic())
    test()  # unchecked: passes
    monkeypatch.setenv("ASKEW_CHECK_DETERMINISM", "1")
    with pytest.raises(NondeterminismError, match="logged event #1"):
        test()


# ---- nesting ------------------------------------------------------------------------------


def test_a_simulation_cannot_run_inside_another() -> None:
    async def inner(world: askew.World) -> None:
        pass

    async def outer(world: askew.World) -> None:
        run_sim(inner)

    with pytest.raises(SimulationFailure) as info:
        run_sim(outer)
    assert isinstance(info.value.__cause__, RuntimeError)
    assert "cannot run inside another simulation" in str(info.value.__cause__)


def test_an_unretrieved_task_exception_in_node_state_is_teardown_of_its_own_iteration() -> None:
    # Regression: the world is cyclic, so such a task was collected (and its
    # error reported) two iterations later, in a run its own seed did not name.
    # Now it is collected in its own run's dead zone: logged there, never a
    # failure (docs/design.md §3).
    async def body(world: askew.World) -> None:
        async def n(node: Any) -> None:
            async def boom() -> None:
                raise ValueError("never retrieved")

            node.background = asyncio.ensure_future(boom())
            await asyncio.sleep(1)

        world.spawn(n)
        await world.clock.advance(2)

    askew.simulate(seed=1, iterations=4)(body)()
    loop = SimLoop(1)
    try:
        outcome = onerun.run_once(loop, body, 1, (), {})
    finally:
        loop.close()
    assert outcome.failure is None
    assert outcome.teardown == ["Task exception was never retrieved: ValueError: never retrieved"]


_INTERLEAVE_ONLY = """
import asyncio, askew

@askew.simulate(seed=5, iterations=40)
async def test_order(world):
    log = []

    async def worker(name):
        await asyncio.sleep(0)
        log.append(name)

    await asyncio.gather(worker("a"), worker("b"))
    assert log == ["a", "b"]  # asyncio's order: only interleave/shuffle break it
"""


def test_the_plugins_strategy_option_reaches_simulated_tests_and_their_replay(
    tmp_path: Path,
) -> None:
    assert run_pytest(tmp_path, _INTERLEAVE_ONLY).returncode == 0  # faithful: always holds
    proc = run_pytest(tmp_path, _INTERLEAVE_ONLY, "--askew-strategy=interleave")
    assert proc.returncode == 1, proc.stdout
    replay = re.search(r"replay: (ASKEW_STRATEGY=interleave ASKEW_SEED=\d+ .*)$", proc.stdout, re.M)
    assert replay, proc.stdout
    assert "note: strategy 'interleave' can run callbacks in an order asyncio cannot" in (
        proc.stdout
    )
    env = dict(word.split("=", 1) for word in replay[1].split()[:3])
    again = run_pytest(tmp_path, _INTERLEAVE_ONLY, env=env)
    assert again.returncode == 1 and f"seed={env['ASKEW_SEED']}," in again.stdout


def test_askew_strategy_in_the_environment_overrides_the_decorator(tmp_path: Path) -> None:
    proc = run_pytest(tmp_path, _INTERLEAVE_ONLY, env={"ASKEW_STRATEGY": "shuffle"})
    assert proc.returncode == 1, proc.stdout
    assert "note: strategy 'shuffle'" in proc.stdout


class _Cycle:
    """A cycle whose finalizer says which run's end finalized it."""

    def __init__(self, ended: list[int], seed: int) -> None:
        self.me = self
        self.ended, self.seed = ended, seed

    def __del__(self) -> None:
        self.ended.append(self.seed)


@pytest.mark.parametrize("collects", [False, True])
def test_a_runs_garbage_is_finalized_at_its_own_end(collects: bool) -> None:
    """The end of a run collects only the young generations, where all of
    a run's objects are, unless the run's code collected the old one
    itself (which made its cycle old): then a full collection does it."""
    ended: list[int] = []
    seen: list[list[int]] = []

    @askew.simulate(seed=3, iterations=3)
    async def test(world: askew.World) -> None:
        seen.append(list(ended))
        held = _Cycle(ended, world.seed)
        if collects:
            gc.collect()  # `held` is old now
        del held
        await asyncio.sleep(1)

    test()
    # Each run starts with every earlier run's cycle finalized.
    assert [len(s) for s in seen] == [0, 1, 2]
    assert len(ended) == 3
