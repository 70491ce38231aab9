"""The read-through cache of threadpool_cache.py, fixed with a lock.

The check and the load happen under one lock, so a second worker that misses the same key
waits for the first to store it and then finds it. (A lock made inside the run is one the
seed orders; the same code outside a run takes a plain threading.Lock.)
"""

import asyncio
import threading
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
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:  # the check and the act, together
            if key not in self.data:
                self.data[key] = self.backend.load(key)
            return self.data[key]


@askew.simulate(seed=3, iterations=200)
async def test_each_key_is_loaded_once(world):
    backend = Backend()
    cache = Cache(backend)
    keys = [world.random.choice(["user:1", "user:2"]) for _ in range(4)]
    values = await asyncio.gather(*(asyncio.to_thread(cache.get, key) for key in keys))
    assert values == [f"value of {key}" for key in keys]
    assert all(n == 1 for n in backend.loads.values()), backend.loads
