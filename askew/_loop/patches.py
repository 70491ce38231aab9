# SPDX-License-Identifier: Apache-2.0
"""Python-level determinism around a run: time, random, entropy, threads, gc.

While a scope is open, time.time/monotonic/perf_counter/process_time/
thread_time (and _ns forms), time.sleep and os.urandom are askew's C
functions, which read virtual time and the entropy stream on the simulation
thread (where a sleep consumes virtual time and returns at once) and call the
originals anywhere else; os.times, resource.getrusage and the time module's
calendar functions (localtime, gmtime, ctime, asctime, strftime) with no time
given read virtual clocks too; the local time zone is UTC (TZ=UTC, unless the
run sets its own); logging's start time is the run's wall epoch, so records'
relativeCreated count virtual time since it; the global `random` module is
reseeded from the run's seed at every run start, and so is numpy's legacy
global generator (`np.random.seed`, `rand`, `randint`, `choice`) when numpy
is loaded, from a stream of its own, and uuid1's last timestamp is
forgotten (docs/determinism.md lists what is reset and what is not);
Thread.start is refused on the simulation thread; the cyclic gc only runs
when the loop says.

The rest of what the Python layer can reach, on the simulation thread only:
an unseeded `random.Random()` (and `random.seed()`), `random.SystemRandom`,
`secrets` and tempfile's names draw from the entropy stream; subprocesses,
`os.fork`/`system`/`posix_spawn`/`exec*`, `_thread.start_new_thread`, I/O
on `socket.socket` objects and the resolver functions of `socket` are
refused. What holds a C function directly (`_socket`, `from os import fork`
taken before the run, a `datetime` class imported by name) only
askew-exec's preload catches. Closing the scope restores every one of
these, also after an exception.
"""

from __future__ import annotations

import _random
import _thread
import datetime
import gc
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import _core
from ..errors import NondeterminismError
from . import identity, sigint, threadsync
from .refusal import IO_HINT, PROCESS_HINT, refusing

_virtual: Any = _core.virtual
_TIME_NAMES = (
    "time",
    "time_ns",
    "monotonic",
    "monotonic_ns",
    "perf_counter",
    "perf_counter_ns",
    "process_time",
    "process_time_ns",
    "thread_time",
    "thread_time_ns",
    "sleep",
)
_real_datetime = datetime.datetime
_real_date = datetime.date
_original_localtime = time.localtime
_original_gmtime = time.gmtime
_original_strftime = time.strftime
_original_times = os.times
try:
    import resource

    _original_getrusage: Any = resource.getrusage
except ImportError:  # not on every platform
    resource = None  # type: ignore[assignment]


def _localtime(secs: float | None = None) -> time.struct_time:
    return _original_localtime(time.time() if secs is None else secs)


def _gmtime(secs: float | None = None) -> time.struct_time:
    return _original_gmtime(time.time() if secs is None else secs)


def _ctime(secs: float | None = None) -> str:
    return time.asctime(_localtime(secs))


def _asctime(t: Any = None) -> str:
    return _original_asctime(_localtime() if t is None else t)


def _strftime(fmt: str, t: Any = None) -> str:
    return _original_strftime(fmt, _localtime() if t is None else t)


_original_asctime = time.asctime
_original_ctime = time.ctime


class _StandIn(type):
    """The metaclass of the stand-ins below: real datetimes and dates are
    instances of them, and the real classes subclasses, so isinstance and
    issubclass checks in the code under test see no difference."""

    _real: type

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls._real)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls._real)


class _Datetime(_real_datetime, metaclass=_StandIn):
    """datetime.datetime during a run: now(), today() and utcnow() read the
    node's virtual wall clock (C code calls clock_gettime, which only the
    preload reaches). Everything it makes is a real datetime."""

    _real = _real_datetime

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _real_datetime(*args, **kwargs)

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        return _real_datetime.fromtimestamp(time.time(), tz)

    @classmethod
    def today(cls) -> Any:
        return _real_datetime.fromtimestamp(time.time())

    @classmethod
    def utcnow(cls) -> Any:
        return _real_datetime.fromtimestamp(time.time(), datetime.UTC).replace(tzinfo=None)


class _Date(_real_date, metaclass=_StandIn):
    """datetime.date during a run: today() reads the virtual wall clock."""

    _real = _real_date

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        return _real_date(*args, **kwargs)

    @classmethod
    def today(cls) -> Any:
        return _real_date.fromtimestamp(time.time())


def _times() -> os.times_result:
    # CPU time is the node's virtual CPU time (askew_preload.h), all of it
    # user time; no children ran; `elapsed` is the node's monotonic clock.
    cpu = time.process_time()
    return os.times_result((cpu, 0.0, 0.0, 0.0, time.monotonic()))


def _getrusage(who: int) -> Any:
    real = _original_getrusage(who)
    cpu = time.process_time() if who != resource.RUSAGE_CHILDREN else 0.0
    return resource.struct_rusage((cpu, 0.0, *tuple(real)[2:]))


_original_start = threading.Thread.start
_seed_generator = _random.Random.seed
_original_random_seed = random.Random.seed
_ABSENT = object()  # a name an owner inherits rather than defines
# Blocking I/O on socket.socket objects, made before the run or in it.
_SOCKET_METHODS = (
    "accept",
    "bind",
    "connect",
    "connect_ex",
    "listen",
    "recv",
    "recv_into",
    "recvfrom",
    "recvfrom_into",
    "recvmsg",
    "recvmsg_into",
    "send",
    "sendall",
    "sendfile",
    "sendmsg",
    "sendto",
)
# The resolver: each call is a real query whose answer would feed the run.
_RESOLVER_NAMES = (
    "getaddrinfo",
    "gethostbyname",
    "gethostbyname_ex",
    "gethostbyaddr",
    "getnameinfo",
    "getfqdn",
)
_PROCESS_NAMES = (
    "fork",
    "forkpty",
    "system",
    "posix_spawn",
    "posix_spawnp",
    "execv",
    "execve",
)


class NameSwap:
    """Names replaced on modules and classes, put back in reverse order. The
    raw dictionary entry is saved, so a function, a descriptor or a method
    comes back exactly as it was."""

    def __init__(self) -> None:
        self._saved: list[tuple[Any, str, Any]] = []

    def set(self, owner: Any, name: str, value: Any) -> None:
        self._saved.append((owner, name, vars(owner).get(name, _ABSENT)))
        setattr(owner, name, value)

    def undo(self) -> None:
        with sigint.held():  # never half undone (askew/_loop/sigint.py)
            while self._saved:
                owner, name, value = self._saved.pop()
                if value is _ABSENT:  # it was inherited: uncover the base's again
                    delattr(owner, name)
                else:
                    setattr(owner, name, value)


class Nesting:
    """How deep the opens of one patch set are: the outermost open installs
    it and its matching close restores it; nested opens only count."""

    def __init__(self) -> None:
        self.depth = 0

    @property
    def open(self) -> bool:
        return self.depth > 0

    def enter(self) -> bool:
        """Count an open; True for the outermost, which must install."""
        self.depth += 1
        return self.depth == 1

    def exit(self) -> bool:
        """Count a close (one with nothing open is ignored); True for the
        outermost, which must restore."""
        if self.depth == 0:
            return False
        self.depth -= 1
        return self.depth == 0


def _seeded_seed(self: random.Random, a: Any = None, version: int = 2) -> None:
    # random.Random() and random.seed() with no seed read os-level entropy in
    # C; inside a run, they take it from the run's entropy stream instead.
    if a is None and _virtual.in_simulation():
        a = int.from_bytes(_virtual.urandom(32), "little")
    _original_random_seed(self, a, version)


def _module_seed(a: Any = None, version: int = 2) -> None:
    # random.seed is the module generator's bound method, taken at import:
    # look the method up again so the patched class attribute applies.
    random._inst.seed(a, version)


def _refusing_start(self: threading.Thread) -> None:
    if _virtual.in_simulation():
        refusal = NondeterminismError(
            f"threading.Thread.start() for {self.name!r} inside a simulation: a real thread "
            "runs outside the seed's control with executor="
            f"{'refuse'!r}. Use executor='threads' (threads that run only when the seed "
            "says), a task (asyncio.create_task), or executor='inline' for blocking work "
            "handed to asyncio.to_thread."
        )
        _core._note_refusal(refusal)  # caught or not, the run fails after this step
        raise refusal
    _original_start(self)


class Scope:
    """One open scope per process at a time; nested opens share it."""

    def __init__(self) -> None:
        self._nesting = Nesting()
        self._names = NameSwap()
        self._saved_random: Any = None
        # Process-global generators beside `random` (numpy's legacy one,
        # uuid1's last timestamp), saved at the outermost open.
        self._saved_globals: list[tuple[Any, Any]] = []
        self._gc_was_enabled = False
        self._saved_tz: str | None = None
        self._saved_tzname: tuple[str, str] = time.tzname
        self._saved_log_start: Any = None
        # What layers above add to every scope, in the order they were
        # registered, after the loop's own patches (askew/_net/patches.py
        # adds simulated sockets and names).
        self.extensions: list[Callable[[NameSwap], None]] = []

    @property
    def open(self) -> bool:
        return self._nesting.open

    @property
    def depth(self) -> int:
        """How many opens are not yet closed. A caller that may be stopped
        by a Ctrl-C at any line notes it before its open and closes only if
        the depth grew: the open is whole or not done at all."""
        return self._nesting.depth

    def enter(self, wall_epoch_ns: int = _core.WALL_EPOCH * 1_000_000_000) -> None:
        """Open the scope; the outermost open sets logging's start time to
        the run's wall epoch (RunConfig.wall_epoch_ns). A Ctrl-C that comes
        meanwhile is raised once it is whole (askew/_loop/sigint.py)."""
        with sigint.held():
            self._enter(wall_epoch_ns)

    def _enter(self, wall_epoch_ns: int) -> None:
        if not self._nesting.enter():
            return
        self._saved_random = random.getstate()
        self._saved_globals[:] = _save_globals()  # one list for good: a run leaves no new one
        self._gc_was_enabled = gc.isenabled()
        try:
            for name in _TIME_NAMES:
                self._names.set(time, name, getattr(_virtual, name))
            self._names.set(os, "urandom", _virtual.urandom)
            self._names.set(os, "times", _times)
            if resource is not None:
                self._names.set(resource, "getrusage", _getrusage)
            for name, fn in (
                ("localtime", _localtime),
                ("gmtime", _gmtime),
                ("ctime", _ctime),
                ("asctime", _asctime),
                ("strftime", _strftime),
            ):
                self._names.set(time, name, fn)
            self._names.set(datetime, "datetime", _Datetime)
            self._names.set(datetime, "date", _Date)
            threadsync.install(self._names, _refusing_start)
            identity.install(self._names)
            self._enter_host_state(wall_epoch_ns)
            self._close_python_escapes()
            gc.disable()
        except BaseException:
            self.exit()  # the outermost open failed: undo what it did
            raise

    def _close_python_escapes(self) -> None:
        names = self._names
        # Entropy: SystemRandom (and so `secrets`) reads random._urandom; an
        # unseeded Random seeds itself from C's entropy; tempfile keeps one
        # name generator per process, dropped here so the run makes its own.
        names.set(random, "_urandom", _virtual.urandom)
        names.set(random.Random, "seed", _seeded_seed)
        names.set(random, "seed", _module_seed)
        names.set(tempfile, "_name_sequence", None)
        # Processes and raw threads.
        names.set(
            subprocess.Popen,
            "_execute_child",
            refusing(
                "subprocess (Popen, run, check_output, ...)",
                subprocess.Popen._execute_child,  # type: ignore[attr-defined]
                "would start a real process",
                PROCESS_HINT,
            ),
        )
        for name in _PROCESS_NAMES:
            if hasattr(os, name):
                names.set(
                    os,
                    name,
                    refusing(
                        f"os.{name}()",
                        getattr(os, name),
                        "would start a real process",
                        PROCESS_HINT,
                    ),
                )
        for name in ("start_new_thread", "start_new", "start_joinable_thread"):
            if hasattr(_thread, name):
                names.set(
                    _thread,
                    name,
                    refusing(
                        f"_thread.{name}()",
                        getattr(_thread, name),
                        "would start a real thread, outside the seed's control",
                        "Use a task (asyncio.create_task) instead.",
                    ),
                )
        # Sockets: blocking I/O and name resolution.
        for name in _SOCKET_METHODS:
            if hasattr(socket.socket, name):
                names.set(
                    socket.socket,
                    name,
                    refusing(
                        f"socket.{name}()",
                        getattr(socket.socket, name),
                        "would do real I/O, outside the seed's control",
                        IO_HINT,
                    ),
                )
        for name in _RESOLVER_NAMES:
            names.set(
                socket,
                name,
                refusing(
                    f"socket.{name}()",
                    getattr(socket, name),
                    "would send a real DNS query",
                    IO_HINT,
                ),
            )
        # Last, what the host's resources put over these: a world's node gets
        # simulated sockets and names (askew/_net/patches.py).
        for extend in self.extensions:
            extend(names)

    def exit(self) -> None:
        with sigint.held():
            self._exit()

    def _exit(self) -> None:
        if not self._nesting.exit():
            return
        self._names.undo()
        self._exit_host_state()
        if self._saved_random is not None:
            random.setstate(self._saved_random)
        _restore_globals(self._saved_globals)
        self._saved_globals.clear()
        if self._gc_was_enabled:
            gc.enable()
        self._saved_random = None

    def _enter_host_state(self, wall_epoch_ns: int) -> None:
        """The host's time zone and logging's start time stay outside: a run
        reads UTC and counts log times from its wall epoch."""
        self._saved_tz = os.environ.get("TZ")
        self._saved_tzname = time.tzname
        os.environ["TZ"] = "UTC"
        time.tzset()
        logging = sys.modules.get("logging")
        if logging is not None:
            self._saved_log_start = logging._startTime
            # 3.13 keeps nanoseconds (an int), older versions seconds.
            start: float = wall_epoch_ns
            if not isinstance(self._saved_log_start, int):
                start = wall_epoch_ns / 1e9
            logging._startTime = start  # type: ignore[attr-defined]

    def _exit_host_state(self) -> None:
        if self._saved_tz is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = self._saved_tz
        time.tzset()
        if time.tzname == self._saved_tzname:
            # The very tuple the host had, not tzset's new equal one: a run
            # leaves no object behind (grpclib's leak test).
            time.tzname = self._saved_tzname
        self._saved_tz = None
        logging = sys.modules.get("logging")
        if logging is not None and self._saved_log_start is not None:
            logging._startTime = self._saved_log_start  # type: ignore[attr-defined]
        self._saved_log_start = None

    @staticmethod
    def reseed(seed: int) -> None:
        """Reset the process-global state a run can read for the run `seed`:
        the global `random` module, numpy's legacy generator (if loaded),
        tempfile's name generator and uuid1's last timestamp."""
        # What random.seed(int) does, without the Python wrapper's checks:
        # seed the module's generator in C and forget a cached gauss value.
        inst: Any = random._inst
        _seed_generator(inst, _core.seed_stream(seed, _core.STREAM_PYRANDOM))
        inst.gauss_next = None
        # Each run names its temporary files from its own entropy.
        tempfile._name_sequence = None  # type: ignore[attr-defined]
        np_random = sys.modules.get("numpy.random")
        if np_random is not None:
            word = int(_core.seed_stream(seed, _core.STREAM_NUMPY))
            np_random.seed([word & 0xFFFFFFFF, word >> 32])
        uuid = sys.modules.get("uuid")
        if uuid is not None:
            # uuid1 never repeats a timestamp: the last one would carry over.
            uuid._last_timestamp = None  # type: ignore[attr-defined]


def _save_globals() -> list[tuple[Any, Any]]:
    """What Scope.reseed changes beside `random`, as (module, state)."""
    saved: list[tuple[Any, Any]] = []
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        saved.append((np_random, np_random.get_state()))
    uuid = sys.modules.get("uuid")
    if uuid is not None:
        saved.append((uuid, uuid._last_timestamp))
    return saved


def _restore_globals(saved: list[tuple[Any, Any]]) -> None:
    for module, state in saved:
        if module.__name__ == "uuid":
            module._last_timestamp = state
        else:
            module.set_state(state)


scope = Scope()
