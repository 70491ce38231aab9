# SPDX-License-Identifier: Apache-2.0
"""C threads of a run under askew-exec (preload ABI 1.5; docs/design.md §3
"Threads", docs/preload.md "C threads"): a thread C code starts with
pthread_create (or std::thread) inside a run is a real OS thread that runs
only while it holds the run's baton; its pthread mutex, condvar, semaphore,
create, join and sleep calls are switch points the seed orders. Each run
happens in a child, calling tests/loop/cthreads_lib.c through ctypes."""

from __future__ import annotations

import errno
import functools
import os
import subprocess
import tempfile
import textwrap
from pathlib import Path

import pytest
from preload_child import cxx_probe, needs_preload, run_exec, run_json

pytestmark = needs_preload

_SOURCE = Path(__file__).resolve().parent / "cthreads_lib.c"


@functools.cache
def _built() -> Path | None:
    cc = os.environ.get("CC", "cc")
    out = Path(tempfile.mkdtemp(prefix="askew-cthreads-")) / "libcthreads.so"
    try:
        subprocess.run(
            [cc, "-shared", "-fPIC", "-O1", "-g", "-o", str(out), str(_SOURCE), "-lpthread"],
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out


@pytest.fixture(scope="module")
def lib() -> str:
    built = _built()
    if built is None:
        pytest.skip("needs a C compiler")
    return str(built)


# Prepended to each child's code: `sim(coro_fn, seed)` runs it on a fresh
# SimLoop with threads and returns (its value, the run's trace hash).
_SIM = """
import ctypes, json, sys
import askew
lib = ctypes.CDLL(sys.argv[1])

def sim(fn, seed, **config):
    loop = askew.new_event_loop(seed, executor="threads", **config)
    try:
        value = loop.run_until_complete(fn())
        return value, loop.trace_hash
    finally:
        loop.close()
"""


def _child(code: str) -> str:
    return _SIM + textwrap.dedent(code)


def _interleavings(lib: str, hash_seed: str) -> list[list[object]]:
    return run_json(
        _child(
            """
        lib.interleave.restype = ctypes.c_char_p
        async def main():
            return lib.interleave().decode()
        print(json.dumps([list(sim(main, seed)) for seed in (1, 2, 3, 1)]))
        """
        ),
        lib,
        PYTHONHASHSEED=hash_seed,
    )


def test_the_seed_orders_c_threads_and_replays_the_same_trace_across_processes(
    lib: str,
) -> None:
    first = _interleavings(lib, "0")
    second = _interleavings(lib, "4242")
    assert first == second  # another process, another hash seed: the same runs
    (one, h1), (two, _), (three, _), (again, h1_again) = first
    assert (one, h1) == (again, h1_again)  # the same seed in one process
    for order in (one, two, three):
        steps = order.split()
        assert sorted(steps) == sorted(f"{w}{i}" for w in "abc" for i in range(5))
        for who in "abc":  # each thread's own steps stay in its order
            assert [s for s in steps if s[0] == who] == [f"{who}{i}" for i in range(5)]
    assert len({one, two, three}) > 1  # the seed chooses the interleaving


def test_two_mutexes_taken_in_opposite_orders_are_reported_as_a_deadlock(lib: str) -> None:
    out = run_json(
        _child(
            """
        async def main():
            return lib.opposite_orders()
        try:
            sim(main, 1)
            print(json.dumps(None))
        except askew.DeadlockError as exc:
            print(json.dumps(str(exc)))
        """
        ),
        lib,
    )
    assert out is not None, "no deadlock reported"
    head, *lines = out.splitlines()
    assert head.startswith("deadlock: the event loop blocks in pthread_join() of thread ")
    assert "no thread can run (seed=1," in head
    assert (
        "  thread 'C thread 1' waits on pthread_mutex_lock() of mutex #1 held by thread "
        "'C thread 2', called from libcthreads.so(forward+" in out
    )
    assert (
        "  thread 'C thread 2' waits on pthread_mutex_lock() of mutex #2 held by thread "
        "'C thread 1', called from libcthreads.so(backward+" in out
    )
    assert len([line for line in lines if "waits on" in line]) == 2, out


def test_a_timed_condvar_wait_in_a_c_thread_costs_virtual_time(lib: str) -> None:
    out = run_json(
        _child(
            """
        lib.timed_wait.restype = ctypes.c_double
        lib.timed_wait.argtypes = [ctypes.c_double, ctypes.c_double, ctypes.POINTER(ctypes.c_int)]
        def waits(seconds, signal_after):
            async def main():
                import asyncio
                rc = ctypes.c_int(-1)
                loop = asyncio.get_running_loop()
                t0 = loop.time()
                waited = lib.timed_wait(seconds, signal_after, ctypes.byref(rc))
                return [rc.value, waited, loop.time() - t0]
            return sim(main, 5)[0]
        print(json.dumps([waits(2, -1), waits(2, 0.5)]))
        """
        ),
        lib,
    )
    (rc, waited, passed), (rc2, waited2, passed2) = out
    # Nobody signals: the wait times out after its 2 s, on the virtual clock.
    assert rc == errno.ETIMEDOUT
    assert waited == pytest.approx(2.0, abs=1e-6) and passed >= 2.0 - 1e-6
    # Another thread signals after 0.5 s: the wait ends then, not at its deadline.
    assert rc2 == 0
    assert waited2 == pytest.approx(0.5, abs=1e-3) and passed2 < 2.0


def test_a_semaphore_hands_items_from_the_loop_to_a_c_thread(lib: str) -> None:
    out = run_json(
        _child(
            """
        async def main():
            return lib.produce_consume(25)
        print(json.dumps([sim(main, seed)[0] for seed in range(4)]))
        """
        ),
        lib,
    )
    assert out == [25, 25, 25, 25]


def test_a_c_thread_alive_when_its_run_ends_is_ended_with_its_cleanup_handlers(
    lib: str,
) -> None:
    # Each run leaves a thread waiting for good; the run's end unwinds it
    # (its cleanup handler runs), and the next run starts clean.
    out = run_json(
        _child(
            """
        async def main():
            import asyncio
            assert lib.start_forever() == 0
            await asyncio.sleep(0.1)
            return lib.cleanups()
        print(json.dumps([sim(main, seed)[0] for seed in range(3)] + [lib.cleanups()]))
        """
        ),
        lib,
    )
    assert out == [0, 1, 2, 3]


def test_a_run_takes_at_most_its_cap_of_c_threads_and_refuses_the_next_by_name(
    lib: str,
) -> None:
    out = run_json(
        _child(
            """
            async def main():
                lib.start_many(askew._core.CTHREADS_MAX + 1)
            try:
                sim(main, 1)
                print(json.dumps([lib.made(), None]))
            except askew.NondeterminismError as exc:
                print(json.dumps([lib.made(), str(exc).splitlines()[0]]))
            """
        ),
        lib,
    )
    made, refusal = out
    assert made == 64  # every thread the cap allows; the run's end unwound them all
    assert refusal is not None and refusal.startswith(
        "pthread_create (past the run's 64 C threads)() was refused inside the simulation"
    ), refusal


def test_a_crashed_nodes_c_thread_never_runs_again(lib: str) -> None:
    out = run_json(
        """
        import ctypes, json, sys
        lib = ctypes.CDLL(sys.argv[1])

        async def node_main(node):
            assert lib.start_ticker() == 0
            await node.recv()

        def body(world):
            async def go():
                node = world.spawn(node_main)
                await world.clock.advance(0.05)
                before = lib.ticks()
                world.faults.crash(node)
                at_crash = lib.ticks()
                await world.clock.advance(1)
                return [before, at_crash, lib.ticks()]
            return go()

        print(json.dumps(run_once(body)))
        """,
        lib,
    )
    before, at_crash, after = out["value"]
    assert before > 10  # it ticked every virtual millisecond while its node lived
    assert after == at_crash  # and not once after the crash


def test_std_thread_and_std_mutex_run_as_c_threads_of_the_run() -> None:
    out = run_json(
        _child(
            """
        lib.probe_thread_sum.restype = ctypes.c_long
        async def main():
            return lib.probe_thread_sum(200)
        print(json.dumps([sim(main, seed)[0] for seed in (1, 2)]))
        """
        ),
        str(cxx_probe()),
    )
    assert out == [400, 400]


def test_a_run_that_takes_no_thread_still_refuses_pthread_create(lib: str) -> None:
    proc = run_exec(
        _child(
            """
        lib.interleave.restype = ctypes.c_char_p
        async def main():
            return lib.interleave().decode()
        loop = askew.new_event_loop(1, executor="refuse")
        try:
            loop.run_until_complete(main())
        except askew.NondeterminismError as exc:
            print(json.dumps(str(exc).splitlines()[0]))
        """
        ),
        lib,
    )
    assert proc.returncode == 0, proc.stderr
    assert "pthread_create() was refused inside the simulation" in proc.stdout
