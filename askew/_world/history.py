# SPDX-License-Identifier: Apache-2.0
"""Operation histories: what clients asked of a system and what it answered,
with when, for the checkers in askew.check.

An operation is invoked (node, name, value, time) and later completes as ok
(with its result), fail (it certainly took no effect) or info (unknown: a
timeout, a crash; it may take effect at any time after its invocation, or
never). world.history records against the virtual clock in the order the
run made the calls; a History made by hand takes explicit times. Nothing
here draws from any stream or writes to the world's log: recording a
history never changes a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

PENDING, OK, FAIL, INFO = "pending", "ok", "fail", "info"


class _Unknown:
    """The result of an operation whose outcome is unknown."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "?"


UNKNOWN: Any = _Unknown()


class Operation:
    """One operation of a history: see History.invoke."""

    __slots__ = (
        "_history",
        "_invoke_key",
        "_return_key",
        "index",
        "invoke_time",
        "name",
        "node",
        "result",
        "return_time",
        "status",
        "value",
    )

    def __init__(
        self,
        history: History,
        index: int,
        node: Any,
        name: str,
        value: Any,
        key: tuple[float, int, int],
    ) -> None:
        self._history = history
        self.index = index
        self.node = node
        self.name = name
        self.value = value
        self.result: Any = UNKNOWN
        self.status = PENDING
        self.invoke_time = key[0]
        self.return_time: float | None = None
        self._invoke_key = key
        self._return_key: tuple[float, int, int] | None = None

    def _complete(self, status: str, result: Any, time: float | None) -> Operation:
        if self.status != PENDING:
            raise RuntimeError(f"{self.describe()} has already completed ({self.status})")
        key = self._history._key(time, returning=True)
        if key < self._invoke_key:
            raise ValueError(
                f"{self.describe()}: it cannot return at t={key[0]!r}, before its "
                f"invocation at t={self.invoke_time!r}"
            )
        self.status, self.result = status, result
        self.return_time, self._return_key = key[0], key
        return self

    def ok(self, result: Any = None, *, time: float | None = None) -> Operation:
        """It took effect and returned `result`."""
        return self._complete(OK, result, time)

    def fail(self, *, time: float | None = None) -> Operation:
        """It certainly took no effect (the checkers leave it out)."""
        return self._complete(FAIL, UNKNOWN, time)

    def info(self, *, time: float | None = None) -> Operation:
        """Its outcome is unknown (a timeout, a crash): it may take effect
        at any time after its invocation, or never."""
        return self._complete(INFO, UNKNOWN, time)

    def describe(self) -> str:
        arg = "" if self.value is None else f" {self.value!r}"
        who = "world" if self.node is None else f"node {self.node}"
        return f"{who} {self.name}{arg}"

    def __str__(self) -> str:
        who = "world" if self.node is None else f"node {self.node}"
        arg = "" if self.value is None else f" {self.value!r}"
        got = f" -> {self.result!r}" if self.status == OK and self.result is not None else ""
        end = "..." if self.return_time is None else f"{self.return_time:.6f}s"
        return f"{who:<8} {self.name}{arg}{got}   [{self.invoke_time:.6f}s .. {end}] {self.status}"

    def __repr__(self) -> str:
        return f"<askew operation #{self.index}: {self}>"


class _Scope:
    """`async with history.op(...) as op:` (or `with`): an exception leaves
    the operation's outcome unknown (info); a block that completes it
    neither way marks it ok with result None."""

    def __init__(self, op: Operation) -> None:
        self._op = op

    def _exit(self, exc: BaseException | None) -> None:
        if self._op.status == PENDING:
            if exc is None:
                self._op.ok()
            else:
                self._op.info()

    def __enter__(self) -> Operation:
        return self._op

    def __exit__(self, _t: object, exc: BaseException | None, _tb: object) -> None:
        self._exit(exc)

    async def __aenter__(self) -> Operation:
        return self._op

    async def __aexit__(self, _t: object, exc: BaseException | None, _tb: object) -> None:
        self._exit(exc)


class History:
    """A list of operations. With a clock (world.history's is the virtual
    clock) calls take their time from it and order as they were made; by
    hand, give each call a `time=` (equal times then count as concurrent).
    """

    def __init__(
        self,
        clock: Callable[[], float] | None = None,
        node_of: Callable[[Any], Any] | None = None,
    ) -> None:
        self._clock = clock
        self._node_of = node_of
        self._seq = 0
        self._ops: list[Operation] = []

    def _key(self, time: float | None, *, returning: bool) -> tuple[float, int, int]:
        self._seq += 1
        if time is None:
            if self._clock is None:
                raise TypeError("this history has no clock: give the time, as time=...")
            # The run's own order: a return and an invocation at one virtual
            # instant stay in the order they were made.
            return (float(self._clock()), 0, self._seq)
        if isinstance(time, bool) or not isinstance(time, (int, float)) or time != time:
            raise TypeError(f"time must be a number of seconds, got {time!r}")
        # By hand, at equal times invocations come first: concurrent.
        return (float(time), int(returning), self._seq)

    def invoke(
        self, node: Any, name: str, value: Any = None, *, time: float | None = None
    ) -> Operation:
        """Record that `node` invoked operation `name` with `value`, now (or
        at virtual `time`, for a history written by hand); complete it with
        op.ok(result), op.fail() or op.info()."""
        if not isinstance(name, str):
            raise TypeError(f"an operation's name must be a str, got {name!r}")
        if self._node_of is not None:
            node = self._node_of(node)
        op = Operation(self, len(self._ops), node, name, value, self._key(time, returning=False))
        self._ops.append(op)
        return op

    def op(self, node: Any, name: str, value: Any = None) -> _Scope:
        """The operation `name` of `node` with `value`, invoked on entry:
        `async with history.op(node, "read") as op: op.ok(await read())`.
        A block left by an exception leaves its outcome unknown (info); one
        that completes it neither way marks it ok with result None."""
        return _Scope(self.invoke(node, name, value))

    def add(
        self,
        node: Any,
        name: str,
        value: Any,
        result: Any,
        invoked: float,
        returned: float | None,
        status: str = OK,
    ) -> Operation:
        """A whole operation at once (for histories written by hand or read
        from elsewhere): `node` invoked `name` with `value` at `invoked` and
        it returned `result` at `returned`, with `status` ("ok", "fail" or
        "info"); returned=None leaves it pending."""
        op = self.invoke(node, name, value, time=invoked)
        if returned is not None:
            if status == OK:
                op.ok(result, time=returned)
            elif status == FAIL:
                op.fail(time=returned)
            elif status == INFO:
                op.info(time=returned)
            else:
                raise ValueError(f"status must be 'ok', 'fail' or 'info', got {status!r}")
        return op

    @classmethod
    def of(cls, rows: Iterable[tuple[Any, ...]]) -> History:
        """A history from rows (node, name, value, result, invoked, returned
        [, status]), as History.add takes them."""
        history = cls()
        for row in rows:
            history.add(*row)
        return history

    @property
    def operations(self) -> list[Operation]:
        return list(self._ops)

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._ops)

    def __len__(self) -> int:
        return len(self._ops)

    def __str__(self) -> str:
        return "\n".join(str(op) for op in self._ops)

    def __repr__(self) -> str:
        done = sum(op.status != PENDING for op in self._ops)
        return f"<askew history: {len(self._ops)} operations, {done} complete>"
