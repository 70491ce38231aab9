# SPDX-License-Identifier: Apache-2.0
"""Who the host is, as Python code asks it inside a run: each node is a
machine of its own.

Inside a simulation (on its thread) `socket.gethostname()`,
`os.uname().nodename`, `platform.node()` and `platform.uname().node` are the
running node's hostname (the world's name for it; "localhost" for the test
body), and `os.getpid()`, `os.getppid()`, `threading.get_ident()` and
`threading.get_native_id()` its ids, seeded from the run's seed for the
node's incarnation (a restarted node is a new process), so logging's
`%(process)d` and `%(thread)d` replay on any machine. The values come from
askew._core, which C code's getpid and gethostname also read under the
preload. What stays consistent with them: `threading.current_thread()`
still finds the thread (threading keeps threads by their real ident), the
simulation thread's `Thread.ident` and `native_id` read the node's, a
signal to the node's pid (`os.kill(os.getpid(), ...)`) or thread
(`signal.pthread_kill`) reaches this process and thread, one to any other
pid or to a process group is refused (a seeded pid may be a real
process's), and `sys._current_frames()` is keyed by the node's ident for
this thread.
Outside a simulation every one of these is the host's. askew's own code
asks `_thread.get_ident`, which is never patched. Installed by the scope
(askew/_loop/patches.py), put back when it closes; a world names each node
with `name_node` when it spawns it.
"""

from __future__ import annotations

import _thread
import os
import platform
import signal
import socket
import sys
import threading
from typing import Any

from .. import _core
from . import threads
from .refusal import refuse

_virtual: Any = _core.virtual
_identity = _core._identity

_gethostname = socket.gethostname
_uname = os.uname
_getpid = os.getpid
_getppid = os.getppid
_kill = os.kill
_killpg = os.killpg
_get_ident = _thread.get_ident
_get_native_id = _thread.get_native_id
_current_thread = threading.current_thread
_pthread_kill = signal.pthread_kill
_current_frames = sys._current_frames
_platform_uname = platform.uname
_thread_ident: property = threading.Thread.ident  # type: ignore[assignment]
_thread_native_id: property = threading.Thread.native_id  # type: ignore[assignment]
# platform.uname() caches the host's answer on first use: take it now, with
# the real os.uname, so a first call inside a run cannot cache a node's.
_platform_uname()


# Linux keeps a hostname in 64 bytes (HOST_NAME_MAX, utsname's nodename).
HOSTNAME_MAX = 64


def name_node(node: int, hostname: str) -> None:
    """The hostname node `node` reports inside a run (World.spawn calls it).
    A name longer than a kernel's hostname can be (a long FQDN) reports its
    first label, as a host named by its short name does."""
    if len(hostname) > HOSTNAME_MAX:
        hostname = hostname.split(".", 1)[0]
    _core._name_node(node, hostname)


def _node() -> tuple[str, int, int, int] | None:
    """The running node's (hostname, pid, ppid, ident) inside a simulation,
    on its thread; None anywhere else."""
    if not _virtual.in_simulation():
        return None
    return _identity()


def gethostname() -> str:
    me = _node()
    return _gethostname() if me is None else me[0]


def uname() -> os.uname_result:
    real = _uname()
    me = _node()
    if me is None:
        return real
    return os.uname_result((real.sysname, me[0], real.release, real.version, real.machine))


def platform_uname() -> Any:
    real = _platform_uname()
    me = _node()
    if me is None:
        return real
    # Not _replace: it iterates the result, which asks for `processor`, which
    # platform finds lazily with a subprocess (refused inside a run).
    node = type(real)(real.system, me[0], real.release, real.version, real.machine)
    if "processor" in vars(real):
        vars(node)["processor"] = vars(real)["processor"]
    return node


def platform_node() -> str:
    return str(platform_uname().node)


def getpid() -> int:
    me = _node()
    return _getpid() if me is None else me[1]


def getppid() -> int:
    me = _node()
    return _getppid() if me is None else me[2]


# A thread of the run (askew/_loop/threads.py) is the node's thread number n:
# its ids are the main thread's moved on by n, distinct and the seed's.
_THREAD_IDENT_STEP = 4096


def get_ident() -> int:
    me = _node()
    return _get_ident() if me is None else me[3] + threads.actor_number() * _THREAD_IDENT_STEP


def get_native_id() -> int:
    # The simulation thread is the node's main thread: its tid is its pid.
    me = _node()
    return _get_native_id() if me is None else me[1] + threads.actor_number()


def current_thread() -> threading.Thread:
    # threading keeps its threads by their real ident; its own
    # current_thread would look the node's up, miss, and make a dummy.
    return threading._active.get(_get_ident()) or _current_thread()  # type: ignore[attr-defined]


def _is_simulation_thread(thread: threading.Thread) -> bool:
    return _real(_thread_ident, thread) == _get_ident() and _node() is not None


def _real(prop: property, thread: threading.Thread) -> int | None:
    value: int | None = prop.fget(thread) if prop.fget is not None else None
    return value


def _ident(thread: threading.Thread) -> int | None:
    return get_ident() if _is_simulation_thread(thread) else _real(_thread_ident, thread)


def _native_id(thread: threading.Thread) -> int | None:
    if _is_simulation_thread(thread):
        return get_native_id()
    return _real(_thread_native_id, thread)


_KILL_HINT = (
    "A node is a process of its own: os.getpid() is its pid, and a signal to it reaches "
    "this process; signal other nodes with node.send, or run this code outside the run."
)


def kill(pid: int, signalnum: int) -> None:
    me = _node()
    if me is not None:
        if pid != me[1] and pid != _getpid():
            refuse(f"os.kill({pid}, ...)", _KILL_HINT, "would signal a process outside the run")
        pid = _getpid()
    _kill(pid, signalnum)


def killpg(pgid: int, signalnum: int) -> None:
    if _node() is not None:
        refuse("os.killpg()", _KILL_HINT, "would signal processes outside the run")
    _killpg(pgid, signalnum)


def pthread_kill(thread_id: int, signalnum: int) -> None:
    me = _node()
    if me is not None and thread_id == me[3]:
        thread_id = _get_ident()  # the node's main thread is this one
    _pthread_kill(thread_id, signalnum)


def current_frames() -> dict[int, Any]:
    frames = _current_frames()
    me = _node()
    if me is not None and _get_ident() in frames:
        frames[me[3]] = frames.pop(_get_ident())
    return frames


def install(names: Any) -> None:
    """Put the node's identity over the host's (a NameSwap: the scope puts
    every name back when it closes)."""
    names.set(socket, "gethostname", gethostname)
    names.set(os, "uname", uname)
    names.set(platform, "uname", platform_uname)
    names.set(platform, "node", platform_node)
    names.set(os, "getpid", getpid)
    names.set(os, "getppid", getppid)
    names.set(threading, "get_ident", get_ident)
    names.set(threading, "get_native_id", get_native_id)
    names.set(threading, "current_thread", current_thread)
    names.set(threading.Thread, "ident", property(_ident))
    names.set(threading.Thread, "native_id", property(_native_id))
    names.set(os, "kill", kill)
    names.set(os, "killpg", killpg)
    names.set(signal, "pthread_kill", pthread_kill)
    names.set(sys, "_current_frames", current_frames)
