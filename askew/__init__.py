# SPDX-License-Identifier: Apache-2.0
"""askew: deterministic simulation testing for asyncio.

Virtual time, a seeded schedule and a simulated network: one integer
describes a whole run, and replays it.

The public names are imported on first use (PEP 562), so that a process
importing only a part of askew (askew-exec's launcher, which must start in
a few milliseconds, imports askew._run.exec) does not pay for asyncio and the
extension.
"""

from __future__ import annotations

import importlib

# Not typing.TYPE_CHECKING: importing typing alone costs the launcher 5 ms.
# mypy takes any name TYPE_CHECKING as true.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from . import check as check
    from ._explore.buggify import buggify as buggify
    from ._explore.buggify import coverage as coverage
    from ._explore.buggify import sometimes as sometimes
    from ._loop.config import Swarm as Swarm
    from ._loop.loop import SimLoop as SimLoop
    from ._loop.loop import new_event_loop as new_event_loop
    from ._loop.loop import run as run
    from ._loop.preload import preload_active as preload_active
    from ._run.runner import Replay as Replay
    from ._run.runner import simulate as simulate
    from ._world.history import History as History
    from ._world.node import Message as Message
    from ._world.world import World as World
    from .errors import BudgetExceeded as BudgetExceeded
    from .errors import DeadlockError as DeadlockError
    from .errors import NondeterminismError as NondeterminismError
    from .errors import SimulationFailure as SimulationFailure

# Where each public name lives: one table, read by __getattr__.
_LAZY = {
    "BudgetExceeded": ".errors",
    "DeadlockError": ".errors",
    "History": "._world.history",
    "Message": "._world.node",
    "NondeterminismError": ".errors",
    "Replay": "._run.runner",
    "SimLoop": "._loop.loop",
    "SimulationFailure": ".errors",
    "Swarm": "._loop.config",
    "World": "._world.world",
    "buggify": "._explore.buggify",
    "check": ".check",
    "coverage": "._explore.buggify",
    "new_event_loop": "._loop.loop",
    "preload_active": "._loop.preload",
    "run": "._loop.loop",
    "simulate": "._run.runner",
    "sometimes": "._explore.buggify",
}

__all__ = sorted(_LAZY)

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        # The loop asks the layer above it for its sockets (askew/_loop/hostio.py):
        # any public name brings the network along, so that a bare loop
        # (askew.new_event_loop) serves what a world's does.
        importlib.import_module("._net.loopio", __name__)
        value = importlib.import_module(module, __name__)
        if module != f".{name}":  # askew.check is a module of its own
            value = getattr(value, name)
    elif name.startswith("_") and not name.startswith("__"):
        # askew._core, askew._loop.preload, ...: a private submodule on first use.
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError:
            raise AttributeError(f"module 'askew' has no attribute {name!r}") from None
    else:
        raise AttributeError(f"module 'askew' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
