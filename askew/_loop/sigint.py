# SPDX-License-Identifier: Apache-2.0
"""Ctrl-C held over the few steps that put the process back as it was.

A SIGINT runs its Python handler at whatever line the main thread reaches
next, and the default handler raises KeyboardInterrupt there. Landing
halfway through a scope's patches or their undoing, it would leave some
names patched for the rest of the process. While `held()` is in force the
handler only notes the signal; at the block's end the host's own handler
runs for it, once, where everything is whole again (decision: a Ctrl-C is
never lost and never splits a set-up or a restoration; it lands after it).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # C, with no stub: signal.py's own base
import _thread
import signal
from types import FrameType, TracebackType
from typing import Any

_main = _thread.get_ident()  # the thread that imported askew: Python's main thread
# The C functions under signal.signal and signal.getsignal: those wrappers
# turn the handler to and from an enum in Python, and Handlers(handler) for
# a handler that is a function raises and catches a ValueError inside enum,
# three times a hold; every run holds SIGINT at its loop's end (issue 23).
# The handlers are the same objects; SIG_DFL and SIG_IGN come back as the
# ints they equal.
_setsignal: Any = _signal.signal
_getsignal: Any = _signal.getsignal
_raise_signal: Any = _signal.raise_signal
_SIGINT = int(signal.SIGINT)


class held:
    """Hold SIGINT for the block (on the main thread, when its handler is
    one Python can restore); the host's handler runs at the end if one came.
    A class, not a generator-based context manager: every run enters one."""

    __slots__ = ("_came", "_old")

    def __enter__(self) -> None:
        self._old = _getsignal(_SIGINT) if _thread.get_ident() == _main else None
        self._came: list[FrameType | None] = []
        if self._old is not None:  # else not the main thread, or a handler set outside Python
            _setsignal(_SIGINT, self._note)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self._came.append(frame)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        old = self._old
        if old is None:
            return
        _setsignal(_SIGINT, old)
        if self._came:
            _deliver(old, self._came[0])


def _deliver(handler: Any, frame: FrameType | None) -> None:
    if callable(handler):
        handler(_SIGINT, frame)
    elif handler == signal.SIG_DFL:
        _raise_signal(_SIGINT)  # the host would have died of it: so it does
