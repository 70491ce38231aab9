# SPDX-License-Identifier: Apache-2.0
"""The reference's promise: every public name has a docstring, and every
argument of simulate, Replay.run, new_event_loop, the world's methods and
askew.check's functions is named in the docstring that documents it."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import askew
from askew import check
from askew._world.clock import Clock
from askew._world.faults import Faults
from askew._world.log import Log
from askew._world.net import Network
from askew._world.node import NodeHandle


def _methods(cls: type) -> Iterator[tuple[str, Callable[..., Any]]]:
    for name, member in inspect.getmembers(cls, inspect.isfunction):
        if not name.startswith("_"):
            yield f"{cls.__name__}.{name}", member


def _documented() -> list[tuple[str, Callable[..., Any]]]:
    found: list[tuple[str, Callable[..., Any]]] = [
        ("simulate", askew.simulate),
        ("Replay.run", askew.Replay.run),
        ("new_event_loop", askew.new_event_loop),
    ]
    for cls in (askew.World, Clock, Network, Faults, Log, NodeHandle, askew.History):
        found += _methods(cls)
    found += [
        (f"check.{name}", fn)
        for name, fn in inspect.getmembers(check, inspect.isfunction)
        if not name.startswith("_") and fn.__module__.startswith("askew")
    ]
    return found


def test_every_public_name_has_a_docstring() -> None:
    for name in askew.__all__:
        assert inspect.getdoc(getattr(askew, name)), name


@pytest.mark.parametrize(("name", "fn"), _documented(), ids=[n for n, _ in _documented()])
def test_every_argument_is_named_in_its_docstring(name: str, fn: Callable[..., Any]) -> None:
    doc = inspect.getdoc(fn) or ""
    assert doc, f"{name} has no docstring"
    missing = [
        p
        for p in inspect.signature(fn).parameters
        if p not in ("self", "cls") and not re.search(rf"\b{re.escape(p)}\b", doc)
    ]
    assert missing == [], f"{name}'s docstring does not name {missing}"
