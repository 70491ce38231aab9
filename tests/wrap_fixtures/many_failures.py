"""Hundreds of failing tests, for timing failure reports stock against wrapped.

Not collected with the rest of wrap_fixtures (the name does not start with
test_); run it by path. Every test fails both stock and wrapped, through
asyncio's and anyio's large modules, as a wrapped real suite's failures do;
the TCP tests fail wrapped on a refused socket call instead.
"""

import asyncio

import pytest

anyio = pytest.importorskip("anyio")

N = 100


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def check(i):
    await asyncio.sleep(0)
    assert i < 0, f"failure {i}"


@pytest.mark.parametrize("i", range(N))
def test_asyncio_run(i):
    async def main():
        await asyncio.gather(check(i), asyncio.sleep(0))

    asyncio.run(main())


@pytest.mark.anyio
@pytest.mark.parametrize("i", range(N))
async def test_anyio_task_group(i):
    async with anyio.create_task_group() as tg:
        tg.start_soon(check, i)


@pytest.mark.anyio
@pytest.mark.parametrize("i", range(N))
async def test_anyio_tcp(i):
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with await anyio.connect_tcp("127.0.0.1", port):
            assert i < 0, f"failure {i}"


@pytest.mark.anyio
@pytest.mark.parametrize("i", range(N))
async def test_anyio_worker_thread(i):
    assert await anyio.to_thread.run_sync(lambda: i) < 0, f"failure {i}"
