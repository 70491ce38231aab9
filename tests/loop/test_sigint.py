# SPDX-License-Identifier: Apache-2.0
"""A Ctrl-C held over a set-up or a restoration (askew/_loop/sigint.py)
lands once, at the block's end, and only there."""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

import pytest

from askew._loop import sigint


@pytest.fixture(autouse=True)
def python_sigint() -> Iterator[None]:
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def test_a_sigint_in_a_held_block_is_raised_at_its_end() -> None:
    done = []
    with pytest.raises(KeyboardInterrupt):
        with sigint.held():
            signal.raise_signal(signal.SIGINT)
            done.append("the rest of the block")
    assert done == ["the rest of the block"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_two_sigints_in_a_held_block_are_one_ctrl_c() -> None:
    raised = 0
    try:
        with sigint.held():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
    except KeyboardInterrupt:
        raised += 1
    assert raised == 1


def test_an_ignored_sigint_stays_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with sigint.held():
        signal.raise_signal(signal.SIGINT)
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_off_the_main_thread_the_block_just_runs() -> None:
    seen: list[object] = []

    def other() -> None:
        with sigint.held():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]


def test_holding_sigint_calls_no_python_function_but_its_own() -> None:
    """Every run holds SIGINT: its handler is swapped through the C
    functions under signal.signal, not the wrappers that turn each handler
    to and from an enum in Python (issue 23)."""
    calls: list[str] = []

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event == "call":
            calls.append(f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_code.co_name}")

    sys.setprofile(hook)
    try:
        with sigint.held():
            pass
    finally:
        sys.setprofile(None)
    assert [c for c in calls if not c.startswith("sigint.py:")] == []
