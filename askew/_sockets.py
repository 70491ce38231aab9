# SPDX-License-Identifier: Apache-2.0
"""Simulated TCP and names: what `create_server`, `create_connection`,
`getaddrinfo` and `socket.gethostbyname` do inside a world, and in a
wrapped test, whose process is one host (`Host`) reached on loopback
(docs/sockets.md, docs/wrapping.md). AF_UNIX streams and socketpairs are
the same connections, addressed (UNIX, path) in the node's own namespace.

A node has an address (`10.0.0.<id+1>`, counted on as a 24-bit number) and
a hostname (`node-<id>` or the `name=` given at spawn), and reaches itself
as 127.0.0.1 or `localhost`. A connection is two endpoints, one per node;
each segment is a `_Segment` carried by the C network (`loop._net`) over the
link between the two nodes, so it takes the link's latency and meets its
faults. The common case of data runs in C (ext/stream.c: an endpoint's hot
state is its `_s`, a `_core.Stream`): a write the window takes, the next
bytes in order for an open socket, their delivery to a plain Protocol.
Every other segment comes back to `Stack._arrive` when it comes due,
delivered or dropped: a dropped one is sent again after a retransmission
timeout (TCP loses nothing it has accepted), an out-of-order one waits for
the gap, a duplicate is discarded. Every random draw (segment sizes,
retransmission jitter) comes from the network stream through `loop._net.draw`,
in the order the calls happen, so a program that opens no socket keeps
exactly its runs.
"""

from __future__ import annotations

import asyncio
import contextvars
import errno
import functools
import operator
import re
import socket
import struct
import sys
import threading
from asyncio.base_events import (  # type: ignore[attr-defined]
    _ipaddr_info,  # asyncio's own numeric-host shortcut, unexported
)
from asyncio.log import logger as _asyncio_logger
from collections.abc import Callable
from typing import Any

from . import _core, _realsock
from ._world import (
    _KIND_ACCEPT,
    _KIND_CLOSE,
    _KIND_CONNECT,
    _KIND_REFUSE,
    _KIND_RESET,
    _digest,
    _node_var,
    _Slot,
)

# ---- the model's numbers (docs/sockets.md says why each) -----------------

WINDOW = 65536  # bytes a sender may have unconsumed by the receiver
SEGMENT_MAX = 16384  # the largest segment the size draw may choose
RTO_MIN_NS = 200_000_000  # Linux TCP_RTO_MIN
RTO_MAX_NS = 120_000_000_000  # Linux TCP_RTO_MAX
RETRIES_DATA = 15  # Linux tcp_retries2: ~924.6 s before ETIMEDOUT
SYN_RTO_NS = 1_000_000_000  # Linux's initial SYN timeout
RETRIES_SYN = 6  # Linux tcp_syn_retries: 1+2+...+64 = 127 s before ETIMEDOUT
EPHEMERAL_LO, EPHEMERAL_HI = 32768, 60999  # Linux ip_local_port_range
BACKLOG_DEFAULT = 100  # asyncio's default
HIGH_WATER_DEFAULT = 64 * 1024  # asyncio's FlowControlMixin defaults
LOG_WRITES_AFTER_LOST = 5  # asyncio's LOG_THRESHOLD_FOR_CONNLOST_WRITES
# Keep-alive (tcp(7)): Linux's defaults and the ranges setsockopt accepts.
KEEPIDLE_DEFAULT, KEEPINTVL_DEFAULT, KEEPCNT_DEFAULT = 7200, 75, 9
_KEEPALIVE = (socket.SOL_SOCKET, socket.SO_KEEPALIVE)
_TCP_USER_TIMEOUT = getattr(socket, "TCP_USER_TIMEOUT", 18)
# (level, name) -> (lowest, highest) a timer option takes; else EINVAL.
_TIMER_OPTS = {
    _KEEPALIVE: (-(2**31), 2**31 - 1),  # any int: on when non-zero
    (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE): (1, 32767),
    (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL): (1, 32767),
    (socket.IPPROTO_TCP, socket.TCP_KEEPCNT): (1, 127),
    (socket.IPPROTO_TCP, _TCP_USER_TIMEOUT): (0, 2**31 - 1),  # ms; 0 is off
}

_DELIVERED = 2  # ASKEW_NET_DELIVERED (ext/engine/net.h)
_IN_FLIGHT, _DUPLICATED = 0, 1

SYN, SYNACK, DATA, FIN, RST = range(5)
UDP, ICMP = 5, 6  # a datagram and a port unreachable (askew/_udp.py)
PROBE = 7  # a keep-alive probe: no data, nobody retransmits it
_KIND_TEXT = ("SYN", "SYN-ACK", "DATA", "FIN", "RST", "", "", "keep-alive")

_world: Any = None  # the running world, if any (begin/end)


def address_of(node_id: int) -> str:
    """Node id's address: 10.0.0.1 for node 0, as a 24-bit count after 10."""
    n = node_id + 1
    return f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"


def _node_of_address(addr: str) -> int | None:
    parts = addr.split(".")
    if len(parts) != 4 or parts[0] != "10" or not all(p.isdigit() for p in parts):
        return None
    b, c, d = (int(p) for p in parts[1:])
    if max(b, c, d) > 255:
        return None
    n = b << 16 | c << 8 | d
    return n - 1 if n >= 1 else None


def _is_loopback(addr: str) -> bool:
    return addr.startswith("127.") or addr in ("localhost", "::1")


UNIX = "unix"  # the host part of an AF_UNIX address inside the stack: ("unix", path)
WILDCARDS = ("0.0.0.0", "::")


def _family(addr: str) -> int:
    """The family of an address the stack holds (a resolved host, or UNIX)."""
    if addr == UNIX:
        return socket.AF_UNIX
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


def _covers(bound: str, addr: str) -> bool:
    """Whether a socket bound to `bound` takes what is sent to `addr`: the
    same address, its family's wildcard, or loopback for loopback (one
    family: an AF_INET6 server sets IPV6_V6ONLY, as asyncio's do)."""
    if bound == addr:
        return True
    if _family(bound) != _family(addr):
        return False
    return bound in WILDCARDS or (_is_loopback(addr) and _is_loopback(bound))


def _sockaddr(a: tuple[str, Any]) -> Any:
    """An address as the socket module gives it: (host, port) for IPv4,
    (host, port, 0, 0) for IPv6, the path for AF_UNIX (bytes if abstract)."""
    if a[0] == UNIX:
        path = a[1]
        return path.encode("utf-8", "surrogateescape") if path.startswith("\0") else path
    if ":" in a[0]:
        return (a[0], a[1], 0, 0)
    return a


# ---- names --------------------------------------------------------------


def _gaierror(code: int, text: str) -> socket.gaierror:
    return socket.gaierror(code, text)


def _no_name() -> socket.gaierror:
    return _gaierror(socket.EAI_NONAME, "Name or service not known")


# The services a simulated host knows by name: the common ones of Debian's
# /etc/services (netbase), fixed so every host answers alike. Each name
# (aliases too): its port and the protocols it is listed for.
_SERVICES: dict[str, tuple[int, tuple[str, ...]]] = {}
for _line in (
    "echo 7 tcp udp; discard 9 tcp udp; daytime 13 tcp udp; ftp-data 20 tcp; ftp 21 tcp;"
    "ssh 22 tcp; telnet 23 tcp; smtp,mail 25 tcp; time 37 tcp udp; domain 53 tcp udp;"
    "tftp 69 udp; http,www 80 tcp; pop3 110 tcp; ntp 123 udp; imap2,imap 143 tcp;"
    "snmp 161 tcp udp; ldap 389 tcp udp; https 443 tcp udp; submissions,ssmtp,smtps 465 tcp;"
    "syslog 514 udp; submission 587 tcp; ldaps 636 tcp udp; rsync 873 tcp; ftps 990 tcp;"
    "imaps 993 tcp; pop3s 995 tcp; socks 1080 tcp; nfs 2049 tcp udp; mysql 3306 tcp;"
    "sip 5060 tcp udp; mdns 5353 udp; postgresql,postgres 5432 tcp; amqp 5672 tcp;"
    "redis 6379 tcp; http-alt,webcache 8080 tcp; git 9418 tcp"
).split(";"):
    _names_of, _num, *_protos = _line.split()
    for _name in _names_of.split(","):
        _SERVICES[_name] = (int(_num), tuple(_protos))

# glibc's table of socket types and protocols (gaih_inet_typeproto), in its
# order: (type, protocol, name, answered for type=0, any protocol, no service).
_TYPEPROTO = (
    (socket.SOCK_STREAM, socket.IPPROTO_TCP, "tcp", True, False, False),
    (socket.SOCK_DGRAM, socket.IPPROTO_UDP, "udp", True, False, False),
    (6, 33, "dccp", False, False, False),  # SOCK_DCCP, IPPROTO_DCCP
    (socket.SOCK_DGRAM, 136, "udplite", False, False, False),  # IPPROTO_UDPLITE
    (socket.SOCK_RAW, 0, "raw", True, True, True),
)
_AI_KNOWN = 0x7FF  # every AI_* flag glibc knows (AI_PASSIVE ... AI_NUMERICSERV)
_NI_KNOWN = 0xFF  # every NI_* flag glibc knows
_KINDS = frozenset(int(k) for k in socket.SocketKind)
_PLAIN = (str, bytes, int, type(None), socket.AddressFamily, socket.SocketKind)


def _c_int(value: Any, what: str) -> int:
    """An argument the socket module parses as a C int ("i")."""
    if isinstance(value, float) or not hasattr(value, "__index__"):
        raise TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer")
    n = value.__index__()
    if not -(2**31) <= n < 2**31:
        raise OverflowError(f"signed integer is {'greater' if n > 0 else 'less'} than maximum")
    return int(n)


def _service_text(port: Any) -> str | None:
    """The service string socket.getaddrinfo hands glibc for `port`."""
    if port is None:
        return None
    if type(port) is int:  # exactly: a bool or an int subclass is neither int nor str
        if sys.version_info < (3, 12) and not -(2**63) <= port < 2**63:
            raise OverflowError("Python int too large to convert to C long")  # 3.12 takes str()
        return str(port)
    if isinstance(port, str):
        return port
    if isinstance(port, bytes):
        return port.decode("latin-1")
    raise OSError("Int or String expected")


def _strtoul_int(text: str) -> int | None:
    """glibc's numeric service: strtoul(text, 10) taken as a C int, or
    None when text is not all one number (AI_NUMERICSERV refuses it). A
    negative int is looked up as a name, as glibc does."""
    m = re.fullmatch(r"[ \t\n\v\f\r]*([+-]?)([0-9]+)", text)
    if m is None:
        return None
    n = min(int(m.group(2)), 2**64 - 1)
    if m.group(1) == "-":
        n = -n % 2**64
    n &= 0xFFFFFFFF
    return n - 2**32 if n >= 2**31 else n


def _service(port: Any, socktype: int, proto: int, flags: int) -> list[tuple[int, int, int]]:
    """(type, protocol, port) for each answer getaddrinfo gives, in glibc's
    order, or the gaierror glibc returns (gaih_inet's service half)."""
    text = _service_text(port)
    num: int | None = 0
    if text:
        num = _strtoul_int(text)
        if num is None and flags & socket.AI_NUMERICSERV:
            raise _no_name()
        if num is not None and num < 0:
            num = None  # glibc looks it up as a name
    chosen = None
    if socktype or proto:
        for row in _TYPEPROTO:
            if (socktype == 0 or socktype == row[0]) and (proto == 0 or row[4] or proto == row[1]):
                chosen = row
                break
        if chosen is None:
            if socktype:
                raise _gaierror(socket.EAI_SOCKTYPE, "ai_socktype not supported")
            raise _gaierror(socket.EAI_SERVICE, "Servname not supported for ai_socktype")
        if text and chosen[5]:
            raise _gaierror(socket.EAI_SERVICE, "Servname not supported for ai_socktype")
    if num is None:  # a service name
        known = _SERVICES.get(str(text))
        rows = [chosen] if chosen is not None else [r for r in _TYPEPROTO if not r[5]]
        out = [
            (r[0], r[1], known[0])
            for r in rows
            if known is not None and r[2] in known[1]
            if (socktype == 0 or socktype == r[0]) and (proto == 0 or r[4] or proto == r[1])
        ]
        if not out:
            raise _gaierror(socket.EAI_SERVICE, "Servname not supported for ai_socktype")
        return out
    p = num & 0xFFFF
    if chosen is not None:
        return [(chosen[0], proto if chosen[4] else chosen[1], p)]
    return [(r[0], r[1], p) for r in _TYPEPROTO if r[3]]


def _service_name(port: int, flags: int) -> str:
    """getnameinfo's service: the name a known port has for its protocol
    (tcp, or udp with NI_DGRAM), else the number."""
    if not flags & socket.NI_NUMERICSERV:
        proto = "udp" if flags & socket.NI_DGRAM else "tcp"
        for name, (num, protos) in _SERVICES.items():
            if num == port and proto in protos:
                return name
    return str(port)


class Names:
    """The world's resolver: hostnames and addresses of its nodes (in wrap
    mode, the one host's: `localhost` and its own name, loopback only)."""

    def __init__(self, world: Any) -> None:
        self._world = world
        self.one_host = bool(getattr(world, "one_host", False))
        # Answers already given: a name, once it resolves, resolves alike
        # for the rest of the run (names are never taken back).
        self._answers: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}

    def host_to_addr(self, host: str) -> str:
        """The IPv4 address `host` names, or gaierror(EAI_NONAME); in wrap
        mode a name of another host is a refusal (a real DNS query)."""
        if host == "" or _is_localhost(host):
            return "127.0.0.1"
        numeric = _numeric_v4(host)
        if numeric is not None:
            return numeric
        node = self._world._names.get(host.lower().rstrip("."))
        if node is None:
            if self.one_host:
                from ._loop import _IO_HINT, _refuse

                _refuse(f"getaddrinfo({host!r})", _IO_HINT, "would send a real DNS query")
            raise _no_name()
        return "127.0.0.1" if self.one_host else address_of(node)

    def addr_to_host(self, addr: str) -> str | None:
        if _is_loopback(addr):
            return "localhost"
        node = _node_of_address(addr)
        if self.one_host or node is None or node >= len(self._world._hostnames):
            return None
        return str(self._world._hostnames[node])

    def addresses(self, host: Any, family: int, flags: int) -> list[str]:
        """What `host` resolves to for `family`, in glibc's order: IPv4
        then IPv6 for no host, IPv4 alone for a name under AF_UNSPEC (no
        interface has an IPv6 address but loopback: docs/sockets.md)."""
        if family not in (0, socket.AF_INET, socket.AF_INET6):
            raise _gaierror(socket.EAI_FAMILY, "ai_family not supported")
        if host is None:
            passive = bool(flags & socket.AI_PASSIVE)
            if passive:
                v4, v6, both = "0.0.0.0", "::", ["0.0.0.0", "::"]
            else:  # glibc sorts ::1 first (RFC 3484's precedence)
                v4, v6, both = "127.0.0.1", "::1", ["::1", "127.0.0.1"]
            if family == socket.AF_INET:
                return [v4]
            return [v6] if family == socket.AF_INET6 else both
        if not isinstance(host, str):
            raise TypeError(f"getaddrinfo() argument 1 must be string or None, not {host!r}")
        if host == "":
            raise _no_name()  # glibc: an empty name is no name
        if ":" in host:
            try:
                socket.inet_pton(socket.AF_INET6, host)
            except OSError:
                raise _no_name() from None
            if family == socket.AF_INET:
                raise _gaierror(socket.EAI_ADDRFAMILY, "Address family for hostname not supported")
            return [host]
        if flags & socket.AI_NUMERICHOST and _numeric_v4(host) is None:
            raise _no_name()
        if family == socket.AF_INET6:
            if _is_localhost(host):
                return ["::1"]
            if _numeric_v4(host) is None:
                self.host_to_addr(host)  # an unknown name fails as one
            raise _gaierror(socket.EAI_ADDRFAMILY, "Address family for hostname not supported")
        return [self.host_to_addr(host)]

    def getaddrinfo(
        self, host: Any, port: Any, family: int = 0, type: int = 0, proto: int = 0, flags: int = 0
    ) -> list[tuple[Any, ...]]:
        key = (host, port, family, type, proto, flags)
        if all(v.__class__ in _PLAIN for v in key):  # not a bool: it would hit 1's entry
            known = self._answers.get(key)
            if known is None:
                known = self._answers[key] = self._getaddrinfo(*key)
            return list(known)
        return self._getaddrinfo(*key)

    def _getaddrinfo(
        self, host: Any, port: Any, family: int, type: int, proto: int, flags: int
    ) -> list[tuple[Any, ...]]:
        # In the socket module's order: its argument checks, then glibc's.
        family, type, proto, flags = (
            _c_int(v, n)
            for v, n in ((family, "family"), (type, "type"), (proto, "proto"), (flags, "flags"))
        )
        if isinstance(host, str):
            host = host.encode("idna")  # the socket module's: UnicodeError for a bad label
        elif host is not None and not isinstance(host, bytes):
            raise TypeError("getaddrinfo() argument 1 must be string or None")
        if host is not None:  # glibc reads a C string: up to a NUL
            host = host.split(b"\0", 1)[0].decode("ascii", "surrogateescape")
        if host is None and port is None:
            raise _no_name()
        if flags & ~_AI_KNOWN or (flags & socket.AI_CANONNAME and host is None):
            raise _gaierror(socket.EAI_BADFLAGS, "Bad value for ai_flags")
        if family not in (0, socket.AF_INET, socket.AF_INET6):
            raise _gaierror(socket.EAI_FAMILY, "ai_family not supported")
        services = _service(port, type, proto, flags)
        out: list[tuple[Any, ...]] = []
        for addr in self.addresses(host, family, flags):
            fam = socket.AddressFamily(_family(addr))
            for kind, proto_of, p in services:
                kind_of = socket.SocketKind(kind) if kind in _KINDS else kind
                out.append((fam, kind_of, proto_of, "", _sockaddr((addr, p))))
        if flags & socket.AI_CANONNAME and out and host is not None:
            # The first answer carries the canonical name: a number as given.
            canon = host if _numeric_v4(host) or ":" in host else host.lower().rstrip(".")
            out[0] = (*out[0][:3], canon, out[0][4])
        return out

    def getnameinfo(self, sockaddr: Any, flags: int = 0) -> tuple[str, str]:
        # The socket module's checks, in its order, then glibc's.
        flags = _c_int(flags, "flags")
        if not isinstance(sockaddr, tuple):
            raise TypeError("getnameinfo() argument 1 must be a tuple")
        bad = "getnameinfo(): illegal sockaddr argument"
        if not 2 <= len(sockaddr) <= 4 or not isinstance(sockaddr[0], str):
            raise TypeError(bad)
        addr, port = sockaddr[0], _c_int(sockaddr[1], "port")
        if len(sockaddr) > 2 and _c_int(sockaddr[2], "flowinfo") > 0xFFFFF:
            raise OverflowError("getnameinfo(): flowinfo must be 0-1048575.")
        if ":" in addr:
            try:
                socket.inet_pton(socket.AF_INET6, addr)
            except OSError:
                raise _no_name() from None
        else:
            numeric = _numeric_v4(addr)
            if numeric is None:
                raise _no_name()
            addr = numeric
            if len(sockaddr) != 2:
                raise OSError("IPv4 sockaddr must be 2 tuple")
        port = _service(str(port), socket.SOCK_DGRAM, 0, 0)[0][2]
        if flags & ~_NI_KNOWN:
            raise _gaierror(socket.EAI_BADFLAGS, "Bad value for ai_flags")
        name = None if flags & socket.NI_NUMERICHOST else self.addr_to_host(addr)
        if name is None:
            if flags & socket.NI_NAMEREQD:
                raise _no_name()
            name = addr
        return name, _service_name(port, flags)

    def gethostbyname(self, host: str) -> str:
        if host == "":
            return "0.0.0.0"  # the socket module's INADDR_ANY
        return self.host_to_addr(host)

    def gethostbyname_ex(self, host: str) -> tuple[str, list[str], list[str]]:
        addr = self.host_to_addr(host)
        return self.addr_to_host(addr) or host, [], [addr]

    def gethostbyaddr(self, addr: str) -> tuple[str, list[str], list[str]]:
        try:
            addr = self.host_to_addr(addr)
        except socket.gaierror:
            raise socket.herror(1, "Unknown host") from None
        name = self.addr_to_host(addr)
        if name is None:
            raise socket.herror(1, "Unknown host")
        return name, [], [addr]

    def getfqdn(self, name: str = "") -> str:
        if not name:
            return "localhost"
        try:
            return self.gethostbyaddr(name)[0]
        except socket.herror:
            return name


def _is_numeric(host: str) -> bool:
    """A plain dotted quad (no leading zeros, which inet_aton reads as octal)."""
    parts = host.split(".")
    return len(parts) == 4 and all(
        p.isdigit() and int(p) <= 255 and (p == "0" or p[0] != "0") for p in parts
    )


def _numeric_v4(host: str) -> str | None:
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


def _is_localhost(host: str) -> bool:
    return host.lower().rstrip(".") == "localhost"


# The socket module's functions a world answers; the reverse lookups
# (gethostbyaddr, getfqdn, socket.getnameinfo) stay refused (docs/sockets.md).
RESOLVED = ("getaddrinfo", "gethostbyname", "gethostbyname_ex")


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


# ---- segments -------------------------------------------------------------


class _Segment(_core.Segment):
    """One TCP segment on the wire (its repr is what world.log shows):
    _Segment(kind, src, dst, seq, data), tries 0, not acked. Its fields are
    in C (ext/stream.c), which makes the data segments of a write."""

    # src_addr and to: a datagram's addresses (UDP and ICMP only).
    __slots__ = ()
    src: Endpoint  # or a _Kernel, for a reset no endpoint sends
    dst: Endpoint | None

    def __repr__(self) -> str:
        s = self.src
        if self.kind in (UDP, ICMP):
            what = f"len={len(self.data)}" if self.kind == UDP else "ICMP port-unreachable"
            return f"udp {_ep(self.src_addr)}>{_ep(self.to)} {what}"
        if self.kind == SYN:
            there = s.remote
        else:
            assert self.dst is not None
            there = self.dst.local
        extra = f" seq={self.seq} len={len(self.data)}" if self.kind == DATA else ""
        proto = "unix" if there[0] == UNIX else "tcp"
        return f"{proto} {_ep(s.local)}>{_ep(there)} {_KIND_TEXT[self.kind]}{extra}"


# ---- the stack --------------------------------------------------------------


class Stack:
    """The world's TCP: listeners, endpoints, ports and counters."""

    _c: Any = None  # what its endpoints' C state shares (_tcp_stack)

    def __init__(self, world: Any) -> None:
        self.world = world
        self.loop = world._loop
        self.wire = world._wire
        self.names = Names(world)
        self.one_host = self.names.one_host  # wrap mode: loopback only
        # (node, port) -> listeners of that node on that port; an AF_UNIX
        # listener's port is its path.
        self.listeners: dict[tuple[int, int | str], list[Listener]] = {}
        # AF_UNIX paths a closed server left behind (asyncio before 3.13
        # leaves the file): connecting there is ECONNREFUSED, not ENOENT.
        self.unix_stale: set[tuple[int, str]] = set()
        self.pairs = 0  # socketpair() calls, to name each in the log
        # Ports per incarnation (token): a restarted node boots with none
        # in use, and its dead incarnation's sockets hold nothing.
        self.next_port: dict[int, int] = {}
        self.used: dict[int, dict[int, int]] = {}  # token -> port -> users
        self.stats = dict.fromkeys(
            (
                "tcp_connects",
                "tcp_accepts",
                "tcp_refused",
                "tcp_resets",
                "tcp_timeouts",
                "tcp_closes",
                "tcp_segments",
                "tcp_retransmits",
                "tcp_probes",
                "tcp_bytes",
            ),
            0,
        )
        self.udp: Any = None  # askew/_udp.py's Udp, once a run opens a datagram endpoint
        self.wire.set_segment_handler(_Segment, self._arrive)

    def close(self) -> None:
        self.wire.set_segment_handler(None, None)
        self.listeners.clear()
        if self.udp is not None:
            self.udp.bound.clear()

    # -- identity ----------------------------------------------------------

    def caller(self, call: str) -> int:
        """The running node's token (wrap mode's one host's); a refusal
        from the test body."""
        if self.one_host:
            return int(self.world._slots[0].token)
        token = _node_var.get(None)
        if token is None:
            from ._loop import _raise_refusal

            _raise_refusal(
                f"{call} from the test body: only nodes have addresses. Spawn a node "
                "(world.spawn) and open sockets in its code."
            )
        return int(token)

    def token_of(self, node: int) -> int:
        return int(self.world._slots[node].token)

    def log(self, kind: int, node: int, text: str) -> None:
        if not self.world._ended:  # a close in a task's cleanup after the run
            self.world.log._emit(kind, node, text)

    # -- ports ----------------------------------------------------------------

    def ephemeral(self, token: int) -> int:
        used = self.used.setdefault(token, {})
        port = self.next_port.get(token, EPHEMERAL_LO)
        for _ in range(EPHEMERAL_HI - EPHEMERAL_LO + 1):
            nxt = port + 1 if port < EPHEMERAL_HI else EPHEMERAL_LO
            if not used.get(port):
                self.next_port[token] = nxt
                return port
            port = nxt
        raise OSError(errno.EADDRNOTAVAIL, "Cannot assign requested address")

    def take_port(self, token: int, port: int) -> None:
        used = self.used.setdefault(token, {})
        used[port] = used.get(port, 0) + 1

    def free_port(self, token: int, port: int) -> None:
        used = self.used.get(token)
        if used and used.get(port):
            used[port] -= 1
            if not used[port]:
                del used[port]

    # -- segments -------------------------------------------------------------

    def send(self, seg: _Segment, dst_node: int) -> None:
        """Put seg on the wire from its source's incarnation; a drop at send
        comes back as a retransmission at once (no draw is skipped)."""
        src = seg.src
        self.stats["tcp_segments"] += 1
        outcome = self.wire.send_segment(src.token, dst_node, seg)
        if outcome > _DUPLICATED:  # dropped at send: lost or partitioned
            self._dropped(seg)

    def _arrive(self, seg: _Segment, outcome: int) -> None:
        """The C network's callback for every segment that came due."""
        kind = seg.kind
        if kind == UDP or kind == ICMP:
            self.udp.arrive(seg, outcome, outcome == _DELIVERED)
            return
        if outcome != _DELIVERED:
            self._dropped(seg)
            return
        dst = seg.dst
        if kind == DATA and dst is not None and not dst.dead and dst.alive():
            # Data for a live socket; the next bytes in order for a socket
            # still open never come here: ext/stream.c takes them.
            seg.acked = True
            dst._heard()  # and the sender hears the ACK (keep-alive)
            seg.src._heard()
            dst._receive(seg)
            return
        if kind == RST:
            if dst is not None and dst.alive():
                dst._reset(seg.src)
            return
        if kind == PROBE:
            if dst is not None and dst.alive() and not dst.dead:
                seg.src._heard()  # the peer's ACK, taken as instant
            else:
                self._reset_back(seg)  # nobody knows the connection: a RST
            return
        if kind in (SYN, SYNACK, DATA, FIN):
            seg.acked = True  # the ACK is taken as instant: see docs/sockets.md
        if kind == SYN:
            self._syn(seg)
            return
        assert dst is not None
        if not dst.alive() or dst.dead:
            # The kernel that owned dst restarted or the socket is gone:
            # nothing knows this connection, so it answers with a reset.
            if kind != RST:
                self._reset_back(seg)
            return
        dst._heard()  # and the sender hears the ACK (keep-alive)
        seg.src._heard()
        if kind == SYNACK:
            dst._established(seg.src)
        else:
            dst._receive(seg)

    def _reset_back(self, seg: _Segment) -> None:
        """Answer seg with a RST from its destination node's current kernel."""
        dst_node = seg.dst.node if seg.dst is not None else seg.src.remote_node
        token = self.token_of(dst_node)
        if token < 0:
            return
        rst = _Segment(RST, _Kernel(self, dst_node, token, seg), seg.src, 0, b"")
        self.stats["tcp_segments"] += 1
        self.wire.send_segment(token, seg.src.node, rst)

    def _dropped(self, seg: _Segment) -> None:
        if seg.acked or seg.kind == RST or seg.kind == PROBE:
            return  # the other copy made it, or nobody retransmits it
        src = seg.src
        if src.dead or not src.alive():
            return
        syn = seg.kind in (SYN, SYNACK)
        base = SYN_RTO_NS if syn else RTO_MIN_NS
        rto = min(RTO_MAX_NS, base << min(seg.tries, 20))
        rto += self.wire.draw(0, rto >> 3)  # jitter: the seed picks within 1/8
        seg.tries += 1
        # After the last retransmission, one more timeout and the kernel
        # gives up: 1+2+...+64 = 127 s for a SYN, ~924.6 s for data (Linux).
        last = seg.tries > (RETRIES_SYN if syn else RETRIES_DATA)
        if not syn:
            # Data unacknowledged since its first loss: TCP_USER_TIMEOUT,
            # if set, ends the wait at since + timeout (Linux clamps the
            # retransmission timer to what is left of it).
            now = self.loop._local_ns(src.node)  # the sender's clock, as its timers
            since = src.unacked.setdefault(seg, now)
            user_timeout = src._option(_TCP_USER_TIMEOUT) * 1_000_000
            if user_timeout and now + rto >= since + user_timeout:
                rto, last = max(0, since + user_timeout - now), True
        self.loop.call_later(rto / 1e9, self._retransmit, seg, last, context=src.ctx)

    def _retransmit(self, seg: _Segment, give_up: bool) -> None:
        seg.src._lost_unacked()  # forget the lost data that got through since
        if seg.acked or not seg.src.alive():
            return
        if give_up:
            seg.src._timed_out(seg)
            return
        if seg.kind == SYN and seg.src.state != "syn":
            return  # the connect gave up
        self.stats["tcp_retransmits"] += 1
        self.send(seg, seg.src.remote_node)

    def _syn(self, seg: _Segment) -> None:
        client = seg.src
        node, port = client.remote_node, client.remote[1]
        if client.peer is not None:
            return  # a retransmitted SYN; the SYN-ACK is on its way
        listener = self.find_listener(node, client.remote[0], port)
        if listener is None:
            # Wrap mode: a real socket of the process listening there is
            # named, not answered with a reset (askew/_realsock.py).
            real = _realsock.refusal(client.remote) if self.one_host else None
            if real is not None:
                _core._note_refusal(real)
                client._connect_failed(real)
                return
            self.stats["tcp_refused"] += 1
            self.log(_KIND_REFUSE, node, f"refuse {_ep(client.local)} -> {_ep(client.remote)}")
            self._reset_back(seg)
            return
        if len(listener.pending) >= listener.backlog:
            seg.acked = False  # a full accept queue drops the SYN
            self._dropped(seg)
            return
        server = Endpoint(
            self, listener.token, listener.ctx, client.remote, client.local, client.node
        )
        server.peer = client
        server.state = "open"
        server._extra["socket"]._opts.update(listener.sock._opts)  # accept inherits them
        server._timers_changed()
        client.peer = server
        listener.pending.append(server)
        self.take_port(listener.token, port)
        server.port_held = True
        self.send(_Segment(SYNACK, server, client, 0, b""), client.node)
        listener.kick()

    def find_listener(self, node: int, addr: str, port: int | str) -> Listener | None:
        found = self.listeners.get((node, port))
        if not found:
            return None
        token = self.token_of(node)
        live = [ls for ls in found if ls.token == token and ls.open]
        if len(live) != len(found):
            found[:] = live
        for ls in live:
            if _covers(ls.host, addr):
                return ls
        return None


def _tcp_stack(stack: Stack) -> Any:
    """What the C state of stack's endpoints shares: made on first use."""
    if stack._c is None:
        stack._c = _core.StreamStack(
            stack.wire,
            stack,
            stack.stats,
            _Segment,
            asyncio.BufferedProtocol,
            WINDOW,
            SEGMENT_MAX,
            DATA,
        )
    return stack._c


def _in_c(name: str) -> Any:
    """An Endpoint attribute kept in its C state, self._s (ext/stream.c)."""

    def set_field(self: Endpoint, value: Any) -> None:
        setattr(self._s, name, value)

    return property(operator.attrgetter("_s." + name), set_field)


def _ep(a: tuple[str, Any]) -> str:
    if a[0] == UNIX:
        return f"unix:{a[1]}".replace("\0", "@")  # an abstract name as ss(8) shows it
    return f"[{a[0]}]:{a[1]}" if ":" in a[0] else f"{a[0]}:{a[1]}"


class _Kernel:
    """The sender of a reset that no endpoint sends: a node's kernel."""

    __slots__ = ("ctx", "dead", "local", "node", "remote", "remote_node", "stack", "state", "token")

    def __init__(self, stack: Stack, node: int, token: int, seg: _Segment) -> None:
        self.stack = stack
        self.node = node
        self.token = token
        self.local = seg.dst.local if seg.dst is not None else seg.src.remote
        self.remote = seg.src.local
        self.remote_node = seg.src.node
        self.ctx = None
        self.dead = True
        self.state = "closed"


class _Owned:
    """What every socket knows: its stack, the incarnation that owns it
    (token and node id) and the context its callbacks run in."""

    def __init__(self, stack: Stack, token: int, ctx: Any) -> None:
        self.stack = stack
        self.token = token
        self.node = token >> _core.NODE_TOKEN_SHIFT
        self.ctx = ctx


# ---- sockets as code sees them ----------------------------------------------


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
        self.family = socket.AddressFamily(_family(local[0]))

    def fileno(self) -> int:
        return -1

    def getsockname(self) -> Any:
        return _sockaddr(self._local)

    def getpeername(self) -> Any:
        if self._remote is None:
            raise OSError(errno.ENOTCONN, "Transport endpoint is not connected")
        return _sockaddr(self._remote)

    _owner: Endpoint | None = None  # the connection whose timers read these options

    def setsockopt(self, level: int, name: int, value: Any, *rest: Any) -> None:
        key = (level, name)
        if level == socket.IPPROTO_TCP and self.family == socket.AF_UNIX:
            raise OSError(errno.EOPNOTSUPP, "Operation not supported")  # as Linux
        bounds = _TIMER_OPTS.get(key)
        if bounds is not None:
            value = _timer_option(value, bounds, key == _KEEPALIVE)
        before = self._opts.get(key)
        self._opts[key] = value
        if bounds is None or self._owner is None:
            return
        if key != _KEEPALIVE or bool(before) != bool(value):  # Linux: on a change only
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


# ---- endpoints (transports) ----------------------------------------------------


class Endpoint(_Owned, asyncio.Transport):
    """One end of a connection: the kernel's socket and asyncio's transport."""

    # TLS and sendfile (askew/_tls.py): asyncio's start_tls and sendfile
    # read these; a simulated socket's "native" sendfile is the block copy.
    _start_tls_compatible = True
    _sendfile_compatible = asyncio.constants._SendfileMode.TRY_NATIVE

    def __init__(
        self,
        stack: Stack,
        token: int,
        ctx: Any,
        local: tuple[str, Any],
        remote: tuple[str, Any],
        remote_node: int,
    ) -> None:
        asyncio.Transport.__init__(self)
        _Owned.__init__(self, stack, token, ctx)
        self.loop = stack.loop
        self.slot: _Slot = stack.world._slots[self.node]  # its token is the live incarnation's
        self.local = local
        self.remote = remote
        self.remote_node = remote_node
        self.buf = bytearray()  # written, not yet taken by the window
        self.ooo: dict[int, _Segment] = {}
        self.rx: list[bytes] = []  # arrived in order, not yet read: chunks
        # The hot state, in C (ext/stream.c) and read through the properties
        # below: peer None; snd_next, inflight, rcv_next, conn_lost 0;
        # reading True; dead (the socket is gone: arriving data gets a RST),
        # closing, eof_wanted, rx_scheduled, rx_eof False.
        self._s = _core.Stream(
            _tcp_stack(stack), self, self.slot, token, remote_node, ctx, self.rx, self.buf, self.ooo
        )
        self.server: Server | None = None
        self.protocol: Any = None
        self.state = "syn"
        self.waiter: asyncio.Future[None] | None = None
        # send side
        self.fin_sent = False
        self.high = HIGH_WATER_DEFAULT
        self.low = HIGH_WATER_DEFAULT // 4
        self.writing_paused = False
        self.drainers: list[asyncio.Future[None]] | None = None  # sendfile's waits
        # keep-alive and TCP_USER_TIMEOUT (tcp(7))
        self.unacked: dict[_Segment, int] = {}  # data lost at least once -> ns since
        self.rx_ns = self.loop._local_ns(self.node)  # its own node's clock (keep-alive)
        self.probes = 0  # keep-alive probes unanswered
        self.ka_timer: asyncio.TimerHandle | None = None
        # receive side
        self.eof_delivered = False
        self.port_held = False
        # asyncio.BaseTransport.get_extra_info reads _extra (not overridden,
        # so a test that patches asyncio.Transport.get_extra_info reaches it).
        self.extra = self._extra = {
            "peername": _sockaddr(remote),
            "sockname": _sockaddr(local),
            "socket": SimSocket(local, remote),
        }
        self._extra["socket"]._owner = self

    peer: Endpoint | None = _in_c("peer")
    dead: bool = _in_c("dead")
    closing: bool = _in_c("closing")
    reading: bool = _in_c("reading")
    eof_wanted: bool = _in_c("eof_wanted")
    rx_scheduled: bool = _in_c("rx_scheduled")
    rx_eof: bool = _in_c("rx_eof")
    snd_next: int = _in_c("snd_next")
    inflight: int = _in_c("inflight")
    rcv_next: int = _in_c("rcv_next")
    conn_lost: int = _in_c("conn_lost")
    rx_ns: int = _in_c("rx_ns")  # when a segment last came from the peer (keep-alive)

    def __repr__(self) -> str:
        return f"<askew TCP {_ep(self.local)} -> {_ep(self.remote)} {self.state}>"

    def alive(self) -> bool:
        live: int = self.slot.token  # the live incarnation's
        return live == self.token

    # -- connection setup ---------------------------------------------------

    def _established(self, server: Endpoint) -> None:
        if self.state != "syn":
            if self.state == "closed" and server.state == "open":
                self.stack._reset_back(_Segment(DATA, server, self, 0, b""))
            return
        self.peer = server
        self.state = "open"
        self._timers_changed()
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            self.loop.call_soon(_set_result, waiter, context=self.ctx)

    def _connect_failed(self, exc: BaseException) -> None:
        self.state = "closed"
        self.dead = True
        self._release()
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            self.loop.call_soon(_set_exception, waiter, exc, context=self.ctx)

    def _timed_out(self, seg: _Segment | None) -> None:
        """The kernel gave up: retransmissions, the user timeout or
        keep-alive (seg None) ran out."""
        self.stack.stats["tcp_timeouts"] += 1
        exc = TimeoutError(errno.ETIMEDOUT, "Connection timed out")
        if self.state == "syn":
            self._connect_failed(exc)
            return
        what = "timeout" if seg is not None else "keep-alive timeout"
        self.stack.log(_KIND_RESET, self.node, f"{what} {self}")
        if seg is None and self.peer is not None and not self.dead:
            # Linux's keep-alive timer resets the connection as it gives up
            # (a retransmission timeout sends nothing).
            self._send_rst()
        self._lose(exc)

    def _send_rst(self) -> None:
        """A RST to the peer, once: nobody retransmits a reset."""
        self.stack.stats["tcp_segments"] += 1
        self.stack.wire.send_segment(
            self.token, self.remote_node, _Segment(RST, self, self.peer, 0, b"")
        )

    # -- keep-alive and the user timeout (tcp(7)) ------------------------------

    def _option(self, name: int, level: int = socket.IPPROTO_TCP) -> int:
        """A timer option's value on this connection's socket object (0 when unset)."""
        opts = getattr(self._extra.get("socket"), "_opts", None)
        return int(opts.get((level, name), 0)) if opts else 0

    def _seconds(self, name: int, default: int) -> int:
        """A TCP_KEEP* option in ns, or its default when unset."""
        return (self._option(name) or default) * 1_000_000_000

    def _timers_changed(self, key: tuple[int, int] = _KEEPALIVE) -> None:
        """A timer option was set (key), or the connection opened with its
        options set (as SO_KEEPALIVE): as Linux, turning keep-alive on, or
        opening with it on, starts the idle time from now; a new
        TCP_KEEPIDLE counts from the last word from the peer; the interval,
        count and user timeout take effect at the timer's next turn."""
        if key not in (_KEEPALIVE, (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)):
            return
        self._timers_stop()
        if self.state != "open" or self.dead or self.closing or self.local[0] == UNIX:
            return  # a closed socket, or AF_UNIX (no TCP under it), sends no probe
        if not self._option(socket.SO_KEEPALIVE, socket.SOL_SOCKET):
            return
        idle = self._seconds(socket.TCP_KEEPIDLE, KEEPIDLE_DEFAULT)
        if key != _KEEPALIVE:
            idle = max(0, idle - (self.loop._local_ns(self.node) - self.rx_ns))
        self._keepalive_in(idle)

    def _timers_stop(self) -> None:
        if self.ka_timer is not None:
            self.ka_timer.cancel()
            self.ka_timer = None

    def _keepalive_in(self, ns: int) -> None:
        self.ka_timer = self.loop.call_later(ns / 1e9, self._keepalive, context=self.ctx)

    def _keepalive(self) -> None:
        """Linux's keep-alive timer: after the idle time with nothing
        heard from the peer, a probe each interval; the count unanswered (or, if set,
        TCP_USER_TIMEOUT since the last word from the peer) ends the
        connection with ETIMEDOUT. Data in flight or waiting for the window
        is the retransmission timer's business, not keep-alive's."""
        self.ka_timer = None
        if self.state != "open" or self.dead or not self.alive():
            return
        idle = self._seconds(socket.TCP_KEEPIDLE, KEEPIDLE_DEFAULT)
        if self._lost_unacked() or self.buf:
            self._keepalive_in(idle)
            return
        elapsed = self.loop._local_ns(self.node) - self.rx_ns
        if elapsed < idle:
            self.probes = 0  # heard since the last probe (C stamps rx_ns alone)
            self._keepalive_in(idle - elapsed)
            return
        user_timeout = self._option(_TCP_USER_TIMEOUT) * 1_000_000
        count = self._option(socket.TCP_KEEPCNT) or KEEPCNT_DEFAULT
        if (self.probes and user_timeout and elapsed >= user_timeout) or (
            not user_timeout and self.probes >= count
        ):
            self._timed_out(None)
            return
        self.probes += 1
        self.stack.stats["tcp_probes"] += 1
        self.stack.send(_Segment(PROBE, self, self.peer, self.snd_next, b""), self.remote_node)
        self._keepalive_in(self._seconds(socket.TCP_KEEPINTVL, KEEPINTVL_DEFAULT))

    def _lost_unacked(self) -> int:
        """How many segments lost at least once are still unacknowledged;
        the ones acknowledged since are forgotten."""
        unacked = self.unacked
        for seg in [s for s in unacked if s.acked]:
            del unacked[seg]
        return len(unacked)

    def _heard(self) -> None:
        """A segment or an ACK came from the peer: keep-alive starts over."""
        self.rx_ns = self.loop._local_ns(self.node)
        self.probes = 0

    def _reset(self, by: Any) -> None:
        if self.state == "syn":
            refused = f"Connect call failed {self.remote!r}"
            self._connect_failed(ConnectionRefusedError(errno.ECONNREFUSED, refused))
            return
        if self.dead:
            return
        self.stack.stats["tcp_resets"] += 1
        self.stack.log(_KIND_RESET, self.node, f"reset {_ep(self.local)} <- {_ep(self.remote)}")
        if self.rx_eof:
            # After the peer's FIN (CLOSE_WAIT), Linux reports a reset as
            # EPIPE: the peer had closed, and this end wrote to it.
            self._lose(BrokenPipeError(errno.EPIPE, "Broken pipe"))
            return
        self._lose(ConnectionResetError(errno.ECONNRESET, "Connection reset by peer"))

    def _lose(self, exc: BaseException | None) -> None:
        """The connection is over for the kernel: no more segments either way."""
        self.dead = True
        self._timers_stop()
        self.unacked.clear()
        self.state = "closed"
        self.buf.clear()
        self.ooo.clear()
        if self.protocol is not None and self.conn_lost == 0:
            self.conn_lost += 1
            self.closing = True
            self.loop.call_soon(self._call_connection_lost, exc, context=self.ctx)
        elif self.protocol is None:
            self._release()

    def _release(self) -> None:
        if self.port_held:
            self.port_held = False
            self.stack.free_port(self.token, self.local[1])

    # -- sending ----------------------------------------------------------------

    def _pump(self) -> None:
        """Hand buffered bytes to the wire while the window allows."""
        s = self._s
        if s.dead or s.peer is None:
            return
        buf = self.buf
        while buf and s.inflight < WINDOW:
            take = min(len(buf), WINDOW - s.inflight)
            if take == len(buf):
                data = bytes(buf)
                buf.clear()
            else:
                with memoryview(buf) as view:
                    data = view[:take].tobytes()
                del buf[:take]
            s.put(data)  # segments whose sizes the seed draws (ext/stream.c)
        if not self.buf:
            if self.eof_wanted and not self.fin_sent:
                self._send_fin()
            if self.closing and self.conn_lost == 0 and self.protocol is not None:
                self.conn_lost += 1
                self.loop.call_soon(self._call_connection_lost, None, context=self.ctx)
        if self.writing_paused and len(self.buf) <= self.low:
            self.writing_paused = False
            self.loop.call_soon(self._resume_writing, context=self.ctx)

    def _send_fin(self) -> None:
        self.fin_sent = True
        if self.peer is not None and not self.dead:
            self.stack.send(_Segment(FIN, self, self.peer, self.snd_next, b""), self.remote_node)

    def _wake_drainers(self) -> None:
        drainers, self.drainers = self.drainers, None
        for fut in drainers or ():
            _set_result(fut)

    async def drained(self) -> None:
        """Until the write buffer is below the low-water mark (what
        asyncio's sendfile fallback waits for); ConnectionError once the
        connection is lost."""
        while self.writing_paused and not self.conn_lost:
            fut = self.loop.create_future()
            if self.drainers is None:
                self.drainers = []
            self.drainers.append(fut)
            await fut
        if self.conn_lost:
            raise ConnectionError("Connection closed by peer")

    def _resume_writing(self) -> None:
        if self.drainers:
            self._wake_drainers()
        if self.protocol is not None and not self.writing_paused:
            self._call("protocol.resume_writing() failed", False, self.protocol.resume_writing)

    def _call(self, message: str, fatal: bool, fn: Any, *args: Any) -> tuple[bool, Any]:
        """fn(*args), a protocol method: (True, its result), or (False, None)
        after its exception went to the loop's handler (and, if fatal,
        the connection was aborted), as asyncio's transports do."""
        try:
            return True, fn(*args)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:
            if fatal:
                self._fatal(exc, message)
            else:
                self._protocol_error(exc, message)
            return False, None

    def _protocol_error(self, exc: BaseException, message: str) -> None:
        self.loop.call_exception_handler(
            {"message": message, "exception": exc, "transport": self, "protocol": self.protocol}
        )

    def write(self, data: Any) -> None:
        # Bytes the window takes whole, with nothing buffered, go straight
        # to the wire in C; the rest comes back to _write.
        self._s.write(data)

    def _write(self, data: Any) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(
                f"data argument must be a bytes-like object, not {type(data).__name__!r}"
            )
        if self.eof_wanted:
            raise RuntimeError("Cannot call write() after write_eof()")
        if not data:
            return
        if self.conn_lost:
            if self.conn_lost >= LOG_WRITES_AFTER_LOST:
                _asyncio_logger.warning("socket.send() raised exception.")
            self.conn_lost += 1
            return
        self.buf += data
        self._pump()
        if not self.writing_paused and len(self.buf) > self.high:
            self.writing_paused = True
            self._call("protocol.pause_writing() failed", False, self.protocol.pause_writing)

    def writelines(self, list_of_data: Any) -> None:
        self.write(b"".join(list_of_data))

    def write_eof(self) -> None:
        if self.closing or self.eof_wanted:
            return
        self.eof_wanted = True
        if not self.buf and not self.dead:
            self._send_fin()

    def can_write_eof(self) -> bool:
        return True

    def get_write_buffer_size(self) -> int:
        return len(self.buf)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        return (self.low, self.high)

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        if high is None:
            high = 64 * 1024 if low is None else 4 * low
        if low is None:
            low = high // 4
        if not high >= low >= 0:
            raise ValueError(f"high ({high!r}) must be >= low ({low!r}) must be >= 0")
        self.high, self.low = high, low
        if not self.writing_paused and len(self.buf) > self.high:
            self.writing_paused = True
            self.protocol.pause_writing()

    # -- receiving ------------------------------------------------------------------

    def _receive(self, seg: _Segment) -> None:
        seq = seg.seq
        if seq < self.rcv_next or (seg.kind == FIN and self.rx_eof):
            return  # a duplicate
        if seq > self.rcv_next:
            self.ooo.setdefault(seq, seg)
            return
        self._accept_segment(seg)
        while self.rcv_next in self.ooo:
            self._accept_segment(self.ooo.pop(self.rcv_next))

    def _accept_segment(self, seg: _Segment) -> None:
        s = self._s
        if seg.kind == FIN:
            s.rx_eof = True
            s.wake()
        elif s.closing and s.conn_lost:
            # The socket is closed: data has nobody to read it.
            s.rcv_next += len(seg.data)
            self.stack._reset_back(seg)
            self._lose(None)
        else:
            s.accept(seg.data)  # counted, queued, the reader woken

    def _deliver_rx(self) -> None:
        """What a readable socket gives the protocol: all that has arrived
        (up to the buffer a BufferedProtocol offers). The reader C
        schedules serves a plain Protocol itself and calls this for the
        rest (ext/stream.c)."""
        s = self._s
        s.rx_scheduled = False
        if self.protocol is None or s.conn_lost or not s.reading:
            return
        if self.rx:
            if isinstance(self.protocol, asyncio.BufferedProtocol):
                n = self._fill_buffer()
                if s.conn_lost:
                    return
            else:
                n = s.take(self.protocol)  # data_received(all of it)
                if n < 0:
                    return  # it raised: the connection was aborted
            if n and self.rx and s.reading and not s.rx_scheduled:
                s.wake()
                return
        self._deliver_eof()

    def _deliver_eof(self) -> None:
        if self.rx_eof and not self.rx and not self.eof_delivered and self.reading:
            self.eof_delivered = True
            ok, keep_open = self._call(
                "Fatal error: protocol.eof_received() call failed.",
                True,
                self.protocol.eof_received,
            )
            if not ok:
                return
            if not keep_open:
                self.close()

    def _fill_buffer(self) -> int:
        ok, buf = self._call(
            "Fatal error: protocol.get_buffer() call failed.", True, _buffer_of, self.protocol
        )
        if not ok:
            return 0
        data = b"".join(self.rx)
        n = min(len(buf), len(data))
        memoryview(buf)[:n] = data[:n]
        self.rx[:] = [data[n:]] if n < len(data) else []
        self._s.consumed(n)
        self._call(
            "Fatal error: protocol.buffer_updated() call failed.",
            True,
            self.protocol.buffer_updated,
            n,
        )
        return n

    def _fatal(self, exc: BaseException, message: str) -> None:
        # As asyncio's _fatal_error: the handler hears it, then the
        # protocol's connection_lost gets it.
        self._protocol_error(exc, message)
        self._abort(exc)

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        if self.reading or self.closing:
            return
        self.reading = True
        if (self.rx or self.rx_eof) and not self.rx_scheduled:
            self.rx_scheduled = True
            self.loop.call_soon(self._deliver_rx, context=self.ctx)

    def is_reading(self) -> bool:
        return self.reading and not self.closing

    # -- closing -------------------------------------------------------------------

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        if self.closing:
            return
        if self.resets(self.extra.get("socket")):
            self._send_reset(None)  # as Linux: bytes unread, or SO_LINGER 0
            return
        self.closing = True
        self.reading = False
        self.stack.stats["tcp_closes"] += 1
        self.stack.log(_KIND_CLOSE, self.node, f"close {_ep(self.local)} -> {_ep(self.remote)}")
        if not self.buf:
            if not self.fin_sent and not self.dead:
                self._send_fin()
            self.conn_lost += 1
            self.loop.call_soon(self._call_connection_lost, None, context=self.ctx)
        else:
            self.eof_wanted = True

    def abort(self) -> None:
        self._abort(None)

    def _abort(self, exc: BaseException | None) -> None:
        """abort(), or a fatal protocol error: connection_lost(exc). asyncio
        drops the buffer and closes the socket, which Linux ends with a RST
        only when received bytes are unread or SO_LINGER is 0; else a FIN."""
        if self.conn_lost:
            return  # closed already: asyncio's _force_close does nothing then
        if not self.resets(self.extra.get("socket")):
            self._force_close(exc)
            return
        self._send_reset(exc)

    def resets(self, sock: Any) -> bool:
        """Whether closing now resets the connection rather than ending it:
        bytes have arrived that nobody read, or the socket object (`sock`)
        has SO_LINGER on with a zero timeout."""
        if self.rx:
            return True
        opts = getattr(sock, "_opts", None)
        linger = opts.get((socket.SOL_SOCKET, socket.SO_LINGER)) if opts else None
        if isinstance(linger, (bytes, bytearray)) and len(linger) == 8:
            on, seconds = struct.unpack("ii", linger)
            return bool(on) and seconds == 0
        return False

    def _send_reset(self, exc: BaseException | None) -> None:
        """Close with a RST: the peer gets ConnectionResetError."""
        already_lost = self.conn_lost
        self.closing = True
        self.reading = False
        if not self.dead and self.peer is not None and self.state == "open":
            self._send_rst()
        self.stack.log(_KIND_RESET, self.node, f"abort {_ep(self.local)} -> {_ep(self.remote)}")
        self.dead = True
        self.state = "closed"
        self.buf.clear()
        self.rx.clear()  # what nobody read is gone with the socket
        if not already_lost:
            self.conn_lost += 1
            self.loop.call_soon(self._call_connection_lost, exc, context=self.ctx)

    def _force_close(self, exc: BaseException | None) -> None:
        """TLS (askew/_tls.py): asyncio's SSLProtocol ends a connection on a
        fatal error (handshake failed or timed out, shutdown timed out) with
        this, as on its selector transport: the buffer is dropped, the socket
        closed (a FIN) and connection_lost(exc) called."""
        if self.conn_lost:
            return
        self.buf.clear()
        if not self.closing:
            self.closing = True
            self.reading = False
            self.stack.stats["tcp_closes"] += 1
            self.stack.log(_KIND_CLOSE, self.node, f"close {_ep(self.local)} -> {_ep(self.remote)}")
        if not self.fin_sent and not self.dead:
            self._send_fin()
        self.conn_lost += 1
        self.loop.call_soon(self._call_connection_lost, exc, context=self.ctx)

    def _call_connection_lost(self, exc: BaseException | None) -> None:
        if self.drainers:
            self._wake_drainers()
        protocol = self.protocol
        self._timers_stop()  # a closed socket sends no keep-alive
        sock = self._extra.get("socket")
        if sock is not None and getattr(sock, "_owner", None) is self:
            sock._owner = None
        try:
            if protocol is not None:
                protocol.connection_lost(exc)
        finally:
            # As asyncio's transports, let go of the protocol: the world log
            # keeps recent segments, and through them their endpoints (a TLS
            # protocol holds a 256 KiB buffer; askew/_tls.py).
            self.protocol = None
            self._release()
            server = self.server
            if server is not None:
                self.server = None
                server._detach(self)

    def set_protocol(self, protocol: Any) -> None:
        self.protocol = protocol

    def get_protocol(self) -> Any:
        return self.protocol


def _buffer_of(protocol: Any) -> Any:
    buf = protocol.get_buffer(-1)
    if not len(buf):
        raise RuntimeError("get_buffer() returned an empty buffer")
    return buf


def _start(ep: Endpoint, protocol_factory: Any) -> None:
    """An accepted connection gets its protocol."""
    protocol = protocol_factory()
    ep.protocol = protocol
    protocol.connection_made(ep)


# Before CPython 3.12.2 (and in 3.11), StreamReaderProtocol reads
# task.exception() of a cancelled handler task in its done callback, which
# raises CancelledError into the loop's exception handler (later versions
# check task.cancelled() first). asyncio.run logs it at shutdown; askew fails
# a run on it, and a run's end cancels every pending handler. Where the
# callback lacks the check, it is replaced by the later behaviour: found by
# reading the callback's code, not the version number.
def _streams_callback_checks_cancelled() -> bool:
    made = asyncio.StreamReaderProtocol.connection_made.__code__
    for const in made.co_consts:
        if getattr(const, "co_name", None) == "callback":
            return "cancelled" in const.co_names
    return True  # no such callback: nothing to mend


_STREAMS_CALLBACK_RAISES_ON_CANCEL = not _streams_callback_checks_cancelled()
_STREAMS_CALLBACK = "StreamReaderProtocol.connection_made.<locals>.callback"


def _mend_streams_callback(ep: Endpoint) -> None:
    task = getattr(ep.protocol, "_task", None)
    if not isinstance(task, asyncio.Task):
        return
    for cb, _ctx in list(getattr(task, "_callbacks", None) or ()):
        if getattr(cb, "__qualname__", "") == _STREAMS_CALLBACK:
            task.remove_done_callback(cb)
            task.add_done_callback(functools.partial(_streams_callback, cb, ep))


def _streams_callback(original: Any, ep: Endpoint, task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        ep.close()
        return
    original(task)


def _set_result(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _set_exception(fut: asyncio.Future[None], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


# ---- servers -----------------------------------------------------------------------


class Listener(_Owned):
    """A listening socket: one node, one address (or all), one port."""

    def __init__(self, server: Server, token: int, ctx: Any, host: str, port: int | str) -> None:
        self.server = server
        _Owned.__init__(self, server.stack, token, ctx)
        self.host = host
        self.port = port
        self.backlog = server.backlog
        self.holds_port = False
        self.pending: list[Endpoint] = []
        self.open = True
        self.kicked = False
        self.sock = SimSocket((host, port), None)

    def kick(self) -> None:
        if self.server.serving and not self.kicked and self.pending:
            self.kicked = True
            self.stack.loop.call_soon(self.accept, context=self.ctx)

    def accept(self) -> None:
        """The accept loop: each pending connection gets its protocol."""
        self.kicked = False
        server = self.server
        while self.pending and server.serving:
            ep = self.pending.pop(0)
            if ep.dead:
                continue
            self.stack.stats["tcp_accepts"] += 1
            self.stack.log(_KIND_ACCEPT, self.node, f"accept {_ep(ep.local)} <- {_ep(ep.remote)}")
            server._attach(ep)
            ep.server = server
            if not ep._call(
                "Error on transport creation for incoming connection",
                True,
                _start,
                ep,
                server.protocol_factory,
            )[0]:
                continue
            if _STREAMS_CALLBACK_RAISES_ON_CANCEL:
                _mend_streams_callback(ep)
            if ep.rx or ep.rx_eof:
                ep.rx_scheduled = True
                self.stack.loop.call_soon(ep._deliver_rx, context=self.ctx)

    def close(self) -> None:
        self.open = False
        stack = self.stack
        found = stack.listeners.get((self.node, self.port))
        if found and self in found:
            found.remove(self)
        if self.holds_port:
            stack.free_port(self.token, int(self.port))
        elif isinstance(self.port, str) and not self.port.startswith("\0") and not _CLOSE_UNLINKS:
            stack.unix_stale.add((self.node, self.port))  # the socket file stays
        # Connections the kernel took but nobody accepted are reset.
        for ep in self.pending:
            if not ep.dead and ep.peer is not None:
                ep._send_rst()
                ep.dead = True
        self.pending.clear()


_WAIT_CLOSED_WAITS_FOR_CONNECTIONS = sys.version_info >= (3, 12, 1)
# From 3.13 a unix server's close() removes its socket file (cleanup_socket).
_CLOSE_UNLINKS = sys.version_info >= (3, 13)


class Server(asyncio.AbstractServer):
    """asyncio.Server's behaviour over listeners, for this Python version:
    close() stops listening and leaves live connections alone;
    wait_closed() waits for them on 3.12.1+ and returns at once after close()
    on older versions, as asyncio does there."""

    def __init__(self, stack: Stack, loop: Any, protocol_factory: Any, backlog: int) -> None:
        self.stack = stack
        self._loop = loop
        self.protocol_factory = protocol_factory
        self.backlog = backlog
        self._ssl_context: Any = None  # asyncio.Server's, which suites peek at
        self.listeners: list[Listener] | None = []
        self.serving = False
        # The accepted connections not yet lost, in the order accepted (a
        # dict, so close_clients goes through them in a replayable order).
        self._clients: dict[Endpoint, None] = {}
        self._waiters: list[asyncio.Future[Any]] | None = []
        self._forever: asyncio.Future[Any] | None = None

    def __repr__(self) -> str:
        return f"<Server sockets={self.sockets!r}>"

    def _attach(self, ep: Endpoint) -> None:
        self._clients[ep] = None

    def _detach(self, ep: Endpoint) -> None:
        self._clients.pop(ep, None)
        if not self._clients and self.listeners is None:
            self._wakeup()

    if hasattr(asyncio.base_events.Server, "close_clients"):  # new in 3.13

        def close_clients(self) -> None:
            for ep in list(self._clients):
                ep.close()

        def abort_clients(self) -> None:
            for ep in list(self._clients):
                ep.abort()

    def _wakeup(self) -> None:
        waiters, self._waiters = self._waiters, None
        for w in waiters or ():
            if not w.done():
                w.set_result(w)

    def _start_serving(self) -> None:
        if self.serving or self.listeners is None:
            return
        self.serving = True
        for ls in self.listeners:
            ls.kick()

    def get_loop(self) -> Any:
        return self._loop

    def is_serving(self) -> bool:
        return self.serving

    @property
    def sockets(self) -> tuple[SimSocket, ...]:
        if self.listeners is None:
            return ()
        return tuple(ls.sock for ls in self.listeners)

    # asyncio.Server's private names that libraries read (websockets' test
    # helper reads _ssl_context, set by _listen).
    @property
    def _serving(self) -> bool:
        return self.serving

    @property
    def _sockets(self) -> list[SimSocket] | None:
        return None if self.listeners is None else list(self.sockets)

    def close(self) -> None:
        listeners = self.listeners
        if listeners is None:
            return
        self.listeners = None
        for ls in listeners:
            ls.close()
        self.serving = False
        if self._forever is not None and not self._forever.done():
            self._forever.cancel()
            self._forever = None
        if not self._clients:
            self._wakeup()

    async def start_serving(self) -> None:
        if self.listeners is None:
            # asyncio's Server iterates its closed (None) socket list.
            raise TypeError("'NoneType' object is not iterable")
        self._start_serving()
        await asyncio.sleep(0)

    async def serve_forever(self) -> None:
        if self._forever is not None:
            raise RuntimeError(f"server {self!r} is already being awaited on serve_forever()")
        if self.listeners is None:
            raise RuntimeError(f"server {self!r} is closed")
        self._start_serving()
        self._forever = self._loop.create_future()
        try:
            await self._forever
        except asyncio.CancelledError:
            try:
                self.close()
                await self.wait_closed()
            finally:
                raise
        finally:
            self._forever = None

    async def wait_closed(self) -> None:
        if self._waiters is None:
            return
        if self.listeners is None and not _WAIT_CLOSED_WAITS_FOR_CONNECTIONS:
            return
        waiter = self._loop.create_future()
        self._waiters.append(waiter)
        await waiter

    async def __aenter__(self) -> Server:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
        await self.wait_closed()


# ---- the running stack -------------------------------------------------------


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
        self._loop._log_emit(kind, node, text, _digest(text))


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
        self._slots = [_HostSlot(node << _core.NODE_TOKEN_SHIFT | incarnation)]
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


def _wrapped() -> bool:
    from . import _wrap  # here: _wrap imports the loop, which imports this

    return _wrap._patches.run is not None


def active(loop: Any) -> Stack | None:
    """The stack of the world running on loop, or in a wrapped test the
    loop's own one-host stack; None elsewhere (a bare loop: refused)."""
    world = _world
    if world is not None and not world._ended:
        return stack_of(world) if world._loop is loop else None
    host = getattr(loop, "_host", None)
    if host is None:
        if not _wrapped() or loop.is_closed():
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


# The SimLoop whose executor work runs inline on this thread right now
# (askew/_loop.py clears the running loop meanwhile, as a worker has none).
inline_loop: Any = None


def current(node_only: bool) -> Stack | None:
    """The stack code on this thread talks to: a world's (from a node's
    code only, if node_only), or the running wrapped SimLoop's."""
    world = _world
    if world is not None and not world._ended:
        if node_only and _node_var.get(None) is None:
            return None
        return stack_of(world)
    loop = asyncio.events._get_running_loop()
    if loop is None and inline_loop is not None and inline_loop._thread_id == threading.get_ident():
        loop = inline_loop
    if loop is None or not hasattr(loop, "_host"):
        return None
    return active(loop)


# ---- the loop's methods --------------------------------------------------------------


def _refuse_remote(stack: Stack, call: str) -> None:
    from ._loop import _refuse

    _refuse(
        call,
        "In wrap mode the process is one host: only its loopback addresses "
        "(127.0.0.1, ::1, localhost, its own name) are simulated (docs/wrapping.md).",
    )


def _loopback_of(addr: str) -> str:
    return "::1" if ":" in addr else "127.0.0.1"


def _local_addr(stack: Stack, node: int, remote_addr: str) -> str:
    return _loopback_of(remote_addr) if _is_loopback(remote_addr) else address_of(node)


def _own(stack: Stack, node: int, addr: str) -> bool:
    """Whether the node may bind addr: a wildcard, loopback, its address."""
    if addr in WILDCARDS or _is_loopback(addr):
        return True
    return not stack.one_host and addr == address_of(node)


def _bind_error(code: int, where: Any, what: str) -> OSError:
    return OSError(code, f"error while attempting to bind on address {where!r}: {what}")


def resolve(
    stack: Stack, host: Any, port: Any, family: int, kind: int, flags: int = 0, proto: int = 0
) -> list[tuple[Any, ...]]:
    """What asyncio's _ensure_resolved gives for (host, port): a numeric
    host as it is, its port through int() (so 3.5 is 3 and None is 0, as
    asyncio's _ipaddr_info takes them), anything else looked up."""
    info = _ipaddr_info(host, port, family, kind, proto)
    if info is not None:
        return [info]
    return stack.names.getaddrinfo(host, port, family, kind, proto, flags)


def _check_port(port: int, call: str) -> None:
    """The socket module's check of a port it is given to bind or connect."""
    if not 0 <= port <= 65535:
        raise OverflowError(f"{call}(): port must be 0-65535.")


async def create_connection(
    stack: Stack,
    protocol_factory: Any,
    host: Any,
    port: Any,
    local_addr: Any,
    family: int = 0,
    proto: int = 0,
    flags: int = 0,
    all_errors: bool = False,
) -> tuple[Any, Any]:
    call = f"create_connection({host!r}, {port!r})"
    token = stack.caller(call)
    if host is None and port is None:
        raise ValueError("host and port was not specified and no sock specified")
    infos = resolve(stack, host, port, family, socket.SOCK_STREAM, flags, proto)
    locals_ = None
    if local_addr is not None:
        if not isinstance(local_addr, (tuple, list)) or len(local_addr) != 2:
            raise TypeError(f"local_addr must be a (host, port) pair, not {local_addr!r}")
        locals_ = resolve(
            stack, local_addr[0], local_addr[1], family, socket.SOCK_STREAM, flags, proto
        )
    # As asyncio: each address in turn; the first that connects wins.
    errors: list[OSError] = []
    for info in infos:
        _check_port(info[4][1], "connect")
        try:
            local = None
            if locals_ is not None:  # bound first, to an address of the same family
                local = _local_of(locals_, info[0])
            return await _connect_inet(
                stack, token, protocol_factory, info[4][0], info[4][1], local, call
            )
        except OSError as exc:
            errors.append(exc)
    if all_errors:  # 3.12's create_connection(all_errors=True)
        raise ExceptionGroup("create_connection failed", errors)
    if len(errors) == 1 or all(str(e) == str(errors[0]) for e in errors):
        raise errors[0]
    raise OSError(f"Multiple exceptions: {', '.join(str(e) for e in errors)}")


def _local_of(infos: list[tuple[Any, ...]], family: int) -> tuple[str, int]:
    """The local address create_connection binds to for a remote address
    of `family`: the first of that family (asyncio's _connect_sock)."""
    for info in infos:
        if info[0] == family:
            _check_port(info[4][1], "bind")
            return info[4][0], info[4][1]
    raise OSError(f"no matching local address with family={family!r} found")


async def _connect_inet(
    stack: Stack, token: int, factory: Any, addr: str, p: int, local_addr: Any, call: str
) -> tuple[Any, Any]:
    node = token >> _core.NODE_TOKEN_SHIFT
    if addr in WILDCARDS:
        addr = _loopback_of(addr)  # Linux connects the unspecified address locally
    if _is_loopback(addr):
        dst = node
    elif stack.one_host:
        _refuse_remote(stack, call)
    else:
        found = _node_of_address(addr)
        if found is None or found >= len(stack.world._slots):
            # No host has that address: the SYN goes nowhere.
            raise OSError(errno.ENETUNREACH, f"Connect call failed {_sockaddr((addr, p))!r}")
        dst = found
    lport = stack.ephemeral(token)
    if local_addr is not None:
        want, port = local_addr[0], local_addr[1]
        if want not in (None, "") and not _own(stack, node, want):
            raise _bind_error(errno.EADDRNOTAVAIL, local_addr, "cannot assign requested address")
        if port and stack.used.get(token, {}).get(port):
            raise _bind_error(errno.EADDRINUSE, local_addr, "address already in use")
        lport = port or lport
    stack.take_port(token, lport)
    ctx = contextvars.copy_context()
    ep = Endpoint(stack, token, ctx, (_local_addr(stack, node, addr), lport), (addr, p), dst)
    ep.port_held = True
    return await _open(stack, ep, factory)


async def _open(stack: Stack, ep: Endpoint, protocol_factory: Any) -> tuple[Any, Any]:
    """Connect ep (a SYN, then the SYN-ACK) and give it its protocol."""
    loop = stack.loop
    ep.waiter = loop.create_future()
    stack.stats["tcp_connects"] += 1
    stack.log(_KIND_CONNECT, ep.node, f"connect {_ep(ep.local)} -> {_ep(ep.remote)}")
    stack.send(_Segment(SYN, ep, None, 0, b""), ep.remote_node)
    try:
        await ep.waiter
    except BaseException:
        if ep.state == "syn":
            ep.state = "closed"
            ep.dead = True
            ep._release()
        elif ep.protocol is None:
            # The handshake was over but the caller gave up before it ran
            # on (a cancel in that step): asyncio closes the socket then,
            # and the server hears it (aiohappyeyeballs' cancelled connect).
            ep._abort(None)
        raise
    protocol = protocol_factory()
    ep.protocol = protocol
    protocol.connection_made(ep)
    if ep.rx or ep.rx_eof:
        ep.rx_scheduled = True
        loop.call_soon(ep._deliver_rx, context=ep.ctx)
    return ep, protocol


def unix_path(path: Any) -> str:
    """An AF_UNIX address as the stack keys it: str, abstract names with
    their leading NUL."""
    import os

    if not isinstance(path, (bytes, bytearray, str)):
        path = os.fspath(path)
    raw = os.fsencode(path) if isinstance(path, str) else bytes(path)
    if len(raw) > UNIX_PATH_MAX:
        raise OSError("AF_UNIX path too long")  # the socket module's check, no errno
    if isinstance(path, (bytes, bytearray)):
        return bytes(path).decode("utf-8", "surrogateescape")
    return str(path)


UNIX_PATH_MAX = 108  # sizeof(sockaddr_un.sun_path) on Linux


async def create_unix_connection(stack: Stack, protocol_factory: Any, path: Any) -> tuple[Any, Any]:
    """Connect to a path (or abstract name) of this node's own namespace;
    nothing touches the file system. As Linux, at once: ENOENT for a path
    nobody bound, ECONNREFUSED for one nobody listens on."""
    token = stack.caller(f"create_unix_connection({path!r})")
    where = unix_path(path)
    if not where:
        raise OSError(errno.EINVAL, "Invalid argument")  # Linux: no name to connect to
    node = token >> _core.NODE_TOKEN_SHIFT
    if stack.find_listener(node, UNIX, where) is None:
        if stack.one_host:
            _realsock.raise_refusal((UNIX, where))
        if where.startswith("\0") or (node, where) in stack.unix_stale:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")
    ep = Endpoint(stack, token, contextvars.copy_context(), (UNIX, ""), (UNIX, where), node)
    return await _open(stack, ep, protocol_factory)


async def create_server(
    stack: Stack,
    protocol_factory: Any,
    host: Any,
    port: Any,
    backlog: int,
    start_serving: bool,
    family: int = 0,
    ssl_context: Any = None,
) -> Server:
    token = stack.caller(f"create_server({host!r}, {port!r})")
    node = token >> _core.NODE_TOKEN_SHIFT
    hosts = [host] if isinstance(host, str) or host is None else list(host)
    p = 0
    addrs: list[str] = []
    for h in hosts:
        # As asyncio: every address the host resolves to (no host: both
        # families' wildcards, IPv4 first, as glibc answers).
        infos = resolve(
            stack, None if h == "" else h, port, family, socket.SOCK_STREAM, socket.AI_PASSIVE
        )
        for info in infos:
            a, p = info[4][0], info[4][1]
            _check_port(p, "bind")
            if not _own(stack, node, a):
                if stack.one_host:
                    _refuse_remote(stack, f"create_server({host!r}, {port!r})")
                raise _bind_error(
                    errno.EADDRNOTAVAIL, _sockaddr((a, p)), "cannot assign requested address"
                )
            if a not in addrs:
                addrs.append(a)
    return await _listen(
        stack, token, protocol_factory, addrs, p, backlog, start_serving, ssl_context
    )


async def create_unix_server(
    stack: Stack,
    protocol_factory: Any,
    path: Any,
    backlog: int,
    start_serving: bool,
    ssl_context: Any = None,
) -> Server:
    token = stack.caller(f"create_unix_server({path!r})")
    where = unix_path(path)
    return await _listen(
        stack, token, protocol_factory, [UNIX], where, backlog, start_serving, ssl_context
    )


async def _listen(
    stack: Stack,
    token: int,
    protocol_factory: Any,
    addrs: list[str],
    p: int | str,
    backlog: int,
    start_serving: bool,
    ssl_context: Any = None,
) -> Server:
    """A Server listening on every one of addrs at port p (a path for
    AF_UNIX); every address binds or none does, as asyncio closes what it
    opened. ssl_context: the server's TLS context, which asyncio's Server
    keeps as _ssl_context (the TLS layer is in protocol_factory)."""
    if isinstance(backlog, bool) or not isinstance(backlog, int):
        raise TypeError(f"backlog must be an int, got {backlog!r}")
    if not -(2**31) <= backlog < 2**31:
        raise OverflowError("signed integer is greater than maximum")  # listen()'s C int
    node = token >> _core.NODE_TOKEN_SHIFT
    if p == 0:
        p = stack.ephemeral(token)
    found = stack.listeners.get((node, p), [])
    found[:] = [ls for ls in found if ls.token == token and ls.open]
    for a in addrs:
        for ls in found:
            if _family(a) == _family(ls.host) and (
                a in WILDCARDS or ls.host in WILDCARDS or ls.host == a
            ):
                if a == UNIX:
                    raise OSError(errno.EADDRINUSE, f"Address {p!r} is already in use")
                raise _bind_error(errno.EADDRINUSE, _sockaddr((a, p)), "address already in use")
    ctx = contextvars.copy_context()
    server = Server(stack, stack.loop, protocol_factory, max(1, min(backlog, 4096)))
    server._ssl_context = ssl_context
    assert server.listeners is not None
    for a in addrs:
        ls = Listener(server, token, ctx, a, p)
        server.listeners.append(ls)
        found.append(ls)
    if isinstance(p, int):
        # One hold for the server's port, however many families it binds.
        server.listeners[0].holds_port = True
        stack.take_port(token, p)
    else:
        stack.unix_stale.discard((node, p))
    stack.listeners[(node, p)] = found
    if start_serving:
        server._start_serving()
        await asyncio.sleep(0)
    return server
