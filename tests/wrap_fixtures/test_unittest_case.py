"""unittest.IsolatedAsyncioTestCase, as a unittest user writes it."""

import asyncio
import unittest

import pytest


class Cache:
    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self.items: dict[str, tuple[float, str]] = {}

    def put(self, key: str, value: str) -> None:
        self.items[key] = (asyncio.get_running_loop().time() + self.ttl, value)

    def get(self, key: str) -> str | None:
        expires, value = self.items.get(key, (0.0, None))
        return value if asyncio.get_running_loop().time() < expires else None


class TestCache(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.cache = Cache(ttl=0.2)
        await asyncio.sleep(0.01)

    async def test_value_is_there_before_expiry(self) -> None:
        self.cache.put("k", "v")
        await asyncio.sleep(0.1)
        self.assertEqual(self.cache.get("k"), "v")

    async def test_value_expires(self) -> None:
        self.cache.put("k", "v")
        await asyncio.sleep(0.25)
        self.assertIsNone(self.cache.get("k"))

    async def test_wait_for_raises_timeout(self) -> None:
        with self.assertRaises(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), timeout=0.1)


@pytest.mark.slow_stock
class TestLongTtl(unittest.IsolatedAsyncioTestCase):
    async def test_a_day_long_ttl_expires(self) -> None:
        cache = Cache(ttl=86400)
        cache.put("k", "v")
        await asyncio.sleep(86399)
        self.assertEqual(cache.get("k"), "v")
        await asyncio.sleep(2)
        self.assertIsNone(cache.get("k"))
