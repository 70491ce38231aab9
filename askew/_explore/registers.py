# SPDX-License-Identifier: Apache-2.0
"""What askew.check.linearizable decides about a register's history before,
or instead of, its search: cheap checks that grow with n log n, not 2^n.

- Impossible reads: a read of a value that no write invoked before the read
  returned could have written (nor the initial value), or whose every write
  is overwritten in real time (the write returned before another write
  began, which returned before the read began). Rejected at once, with the
  few operations that prove it as the window.
- Zones (Gibbons and Korach, "Testing shared memories", 1997): when every
  operation returned, only reads and writes occur and each value is written
  once, a history is linearizable exactly when each value's cluster (its
  write and its reads) has a zone, from the cluster's earliest return to
  its latest invocation, such that no two forward zones (earliest return
  first) overlap and no backward zone lies inside a forward one. Decided
  in O(n log n) at any size, with the two clusters that conflict as the
  window.

A model opts in through Model.view (register() and kv() do): it tells a
read from a write and gives the value. Written from the paper's statement
of the conditions; called by askew/_explore/check.py only.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._world.history import OK, UNKNOWN, Operation

# What a model's view says of an operation: ("read", value returned),
# ("write", value written), ("cas", (old, new)), or None for anything else.
View = Callable[[Operation], tuple[str, Any] | None]
_Key = tuple[float, int, int]
_NEVER: _Key = (math.inf, 2, 0)  # the return of an operation that did not return
_START: _Key = (-math.inf, 0, 0)  # the initial value's write


@dataclass
class Decision:
    """A verdict reached without the search: linearizable or not, with the
    operations that show it (for a violation) and why, in words."""

    linearizable: bool
    how: str
    window: list[Operation] = field(default_factory=list)


def _ret(op: Operation, cut: _Key | None = None) -> _Key:
    """When op returned ok (by `cut`, if given), else never."""
    ret = op._return_key
    if op.status != OK or ret is None or (cut is not None and ret > cut):
        return _NEVER
    return ret


def _upto(ops: list[Operation], cut: _Key | None) -> list[Operation]:
    return ops if cut is None else [op for op in ops if op._invoke_key <= cut]


def _what(op: Operation) -> str:
    """An operation in a sentence: "node 2 read()"."""
    arg = "" if op.value is None else repr(op.value)
    who = "the world" if op.node is None else f"node {op.node}"
    return f"{who} {op.name}({arg})"


def _value(v: Any) -> Any:
    """A value as a dict key: unhashable values compare by repr."""
    try:
        hash(v)
    except TypeError:
        return ("unhashable", repr(v))
    return v


def impossible_read(
    ops: list[Operation], view: View, initial: Any, cut: _Key | None = None
) -> Decision | None:
    """A read no order of the history can explain, by written values and
    real-time order alone, or None. With `cut`, of the history up to that
    instant: what returned after it had not returned."""
    ops = _upto(ops, cut)
    writers: dict[Any, list[Operation]] = {}  # value -> operations that may write it
    overwriters: list[tuple[_Key, Operation, Any]] = []  # (return, op, value): took effect
    reads: list[tuple[Operation, Any]] = []
    for op in ops:
        seen = view(op)
        if seen is None:
            continue
        kind, v = seen
        done = _ret(op, cut) != _NEVER
        if kind == "read":
            if done and v is not UNKNOWN:
                reads.append((op, _value(v)))
        elif kind == "write":
            writers.setdefault(_value(v), []).append(op)
            if done:
                overwriters.append((_ret(op, cut), op, _value(v)))
        elif kind == "cas":
            _old, new = v
            if not done or op.result is not False:
                writers.setdefault(_value(new), []).append(op)
            if done and op.result is True:
                overwriters.append((_ret(op, cut), op, _value(new)))
    start = _value(initial)
    # Reads by invocation; overwriters by return: sweep, keeping the two
    # latest-invoked overwriters of distinct values that returned so far.
    overwriters.sort(key=lambda o: o[0])
    reads.sort(key=lambda r: r[0]._invoke_key)
    best: list[tuple[Operation, Any]] = []  # at most two, distinct values, latest first
    at = 0
    for read, v in reads:
        while at < len(overwriters) and overwriters[at][0] < read._invoke_key:
            _r, op, val = overwriters[at]
            at += 1
            best = sorted(
                [(op, val)] + [b for b in best if b[1] != val],
                key=lambda b: b[0]._invoke_key,
                reverse=True,
            )[:2]
        assert read._return_key is not None
        candidates = [w for w in writers.get(v, []) if w._invoke_key < read._return_key]
        if not candidates and v != start:
            later = writers.get(v, [])
            why = "a value no operation wrote" if not later else "a value written only after it"
            return Decision(
                False,
                f"{_what(read)} returned {v!r}: {why} (rejected before any search)",
                sorted([read, *later], key=lambda op: op._invoke_key),
            )
        beaten = next((b for b in best if b[1] != v), None)
        if beaten is None:
            continue
        latest = max([_ret(w, cut) for w in candidates] + ([_START] if v == start else []))
        over = beaten[0]
        if latest < over._invoke_key:
            return Decision(
                False,
                f"{_what(read)} returned {v!r}, but every write of it returned before "
                f"{_what(over)} began, which returned before the read began "
                "(rejected before any search)",
                sorted([*candidates, over, read], key=lambda op: op._invoke_key),
            )
    return None


def zones(
    ops: list[Operation], view: View, initial: Any, cut: _Key | None = None
) -> Decision | None:
    """The zone test, when it applies (every operation returned, by `cut` if
    given, reads and writes only, each value written once and not the
    initial one), else None. Run impossible_read first: it is the zone
    test's condition that each read has a write invoked before it returned."""
    ops = _upto(ops, cut)
    clusters: dict[Any, list[Operation]] = {}
    written: set[Any] = set()
    start = _value(initial)
    for op in ops:
        seen = view(op)
        if seen is None or _ret(op, cut) == _NEVER:
            return None
        kind, v = seen
        if kind not in ("read", "write") or (kind == "read" and v is UNKNOWN):
            return None
        v = _value(v)
        if kind == "write":
            if v in written or v == start:
                return None
            written.add(v)
        clusters.setdefault(v, []).append(op)
    forward: list[tuple[_Key, _Key, Any]] = []
    backward: list[tuple[_Key, _Key, Any]] = []
    for v, members in clusters.items():
        first_return = min(_ret(op, cut) for op in members)
        last_invoke = max(op._invoke_key for op in members)
        if v == start:  # the initial value: written before everything
            first_return = _START
        if first_return < last_invoke:
            forward.append((first_return, last_invoke, v))
        else:
            backward.append((last_invoke, first_return, v))
    forward.sort(key=lambda z: z[0])
    for a, b in itertools.pairwise(forward):
        if b[0] < a[1]:
            why = f"{a[2]!r} and {b[2]!r} must each hold over a stretch of time, and those overlap"
            return _conflict(clusters, a[2], b[2], why)
    starts = [z[0] for z in forward]
    for lo, hi, v in backward:
        i = bisect.bisect_left(starts, lo) - 1
        if i >= 0 and hi < forward[i][1]:
            u = forward[i][2]
            why = f"{v!r} was written and read inside the stretch in which {u!r} must hold"
            return _conflict(clusters, u, v, why)
    return Decision(True, "decided by the zone test, without search")


def _conflict(clusters: dict[Any, list[Operation]], a: Any, b: Any, why: str) -> Decision:
    window = sorted(clusters[a] + clusters[b], key=lambda op: op._invoke_key)
    return Decision(False, f"{why} (decided by the zone test, without search)", window)
