# SPDX-License-Identifier: Apache-2.0
"""Python-level determinism around a run: time, random, entropy, threads, gc.

While a scope is open, time.time/monotonic/perf_counter (and _ns forms),
time.sleep and os.urandom are askew's C functions, which read virtual time
and the entropy stream on the simulation thread (where a sleep consumes
virtual time and returns at once) and call the originals anywhere else; the
global `random` module is reseeded from the run's seed; Thread.start is
refused on the simulation thread; the cyclic gc only runs when the loop says.
Closing the scope restores every one of these, also after an exception.
"""

from __future__ import annotations

import _random
import gc
import os
import random
import threading
import time
from typing import Any

from . import _core
from .errors import NondeterminismError

_virtual: Any = _core.virtual
_TIME_NAMES = (
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "sleep",
)
_original_start = threading.Thread.start
_seed_generator = _random.Random.seed


class NameSwap:
    """Names replaced on modules and classes, put back in reverse order. The
    raw dictionary entry is saved, so a function, a descriptor or a method
    comes back exactly as it was."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, vars(owner)[name]))
        setattr(owner, name, value)

    def undo(self) -> None:
        while self._saved:
            owner, name, value = self._saved.pop()
            setattr(owner, name, value)


def _refusing_start(self: threading.Thread) -> None:
    if _virtual.in_simulation():
        refusal = NondeterminismError(
            f"threading.Thread.start() for {self.name!r} inside a simulation: a real thread "
            "runs outside the seed's control. Use a task (asyncio.create_task) instead, or "
            "start the thread before the simulation."
        )
        _core._note_refusal(refusal)  # caught or not, the run fails after this step
        raise refusal
    _original_start(self)


class Scope:
    """One open scope per process at a time; nested opens share it."""

    def __init__(self) -> None:
        self.depth = 0
        self._names = NameSwap()
        self._saved_random: Any = None
        self._gc_was_enabled = False

    @property
    def open(self) -> bool:
        return self.depth > 0

    def enter(self) -> None:
        self.depth += 1
        if self.depth > 1:
            return
        self._saved_random = random.getstate()
        self._gc_was_enabled = gc.isenabled()
        try:
            for name in _TIME_NAMES:
                self._names.set(time, name, getattr(_virtual, name))
            self._names.set(os, "urandom", _virtual.urandom)
            self._names.set(threading.Thread, "start", _refusing_start)
            gc.disable()
        except BaseException:
            self.depth = 1
            self.exit()
            raise

    def exit(self) -> None:
        if self.depth == 0:
            return
        self.depth -= 1
        if self.depth > 0:
            return
        self._names.undo()
        if self._saved_random is not None:
            random.setstate(self._saved_random)
        if self._gc_was_enabled:
            gc.enable()
        self._saved_random = None

    @staticmethod
    def reseed(seed: int) -> None:
        """Seed the global `random` module for the run `seed`."""
        # What random.seed(int) does, without the Python wrapper's checks:
        # seed the module's generator in C and forget a cached gauss value.
        inst: Any = random._inst
        _seed_generator(inst, _core.seed_stream(seed, _core.STREAM_PYRANDOM))
        inst.gauss_next = None


scope = Scope()
