# SPDX-License-Identifier: Apache-2.0
"""The one call the corpus makes that differs per tool: a buggify point.

askew's `askew.buggify` by default; `bugs._peers` swaps in simloom's
`sometimes` or, on simloop (which has no buggify), a seeded coin.
"""

from __future__ import annotations

from collections.abc import Callable

import askew

_impl: Callable[[str, float], bool] = askew.buggify


def buggify(name: str, probability: float) -> bool:
    """True when the point `name` fires in this run (askew: active in a
    seeded quarter of runs, then firing with `probability` on each reach)."""
    return _impl(name, probability)


def use(impl: Callable[[str, float], bool]) -> Callable[[str, float], bool]:
    """Route buggify points to `impl`; returns the previous one."""
    global _impl
    old, _impl = _impl, impl
    return old
