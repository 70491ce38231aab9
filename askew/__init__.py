# SPDX-License-Identifier: Apache-2.0
"""askew: deterministic simulation testing for asyncio.

Virtual time, a seeded schedule and a simulated network: one integer
describes a whole run, and replays it.
"""

from ._loop import SimLoop, new_event_loop, run
from ._preload import preload_active
from ._runner import Replay, simulate
from ._world import Message, World
from .errors import BudgetExceeded, DeadlockError, NondeterminismError, SimulationFailure

__all__ = [
    "BudgetExceeded",
    "DeadlockError",
    "Message",
    "NondeterminismError",
    "Replay",
    "SimLoop",
    "SimulationFailure",
    "World",
    "new_event_loop",
    "preload_active",
    "run",
    "simulate",
]

__version__ = "0.1.0"
