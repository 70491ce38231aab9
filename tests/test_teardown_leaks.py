# SPDX-License-Identifier: Apache-2.0
"""A simulated test's objects are finalized in that test: none of them
outlives its loop and lands, as an unraisable warning or "Event loop is
closed", on a later test (issue 14). The failing test's traceback keeps its
loop alive until pytest drops it; the loop's log held the run's payloads."""

from __future__ import annotations

from pathlib import Path

from conftest import run_pytest

_SOURCE = """
    import asyncio
    import gc

    import askew


    class Holder:
        # Node state whose finalizer uses the loop, as a transport's does.
        def __init__(self, loop):
            self.loop = loop

        def __del__(self):
            self.loop.call_soon(print)


    async def server(node):
        async def handle(reader, writer):
            await reader.read()

        await asyncio.start_server(handle, None, 80)
        await asyncio.sleep(3600)


    async def client(node):
        node.holder = Holder(asyncio.get_running_loop())
        reader, writer = await asyncio.open_connection("db", 80)
        writer.write(b"x")
        await reader.read()  # never answered: the run deadlocks


    @askew.simulate(seed=1, iterations=1)
    async def test_deadlocks(world):
        world.spawn(server, name="db")
        world.spawn(client)
        await asyncio.get_running_loop().create_future()


    def test_next_collects():
        gc.collect()


    @askew.simulate(seed=2, iterations=1)
    async def test_fails_next(world):
        assert False


    def test_last():
        gc.collect()
"""


def test_a_deadlocked_runs_leftovers_never_reach_the_next_test(tmp_path: Path) -> None:
    # pytest-asyncio warns at start-up (an error under -W error) unless set.
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    )
    proc = run_pytest(tmp_path, _SOURCE, "-W", "error", "-rA")
    out = proc.stdout
    assert "FAILED test_mod.py::test_deadlocks - askew.errors.DeadlockError" in out, out
    # Nothing of the deadlocked run is finalized in a later test: not when
    # collected, not when a later failure frees the first one's traceback.
    assert "PASSED test_mod.py::test_next_collects" in out, out
    assert "PASSED test_mod.py::test_last" in out, out
    assert "ERROR test_mod.py::test_next_collects" not in out
    assert "ERROR test_mod.py::test_fails_next" not in out
    assert "ERROR test_mod.py::test_last" not in out
