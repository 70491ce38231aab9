# SPDX-License-Identifier: Apache-2.0
"""SimLoop's I/O methods, and the seam through which the host's network is
handed down to them.

The loop knows no sockets. Its socket, name and file-descriptor methods ask
the `HostIO` installed here, which the network layer above provides
(askew/_net/loopio.py installs itself when it is imported: the world, wrap
mode and askew's public names import it). Until one is installed, or for
what no host serves (pipes, subprocesses, signals), each call is refused as
real I/O. This module never imports a layer above the loop.
"""

from __future__ import annotations

from typing import Any, Protocol

from .refusal import IO_HINT, refuse


class HostIO(Protocol):
    """What the network layer serves SimLoop with: asyncio's methods of the
    same names, each taking the loop first and the keywords as given."""

    def reset(self, loop: Any) -> None:
        """The loop starts a new run or closes: what it served goes."""

    async def getaddrinfo(
        self, loop: Any, host: Any, port: Any, family: int, type: int, proto: int, flags: int
    ) -> Any: ...
    async def getnameinfo(self, loop: Any, sockaddr: Any, flags: int) -> Any: ...
    async def create_connection(
        self, loop: Any, protocol_factory: Any, host: Any, port: Any, kwargs: dict[str, Any]
    ) -> Any: ...
    async def create_server(
        self, loop: Any, protocol_factory: Any, host: Any, port: Any, kwargs: dict[str, Any]
    ) -> Any: ...
    async def create_unix_connection(
        self, loop: Any, protocol_factory: Any, path: Any, kwargs: dict[str, Any]
    ) -> Any: ...
    async def create_unix_server(
        self, loop: Any, protocol_factory: Any, path: Any, kwargs: dict[str, Any]
    ) -> Any: ...
    async def create_datagram_endpoint(
        self,
        loop: Any,
        protocol_factory: Any,
        local_addr: Any,
        remote_addr: Any,
        kwargs: dict[str, Any],
    ) -> Any: ...
    async def connect_accepted_socket(
        self, loop: Any, protocol_factory: Any, sock: Any, kwargs: dict[str, Any]
    ) -> Any: ...
    async def sendfile(
        self, loop: Any, transport: Any, file: Any, offset: int, count: Any, fallback: bool
    ) -> Any: ...
    async def start_tls(
        self, loop: Any, transport: Any, protocol: Any, sslcontext: Any, kwargs: dict[str, Any]
    ) -> Any: ...
    def watch(self, loop: Any, fd: Any, which: str, callback: Any, args: tuple[Any, ...]) -> None:
        """add_reader (which "r") and add_writer ("w")."""

    def unwatch(self, loop: Any, fd: Any, which: str) -> bool:
        """remove_reader and remove_writer."""
        ...

    async def sock_call(self, loop: Any, method: str, call: str, sock: Any, *args: Any) -> Any:
        """loop.sock_<method>(sock, *args); `call` names it in a refusal."""


class _NoHost:
    """No host installed: every call is real I/O, refused."""

    def reset(self, loop: Any) -> None:
        pass

    def watch(self, loop: Any, fd: Any, which: str, callback: Any, args: tuple[Any, ...]) -> None:
        method = "add_reader" if which == "r" else "add_writer"
        refuse(f"{method}({fd!r})", "File descriptors are real I/O. " + IO_HINT)

    def unwatch(self, loop: Any, fd: Any, which: str) -> bool:
        return False

    def __getattr__(self, name: str) -> Any:  # each async method of HostIO
        async def refused(loop: Any, *args: Any) -> Any:
            refuse(f"{name}()", IO_HINT)

        return refused


host_io: HostIO = _NoHost()


def install(io: HostIO) -> None:
    """Hand the loop its host's I/O (the network layer does, once)."""
    global host_io
    host_io = io


class IOMethods:
    """The I/O part of SimLoop (a mixin of askew/_loop/loop.py's class)."""

    async def getaddrinfo(
        self,
        host: Any,
        port: Any,
        *,
        family: int = 0,
        type: int = 0,
        proto: int = 0,
        flags: int = 0,
    ) -> Any:
        return await host_io.getaddrinfo(self, host, port, family, type, proto, flags)

    async def getnameinfo(self, sockaddr: Any, flags: int = 0) -> Any:
        return await host_io.getnameinfo(self, sockaddr, flags)

    async def create_connection(
        self, protocol_factory: Any, host: Any = None, port: Any = None, **kwargs: Any
    ) -> Any:
        return await host_io.create_connection(self, protocol_factory, host, port, kwargs)

    async def create_server(
        self, protocol_factory: Any, host: Any = None, port: Any = None, **kwargs: Any
    ) -> Any:
        return await host_io.create_server(self, protocol_factory, host, port, kwargs)

    async def create_unix_connection(
        self, protocol_factory: Any, path: Any = None, **kwargs: Any
    ) -> Any:
        return await host_io.create_unix_connection(self, protocol_factory, path, kwargs)

    async def create_unix_server(
        self, protocol_factory: Any, path: Any = None, **kwargs: Any
    ) -> Any:
        return await host_io.create_unix_server(self, protocol_factory, path, kwargs)

    async def create_datagram_endpoint(
        self, protocol_factory: Any, local_addr: Any = None, remote_addr: Any = None, **kwargs: Any
    ) -> Any:
        return await host_io.create_datagram_endpoint(
            self, protocol_factory, local_addr, remote_addr, kwargs
        )

    async def connect_accepted_socket(self, protocol_factory: Any, sock: Any, **kwargs: Any) -> Any:
        return await host_io.connect_accepted_socket(self, protocol_factory, sock, kwargs)

    async def sendfile(
        self,
        transport: Any,
        file: Any,
        offset: int = 0,
        count: Any = None,
        *,
        fallback: bool = True,
    ) -> Any:
        return await host_io.sendfile(self, transport, file, offset, count, fallback)

    async def start_tls(self, transport: Any, protocol: Any, sslcontext: Any, **kwargs: Any) -> Any:
        return await host_io.start_tls(self, transport, protocol, sslcontext, kwargs)

    def add_reader(self, fd: Any, callback: Any, *args: Any) -> None:
        host_io.watch(self, fd, "r", callback, args)

    def add_writer(self, fd: Any, callback: Any, *args: Any) -> None:
        host_io.watch(self, fd, "w", callback, args)

    def remove_reader(self, fd: Any) -> bool:
        return host_io.unwatch(self, fd, "r")

    def remove_writer(self, fd: Any) -> bool:
        return host_io.unwatch(self, fd, "w")

    async def sock_recv(self, sock: Any, nbytes: int) -> Any:
        return await host_io.sock_call(self, "recv", "sock_recv()", sock, nbytes)

    async def sock_recv_into(self, sock: Any, buf: Any) -> Any:
        return await host_io.sock_call(self, "recv_into", "sock_recv_into()", sock, buf)

    async def sock_recvfrom(self, sock: Any, bufsize: int) -> Any:
        return await host_io.sock_call(self, "recvfrom", "sock_recvfrom()", sock, bufsize)

    async def sock_recvfrom_into(self, sock: Any, buf: Any, nbytes: int = 0) -> Any:
        call = "sock_recvfrom_into()"
        return await host_io.sock_call(self, "recvfrom_into", call, sock, buf, nbytes)

    async def sock_sendall(self, sock: Any, data: Any) -> Any:
        return await host_io.sock_call(self, "sendall", "sock_sendall()", sock, data)

    async def sock_sendto(self, sock: Any, data: Any, address: Any) -> Any:
        return await host_io.sock_call(self, "sendto", "sock_sendto()", sock, data, address)

    async def sock_connect(self, sock: Any, address: Any) -> Any:
        call = f"sock_connect({address!r})"
        return await host_io.sock_call(self, "connect", call, sock, address)

    async def sock_accept(self, sock: Any) -> Any:
        return await host_io.sock_call(self, "accept", "sock_accept()", sock)

    async def sock_sendfile(
        self, sock: Any, file: Any, offset: int = 0, count: Any = None, *, fallback: bool = True
    ) -> Any:
        call = "sock_sendfile()"
        return await host_io.sock_call(self, "sendfile", call, sock, file, offset, count, fallback)

    # What no host serves: a pipe, a child process or a signal is real.

    async def connect_read_pipe(self, protocol_factory: Any, pipe: Any) -> Any:
        refuse("connect_read_pipe()", IO_HINT)

    async def connect_write_pipe(self, protocol_factory: Any, pipe: Any) -> Any:
        refuse("connect_write_pipe()", IO_HINT)

    async def subprocess_shell(self, protocol_factory: Any, cmd: Any, **kwargs: Any) -> Any:
        refuse(
            f"subprocess_shell({cmd!r}) (and asyncio.create_subprocess_shell)",
            "A subprocess runs outside the simulation: fake it with a node, or run it outside.",
        )

    async def subprocess_exec(self, protocol_factory: Any, *args: Any, **kwargs: Any) -> Any:
        refuse(
            f"subprocess_exec{args!r} (and asyncio.create_subprocess_exec)",
            "A subprocess runs outside the simulation: fake it with a node, or run it outside.",
        )

    def add_signal_handler(self, sig: int, callback: Any, *args: Any) -> None:
        refuse(
            f"add_signal_handler({sig!r})",
            "Signals arrive at real, unrepeatable moments; askew does not simulate them yet.",
        )

    def remove_signal_handler(self, sig: int) -> bool:
        return False
