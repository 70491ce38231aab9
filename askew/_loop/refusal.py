# SPDX-License-Identifier: Apache-2.0
"""Refusals: what askew raises when code inside a run reaches something
outside the seed's control. Every refusal is noted with the C loop before it
is raised (askew__refusal_note), so a caller that catches it still fails the
run after the step. The one place that words and raises them for Python
callers; the preload's are raised by the binding (ext/refusal.c)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from .. import _core
from ..errors import NondeterminismError

_virtual: Any = _core.virtual

IO_HINT = (
    "Use askew's simulated network between nodes (node.send / node.recv), "
    "or run this code outside the simulation."
)
PROCESS_HINT = (
    "A child process runs outside the seed's control: fake it with a node, or run it outside."
)


def refuse(
    call: str, instead: str, why: str = "would do real I/O, outside the seed's control"
) -> NoReturn:
    """Refuse `call`: "<call> inside a simulation <why>. <instead>"."""
    raise_refusal(f"{call} inside a simulation {why}. {instead}")


def raise_refusal(message: str) -> NoReturn:
    refusal = NondeterminismError(message)
    # Noted first: if the caller catches it, the run still fails after this step.
    _core._note_refusal(refusal)
    raise refusal


def refusing(call: str, original: Any, why: str, instead: str) -> Callable[..., Any]:
    """`original`, refused on the simulation thread and passed through on any
    other (a thread started before the run, pytest's own machinery)."""

    def refusing(*args: Any, **kwargs: Any) -> Any:
        if _virtual.in_simulation():
            refuse(call, instead, why)
        return original(*args, **kwargs)

    refusing.__name__ = getattr(original, "__name__", call)
    refusing.__doc__ = getattr(original, "__doc__", None)
    return refusing
