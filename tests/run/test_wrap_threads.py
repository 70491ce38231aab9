# SPDX-License-Identifier: Apache-2.0
"""Wrap mode and threads: a loop made on a thread other than the test's stays
a real asyncio loop, while the test's own loops are still SimLoops
(askew/_run/wrap.py, docs/compatibility.md "Loops on other threads")."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from conftest import hang_guard, run_pytest

from askew._loop.loop import SimLoop
from askew._run import wrap as _wrap

HELPER_THREAD_SUITE = """
import asyncio
import os
import threading
import time
import unittest


def loop_kind():
    return type(asyncio.get_running_loop()).__name__


def test_asyncio_run_on_a_helper_thread_is_a_real_loop_in_real_time():
    seen = {}

    def helper():
        async def main():
            start = time.monotonic()
            await asyncio.sleep(0.05)
            return loop_kind(), time.monotonic() - start

        seen["kind"], seen["slept"] = asyncio.run(main())

    thread = threading.Thread(target=helper, name="helper-7")
    thread.start()
    thread.join(GUARD)
    assert seen["kind"] == "_UnixSelectorEventLoop"
    assert seen["slept"] >= 0.04


class ProxyLike(unittest.IsolatedAsyncioTestCase):
    # websockets' ProxyMixin: a server on a loop of its own thread, started
    # in setUpClass, stopped in tearDownClass; each test on a loop of its own.
    @classmethod
    def setUpClass(cls):
        cls.ready = threading.Event()

        async def serve():
            cls.loop = asyncio.get_running_loop()
            cls.stop = asyncio.Event()
            server = await asyncio.start_server(cls.echo, "127.0.0.1", 0)
            cls.port = server.sockets[0].getsockname()[1]
            cls.kind = loop_kind()
            cls.ready.set()
            await cls.stop.wait()
            server.close()
            await server.wait_closed()

        cls.thread = threading.Thread(target=asyncio.run, args=(serve(),))
        cls.thread.start()
        assert cls.ready.wait(GUARD)

    @staticmethod
    async def echo(reader, writer):
        writer.write(await reader.readline())
        await writer.drain()
        writer.close()

    @classmethod
    def tearDownClass(cls):
        cls.loop.call_soon_threadsafe(cls.stop.set)
        cls.thread.join(GUARD)
        assert not cls.thread.is_alive()

    async def test_the_helper_loop_is_real_and_the_test_loop_is_not(self):
        assert self.kind == "_UnixSelectorEventLoop"
        assert loop_kind() == os.environ["EXPECTED_TEST_LOOP"]
        await asyncio.sleep(0.01)
"""


def run_suite(tmp_path: Path, test_loop: str, *args: str) -> str:
    # The child has no conftest: its hang guard is written into its source.
    suite = HELPER_THREAD_SUITE.replace("GUARD", repr(hang_guard(30)))
    proc = run_pytest(tmp_path, suite, "-p", "askew", *args, env={"EXPECTED_TEST_LOOP": test_loop})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_helper_threads_asyncio_run_stays_a_real_loop_while_the_test_loop_is_simulated(
    tmp_path: Path,
) -> None:
    assert "2 passed" in run_suite(tmp_path, "SimLoop", "--askew-wrap", "--askew-seed=1")


def test_the_same_suite_passes_stock(tmp_path: Path) -> None:
    assert "2 passed" in run_suite(tmp_path, "_UnixSelectorEventLoop")


def test_only_the_thread_that_installed_the_patches_gets_simloops() -> None:
    run = _wrap.WrappedRun("t::x", base=1)
    kinds: dict[str, type] = {}

    def other() -> None:
        loop = asyncio.new_event_loop()
        kinds["new_event_loop"] = type(loop)
        loop.close()
        with asyncio.Runner(loop_factory=asyncio.SelectorEventLoop) as runner:
            kinds["factory"] = type(runner.get_loop())

    with _wrap.installed(run):
        loop = asyncio.new_event_loop()
        kinds["test"] = type(loop)
        loop.close()
        thread = threading.Thread(target=other)
        thread.start()
        thread.join(hang_guard(30))
    assert kinds["test"] is SimLoop
    assert not issubclass(kinds["new_event_loop"], SimLoop)
    assert not issubclass(kinds["factory"], SimLoop)
    assert len(run.loops) == 1  # the helper's loops are not the test's
