# SPDX-License-Identifier: Apache-2.0
"""aiodns inside a run: lookups answered by the simulated resolver, no c-ares thread.

aiodns's `DNSResolver` makes a pycares channel, and pycares 5 runs c-ares
with an event thread of its own: a real thread sending real DNS queries,
started in C before any socket exists, so nothing at the Python level can
refuse it cleanly. aiohttp makes one whenever aiodns is installed (its
`AsyncResolver` is then the default). While a run's determinism scope is
open, `aiodns.DNSResolver` is a subclass whose instances made on the
simulation thread own no channel: `getaddrinfo`, `getnameinfo`,
`gethostbyname`, `gethostbyaddr` and `query` (A and AAAA) ask the loop's
resolver (`loop.getaddrinfo`, askew/_net/) and answer with pycares's
own result types, a failed lookup as the `aiodns.error.DNSError` c-ares
would give. Anywhere else (another thread) it makes the real resolver.
Closing the scope puts the real class back (docs/compatibility.md, "aiodns").
"""

from __future__ import annotations

import asyncio
import functools
import socket
import sys
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from .. import _core
from ..errors import NondeterminismError

_virtual: Any = _core.virtual


def swap(names: Any) -> None:
    """Replace `aiodns.DNSResolver` through `names` (a NameSwap), if aiodns is
    imported: aiohttp imports it with itself, before any run."""
    module = sys.modules.get("aiodns")
    real = getattr(module, "DNSResolver", None)
    if isinstance(real, type) and not getattr(real, "_askew_simulated", False):
        names.set(module, "DNSResolver", simulated_class(real))


# c-ares's answer for each getaddrinfo failure glibc would report.
_ARES_OF_EAI = {
    socket.EAI_NONAME: "ARES_ENOTFOUND",
    socket.EAI_ADDRFAMILY: "ARES_ENOTFOUND",
    socket.EAI_FAMILY: "ARES_EBADFAMILY",
    socket.EAI_SERVICE: "ARES_ESERVICE",
    socket.EAI_SOCKTYPE: "ARES_EBADHINTS",
}


@functools.cache
def simulated_class(real: type[Any]) -> type[Any]:
    """The stand-in for the aiodns resolver class `real` (cached, so a
    resolver made in one run is an instance of the next run's class too)."""
    aiodns = sys.modules[real.__module__.split(".", 1)[0]]
    import pycares  # aiodns is imported, so pycares is

    def dns_error(name: str) -> Exception:
        code = getattr(pycares.errno, name)
        return aiodns.error.DNSError(code, pycares.errno.strerror(code))  # type: ignore[no-any-return]

    def lookup_error(exc: socket.gaierror) -> Exception:
        return dns_error(_ARES_OF_EAI.get(exc.errno or 0, "ARES_ENOTFOUND"))

    class SimulatedDNSResolver(real):  # type: ignore[misc]
        _askew_simulated = True

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            if not _virtual.in_simulation():
                # Not the run's thread: the real resolver (Python skips our
                # __init__, since the object is not an instance of cls).
                return real(*args, **kwargs)
            return object.__new__(cls)

        def __init__(
            self,
            nameservers: Any = None,
            loop: asyncio.AbstractEventLoop | None = None,
            **kwargs: Any,
        ) -> None:
            self._closed = False
            self.loop = loop or asyncio.get_event_loop()
            self._servers = [str(s) for s in nameservers or ()]
            self._queries: set[asyncio.Future[Any]] = set()

        @property
        def nameservers(self) -> list[str]:
            return list(self._servers)

        @nameservers.setter
        def nameservers(self, value: Any) -> None:
            self._servers = [s.decode() if isinstance(s, bytes) else str(s) for s in value]

        def _answer(self, lookup: Callable[[], Awaitable[Any]]) -> asyncio.Future[Any]:
            """A future settled by `lookup` at a later step, as c-ares's
            callback would; cancel() fails it with ARES_ECANCELLED."""
            if self._closed:
                raise RuntimeError("DNS resolver is closed")
            fut: asyncio.Future[Any] = self.loop.create_future()

            async def settle() -> None:
                try:
                    result = await lookup()
                except socket.gaierror as exc:
                    outcome: Any = lookup_error(exc)
                except Exception as exc:  # a refusal stays one, and so does a DNSError
                    outcome = exc
                else:
                    if not fut.done():
                        fut.set_result(result)
                    return
                if not fut.done():
                    fut.set_exception(outcome)

            task = self.loop.create_task(settle())
            self._queries.add(fut)
            fut.add_done_callback(self._queries.discard)
            fut.add_done_callback(lambda _: task.cancel())  # a no-op once it settled
            return fut

        def getaddrinfo(
            self,
            host: str,
            family: int = socket.AF_UNSPEC,
            port: int | None = None,
            proto: int = 0,
            type: int = 0,
            flags: int = 0,
        ) -> asyncio.Future[Any]:
            async def lookup() -> Any:
                infos = await self.loop.getaddrinfo(
                    host, port, family=family, type=type, proto=proto, flags=flags
                )
                nodes = [
                    pycares.AddrInfoNode(
                        ttl=0,
                        flags=0,
                        family=fam,
                        socktype=kind,
                        protocol=proto_,
                        addr=(str(addr[0]).encode("ascii"), *addr[1:]),
                    )
                    for fam, kind, proto_, _canon, addr in infos
                ]
                return pycares.AddrInfoResult(cnames=[], nodes=nodes)

            return self._answer(lookup)

        def getnameinfo(self, sockaddr: Any, flags: int = 0) -> asyncio.Future[Any]:
            async def lookup() -> Any:
                node, service = await self.loop.getnameinfo(sockaddr, flags)
                return pycares.NameInfoResult(node=node, service=service)

            return self._answer(lookup)

        def gethostbyname(self, host: str, family: int) -> asyncio.Future[Any]:
            warnings.warn(
                "gethostbyname() is deprecated, use getaddrinfo() instead",
                DeprecationWarning,
                stacklevel=2,
            )

            async def lookup() -> Any:
                infos = await self.loop.getaddrinfo(
                    host, None, family=family, type=socket.SOCK_STREAM
                )
                addresses = [str(addr[0]) for *_, addr in infos]
                result = getattr(aiodns, "compat", pycares)
                cls = getattr(result, "AresHostResult", pycares.HostResult)
                return cls(name=host, aliases=[], addresses=addresses)

            return self._answer(lookup)

        def gethostbyaddr(self, name: str) -> asyncio.Future[Any]:
            async def lookup() -> Any:
                node, _ = await self.loop.getnameinfo((name, 0), socket.NI_NAMEREQD)
                return pycares.HostResult(name=node, aliases=[], addresses=[name])

            return self._answer(lookup)

        def query(self, host: str, qtype: str, qclass: str | None = None) -> asyncio.Future[Any]:
            warnings.warn(
                "query() is deprecated, use query_dns() instead",
                DeprecationWarning,
                stacklevel=2,
            )
            if qtype not in aiodns.query_type_map:
                raise ValueError(f"invalid query type: {qtype}")
            family = {"A": socket.AF_INET, "AAAA": socket.AF_INET6}.get(qtype)

            async def lookup() -> Any:
                if family is None:
                    # A simulated name has addresses and nothing else.
                    raise dns_error("ARES_ENODATA")
                infos = await self.loop.getaddrinfo(
                    host, None, family=family, type=socket.SOCK_STREAM
                )
                record = getattr(aiodns.compat, f"AresQuery{qtype}Result")
                return [record(host=str(addr[0]), ttl=0) for *_, addr in infos]

            return self._answer(lookup)

        def query_dns(self, host: str, qtype: str, qclass: str | None = None) -> Any:
            refusal = NondeterminismError(
                f"aiodns DNSResolver.query_dns({host!r}, {qtype!r}) inside a simulation: raw "
                "DNS records are not simulated. Use getaddrinfo() (what aiohttp calls), or "
                "run this code outside the simulation."
            )
            _core._note_refusal(refusal)
            raise refusal

        def cancel(self) -> None:
            for fut in list(self._queries):
                if not fut.done():
                    fut.set_exception(dns_error("ARES_ECANCELLED"))

        def _cleanup(self) -> None:
            if not self._closed:
                self._closed = True
                self.cancel()

        async def close(self) -> None:
            self._cleanup()

        def __del__(self) -> None:
            pass  # no channel to free

        def __repr__(self) -> str:
            return f"<askew simulated aiodns.DNSResolver loop={self.loop!r}>"

    SimulatedDNSResolver.__qualname__ = SimulatedDNSResolver.__name__ = "DNSResolver"
    SimulatedDNSResolver.__module__ = __name__
    return SimulatedDNSResolver
