# SPDX-License-Identifier: Apache-2.0
"""What the network puts over the loop's patches while a scope is open
(askew/_loop/patches.py refuses real sockets and the resolver): a world's
node, or a wrapped test, gets simulated sockets (socket.socket and
socketpair make them), forward lookups answered by the simulated resolver,
blocking TLS over a simulated socket refused by name, and aiodns asking the
loop instead of starting a c-ares thread. Registered with the scope when
imported (askew/_net/loopio.py imports it)."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable
from typing import Any

from .. import _core
from .._loop.patches import NameSwap, scope
from . import aiodns as _aiodns
from . import sockets as _sockets
from .host import current

_virtual: Any = _core.virtual

# The socket module's functions a world answers; getfqdn answers what a host
# knows of itself, and refuses a reverse lookup of anything else, as
# gethostbyaddr and socket.getnameinfo are refused (docs/sockets.md).
RESOLVED = ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "getfqdn")


def resolving(name: str, refusing: Callable[..., Any], in_run: Callable[[], bool]) -> Any:
    """socket.<name> inside a run: the world's resolver when one is running
    (and this is its thread), else `refusing` (which refuses in a run and
    passes through outside)."""

    def resolve(*args: Any, **kwargs: Any) -> Any:
        stack = current(False) if in_run() else None
        if stack is not None:
            return getattr(stack.names, name)(*args, **kwargs)
        return refusing(*args, **kwargs)

    resolve.__name__ = name
    resolve.__doc__ = getattr(refusing, "__doc__", None)
    return resolve


def install(names: NameSwap) -> None:
    names.set(socket, "socket", _sockets.SocketType)
    names.set(socket, "socketpair", _sockets.socketpair)
    names.set(ssl.SSLContext, "wrap_socket", _sockets.wrap_socket)
    # Over the loop's refusal of each, which they fall back to outside a world.
    for name in RESOLVED:
        names.set(socket, name, resolving(name, getattr(socket, name), _virtual.in_simulation))
    _aiodns.swap(names)


scope.extensions.append(install)
