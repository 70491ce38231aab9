# SPDX-License-Identifier: Apache-2.0
"""The TCP model's numbers (docs/sockets.md says why each), the kinds of
segment, and the Segment the C network carries between two nodes (its fields
are in C, ext/stream.c; its repr is what world.log shows). Owned is what
every socket knows: its stack, its node's incarnation and its context.
"""

from __future__ import annotations

import socket
from typing import Any

from .. import _core
from .._loop.nodes import TOKEN_SHIFT
from .addr import UNIX, ep_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .endpoint import Endpoint
    from .stack import Stack


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
KEEPALIVE = (socket.SOL_SOCKET, socket.SO_KEEPALIVE)
TCP_USER_TIMEOUT = getattr(socket, "TCP_USER_TIMEOUT", 18)
# (level, name) -> (lowest, highest) a timer option takes; else EINVAL.
TIMER_OPTS = {
    KEEPALIVE: (-(2**31), 2**31 - 1),  # any int: on when non-zero
    (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE): (1, 32767),
    (socket.IPPROTO_TCP, socket.TCP_KEEPINTVL): (1, 32767),
    (socket.IPPROTO_TCP, socket.TCP_KEEPCNT): (1, 127),
    (socket.IPPROTO_TCP, TCP_USER_TIMEOUT): (0, 2**31 - 1),  # ms; 0 is off
}

DELIVERED = 2  # ASKEW_NET_DELIVERED (ext/engine/net.h)
IN_FLIGHT, DUPLICATED = 0, 1

SYN, SYNACK, DATA, FIN, RST = range(5)
UDP, ICMP = 5, 6  # a datagram and a port unreachable (askew/_net/udp.py)
PROBE = 7  # a keep-alive probe: no data, nobody retransmits it
# An ACK alone, sent when a reset does not match what arrived (RFC 5961's
# challenge ACK, or the reset's trigger sent again): a socket that is gone
# answers it with a reset that does. Retransmitted when lost.
ACK = 8
KIND_TEXT = ("SYN", "SYN-ACK", "DATA", "FIN", "RST", "", "", "keep-alive", "ACK")


class Segment(_core.Segment):
    """One TCP segment on the wire (its repr is what world.log shows):
    Segment(kind, src, dst, seq, data), tries 0, not acked. Its fields are
    in C (ext/stream.c), which makes the data segments of a write."""

    # src_addr and to: a datagram's addresses (UDP and ICMP only).
    __slots__ = ()
    src: Endpoint  # or a _Kernel, for a reset no endpoint sends
    dst: Endpoint | None

    def __repr__(self) -> str:
        s = self.src
        if self.kind in (UDP, ICMP):
            what = f"len={len(self.data)}" if self.kind == UDP else "ICMP port-unreachable"
            return f"udp {ep_text(self.src_addr)}>{ep_text(self.to)} {what}"
        if self.kind == SYN:
            there = s.remote
        else:
            assert self.dst is not None
            there = self.dst.local
        extra = f" seq={self.seq} len={len(self.data)}" if self.kind == DATA else ""
        proto = "unix" if there[0] == UNIX else "tcp"
        return f"{proto} {ep_text(s.local)}>{ep_text(there)} {KIND_TEXT[self.kind]}{extra}"


class Owned:
    """What every socket knows: its stack, the incarnation that owns it
    (token and node id) and the context its callbacks run in."""

    def __init__(self, stack: Stack, token: int, ctx: Any) -> None:
        self.stack = stack
        self.token = token
        self.node = token >> TOKEN_SHIFT
        self.ctx = ctx
