# SPDX-License-Identifier: Apache-2.0
"""History checkers: askew.check.linearizable(history, model).

The search is Wing & Gong's, with Lowe's just-in-time linearization and a
memo of (linearized set, model state) as Porcupine does: walk the history's
invoke/return events in order; at an invocation, try to linearize that
operation now (the model must accept its result), remove it from the list
and start again from the first event; at a return whose operation is not
yet linearized, undo the last choice, unless the operation never
returned: those returns come last, and what is left may never take
effect, so the history is linearized. A (set, state) pair seen before is
never explored twice. Models that partition (the key-value map, by key) are
checked one part at a time, as Horn & Kroening's P-compositionality
allows. Operations that did not return (info, or still pending) may take
effect at any time after their invocation, or never, with any result.
Written from the papers' descriptions (docs/exploration.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .. import _core
from .._world.history import FAIL, OK, UNKNOWN, History, Operation
from . import registers

__all__ = [
    "UNKNOWN",
    "CheckResult",
    "Model",
    "assert_linearizable",
    "counter",
    "fifo_queue",
    "kv",
    "linearizable",
    "register",
    "serializable",
    "transactions",
]

LINEARIZABLE, NOT_LINEARIZABLE, UNKNOWN_VERDICT = "linearizable", "not linearizable", "unknown"
SERIALIZABLE = "serializable"
_WINDOW_CONTEXT = 2  # completed operations per node shown before the window
_TRACK_LIMIT = 4_000  # longest prefix whose best partial linearization is kept
_TRACK_STEPS = 20  # its search's budget per event after the register checks decided
# The real clock even inside a run (where time.perf_counter is virtual and
# stands still while the checker computes).
_real_clock = _core.virtual.original_perf_counter


class ModelLike(Protocol):
    def init(self) -> Hashable: ...

    def step(self, state: Any, name: str, value: Any, result: Any) -> tuple[bool, Any]: ...


@dataclass(frozen=True)
class Model:
    """A sequential specification: init() gives the first state; step(state,
    name, value, result) says whether the operation `name` with argument
    `value` may return `result` in `state`, and the state after it. A
    result of UNKNOWN (an operation that did not return) should be accepted
    whenever the operation is possible; such an operation may also never
    take effect, so refusing it everywhere fails no history. States must
    be hashable. partition, if given, splits a history's operations into
    independent parts (P-compositionality), each checked alone; operations,
    if given, says what the model takes, for the error an operation of the
    wrong shape gets."""

    name: str
    init: Callable[[], Hashable]
    step: Callable[[Any, str, Any, Any], tuple[bool, Any]]
    partition: Callable[[list[Operation]], list[list[Operation]]] | None = None
    operations: str = ""  # the operations it takes, as an error names them
    # A register's view of an operation (askew/_explore/registers.py): it
    # lets linearizable() reject impossible reads and decide by zones
    # without the search.
    view: registers.View | None = None


def _unknown_op(model: str, name: str) -> ValueError:
    return ValueError(f"the {model} model has no operation {name!r}")


def _model_name(model: object) -> str:
    return str(getattr(model, "name", type(model).__name__))


def _refused(model: object, op: Operation, exc: Exception) -> ValueError:
    """The error for an operation the model could not take (a value of the
    wrong shape, a name it lacks, a step that raised): it names the
    operation, and the operations the model takes when it says."""
    takes = getattr(model, "operations", "")
    return ValueError(
        f"the {_model_name(model)} model cannot check operation #{op.index} "
        f"({op.describe()}): {type(exc).__name__}: {exc}" + (f"; it takes {takes}" if takes else "")
    )


def register(initial: Any = None) -> Model:
    """A read/write register: write(v); read() -> v; cas((old, new)) -> bool.
    It holds `initial` (None by default) until the first write."""

    def step(state: Any, name: str, value: Any, result: Any) -> tuple[bool, Any]:
        if name == "read":
            return result is UNKNOWN or result == state, state
        if name == "write":
            return True, value
        if name == "cas":
            old, new = value
            if result is UNKNOWN:
                return True, new if state == old else state
            return bool(result) == (state == old), new if state == old else state
        raise _unknown_op("register", name)

    return Model(
        "register", lambda: initial, step, operations=_REGISTER_OPERATIONS, view=_register_view
    )


def _register_view(op: Operation) -> tuple[str, Any] | None:
    if op.name == "read":
        return "read", op.result
    if op.name == "write":
        return "write", op.value
    if op.name == "cas" and isinstance(op.value, tuple) and len(op.value) == 2:
        return "cas", op.value
    return None  # the model's step refuses it, naming it


def _kv_view(op: Operation) -> tuple[str, Any] | None:
    """A kv operation as its key's register sees it (a part holds one key)."""
    try:
        if op.name in ("get", "read"):
            return "read", op.result
        if op.name in ("put", "write"):
            return "write", op.value[1]
        if op.name == "cas":
            return "cas", (op.value[1], op.value[2])
    except (TypeError, IndexError, KeyError):
        return None  # the model's step refuses it, naming it
    return None


_REGISTER_OPERATIONS = "write(v), read() and cas((old, new))"
_KV_OPERATIONS = "put((k, v)) or write((k, v)), get(k) or read(k), and cas((k, old, new))"


def _by_key(ops: list[Operation], model: Model) -> list[list[Operation]]:
    """The kv model's partition: its operations by key."""
    parts: dict[Any, list[Operation]] = {}
    for op in ops:
        try:
            key = op.value[0] if op.name in ("write", "put", "cas") else op.value
            parts.setdefault(key, []).append(op)
        except (TypeError, IndexError, KeyError) as exc:  # no key, or an unhashable one
            raise _refused(model, op, exc) from exc
    return list(parts.values())


def kv(initial: Any = None) -> Model:
    """A key-value map, each key a register (missing keys read `initial`,
    None by default):
    put((k, v)) or write((k, v)); get(k) or read(k) -> v; cas((k, old, new))
    -> bool. Checked key by key."""
    reg = register(initial).step
    names = {"put": "write", "write": "write", "get": "read", "read": "read", "cas": "cas"}

    def step(state: Any, name: str, value: Any, result: Any) -> tuple[bool, Any]:
        as_register = names.get(name)
        if as_register is None:
            raise _unknown_op("kv", name)
        if as_register == "write":
            return reg(state, "write", value[1], result)
        if as_register == "cas":
            return reg(state, "cas", (value[1], value[2]), result)
        return reg(state, "read", None, result)

    def by_key(ops: list[Operation]) -> list[list[Operation]]:
        return _by_key(ops, model)

    model = Model("kv", lambda: initial, step, by_key, _KV_OPERATIONS, _kv_view)
    return model


def counter(initial: int = 0) -> Model:
    """A counter: add(n) (its result is not checked); read() -> total. It
    starts at `initial` (0 by default)."""

    def step(state: Any, name: str, value: Any, result: Any) -> tuple[bool, Any]:
        if name in ("add", "inc"):
            return True, state + (1 if value is None else value)
        if name == "read":
            return result is UNKNOWN or result == state, state
        raise _unknown_op("counter", name)

    return Model("counter", lambda: initial, step, operations="add(n) or inc(n) and read()")


def fifo_queue() -> Model:
    """A FIFO queue: enqueue(v); dequeue() -> the oldest value, or None when
    empty. States are tuples, oldest first."""

    def step(state: Any, name: str, value: Any, result: Any) -> tuple[bool, Any]:
        if name == "enqueue":
            return True, (*state, value)
        if name == "dequeue":
            head = state[0] if state else None
            if result is UNKNOWN:
                return True, state[1:]
            return result == head, state[1:]
        raise _unknown_op("fifo queue", name)

    return Model("fifo queue", tuple, step, operations="enqueue(v) and dequeue()")


def transactions(initial: Any = None) -> Model:
    """Transactions over a key-value map (missing keys read `initial`): the
    operation "txn" with value a tuple of micro-operations ("r", key, None)
    or ("w", key, value), in program order, and result the tuple of the
    values its reads returned, in order. Checked against it by
    linearizable(), a history is strictly serializable; see serializable().
    States are frozensets of (key, value) pairs."""

    def step(state: Any, name: str, value: Any, result: Any) -> tuple[bool, Any]:
        if name != "txn":
            raise _unknown_op("transactions", name)
        data = dict(state)
        reads = []
        for kind, key, written in value:
            if kind == "r":
                reads.append(data.get(key, initial))
            elif kind == "w":
                data[key] = written
            else:
                raise ValueError(f"a transaction's micro-operation is 'r' or 'w', got {kind!r}")
        if result is not UNKNOWN and tuple(result) != tuple(reads):
            return False, state
        return True, frozenset(data.items())

    return Model(
        "transactions",
        frozenset,
        step,
        operations="txn(micro-operations), each ('r', key, None) or ('w', key, value)",
    )


@dataclass
class CheckResult:
    """What linearizable() found. Truthy only when linearizable; `verdict`
    tells "not linearizable" from "unknown" (out of time or budget)."""

    verdict: str
    model: str
    operations: int
    partitions: int
    seconds: float
    steps: int
    # For a violation: the shortest failing prefix's last operation (the
    # first that cannot be linearized), the window of operations around it,
    # and the longest partial linearization found in that prefix.
    culprit: Operation | None = None
    window: list[Operation] = field(default_factory=list)
    linearized: list[Operation] = field(default_factory=list)
    prefix_events: int = 0
    note: str = ""
    # For a violation the register checks found: the few operations that
    # prove it, whatever the history's size (the note says how).
    proof: list[Operation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.verdict in (LINEARIZABLE, SERIALIZABLE)

    def __bool__(self) -> bool:
        return self.ok

    @property
    def report(self) -> str:
        # No wall time here: a report must read the same on replay.
        head = (
            f"{self.verdict} ({self.model} model; {self.operations} operations in "
            f"{self.partitions} part{'s' if self.partitions != 1 else ''}, "
            f"{self.steps} search steps)"
        )
        lines = [head]
        if self.note:
            lines.append(f"  {self.note}")
        if self.proof:
            lines.append("  the operations that prove it, by time:")
            lines += [f"    {op}" for op in self.proof]
        if self.culprit is not None:
            lines += [
                f"  the shortest failing prefix ({self.prefix_events} events) ends when "
                f"{self.culprit.describe()} returned {self.culprit.result!r} at "
                f"t={self.culprit.return_time:.6f}s: no order of the operations before "
                "it explains that result",
                "  window (every operation from the first one concurrent with it to it, "
                f"and before those the last {_WINDOW_CONTEXT} of each node), by node then time:",
            ]
            lines += [f"    {op}" for op in self.window]
            if self.linearized:
                tail = self.linearized[-8:]
                more = len(self.linearized) - len(tail)
                shown = " ; ".join(_short(op) for op in tail)
                lines.append(
                    f"  longest partial linearization: {len(self.linearized)} operations"
                    + (f", the last {len(tail)}: " if more else ": ")
                    + shown
                )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report

    def __repr__(self) -> str:
        return f"<askew CheckResult {self.verdict}: {self.operations} operations>"


def _short(op: Operation) -> str:
    arg = "" if op.value is None else repr(op.value)
    got = "" if op.result is UNKNOWN or op.result is None else f"={op.result!r}"
    who = "w" if op.node is None else op.node
    return f"{op.name}({arg}){got}@{who}"


class _OutOfTime(Exception):
    pass


class _Budget:
    def __init__(self, timeout: float | None, max_steps: int | None) -> None:
        self.deadline = math.inf if timeout is None else _real_clock() + timeout
        self.max_steps = max_steps
        self.steps = 0

    def charge(self, steps: int) -> None:
        self.steps += steps
        if self.max_steps is not None and self.steps > self.max_steps:
            raise _OutOfTime(f"the search spent its budget of {self.max_steps} steps")
        if _real_clock() > self.deadline:
            raise _OutOfTime("the search ran out of time")


@dataclass(frozen=True)
class _Entry:
    op: int  # index into the part's operations
    call: bool


def _returned(op: Operation, cut: tuple[float, int, int] | None) -> bool:
    """Whether op returned ok, by `cut` if one is given."""
    ret = op._return_key
    return op.status == OK and ret is not None and (cut is None or ret <= cut)


def _entries(ops: list[Operation], cut: tuple[float, int, int] | None) -> list[_Entry]:
    """The events of ops in order: invocations and returns; an operation
    that did not return (or returns after `cut`) returns at infinity."""
    inf = (math.inf, 2, 0)
    keyed: list[tuple[tuple[float, int, int], int, bool]] = []
    for i, op in enumerate(ops):
        keyed.append((op._invoke_key, i, True))
        ret = op._return_key
        keyed.append((ret if ret is not None and _returned(op, cut) else inf, i, False))
    keyed.sort(key=lambda k: (k[0], k[1], not k[2]))
    return [_Entry(i, call) for _k, i, call in keyed]


def _search(
    ops: list[Operation],
    model: ModelLike,
    budget: _Budget,
    cut: tuple[float, int, int] | None = None,
    track: bool = False,
) -> tuple[bool, list[Operation]]:
    """Whether ops linearize; with a cut, only those invoked by it, and
    those returning after it as if they had not returned. With track, the
    longest partial linearization met, in order."""
    if cut is not None:
        ops = [op for op in ops if op._invoke_key <= cut]
    entries = _entries(ops, cut)
    size = len(entries)
    head = size  # a sentinel before the first entry
    nxt = [*range(1, size), -1, 0]
    prv = [size, *range(0, size - 1), -1]
    call_at = [0] * len(ops)
    ret_at = [0] * len(ops)
    for pos, e in enumerate(entries):
        (call_at if e.call else ret_at)[e.op] = pos
    returned = [_returned(op, cut) for op in ops]
    results = [op.result if done else UNKNOWN for op, done in zip(ops, returned, strict=True)]
    names = [op.name for op in ops]
    values = [op.value for op in ops]
    step = model.step

    def lift(i: int) -> None:
        for pos in (call_at[i], ret_at[i]):
            nxt[prv[pos]] = nxt[pos]
            if nxt[pos] != -1:
                prv[nxt[pos]] = prv[pos]

    def unlift(i: int) -> None:
        for pos in (ret_at[i], call_at[i]):
            nxt[prv[pos]] = pos
            if nxt[pos] != -1:
                prv[nxt[pos]] = pos

    state = model.init()
    linearized = 0
    stack: list[tuple[int, Any]] = []  # per choice: the operation, the state before
    seen: set[tuple[int, Any]] = set()
    best: list[int] = []
    entry = nxt[head]
    steps = 0
    while entry != -1:
        steps += 1
        if steps == 4096:
            budget.charge(steps)
            steps = 0
        e = entries[entry]
        if e.call:
            i = e.op
            try:
                accepted, after = step(state, names[i], values[i], results[i])
                fresh = accepted and (key := (linearized | (1 << i), after)) not in seen
            except Exception as exc:  # the model could not take it: say which one
                raise _refused(model, ops[i], exc) from exc
            if fresh:
                seen.add(key)
                stack.append((i, state))
                state, linearized = after, key[0]
                lift(i)
                if track and len(stack) > len(best):
                    best = [j for j, _ in stack]
                entry = nxt[head]
                continue
            entry = nxt[entry]
        elif not returned[e.op]:
            # The returns at infinity come last, so every operation that
            # returned is linearized: those that did not may never take
            # effect, whether or not the model accepts them now.
            break
        else:
            # A return whose operation is not linearized: undo the last choice.
            if not stack:
                budget.charge(steps)
                return False, [ops[j] for j in best]
            i, state = stack.pop()
            linearized &= ~(1 << i)
            unlift(i)
            entry = nxt[call_at[i]]
    budget.charge(steps)
    return True, [ops[j] for j in best]


def _shortest_failing_prefix(
    ops: list[Operation], model: ModelLike, budget: _Budget
) -> tuple[Operation, int]:
    """The operation whose return ends the shortest non-linearizable prefix
    (bisection: a failing prefix stays failing as it grows, since each
    event only adds a constraint), and that prefix's length in events."""
    returns = sorted(
        (op._return_key, op) for op in ops if op.status == OK and op._return_key is not None
    )
    lo, hi = 0, len(returns) - 1  # returns[hi] ends a failing prefix
    while lo < hi:
        mid = (lo + hi) // 2
        decided = _decide(ops, model, returns[mid][0])
        if decided is not None:
            ok = decided.linearizable
        else:
            ok, _ = _search(ops, model, budget, cut=returns[mid][0])
        if ok:
            lo = mid + 1
        else:
            hi = mid
    cut, culprit = returns[hi]
    events = sum(op._invoke_key <= cut for op in ops) + hi + 1
    return culprit, events


def _window(ops: list[Operation], culprit: Operation) -> list[Operation]:
    """The culprit, the operations overlapping it, everything that happened
    from the first of those on, and the last few operations each node
    completed before that."""
    assert culprit._return_key is not None
    start, end = culprit._invoke_key, culprit._return_key
    overlapping = [
        op
        for op in ops
        if op._invoke_key <= end and (op._return_key is None or op._return_key >= start)
    ]
    begin = min(op._invoke_key for op in overlapping)
    window: set[Operation] = set()
    before: dict[Any, list[Operation]] = {}
    for op in ops:
        if op._invoke_key > end:
            continue
        if op._return_key is not None and op._return_key < begin:
            before.setdefault(op.node, []).append(op)
        else:
            window.add(op)
    for done in before.values():
        window.update(done[-_WINDOW_CONTEXT:])
    return sorted(window, key=lambda op: (str(op.node), op._invoke_key))


def _as_model(model: object) -> ModelLike:
    if isinstance(model, Model):
        return model
    if callable(getattr(model, "init", None)) and callable(getattr(model, "step", None)):
        return model  # type: ignore[return-value]
    raise TypeError(
        f"model must be an askew.check.Model (register(), kv(), counter(), fifo_queue()) or "
        f"an object with init() and step(state, name, value, result), got {model!r}"
    )


def linearizable(
    history: History | Iterable[Operation],
    model: object,
    *,
    timeout: float | None = 60.0,
    max_steps: int | None = None,
) -> CheckResult:
    """Check a history against a model; returns a CheckResult (truthy when
    linearizable). timeout is real seconds (the host clock, even inside a
    run: a run's clock stands still while the checker computes, and the
    verdict "unknown" then depends on the machine); max_steps bounds the
    search by a count of steps instead, the same on every machine. Either
    exhausted gives the verdict "unknown". Failed operations are left out;
    operations that never returned may take effect after their invocation,
    or never."""
    m = _as_model(model)
    if timeout is not None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a number of seconds > 0 or None, got {timeout!r}")
    if max_steps is not None:
        if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
            raise ValueError(f"max_steps must be an int >= 1 or None, got {max_steps!r}")
    all_ops = list(history)
    for op in all_ops:
        if not isinstance(op, Operation):
            raise TypeError(f"a history holds askew operations, got {op!r}")
    ops = [op for op in all_ops if op.status != FAIL]
    partition = getattr(m, "partition", None)
    parts = partition(ops) if partition is not None else [ops]
    name = _model_name(m)
    budget = _Budget(timeout, max_steps)
    started = _real_clock()

    def result(verdict: str, **more: Any) -> CheckResult:
        return CheckResult(
            verdict, name, len(ops), len(parts), _real_clock() - started, budget.steps, **more
        )

    unknown = ""
    for part in parts:
        decided = _decide(part, m)
        if decided is not None and decided.linearizable:
            continue
        if decided is None:
            try:
                ok, _ = _search(part, m, budget)
            except _OutOfTime as exc:
                unknown = unknown or str(exc)
                continue
            if ok:
                continue
        return _violation(part, m, budget, decided, result)
    if unknown:
        return result(UNKNOWN_VERDICT, note=unknown)
    return result(LINEARIZABLE)


def _decide(
    part: list[Operation], model: ModelLike, cut: tuple[float, int, int] | None = None
) -> registers.Decision | None:
    """The register checks that need no search, for a model with a view."""
    view = getattr(model, "view", None)
    if view is None:
        return None
    initial = model.init()
    return registers.impossible_read(part, view, initial, cut) or registers.zones(
        part, view, initial, cut
    )


def _violation(
    part: list[Operation],
    model: ModelLike,
    budget: _Budget,
    decided: registers.Decision | None,
    result: Callable[..., CheckResult],
) -> CheckResult:
    """The result for a part that does not linearize: the shortest failing
    prefix (each prefix decided by the register checks where they can), its
    window and longest partial linearization; for a violation the checks
    found, the few operations that prove it too. After a decision the
    partial linearization gets a small budget of its own, since the search
    may be hopeless; else the search's."""
    how = "" if decided is None else decided.how
    extra = {} if decided is None else {"proof": decided.window}
    try:
        culprit, events = _shortest_failing_prefix(part, model, budget)
        best: list[Operation] = []
        if events <= 2 * _TRACK_LIMIT:
            own = budget if decided is None else _Budget(None, max(20_000, _TRACK_STEPS * events))
            try:
                _, best = _search(part, model, own, cut=culprit._return_key, track=True)
            except _OutOfTime:
                if decided is None:
                    raise
    except _OutOfTime as exc:
        note = f"{how}; not minimised: {exc}" if how else f"not minimised: {exc}"
        return result(NOT_LINEARIZABLE, note=note, **extra)
    return result(
        NOT_LINEARIZABLE,
        culprit=culprit,
        window=_window(part, culprit),
        linearized=best,
        prefix_events=events,
        note=how,
        **extra,
    )


def assert_linearizable(
    history: History | Iterable[Operation], model: object, **options: Any
) -> CheckResult:
    """linearizable(history, model, **options), raising AssertionError with
    the report unless the verdict is "linearizable"; `options` are
    linearizable()'s keywords (timeout, max_steps). Returns the result."""
    found = linearizable(history, model, **options)
    if not found.ok:
        raise AssertionError(f"history is {found.report}")
    return found


def serializable(
    history: History | Iterable[Operation], initial: Any = None, **options: Any
) -> CheckResult:
    """Whether the committed transactions of `history` (see transactions()),
    from `initial` (None: every key unset), can run one
    at a time in some order, ignoring when they ran: the same search with
    every transaction made concurrent with every other. Aborted ("fail")
    transactions are left out; ones of unknown outcome may or may not have
    committed. Costs up to 2**n for n transactions: keep histories small,
    or give a timeout or max_steps (`options`, as linearizable() takes them)."""
    timeless = History()
    original: dict[Operation, Operation] = {}
    for op in history:
        if not isinstance(op, Operation):
            raise TypeError(f"a history holds askew operations, got {op!r}")
        # Invocations at 0, returns at 1, in the history's order: all concurrent.
        copy = timeless.invoke(op.node, op.name, op.value, time=0.0)
        original[copy] = op
        if op.status == OK:
            copy.ok(op.result, time=1.0)
        elif op.status == FAIL:
            copy.fail(time=1.0)
    found = linearizable(timeless, transactions(initial), **options)
    found.verdict = found.verdict.replace(LINEARIZABLE, SERIALIZABLE)
    # The report shows the transactions as they ran, at their own times.
    if found.culprit is not None:
        found.culprit = original[found.culprit]
    found.window = [original[op] for op in found.window]
    found.linearized = [original[op] for op in found.linearized]
    return found
