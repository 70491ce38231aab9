"""An aiohttp payment service, and clients that retry a POST when it times out.

A server on one node keeps account balances; two clients on other nodes each send
five deposits with aiohttp, and when a request times out they send it again. But a
timeout does not mean the server never saw the request: a partition can swallow the
response of a deposit the server already applied. The retry applies it a second time,
and the balance holds money nobody deposited.
"""

import asyncio

import aiohttp
from aiohttp import web

import askew


async def bank(node):
    node.applied = []  # every deposit the server applied, in order

    async def deposit(request):
        body = await request.json()
        node.applied.append((body["client"], body["n"]))
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/deposit", deposit)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, None, 8080).start()
    await asyncio.sleep(3600)


async def client(node, name):
    node.done = []
    await asyncio.sleep(0.5)  # the server is up by then
    timeout = aiohttp.ClientTimeout(total=1)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        for n in range(5):
            for _attempt in range(5):
                try:
                    deposit = {"client": name, "n": n, "amount": 10}
                    async with session.post("http://bank:8080/deposit", json=deposit) as resp:
                        await resp.json()
                    node.done.append(n)
                    break
                except (TimeoutError, aiohttp.ClientError):
                    await asyncio.sleep(0.2)  # the bug: the server may have applied it
            await asyncio.sleep(0.3)


@askew.simulate(seed=12, iterations=100)
async def test_each_deposit_is_applied_once(world):
    server = world.spawn(bank, name="bank")
    a = world.spawn(client, "a")
    b = world.spawn(client, "b")
    await world.clock.advance(seconds=world.random.uniform(0.5, 3))
    async with world.partition({server, b}, {a}):  # a loses the server for a while
        await world.clock.advance(seconds=world.random.uniform(0.5, 3))
    await world.clock.advance(seconds=20)
    twice = {d for d in server.applied if server.applied.count(d) > 1}
    assert not twice, f"deposits applied more than once: {sorted(twice)}"
