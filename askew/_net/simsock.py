# SPDX-License-Identifier: Apache-2.0
"""SimSocket: what a transport's get_extra_info("socket") and Server.sockets
give, a socket-like object with no file descriptor (asyncio's
TransportSocket's surface). Its keep-alive and user-timeout options reach
the connection's timers.
"""

from __future__ import annotations

import errno
import socket
import sys
from typing import Any

from .addr import as_sockaddr, family_of
from .tcp import KEEPALIVE, TIMER_OPTS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .endpoint import Endpoint


def _timer_option(value: Any, bounds: tuple[int, int], flag: bool) -> int:
    """A keep-alive or user-timeout option's value as setsockopt takes it
    on Linux: an int that fits a C int, or a buffer of at least 4 bytes;
    out of its range EINVAL. SO_KEEPALIVE reads back as 0 or 1."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) < 4:
            raise OSError(errno.EINVAL, "Invalid argument")
        value = int.from_bytes(raw[:4], sys.byteorder, signed=True)
    elif not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise TypeError(f"a bytes-like object is required, not '{type(value).__name__}'")
    if not bounds[0] <= value <= bounds[1]:
        raise OSError(errno.EINVAL, "Invalid argument")
    return int(bool(value)) if flag else int(value)


class SimSocket:
    """What get_extra_info('socket') and Server.sockets give: a socket-like
    object with no file descriptor (asyncio's TransportSocket's surface)."""

    family = socket.AF_INET
    type = socket.SOCK_STREAM
    proto = socket.IPPROTO_TCP

    def __init__(self, local: tuple[str, Any], remote: tuple[str, Any] | None) -> None:
        self._local = local
        self._remote = remote
        self._opts: dict[tuple[int, int], Any] = {}
        self.family = socket.AddressFamily(family_of(local[0]))

    def fileno(self) -> int:
        return -1

    def getsockname(self) -> Any:
        return as_sockaddr(self._local)

    def getpeername(self) -> Any:
        if self._remote is None:
            raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
        return as_sockaddr(self._remote)

    _owner: Endpoint | None = None  # the connection whose timers read these options

    def setsockopt(self, level: int, name: int, value: Any, *rest: Any) -> None:
        key = (level, name)
        if level == socket.IPPROTO_TCP and self.family == socket.AF_UNIX:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")  # as Linux
        bounds = TIMER_OPTS.get(key)
        if bounds is not None:
            value = _timer_option(value, bounds, key == KEEPALIVE)
        before = self._opts.get(key)
        self._opts[key] = value
        if bounds is None or self._owner is None:
            return
        if key != KEEPALIVE or bool(before) != bool(value):  # Linux: on a change only
            self._owner._timers_changed(key)

    def getsockopt(self, level: int, name: int, buflen: int = 0) -> Any:
        return self._opts.get((level, name), 0)

    def gettimeout(self) -> float:
        return 0.0

    def setblocking(self, flag: bool) -> None:
        pass

    def __repr__(self) -> str:
        peer = f", raddr={self.getpeername()!r}" if self._remote else ""
        fam = self.family.name
        return f"<askew.SimSocket family={fam} type=SOCK_STREAM laddr={self.getsockname()!r}{peer}>"
