# SPDX-License-Identifier: Apache-2.0
"""Addresses inside the simulated network: a node's address (10.0.0.<id+1>,
counted on as a 24-bit number), loopback and the wildcards, AF_UNIX paths
(("unix", path) in the stack), how the socket module shows each, the
socket module's C-int arguments, and what a node may bind or, in wrap mode's
one host, reach. Pure functions over values; imports no other module of the
network.
"""

from __future__ import annotations

import os
import socket
from typing import Any

from .._loop.refusal import refuse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .stack import Stack


def address_of(node_id: int) -> str:
    """Node id's address: 10.0.0.1 for node 0, as a 24-bit count after 10."""
    n = node_id + 1
    return f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


def node_of_address(addr: str) -> int | None:
    parts = addr.split(".")
    if len(parts) != 4 or parts[0] != "10" or not all(p.isdigit() for p in parts):
        return None
    b, c, d = (int(p) for p in parts[1:])
    if max(b, c, d) > 255:
        return None
    n = b << 16 | c << 8 | d
    return n - 1 if n >= 1 else None


def is_loopback(addr: str) -> bool:
    return addr.startswith("127.") or addr in ("localhost", "::1")


UNIX = "unix"  # the host part of an AF_UNIX address inside the stack: ("unix", path)
WILDCARDS = ("0.0.0.0", "::")


def family_of(addr: str) -> int:
    """The family of an address the stack holds (a resolved host, or UNIX)."""
    if addr == UNIX:
        return socket.AF_UNIX
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def covers(bound: str, addr: str) -> bool:
    """Whether a socket bound to `bound` takes what is sent to `addr`: the
    same address, its family's wildcard, or loopback for loopback (one
    family: an AF_INET6 server sets IPV6_V6ONLY, as asyncio's do)."""
    if bound == addr:
        return True
    if family_of(bound) != family_of(addr):
        return False
    return bound in WILDCARDS or (is_loopback(addr) and is_loopback(bound))


def as_sockaddr(a: tuple[str, Any]) -> Any:
    """An address as the socket module gives it: (host, port) for IPv4,
    (host, port, 0, 0) for IPv6, the path for AF_UNIX (bytes if abstract)."""
    if a[0] == UNIX:
        path = a[1]
        return path.encode("utf-8", "surrogateescape") if path.startswith("\0") else path
    if ":" in a[0]:
        return (a[0], a[1], 0, 0)
    return a


def c_int(value: Any, what: str) -> int:
    """An argument the socket module parses as a C int ("i")."""
    if isinstance(value, float) or not hasattr(value, "__index__"):
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer")
    n = value.__index__()
    if not -(2**31) <= n < 2**31:
        raise OverflowError(f"signed integer is {'greater' if n > 0 else 'less'} than maximum")
    return int(n)


def _is_numeric(host: str) -> bool:
    """A plain dotted quad (no leading zeros, which inet_aton reads as octal)."""
    parts = host.split(".")
    return len(parts) == 4 and all(
        p.isdigit() and int(p) <= 255 and (p == "0" or p[0] != "0") for p in parts
    )


def numeric_v4(host: str) -> str | None:
    """host as a dotted quad if glibc's getaddrinfo reads it as an IPv4
    number (inet_aton's forms, exactly: 127.1, 0x7f.0.0.1, 2130706433),
    else None."""
    if _is_numeric(host):
        return host
    if not host or host.strip("0123456789abcdefABCDEFxX."):
        return None
    try:
        return socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        return None


def is_localhost(host: str) -> bool:
    return host.lower().rstrip(".") == "localhost"


def ep_text(a: tuple[str, Any]) -> str:
    if a[0] == UNIX:
        return f"unix:{a[1]}".replace("\0", "@")  # an abstract name as ss(8) shows it
    return f"[{a[0]}]:{a[1]}" if ":" in a[0] else f"{a[0]}:{a[1]}"


def refuse_remote(stack: Stack, call: str) -> None:
    refuse(
        call,
        "In wrap mode the process is one host: only its loopback addresses "
        "(127.0.0.1, ::1, localhost, its own name) are simulated (docs/wrapping.md).",
    )


def loopback_of(addr: str) -> str:
    return "::1" if ":" in addr else "127.0.0.1"


def local_addr_for(stack: Stack, node: int, remote_addr: str) -> str:
    return loopback_of(remote_addr) if is_loopback(remote_addr) else address_of(node)


def may_bind(stack: Stack, node: int, addr: str) -> bool:
    """Whether the node may bind addr: a wildcard, loopback, its address."""
    if addr in WILDCARDS or is_loopback(addr):
        return True
    return not stack.one_host and addr == address_of(node)


def bind_error(code: int, where: Any, what: str) -> OSError:
    return OSError(code, f"error while attempting to bind on address {where!r}: {what}")


def check_port(port: int, call: str) -> None:
    """The socket module's check of a port it is given to bind or connect."""
    if not 0 <= port <= 65535:
        raise OverflowError(f"{call}(): port must be 0-65535.")


def unix_path(path: Any) -> str:
    """An AF_UNIX address as the stack keys it: str, abstract names with
    their leading NUL."""
    if not isinstance(path, (bytes, bytearray, str)):
        path = os.fspath(path)
    raw = os.fsencode(path) if isinstance(path, str) else bytes(path)
    if len(raw) > UNIX_PATH_MAX:
        raise OSError("AF_UNIX path too long")  # the socket module's check, no errno
    if isinstance(path, (bytes, bytearray)):
        return bytes(path).decode("utf-8", "surrogateescape")
    return str(path)


UNIX_PATH_MAX = 108  # sizeof(sockaddr_un.sun_path) on Linux
