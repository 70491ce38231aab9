# SPDX-License-Identifier: Apache-2.0
"""What a failure report explains (faults in force, node states, as much of
the trace as asked for), world.log's filters, and the pytest side of a
sweep: -v, --lf, Ctrl-C, the seed and ASKEW_* checks, the frames a failure
shows, and the replay command typed where pytest ran (issue 14, item 0)."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from conftest import hang_guard, run_pytest, run_sim

import askew
from askew._world.log import FAULTS_KEPT, LOG_KEPT
from askew.errors import BudgetExceeded, DeadlockError, NondeterminismError, SimulationFailure

pytestmark = pytest.mark.usefixtures("clean_env")

_INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def _section(report: str, name: str) -> list[str]:
    """The lines of one indented section ("faults", "nodes", "recent events")."""
    lines = report.splitlines()
    start = lines.index(f"  {name}") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


def _failure(body: Any, **config: Any) -> SimulationFailure:
    with pytest.raises(SimulationFailure) as info:
        run_sim(body, seed=3, **config)
    return info.value


async def _idle(node: Any) -> None:
    node.state = "idle"
    while True:
        await node.recv()


# ---- faults -------------------------------------------------------------------------


def test_a_failure_report_lists_every_kind_of_fault_with_its_virtual_time() -> None:
    async def body(world: askew.World) -> None:
        nodes = [world.spawn(_idle) for _ in range(4)]
        world.net.configure(latency=(0.001, 0.002))
        async with world.partition({0, 1}, {2, 3}):
            await world.clock.advance(1)
        world.net.cut(0, 1)
        world.net.isolate(nodes[3])
        world.net.heal()
        world.faults.crash(nodes[2])
        await world.clock.advance(1)
        world.faults.restart(nodes[2])
        world.faults.pause(nodes[1], 0.5)
        world.faults.skew(nodes[0], offset=-2.0, drift=1e-4)
        await world.clock.advance(1)
        raise AssertionError("after the faults")

    faults = _section(_failure(body).report, "faults")
    texts = [line.split(None, 2)[2] for line in faults]
    assert texts == [
        "configure all links: latency 0.001..0.002s, loss 0, duplicate 0",
        "partition {0, 1} | {2, 3}",
        "heal",
        "cut 0 -> 1",
        "isolate 3",
        "heal",
        "crash 2",
        "restart 2",
        "pause 1 for 0.5s",
        "skew 0: offset -2s drift 0.0001",
        "resume 1",
    ], faults
    times = [float(line.split()[0].rstrip("s")) for line in faults]
    assert times == sorted(times) and times[0] == 0.0 and 1.0 <= times[2] < 1.01
    assert faults[-1].split()[1] == "fault"


def test_a_buggify_firing_is_a_fault_in_the_report() -> None:
    async def body(world: askew.World) -> None:
        for _ in range(200):
            if askew.buggify("slow disk", probability=1.0):
                break
        raise AssertionError("fired or not")

    for seed in range(40):  # a point is active in a seeded quarter of runs
        with pytest.raises(SimulationFailure) as info:
            run_sim(body, seed=seed)
        faults = _section(info.value.report, "faults")
        if faults != ["    (none)"]:
            assert any("fault   buggify 'slow disk' fired" in line for line in faults), faults
            return
    pytest.fail("no seed of 40 activated the buggify point")


def test_faults_older_than_the_log_ring_are_still_reported() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(_idle)
        world.spawn(_idle)
        world.net.cut(0, 1)
        for i in range(LOG_KEPT + 500):
            world.log.emit(f"noise {i}")
        assert world.log.faults()[0].text == "cut 0 -> 1"
        assert all(e.text != "cut 0 -> 1" for e in world.log)  # gone from the ring
        raise AssertionError("long after the cut")

    faults = _section(_failure(body).report, "faults")
    assert faults == ["     0.000s  net     cut 0 -> 1"], faults


def test_the_faults_section_is_capped_with_the_count_of_earlier_ones() -> None:
    async def body(world: askew.World) -> None:
        world.spawn(_idle)
        world.spawn(_idle)
        for _ in range(FAULTS_KEPT + 10):
            world.net.cut(0, 1)
            world.net.heal()
        assert len(world.log.faults()) == FAULTS_KEPT
        assert world.log.faults_dropped == FAULTS_KEPT + 20 - FAULTS_KEPT
        raise AssertionError("many faults")

    faults = _section(_failure(body).report, "faults")
    assert faults[0] == f"    ... {2 * (FAULTS_KEPT + 10) - 12} earlier"
    assert len(faults) == 13 and faults[-1].endswith("net     heal")


def test_a_run_without_faults_says_so() -> None:
    async def body(world: askew.World) -> None:
        raise AssertionError("no faults")

    assert _section(_failure(body).report, "faults") == ["    (none)"]


# ---- node states ----------------------------------------------------------------------


class Replica:
    def __init__(self, node: Any, role: str) -> None:
        self.node = node
        self.role = role
        self.log = list(range(100))  # a long value: cut short
        self._secret = "never shown"

    async def run(self) -> None:
        while True:
            await self.node.recv()


def test_a_report_shows_each_nodes_state_and_public_attributes_at_the_failure() -> None:
    async def stopper(node: Any) -> None:
        node.term = 7
        node._private = 1
        await asyncio.sleep(3600)

    async def body(world: askew.World) -> None:
        alive = world.spawn(stopper)
        crashed = world.spawn(stopper)
        paused = world.spawn(stopper)
        world.spawn(Replica, "leader")
        await world.clock.advance(1)
        world.faults.crash(crashed)
        world.faults.pause(paused, 100)
        alive.term = 8
        raise AssertionError("look at the nodes")

    nodes = _section(_failure(body).report, "nodes")
    assert nodes[0] == "     0  alive    term=8"
    assert nodes[1] == "     1  crashed  term=7"
    assert nodes[2] == "     2  paused   term=7"
    assert nodes[3].startswith("     3  alive    node=<askew node 3>, role='leader', log=[0, 1, 2")
    assert "..." in nodes[3] and "_secret" not in nodes[3] and "_private" not in nodes[1]
    assert len(nodes) == 4 and all(len(line) < 130 for line in nodes)


def test_a_restarted_node_shows_its_incarnation() -> None:
    async def body(world: askew.World) -> None:
        node = world.spawn(_idle)
        world.faults.crash(node)
        world.faults.restart(node)
        await world.clock.advance(1)
        raise AssertionError("after a restart")

    (line,) = _section(_failure(body).report, "nodes")
    assert re.fullmatch(r"     0  alive \(incarnation [1-9]\d*\) state='idle'", line), line


def test_the_nodes_section_is_capped_with_the_count_of_the_rest() -> None:
    async def body(world: askew.World) -> None:
        for _ in range(20):
            world.spawn(_idle)
        await world.clock.advance(1)
        raise AssertionError("many nodes")

    nodes = _section(_failure(body).report, "nodes")
    assert len(nodes) == 13 and nodes[-1] == "    ... 8 more"


def test_a_node_attribute_whose_repr_raises_does_not_break_the_report() -> None:
    class Bad:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    async def holder(node: Any) -> None:
        node.value = Bad()
        await asyncio.sleep(10)

    async def body(world: askew.World) -> None:
        world.spawn(holder)
        await world.clock.advance(1)
        raise AssertionError("bad repr")

    (line,) = _section(_failure(body).report, "nodes")
    assert "value=<Bad object; its __repr__ raised RuntimeError>" in line


# ---- how much of the trace -------------------------------------------------------------


async def _chatty(world: askew.World) -> None:
    for i in range(40):
        world.log.emit(f"step {i}")
    raise AssertionError("chatty")


def test_askew_trace_n_shows_the_last_n_events(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASKEW_TRACE", "5")
    events = _section(_failure(_chatty).report, "recent events")
    assert events[0] == "    ... earlier ones: --askew-trace=N or --askew-trace=all"
    assert [line.split(None, 2)[2] for line in events[1:]] == [
        "step 36",
        "step 37",
        "step 38",
        "step 39",
        "chatty",
    ]


def test_askew_trace_all_shows_every_kept_event(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASKEW_TRACE", "all")
    events = _section(_failure(_chatty).report, "recent events")
    assert len(events) == 41 and events[0].endswith("world   step 0")


def test_by_default_a_report_shows_twelve_events() -> None:
    events = _section(_failure(_chatty).report, "recent events")
    assert len(events) == 13 and events[1].endswith("step 29")


def test_the_askew_trace_option_reaches_reports_and_a_bad_one_is_a_usage_error(
    tmp_path: Path,
) -> None:
    source = """
        import askew

        @askew.simulate(seed=1, iterations=1)
        async def test_chatty(world):
            for i in range(40):
                world.log.emit(f"step {i}")
            assert False
    """
    proc = run_pytest(tmp_path, source, "--askew-trace=all")
    assert proc.returncode == 1 and "step 0\n" in proc.stdout, proc.stdout
    proc = run_pytest(tmp_path, source, "--askew-trace=3")
    assert "step 38\n" in proc.stdout and "step 37\n" not in proc.stdout, proc.stdout
    proc = run_pytest(tmp_path, source, "--askew-trace=lots")
    assert proc.returncode == 4
    assert "askew: --askew-trace must be 'all' or a number of events >= 0, got 'lots'" in (
        proc.stderr
    )


# ---- world.log ------------------------------------------------------------------------


def test_world_log_events_filters_by_node_and_by_kind() -> None:
    seen: dict[str, Any] = {}

    async def body(world: askew.World) -> None:
        a, b, c = (world.spawn(_idle) for _ in range(3))
        a.send(b, "hello")
        c.emit("thinking")
        world.faults.crash(c)
        await world.clock.advance(1)
        seen["b"] = [e.text for e in world.log.events(node=b)]
        seen["c"] = [(e.kind, e.text) for e in world.log.events(node=2)]
        seen["crash"] = world.log.events(kind="crash")
        seen["spawn+crash"] = [e.kind for e in world.log.events(kind=("spawn", "crash"))]
        seen["all"] = world.log.events() == world.log.recent()

    run_sim(body)
    assert seen["b"] == ["spawn 1 _idle", "0 -> 1  'hello'   sent", "0 -> 1  'hello'   delivered"]
    assert seen["c"] == [("spawn", "spawn 2 _idle"), ("node", "2 thinking"), ("crash", "crash 2")]
    (crash,) = seen["crash"]
    assert (crash.kind, crash.node, crash.text) == ("crash", 2, "crash 2")
    assert 0.0 < crash.time < 0.001
    assert seen["spawn+crash"] == ["spawn", "spawn", "spawn", "crash"]
    assert seen["all"] is True


# ---- headlines --------------------------------------------------------------------------


def test_an_assertion_in_a_node_is_headlined_node_n_raised() -> None:
    async def checker(node: Any) -> None:
        assert node.id == 5, "wrong node"

    async def body(world: askew.World) -> None:
        world.spawn(_idle)
        world.spawn(checker)
        await world.clock.advance(1)

    report = _failure(body).report
    assert report.splitlines()[0] == (
        'node 1 raised AssertionError: assert node.id == 5, "wrong node"'
    )
    assert _section(report, "nodes")[1] == "     1  raised AssertionError"


def test_budget_exceeded_names_the_spinning_task_and_not_its_own_type() -> None:
    async def spinner(node: Any) -> None:
        while True:
            await asyncio.sleep(0)

    async def body(world: askew.World) -> None:
        world.spawn(_idle)
        world.spawn(spinner)
        await world.clock.advance(1)

    with pytest.raises(BudgetExceeded) as info:
        run_sim(body, max_steps=500)
    headline = info.value.report.splitlines()[0]
    assert headline.startswith("step budget exceeded: 500 callbacks ran"), headline
    assert "BudgetExceeded" not in headline
    assert re.search(r"still ready: node-1 at .*test_report\.py:\d+ in spinner\(\)", headline)
    assert str(info.value).startswith(headline)


def test_a_deadlock_headline_does_not_repeat_its_type() -> None:
    async def body(world: askew.World) -> None:
        await asyncio.get_running_loop().create_future()

    with pytest.raises(DeadlockError) as info:
        run_sim(body)
    assert info.value.report.startswith("deadlock: nothing is ready")


def test_the_to_thread_refusal_names_the_function_not_a_partial() -> None:
    def compress(data: bytes) -> bytes:
        return data

    async def body(world: askew.World) -> None:
        await asyncio.to_thread(compress, b"x")

    with pytest.raises(NondeterminismError) as info:
        run_sim(body, executor="refuse")
    headline = info.value.report.splitlines()[0]
    assert headline.startswith("NondeterminismError: run_in_executor(")
    assert "compress" in headline
    assert "functools.partial" not in headline


# ---- pytest: -v, --lf, Ctrl-C ---------------------------------------------------------------


def test_a_passing_simulated_test_shows_its_base_seed_and_seeds_run_with_v(
    tmp_path: Path,
) -> None:
    source = """
        import askew

        @askew.simulate(seed=1337, iterations=25)
        async def test_fine(world):
            await world.clock.advance(1)

        @askew.simulate(seed=5, iterations=1)
        async def test_one(world):
            pass
    """
    proc = run_pytest(tmp_path, source, "-vv")
    assert proc.returncode == 0, proc.stdout
    assert re.search(r"::test_fine PASSED \(25 seeds from base seed 1337\)", proc.stdout)
    assert re.search(r"::test_one PASSED \(1 seed from base seed 5\)", proc.stdout)
    proc = run_pytest(tmp_path, source, "-vv", "--askew-iterations=3", "--askew-seed=0x10")
    assert re.search(r"::test_fine PASSED \(3 seeds from base seed 16\)", proc.stdout)


def test_ctrl_c_in_a_sweep_names_the_iteration_and_seed_it_stopped_at(tmp_path: Path) -> None:
    source = """
        import os, signal
        import askew

        seeds = []

        # Enough iterations to still be running at the signal; not so many
        # that a swallowed one hangs rather than fails.
        @askew.simulate(seed=5, iterations=2000)
        async def test_long(world):
            seeds.append(world.seed)
            if len(seeds) == 4:
                os.kill(os.getpid(), signal.SIGINT)
            await world.clock.advance(1)
    """
    proc = run_pytest(tmp_path, source)
    assert proc.returncode == 2, proc.stdout  # interrupted
    seed = askew._core.seed_iteration(5, 3)
    stopped = (
        f"KeyboardInterrupt: askew: test_long stopped at iteration 3 of 2000, seed={seed} "
        f"(base seed 5); this seed alone: ASKEW_SEED={seed} ASKEW_ITERATIONS=1 pytest "
        "'test_mod.py::test_long'"
    )
    assert stopped in proc.stdout, proc.stdout


def test_ctrl_c_outside_pytest_reraises_with_the_seed() -> None:
    async def body(world: askew.World) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt, match=r"stopped at iteration 0 of 1, seed=3 "):
        run_sim(body, seed=3)


def _pytest_with_cache(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKEW_", "PYTEST_"))}
    env["ASKEW_SHRINK"] = "0"  # its re-runs of the seed are not what is counted here
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "askew", *args],
        cwd=path,
        env=env,
        capture_output=True,
        text=True,
        timeout=hang_guard(120),
        check=False,
    )


def test_pytest_lf_replays_the_failing_seed_first_then_the_sweep(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(_INI)
    test = tmp_path / "test_lf.py"
    test.write_text(
        textwrap.dedent(
            """
            import json, pathlib
            import askew

            LOG = pathlib.Path(__file__).with_name("seeds.jsonl")
            FIXED = pathlib.Path(__file__).with_name("fixed")

            @askew.simulate(iterations=300)  # a fresh base seed on every run
            async def test_rare(world):
                with LOG.open("a") as f:
                    f.write(json.dumps(world.seed) + "\\n")
                await world.clock.advance(1)
                assert FIXED.exists() or world.random.random() < 0.98
            """
        )
    )
    seeds = tmp_path / "seeds.jsonl"
    first = _pytest_with_cache(tmp_path)
    assert first.returncode == 1, first.stdout
    failing = int(re.search(r"\(seed=(\d+), iteration=\d+,", first.stdout)[1])  # type: ignore[index]

    seeds.unlink()
    again = _pytest_with_cache(tmp_path, "--lf")
    assert again.returncode == 1, again.stdout
    assert f"(seed={failing}, iteration=0," in again.stdout
    # That seed alone, and it still fails; once more before its report, alone
    # in a fresh world, to check it replays alone.
    assert seeds.read_text().split() == [str(failing)] * 2

    (tmp_path / "fixed").touch()
    seeds.unlink()
    fixed = _pytest_with_cache(tmp_path, "--lf")
    assert fixed.returncode == 0, fixed.stdout
    ran = seeds.read_text().split()
    assert ran[0] == str(failing) and len(ran) == 1 + 300  # the seed, then the sweep
    seeds.unlink()
    # Passed: nothing cached for it any more (the seed database, on here,
    # keeps it for PASSES_TO_FORGET more sessions: tests/run/test_seed_db.py).
    later = _pytest_with_cache(tmp_path, "--lf", "--askew-db=off")
    assert later.returncode == 0 and str(failing) not in seeds.read_text().split()[:1]


# ---- seeds and ASKEW_* -------------------------------------------------------------------------

_PASSING = """
    import askew

    @askew.simulate(seed=1, iterations=2)
    async def test_a(world):
        pass

    @askew.simulate(seed=1, iterations=2)
    async def test_b(world):
        pass
"""


@pytest.mark.parametrize("seed", ["-1", str(2**64), "abc"])
def test_a_bad_seed_option_is_a_one_line_usage_error(tmp_path: Path, seed: str) -> None:
    proc = run_pytest(tmp_path, _PASSING, "--askew-seed", seed)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "INTERNALERROR" not in proc.stdout + proc.stderr
    # Only the error lines: another plugin may warn at configure first
    # (pytest-asyncio's loop-scope warning, in whichever order the
    # environment loads plugins), which is not askew's to print or hide.
    assert "Traceback" not in proc.stderr
    error = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    expected = (
        "must be an integer in [0, 2**64) (decimal or 0x...)"
        if seed == "abc"
        else ("must be in [0, 2**64)")
    )
    assert error == [f"ERROR: askew: --askew-seed {expected}, got '{seed}'"]


def test_a_bad_askew_seed_is_one_usage_error_not_one_failure_per_test(tmp_path: Path) -> None:
    proc = run_pytest(tmp_path, _PASSING, env={"ASKEW_SEED": "abc"})
    assert proc.returncode == 4, proc.stdout
    assert "askew/" not in proc.stdout + proc.stderr and "failed" not in proc.stdout
    assert "ERROR: askew: ASKEW_SEED must be an integer in [0, 2**64)" in proc.stderr


def test_askew_seed_and_the_seed_option_read_hex_alike(tmp_path: Path) -> None:
    failing = """
        import askew

        @askew.simulate(seed=1, iterations=1)
        async def test_f(world):
            assert False
    """
    by_env = run_pytest(tmp_path, failing, env={"ASKEW_SEED": "0x10"})
    by_option = run_pytest(tmp_path, failing, "--askew-seed", "0x10")
    for proc in (by_env, by_option):
        assert proc.returncode == 1 and "(seed=16, iteration=0," in proc.stdout, proc.stdout
    from askew._run.exec import parse_args  # askew-exec --seed: the same parser

    assert parse_args(["--seed", "0x10", "true"])[0] == {"ASKEW_SEED": "16"}


def test_an_unknown_askew_variable_is_warned_naming_the_closest_one(tmp_path: Path) -> None:
    proc = run_pytest(
        tmp_path, _PASSING, env={"ASKEW_ITERATION": "5", "ASKEW_SEEED": "1", "ASKEW_ZZZ": "1"}
    )
    assert proc.returncode == 0, proc.stdout
    out = proc.stdout
    assert (
        "askew does not read the environment variable ASKEW_ITERATION: did you mean "
        "ASKEW_ITERATIONS?" in out
    )
    assert "ASKEW_SEEED: did you mean ASKEW_SEED?" in out
    assert "ASKEW_ZZZ: askew ignores it" in out
    known = run_pytest(tmp_path, _PASSING, env={"ASKEW_STRATEGY": "fifo"})
    assert "does not read" not in known.stdout


# ---- frames and unraisables after a failure ------------------------------------------------


def test_after_a_deadlock_no_unraisable_warning_reaches_the_next_test(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text(_INI)
    source = """
        import asyncio
        import askew

        async def agen():
            try:
                yield 1
                await asyncio.get_running_loop().create_future()
            finally:
                await asyncio.sleep(0)

        async def stuck(node):
            async for _ in agen():
                pass

        @askew.simulate(seed=1, iterations=1)
        async def test_deadlock(world):
            world.spawn(stuck)
            held = agen()  # suspended at a yield, kept by the failing frame
            await held.__anext__()
            await asyncio.Queue().get()

        def test_wrapped_deadlock():
            async def main():
                async for _ in agen():
                    pass
            asyncio.run(main())

        def test_next():
            import gc
            gc.collect()
    """
    # Unwrapped, the wrapped test would wait forever on a real loop.
    for args, counts in (
        (("-k", "not wrapped"), "1 failed, 1 passed"),
        (("--askew-wrap",), "2 failed, 1 passed"),
    ):
        proc = run_pytest(tmp_path, source, "-W", "error", *args)
        assert "Event loop is closed" not in proc.stdout, proc.stdout
        assert re.search(rf"^{counts}\b", proc.stdout, re.M), proc.stdout


def test_a_deadlock_shows_no_internal_frames_simulated_or_wrapped(tmp_path: Path) -> None:
    source = """
        import asyncio
        import askew

        @askew.simulate(seed=1, iterations=1)
        async def test_simulated(world):
            await asyncio.get_running_loop().create_future()

        def test_wrapped():
            async def main():
                await asyncio.get_running_loop().create_future()
            asyncio.run(main())
    """
    proc = run_pytest(tmp_path, source, "--askew-wrap")
    assert proc.returncode == 1
    assert "_loop.py" not in proc.stdout and "runners.py" not in proc.stdout, proc.stdout
    wrapped = proc.stdout.split("test_wrapped ___", 1)[1].split("askew replay", 1)[0]
    assert ">       asyncio.run(main())" in wrapped
    assert len(wrapped.splitlines()) < 15, wrapped


def test_askew_seeds_lists_each_failing_seed_once(tmp_path: Path) -> None:
    source = """
        import asyncio, random

        def test_flaky():
            async def main():
                await asyncio.sleep(random.random())
                assert asyncio.get_running_loop().time() < 0.5
            asyncio.run(main())
    """
    proc = run_pytest(tmp_path, source, "--askew-wrap", "--askew-seeds", "30")
    assert proc.returncode == 1
    seeds = re.findall(r"^  seed=(\d+): ", proc.stdout, re.M)
    assert len(seeds) >= 2
    for seed in seeds[1:]:  # the first is the shown run's, and the summary's
        assert len(re.findall(rf"\bseed={seed}\b", proc.stdout)) == 1, proc.stdout
    summary = proc.stdout.split("askew: replay wrapped failures", 1)[1].split("short test", 1)[0]
    assert len(re.findall(r"test_mod\.py::test_flaky \(seed=", summary)) == 1, summary
    assert f"({len(seeds)} failing seeds, all in its report)" in summary


# ---- the replay command -------------------------------------------------------------------


def test_the_printed_replay_command_selects_the_test_where_pytest_ran(tmp_path: Path) -> None:
    """A checkout with `testpaths` and the test in a subdirectory: the
    command the report prints, run where pytest ran, reruns that test."""
    (tmp_path / "pytest.ini").write_text(_INI + "testpaths = tests\n")
    (tmp_path / "tests").mkdir()
    sub = tmp_path / "examples"
    sub.mkdir()
    (sub / "test_ex.py").write_text(
        textwrap.dedent(
            """
            import askew

            @askew.simulate(seed=1, iterations=5)
            async def test_election(world):
                await world.clock.advance(1)
                assert world.seed != askew._core.seed_iteration(1, 2)
            """
        )
    )
    for cwd, target in ((tmp_path, "examples/test_ex.py"), (sub, "test_ex.py")):
        proc = _pytest_with_cache(cwd, "-p", "no:cacheprovider", target)
        assert proc.returncode == 1, proc.stdout
        replay = re.search(r"^ +replay: (.*)$", proc.stdout, re.M)
        assert replay is not None, proc.stdout
        words = shlex.split(replay[1])
        env_words = [w for w in words if "=" in w and not w.startswith("-")]
        env = dict(w.split("=", 1) for w in env_words[:2])
        if words[len(env_words)] == "askew-exec":  # this suite run under the preload
            del words[len(env_words)]
        assert words[len(env_words)] == "pytest"
        again = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *words[3:]],
            cwd=cwd,
            env={**{k: v for k, v in os.environ.items() if not k.startswith("ASKEW_")}, **env},
            capture_output=True,
            text=True,
            timeout=hang_guard(120),
            check=False,
        )
        assert re.search(r"^1 failed", again.stdout, re.M), again.stdout
        assert ", iteration=0," in again.stdout


# ---- docs --------------------------------------------------------------------------------


def test_the_user_docs_point_at_no_private_name_or_missing_file() -> None:
    root = Path(__file__).resolve().parents[2]
    user_docs = ("wrapping.md", "index.md", "world.md", "reports.md", "examples.md")
    for doc in ("README.md", *(f"docs/{page}" for page in user_docs)):
        text = (root / doc).read_text(encoding="utf-8")
        assert not re.search(r"askew\._[a-z]", text), doc
        assert not re.search(r"askew/_[a-z]+\.py", text), doc
        assert "../shared" not in text, doc
    design = (root / "docs/design.md").read_text(encoding="utf-8")
    assert "../shared" not in design
    assert "askew._core.seed_iteration" not in design
