"""A read-through cache filled by worker threads: a check-then-act race.

Requests run their blocking lookup in a thread pool (asyncio.to_thread). On a miss a
worker loads the value from a slow backend and stores it. The backend is expensive and
rate-limited, so the cache promises one load per key; but two workers that miss the same
key at once both see it absent before either stores it, and both load. Inside a run the
workers are real threads that take turns as the seed says, so the seed that interleaves the
two checks finds the double load, and replays it.
"""

import asyncio
import time

import askew


class Backend:
    def __init__(self):
        self.loads = {}

    def load(self, key):
        self.loads[key] = self.loads.get(key, 0) + 1
        time.sleep(0.02)  # a slow query: the worker thread blocks, in virtual time
        return f"value of {key}"


class Cache:
    def __init__(self, backend):
        self.backend = backend
        self.data = {}

    def get(self, key):
        if key not in self.data:  # check ...
            self.data[key] = self.backend.load(key)  # ... then act: another miss may be in between
        return self.data[key]


@askew.simulate(seed=3, iterations=200)
async def test_each_key_is_loaded_once(world):
    backend = Backend()
    cache = Cache(backend)
    keys = [world.random.choice(["user:1", "user:2"]) for _ in range(4)]
    values = await asyncio.gather(*(asyncio.to_thread(cache.get, key) for key in keys))
    assert values == [f"value of {key}" for key in keys]
    assert all(n == 1 for n in backend.loads.values()), backend.loads
