# SPDX-License-Identifier: Apache-2.0
"""Where code is: askew's own files, and where a pending task waits. The
loop's deadlock report and the failure report name a waiting task's line
with describe_wait; askew's frames are told from the user's by PACKAGE_DIR."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from .text import safe_repr

# askew's own directory, with a trailing separator: frames under it are askew's.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def describe_wait(task: asyncio.Task[Any]) -> str:
    """Where a pending task is suspended: the innermost frame outside asyncio
    (the user's line), the innermost frame if that differs, and what it awaits."""
    coro: Any = task.get_coro()
    frames = []
    awaited: Any = None
    while coro is not None:
        f = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if f is None:
            break
        frames.append(f)
        nxt = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
        if nxt is None or not (hasattr(nxt, "cr_frame") or hasattr(nxt, "gi_frame")):
            awaited = nxt
            break
        coro = nxt
    if not frames:
        return "<no frame>"
    asyncio_dir = asyncio.__file__.rsplit("/", 1)[0] + "/"
    user = [f for f in frames if not f.f_code.co_filename.startswith(asyncio_dir)]
    shown = user[-1] if user else frames[-1]
    where = _frame_text(shown)
    if shown is not frames[-1]:
        where += f" (in {_frame_text(frames[-1])})"
    waiting = getattr(task, "_fut_waiter", None) or awaited
    if waiting is not None:
        where += f", awaiting {_short(waiting)}"
    return where


def _frame_text(frame: Any) -> str:
    return f"{frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}()"


def _short(obj: Any) -> str:
    text = safe_repr(obj)  # a deadlock report must survive any user __repr__
    return text if len(text) <= 120 else text[:117] + "..."
