# SPDX-License-Identifier: Apache-2.0
"""Which stack code talks to: the running world's (made on first use), or in a
wrapped test the loop's own one host (Host: the process as node 0, reached
on loopback). The world calls begin/end around its run; wrap mode sets
`wrapped` around each test's phases.
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from .._loop.executor import inline_loop
from .._loop.nodes import TOKEN_SHIFT, node_var
from .._loop.text import digest
from .stack import Stack

_world: Any = None  # the running world, if any (begin/end)
# Whether a wrapped test is running: askew/_run/wrap.py sets it around each of
# its phases, and a SimLoop then gets a one-host stack on its first socket call.
wrapped = False


def begin(world: Any) -> None:
    """A world's run starts: its names resolve from now on."""
    global _world
    _world = world


def end(world: Any) -> None:
    """A world's run ended (or wrap mode's host went with its loop): its
    stack lets go of the loop's network."""
    global _world
    stack = world._tcp
    if stack is not None:
        world._tcp = None
        stack.close()
    if _world is world:
        _world = None


def current_world() -> Any:
    """The world whose run began and has not ended, or None."""
    return _world


def stack_of(world: Any) -> Stack:
    stack: Stack | None = world._tcp
    if stack is None:
        stack = world._tcp = Stack(world)
    return stack


class _HostSlot:
    __slots__ = ("token",)

    def __init__(self, token: int) -> None:
        self.token = token


class _HostLog:
    """What a Stack writes to world.log, written to the loop's log (and so
    into its trace hash) when there is no world."""

    def __init__(self, loop: Any) -> None:
        self._loop = loop

    def _emit(self, kind: int, node: int, text: str) -> None:
        self._loop._log_emit(kind, node, text, digest(text))


class Host:
    """Wrap mode's one host: the part of a World a Stack reads. The process
    is node 0 of its SimLoop's network, reachable as loopback (127.0.0.0/8,
    ::1, `localhost`, its own host name); it has no other address, so
    anything else stays refused. Made on the loop's first socket call in a
    wrapped test, dropped when the loop is reset or closed."""

    one_host = True

    def __init__(self, loop: Any) -> None:
        self._loop = loop
        self._wire = loop._net
        node = int(self._wire.node_add())
        if node != 0:  # a world's nodes are on this loop: not wrap mode's
            raise RuntimeError("wrap mode's host needs a SimLoop without nodes")
        _alive, incarnation = self._wire.alive(node)
        self._slots = [_HostSlot(node << TOKEN_SHIFT | incarnation)]
        # Loopback takes no time: Linux has a loopback or unix-socket write in
        # the peer's receive queue before send() returns (docs/wrapping.md).
        self._wire.configure(0, 0, 0, 0, node, node)
        self._hostnames = ["localhost"]
        # The host's own name reaches it, as glibc's /etc/hosts makes it do.
        own = socket.gethostname().lower().rstrip(".")
        self._names = {own: node} if own else {}
        self._ended = False
        self._tcp: Stack | None = None
        self.log = _HostLog(loop)


def active(loop: Any) -> Stack | None:
    """The stack of the world running on loop, or in a wrapped test the
    loop's own one-host stack; None elsewhere (a bare loop: refused)."""
    world = _world
    if world is not None and not world._ended:
        return stack_of(world) if world._loop is loop else None
    host = getattr(loop, "_host", None)
    if host is None:
        if not wrapped or loop.is_closed():
            return None
        host = loop._host = Host(loop)
    return stack_of(host)


def drop_host(loop: Any) -> None:
    """The loop is reset or closed: wrap mode's host and its sockets go."""
    host = getattr(loop, "_host", None)
    if host is not None:
        loop._host = None
        host._ended = True
        end(host)


def current(node_only: bool) -> Stack | None:
    """The stack code on this thread talks to: a world's (from a node's
    code only, if node_only), or the running wrapped SimLoop's."""
    world = _world
    if world is not None and not world._ended:
        if node_only and node_var.get(None) is None:
            return None
        return stack_of(world)
    loop = asyncio.events._get_running_loop() or inline_loop()
    if loop is None or not hasattr(loop, "_host"):
        return None
    return active(loop)
