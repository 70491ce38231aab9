# SPDX-License-Identifier: Apache-2.0
"""The kinds of entry in a run's log, which every layer writes through the C
loop's ring (loop._log_emit) and the world's log reads back: their numbers,
the names a report shows, and which of them are faults. The network
binding's kinds come from C (ext/log.h); the rest are numbered from the
base C leaves to Python. Never renumber: the kind is part of the trace hash."""

from __future__ import annotations

from .. import _core

NET_SEND, NET_DELIVERY = _core.LOG_KIND_SEND, _core.LOG_KIND_DELIVERY
(
    WORLD,
    NODE,
    SPAWN,
    CRASH,
    RESTART,
    PARTITION,
    HEAL,
    FAULT,
    ASSERT,
    CONFIG,
    ERROR,
    CONNECT,
    ACCEPT,
    REFUSE,
    RESET,
    CLOSE,
) = range(_core.LOG_KIND_WORLD_BASE, _core.LOG_KIND_WORLD_BASE + 16)

NAMES = {
    NET_SEND: "net",
    NET_DELIVERY: "net",
    WORLD: "world",
    NODE: "node",
    SPAWN: "spawn",
    CRASH: "crash",
    RESTART: "restart",
    PARTITION: "net",
    HEAL: "net",
    FAULT: "fault",
    ASSERT: "assert",
    CONFIG: "net",
    ERROR: "error",
    CONNECT: "connect",
    ACCEPT: "accept",
    REFUSE: "refuse",
    RESET: "reset",
    CLOSE: "close",
}
# The name of each outcome code of ext/engine/net.h, indexed by code.
OUTCOMES = _core.NET_OUTCOME_NAMES
# The kinds that are faults: world.log.faults() keeps them apart from the
# ring, so a report shows them however long ago they were.
FAULTS = frozenset((CRASH, RESTART, PARTITION, HEAL, FAULT, CONFIG))
LOG_KEPT = _core.LOG_KEPT  # entries the log ring keeps (ext/log.h)
