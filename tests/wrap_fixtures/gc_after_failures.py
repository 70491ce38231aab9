"""A suite that collects garbage after every test, as aiohttp's does, with a
few failures first: for timing what failure reports leave behind, stock
against wrapped (docs/wrapping.md, "Cost of failure reports").

Not collected with the rest of wrap_fixtures (the name does not start with
test_); run it by path. The failures go through asyncio's and anyio's large
modules, as a wrapped real suite's do; every test then ends with the
gc.collect() aiohttp's conftest makes after each test.
"""

import asyncio
import gc

import pytest

anyio = pytest.importorskip("anyio")

FAILING, PASSING = 20, 1000


@pytest.fixture(autouse=True)
def collect_after():
    yield
    gc.collect()


async def check(i):
    await asyncio.sleep(0)
    assert i < 0, f"failure {i}"


@pytest.mark.parametrize("i", range(FAILING))
def test_fails_through_asyncio(i):
    asyncio.run(asyncio.wait_for(check(i), 1))


@pytest.mark.parametrize("i", range(FAILING))
def test_fails_through_anyio(i):
    anyio.run(check, i)


@pytest.mark.parametrize("i", range(PASSING))
def test_passes(i):
    asyncio.run(asyncio.sleep(0))
