"""Tests for an --askew-seeds sweep, run by path (the name keeps them out of
the rest of wrap_fixtures). Each test appends its name to $SWEEP_LOG per
run, and so does the module fixture on setup and teardown; with
SWEEP_FAIL=1 one subtest of each kind fails."""

import asyncio
import os
import unittest

import pytest

FAIL = os.environ.get("SWEEP_FAIL") == "1"


def log(name):
    with open(os.environ["SWEEP_LOG"], "a") as f:
        f.write(name + "\n")


@pytest.fixture(scope="module")
def module_resource():
    log("module_setup")
    yield
    log("module_teardown")


def test_on_a_loop(module_resource):
    log("on_a_loop")
    asyncio.run(asyncio.sleep(0))


@pytest.mark.skipif(not hasattr(pytest, "Subtests"), reason="pytest < 9 has no subtests")
def test_subtests_on_a_loop(request):
    subtests = request.getfixturevalue("subtests")
    log("subtests")
    for i in range(3):
        with subtests.test(msg="pytest", i=i):
            asyncio.run(asyncio.sleep(0))
            assert not (FAIL and i == 1)


class TestUnittest(unittest.IsolatedAsyncioTestCase):
    async def test_subtests_on_a_loop(self):
        log("unittest_subtests")
        for i in range(3):
            with self.subTest(msg="unittest", i=i):
                await asyncio.sleep(0)
                self.assertFalse(FAIL and i == 1)


def test_synchronous(module_resource):
    # Last in the module: its single run also tears the module down.
    log("synchronous")
