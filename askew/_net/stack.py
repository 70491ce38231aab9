# SPDX-License-Identifier: Apache-2.0
"""The world's TCP (Stack): its listeners, ports and counters, and what the C
network hands back for every segment that came due: a dropped one is sent
again after a retransmission timeout (TCP loses nothing it has accepted), a
SYN meets a listener or a reset. Every random draw (segment sizes,
retransmission jitter) comes from the network stream through
`loop._net.draw`, in the order the calls happen, so a program that opens no
socket keeps exactly its runs.
"""

from __future__ import annotations

import errno
from typing import Any

from .. import _core
from .._loop.kinds import REFUSE
from .._loop.nodes import node_var
from .._loop.refusal import raise_refusal
from . import realsock as _realsock
from .addr import covers, ep_text
from .endpoint import Endpoint
from .names import Names
from .tcp import (
    ACK,
    DATA,
    DELIVERED,
    DUPLICATED,
    EPHEMERAL_HI,
    EPHEMERAL_LO,
    FIN,
    ICMP,
    PROBE,
    RETRIES_DATA,
    RETRIES_SYN,
    RST,
    RTO_MAX_NS,
    RTO_MIN_NS,
    SYN,
    SYN_RTO_NS,
    SYNACK,
    TCP_USER_TIMEOUT,
    UDP,
    Segment,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .server import Listener


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
        self.udp: Any = None  # askew/_net/udp.py's Udp, once a run opens a datagram endpoint
        self.wire.set_segment_handler(Segment, self._arrive)

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
        token = node_var.get(None)
        if token is None:
            raise_refusal(
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

    def send(self, seg: Segment, dst_node: int) -> None:
        """Put seg on the wire from its source's incarnation; a drop at send
        comes back as a retransmission at once (no draw is skipped)."""
        src = seg.src
        seg.ack = src.rcv_next + src.rx_eof  # what it has heard, as it (re)sends
        self.stats["tcp_segments"] += 1
        outcome = self.wire.send_segment(src.token, dst_node, seg)
        if outcome > DUPLICATED:  # dropped at send: lost or partitioned
            self._dropped(seg)

    def _arrive(self, seg: Segment, outcome: int) -> None:
        """The C network's callback for every segment that came due."""
        kind = seg.kind
        if kind == UDP or kind == ICMP:
            self.udp.arrive(seg, outcome, outcome == DELIVERED)
            return
        if outcome != DELIVERED:
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
                dst._reset(seg)
            return
        if kind == ACK:
            seg.acked = True
            if dst is None or not dst.alive() or dst.dead:
                self._reset_back(seg)  # a socket that is gone: a reset that matches
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

    def _reset_back(self, seg: Segment) -> None:
        """Answer seg with a RST from its destination node's current kernel;
        its sequence number is seg's ACK, as Linux answers (the receiver
        takes a reset only when that is the next byte it expects)."""
        dst_node = seg.dst.node if seg.dst is not None else seg.src.remote_node
        token = self.token_of(dst_node)
        if token < 0:
            return
        rst = Segment(RST, _Kernel(self, dst_node, token, seg), seg.src, seg.ack, b"")
        self.stats["tcp_segments"] += 1
        self.wire.send_segment(token, seg.src.node, rst)

    def _dropped(self, seg: Segment) -> None:
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
            user_timeout = src._option(TCP_USER_TIMEOUT) * 1_000_000
            if user_timeout and now + rto >= since + user_timeout:
                rto, last = max(0, since + user_timeout - now), True
        self.loop.call_later(rto / 1e9, self._retransmit, seg, last, context=src.ctx)

    def _retransmit(self, seg: Segment, give_up: bool) -> None:
        seg.src._lost_unacked()  # forget the lost data that got through since
        if seg.acked or seg.src.dead or not seg.src.alive():
            return  # a socket that is gone sends nothing again
        if give_up:
            seg.src._timed_out(seg)
            return
        if seg.kind == SYN and seg.src.state != "syn":
            return  # the connect gave up
        self.stats["tcp_retransmits"] += 1
        self.send(seg, seg.src.remote_node)

    def _syn(self, seg: Segment) -> None:
        client = seg.src
        node, port = client.remote_node, client.remote[1]
        if client.peer is not None:
            return  # a retransmitted SYN; the SYN-ACK is on its way
        listener = self.find_listener(node, client.remote[0], port, client.local[1])
        if listener is None:
            # Wrap mode: a real socket of the process listening there is
            # named, not answered with a reset (askew/_net/realsock.py).
            real = _realsock.refusal(client.remote) if self.one_host else None
            if real is not None:
                _core._note_refusal(real)
                client._connect_failed(real)
                return
            self.stats["tcp_refused"] += 1
            self.log(REFUSE, node, f"refuse {ep_text(client.local)} -> {ep_text(client.remote)}")
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
        self.send(Segment(SYNACK, server, client, 0, b""), client.node)
        listener.kick()

    def find_listener(
        self, node: int, addr: str, port: int | str, src_port: int = 0
    ) -> Listener | None:
        """The listener a connection to (addr, port) from src_port reaches:
        in an SO_REUSEPORT group, the one src_port picks (Linux hashes the
        addresses: a fixed function of them either way)."""
        found = self.listeners.get((node, port))
        if not found:
            return None
        token = self.token_of(node)
        live = [ls for ls in found if ls.token == token and ls.open]
        if len(live) != len(found):
            found[:] = live
        covering = [ls for ls in live if covers(ls.host, addr)]
        if not covering:
            return None
        group = [ls for ls in covering if ls.reuse_port]
        if len(group) > 1 and covering[0].reuse_port:
            return group[src_port % len(group)]
        return covering[0]


class _Kernel:
    """The sender of a reset that no endpoint sends: a node's kernel."""

    __slots__ = ("ctx", "dead", "local", "node", "remote", "remote_node", "stack", "state", "token")

    def __init__(self, stack: Stack, node: int, token: int, seg: Segment) -> None:
        self.stack = stack
        self.node = node
        self.token = token
        self.local = seg.dst.local if seg.dst is not None else seg.src.remote
        self.remote = seg.src.local
        self.remote_node = seg.src.node
        self.ctx = None
        self.dead = True
        self.state = "closed"
