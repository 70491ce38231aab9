"""The fix: every deposit carries an idempotency key, and the server applies a key once.

A client picks the key when it decides to deposit and sends it with every attempt; the
server remembers the answer it gave for each key and repeats it to a retry instead of
applying the deposit again. Retrying is now safe, whatever the partition swallowed.
"""

import asyncio
import uuid

import aiohttp
from aiohttp import web

import askew


async def bank(node):
    node.applied = []  # every deposit the server applied, in order
    answers = {}  # idempotency key -> the answer given

    async def deposit(request):
        body = await request.json()
        key = request.headers["Idempotency-Key"]
        if key not in answers:  # the fix: a key seen before is answered, not applied
            node.applied.append((body["client"], body["n"]))
            answers[key] = {"ok": True}
        return web.json_response(answers[key])

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
            key = str(uuid.uuid4())  # one per deposit, the same for all its attempts
            for _attempt in range(5):
                try:
                    deposit = {"client": name, "n": n, "amount": 10}
                    headers = {"Idempotency-Key": key}
                    async with session.post(
                        "http://bank:8080/deposit", json=deposit, headers=headers
                    ) as resp:
                        await resp.json()
                    node.done.append(n)
                    break
                except (TimeoutError, aiohttp.ClientError):
                    await asyncio.sleep(0.2)  # safe now: the key makes a retry a no-op
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
