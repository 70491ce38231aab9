# SPDX-License-Identifier: Apache-2.0
"""The simulated resolver: what getaddrinfo, getnameinfo and gethostbyname
answer inside a world (its nodes' hostnames and addresses) or in wrap mode's
one host (localhost and its own name, loopback only), argument for argument
as the socket module and glibc answer them, with the services of Debian's
/etc/services. A name once resolved resolves alike for the rest of the run.
"""

from __future__ import annotations

import re
import socket
import sys
from asyncio.base_events import (  # type: ignore[attr-defined]
    _ipaddr_info,  # asyncio's own numeric-host shortcut, unexported
)
from typing import Any

from .._loop.nodes import TOKEN_SHIFT, node_var
from .._loop.refusal import IO_HINT, refuse
from .addr import (
    address_of,
    as_sockaddr,
    c_int,
    family_of,
    is_localhost,
    is_loopback,
    node_of_address,
    numeric_v4,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .stack import Stack


_NAMES_HINT = (
    "A run's names are its nodes' (node-0, node-1, ..., or spawn's name=), their "
    "10.0.0.x addresses and localhost; make the host a node, or run this code "
    "outside the simulation."
)


def gaierror(code: int, text: str) -> socket.gaierror:
    return socket.gaierror(code, text)


def no_name() -> socket.gaierror:
    return gaierror(socket.EAI_NONAME, "Name or service not known")


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
            raise no_name()
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
                raise gaierror(socket.EAI_SOCKTYPE, "ai_socktype not supported")
            raise gaierror(socket.EAI_SERVICE, "Servname not supported for ai_socktype")
        if text and chosen[5]:
            raise gaierror(socket.EAI_SERVICE, "Servname not supported for ai_socktype")
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
            raise gaierror(socket.EAI_SERVICE, "Servname not supported for ai_socktype")
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
        if host == "" or is_localhost(host):
            return "127.0.0.1"
        numeric = numeric_v4(host)
        if numeric is not None:
            return numeric
        name = host.lower().rstrip(".")
        node = self._world._names.get(name)
        if node is None:
            if self.one_host or self._real_host(name):
                hint = IO_HINT if self.one_host else _NAMES_HINT
                refuse(f"getaddrinfo({host!r})", hint, "would send a real DNS query")
            raise no_name()
        return "127.0.0.1" if self.one_host else address_of(node)

    def _real_host(self, name: str) -> bool:
        """Whether `name`, which names no node, is a host of the real world:
        dotted (example.com), in a world whose nodes have no dotted names,
        so that it cannot be one not spawned yet (decision: a single label
        is a cluster's host that does not exist, gaierror as on a LAN)."""
        return "." in name and not any("." in known for known in self._world._names)

    def addr_to_host(self, addr: str) -> str | None:
        if is_loopback(addr):
            return "localhost"
        node = node_of_address(addr)
        if self.one_host or node is None or node >= len(self._world._hostnames):
            return None
        return str(self._world._hostnames[node])

    def addresses(self, host: Any, family: int, flags: int) -> list[str]:
        """What `host` resolves to for `family`, in glibc's order: IPv4
        then IPv6 for no host, IPv4 alone for a name under AF_UNSPEC (no
        interface has an IPv6 address but loopback: docs/sockets.md)."""
        if family not in (0, socket.AF_INET, socket.AF_INET6):
            raise gaierror(socket.EAI_FAMILY, "ai_family not supported")
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
            raise no_name()  # glibc: an empty name is no name
        if ":" in host:
            _refuse_scoped(host)
            try:
                socket.inet_pton(socket.AF_INET6, host)
            except OSError:
                raise no_name() from None
            if family == socket.AF_INET:
                raise gaierror(socket.EAI_ADDRFAMILY, "Address family for hostname not supported")
            return [host]
        if flags & socket.AI_NUMERICHOST and numeric_v4(host) is None:
            raise no_name()
        if family == socket.AF_INET6:
            if is_localhost(host):
                return ["::1"]
            if numeric_v4(host) is None:
                self.host_to_addr(host)  # an unknown name fails as one
            raise gaierror(socket.EAI_ADDRFAMILY, "Address family for hostname not supported")
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
            c_int(v, n)
            for v, n in ((family, "family"), (type, "type"), (proto, "proto"), (flags, "flags"))
        )
        if isinstance(host, str):
            host = host.encode("idna")  # the socket module's: UnicodeError for a bad label
        elif host is not None and not isinstance(host, bytes):
            raise TypeError("getaddrinfo() argument 1 must be string or None")
        if host is not None:  # glibc reads a C string: up to a NUL
            host = host.split(b"\0", 1)[0].decode("ascii", "surrogateescape")
        if host is None and port is None:
            raise no_name()
        if flags & ~_AI_KNOWN or (flags & socket.AI_CANONNAME and host is None):
            raise gaierror(socket.EAI_BADFLAGS, "Bad value for ai_flags")
        if family not in (0, socket.AF_INET, socket.AF_INET6):
            raise gaierror(socket.EAI_FAMILY, "ai_family not supported")
        services = _service(port, type, proto, flags)
        out: list[tuple[Any, ...]] = []
        for addr in self.addresses(host, family, flags):
            fam = socket.AddressFamily(family_of(addr))
            for kind, proto_of, p in services:
                kind_of = socket.SocketKind(kind) if kind in _KINDS else kind
                out.append((fam, kind_of, proto_of, "", as_sockaddr((addr, p))))
        if flags & socket.AI_CANONNAME and out and host is not None:
            # The first answer carries the canonical name: a number as given.
            canon = host if numeric_v4(host) or ":" in host else host.lower().rstrip(".")
            out[0] = (*out[0][:3], canon, out[0][4])
        return out

    def getnameinfo(self, sockaddr: Any, flags: int = 0) -> tuple[str, str]:
        # The socket module's checks, in its order, then glibc's.
        flags = c_int(flags, "flags")
        if not isinstance(sockaddr, tuple):
            raise TypeError("getnameinfo() argument 1 must be a tuple")
        bad = "getnameinfo(): illegal sockaddr argument"
        if not 2 <= len(sockaddr) <= 4 or not isinstance(sockaddr[0], str):
            raise TypeError(bad)
        addr, port = sockaddr[0], c_int(sockaddr[1], "port")
        if len(sockaddr) > 2 and c_int(sockaddr[2], "flowinfo") > 0xFFFFF:
            raise OverflowError("getnameinfo(): flowinfo must be 0-1048575.")
        if ":" in addr:
            try:
                socket.inet_pton(socket.AF_INET6, addr)
            except OSError:
                raise no_name() from None
        else:
            numeric = numeric_v4(addr)
            if numeric is None:
                raise no_name()
            addr = numeric
            if len(sockaddr) != 2:
                raise OSError("IPv4 sockaddr must be 2 tuple")
        port = _service(str(port), socket.SOCK_DGRAM, 0, 0)[0][2]
        if flags & ~_NI_KNOWN:
            raise gaierror(socket.EAI_BADFLAGS, "Bad value for ai_flags")
        name = None if flags & socket.NI_NUMERICHOST else self.addr_to_host(addr)
        if name is None:
            if flags & socket.NI_NAMEREQD:
                raise no_name()
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

    def own_name(self) -> str | None:
        """The name the calling host has for itself: a world's node its
        hostname (the test body none: it is no host), wrap mode's one host
        the machine's (what it resolves on loopback)."""
        if self.one_host:
            return _real_gethostname()
        token = node_var.get(None)
        if token is None:
            return None
        return str(self._world._hostnames[token >> TOKEN_SHIFT])

    def getfqdn(self, name: str = "") -> str:
        """What a host knows of itself, as /etc/hosts tells glibc: no name
        (or 0.0.0.0, ::) and its own name are its own name, localhost is
        localhost. Any other name or address would be a reverse DNS query:
        refused, as gethostbyaddr."""
        name = name.strip()
        own = self.own_name()
        if own is not None and (name in ("", "0.0.0.0", "::") or name.lower() == own.lower()):
            return own
        if own is not None and name.lower() == "localhost":
            return "localhost"
        refuse("socket.getfqdn()", IO_HINT, "would send a real DNS query")


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


_real_gethostname = socket.gethostname  # taken before any run patches it


def _refuse_scoped(host: str) -> None:
    """A link-local IPv6 address with a scope (fe80::1%eth0) names an
    interface of the real machine, which no simulated host has (their IPv6
    is loopback's alone): refused by name, where glibc would read the
    machine's interfaces. Any other scoped host is glibc's EAI_NONAME."""
    addr, sep, scope = host.partition("%")
    if not sep:
        return
    try:
        packed = socket.inet_pton(socket.AF_INET6, addr)
    except OSError:
        return
    if packed[0] == 0xFE and packed[1] & 0xC0 == 0x80:  # fe80::/10
        refuse(
            f"getaddrinfo({host!r})",
            "askew's hosts have IPv6 on loopback only (::1); use a node's address "
            "(docs/sockets.md).",
            f"names interface {scope!r} of the real machine, which is not simulated",
        )
