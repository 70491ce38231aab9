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

import _thread
import contextlib
import signal
from collections.abc import Iterator
from types import FrameType
from typing import Any

_main = _thread.get_ident()  # the thread that imported askew: Python's main thread
_setsignal = signal.signal
_getsignal = signal.getsignal
_raise_signal = signal.raise_signal


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT for the block (on the main thread, when its handler is
    one Python can restore); the host's handler runs at the end if one came."""
    old = _getsignal(signal.SIGINT) if _thread.get_ident() == _main else None
    if old is None:  # not the main thread, or a handler set outside Python
        yield
        return
    came: list[FrameType | None] = []

    def note(signum: int, frame: FrameType | None) -> None:
        came.append(frame)

    _setsignal(signal.SIGINT, note)
    try:
        yield
    finally:
        _setsignal(signal.SIGINT, old)
        if came:
            _deliver(old, came[0])


def _deliver(handler: Any, frame: FrameType | None) -> None:
    if callable(handler):
        handler(signal.SIGINT, frame)
    elif handler == signal.SIG_DFL:
        _raise_signal(signal.SIGINT)  # the host would have died of it: so it does
