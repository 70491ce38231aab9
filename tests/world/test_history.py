# SPDX-License-Identifier: Apache-2.0
"""world.history and askew.check.linearizable: hand-made histories with a
known answer, histories of a simulated register with and without a planted
bug, bad input, and the budget that turns a hopeless search into "unknown"."""

from __future__ import annotations

import dataclasses
import random
import sys
from pathlib import Path
from typing import Any

import pytest

import askew
from askew import History, check

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import stale_read
import stale_read_fixed

sys.path.pop(0)


def _verdict(rows: list[tuple[Any, ...]], model: check.Model) -> str:
    return check.linearizable(History.of(rows), model).verdict


# Hand-made registers: (node, name, value, result, invoked, returned[, status])


def test_a_read_of_the_last_completed_write_is_linearizable() -> None:
    rows = [(0, "write", 1, None, 0, 1), (1, "read", None, 1, 2, 3)]
    assert _verdict(rows, check.register(0)) == "linearizable"


def test_a_read_after_a_completed_write_that_sees_the_old_value_is_not() -> None:
    rows = [(0, "write", 1, None, 0, 1), (1, "read", None, 0, 2, 3)]
    assert _verdict(rows, check.register(0)) == "not linearizable"


@pytest.mark.parametrize("seen", [0, 1])
def test_a_read_concurrent_with_a_write_may_see_either_value(seen: int) -> None:
    rows = [(0, "write", 1, None, 0, 3), (1, "read", None, seen, 1, 2)]
    assert _verdict(rows, check.register(0)) == "linearizable"


def test_two_readers_may_not_see_a_concurrent_write_in_opposite_orders() -> None:
    # Once a read returned 1, a later read must not return 0: the classic
    # new-old inversion.
    rows = [
        (0, "write", 1, None, 0, 10),
        (1, "read", None, 1, 1, 2),
        (2, "read", None, 0, 3, 4),
    ]
    assert _verdict(rows, check.register(0)) == "not linearizable"


def test_equal_times_by_hand_count_as_concurrent() -> None:
    rows = [(0, "write", 1, None, 0, 1), (1, "read", None, 0, 1, 2)]
    assert _verdict(rows, check.register(0)) == "linearizable"


def test_a_write_with_unknown_outcome_may_take_effect_late_or_never() -> None:
    late = [
        (0, "write", 1, None, 0, 1, "info"),
        (1, "read", None, 0, 2, 3),
        (1, "read", None, 1, 4, 5),
    ]
    never = [(0, "write", 1, None, 0, 1, "info"), (1, "read", None, 0, 2, 3)]
    assert _verdict(late, check.register(0)) == "linearizable"
    assert _verdict(never, check.register(0)) == "linearizable"
    # ...but not before its invocation.
    early = [(1, "read", None, 1, 0, 1), (0, "write", 1, None, 2, 3, "info")]
    assert _verdict(early, check.register(0)) == "not linearizable"


def test_a_pending_operation_counts_as_unknown_outcome() -> None:
    h = History()
    h.invoke(0, "write", 1, time=0)  # never completed: a crashed client
    h.add(1, "read", None, 1, 5, 6)
    assert check.linearizable(h, check.register(0)).ok


def test_a_failed_write_is_left_out() -> None:
    rows = [(0, "write", 1, None, 0, 1, "fail"), (1, "read", None, 1, 2, 3)]
    assert _verdict(rows, check.register(0)) == "not linearizable"


def test_compare_and_set_results_are_checked() -> None:
    ok = [(0, "cas", (0, 1), True, 0, 1), (1, "cas", (0, 2), False, 2, 3)]
    bad = [(0, "cas", (0, 1), True, 0, 1), (1, "cas", (0, 2), True, 2, 3)]
    assert _verdict(ok, check.register(0)) == "linearizable"
    assert _verdict(bad, check.register(0)) == "not linearizable"


def test_a_kv_map_is_checked_key_by_key_and_reports_the_bad_key_only() -> None:
    rows = [
        (0, "put", ("a", 1), None, 0, 1),
        (1, "put", ("b", 2), None, 0, 1),
        (2, "get", "a", 1, 2, 3),
        (2, "get", "b", None, 4, 5),  # b was written at 1: a stale read of b
    ]
    found = check.linearizable(History.of(rows), check.kv())
    assert found.verdict == "not linearizable" and found.partitions == 2
    assert found.culprit is not None and found.culprit.value == "b"
    assert {op.value if op.name == "get" else op.value[0] for op in found.window} == {"b"}


def test_a_counter_read_must_count_every_completed_add() -> None:
    ok = [(0, "add", 2, None, 0, 1), (1, "add", 3, None, 0, 4), (2, "read", None, 2, 2, 3)]
    bad = [(0, "add", 2, None, 0, 1), (1, "add", 3, None, 0, 1), (2, "read", None, 2, 2, 3)]
    assert _verdict(ok, check.counter()) == "linearizable"
    assert _verdict(bad, check.counter()) == "not linearizable"


def test_a_fifo_queue_must_dequeue_in_enqueue_order() -> None:
    ok = [
        (0, "enqueue", "x", None, 0, 1),
        (0, "enqueue", "y", None, 2, 3),
        (1, "dequeue", None, "x", 4, 5),
        (1, "dequeue", None, "y", 6, 7),
        (1, "dequeue", None, None, 8, 9),
    ]
    swapped = [*ok[:2], (1, "dequeue", None, "y", 4, 5), (1, "dequeue", None, "x", 6, 7)]
    assert _verdict(ok, check.fifo_queue()) == "linearizable"
    assert _verdict(swapped, check.fifo_queue()) == "not linearizable"


class _SetModel:
    """A user model: a grow-only set; add(x), has(x) -> bool."""

    name = "set"

    def init(self) -> frozenset[Any]:
        return frozenset()

    def step(self, state: frozenset[Any], name: str, value: Any, result: Any) -> tuple[bool, Any]:
        if name == "add":
            return True, state | {value}
        return result is check.UNKNOWN or result == (value in state), state


def test_a_user_model_is_an_object_with_init_and_step() -> None:
    ok = [(0, "add", 1, None, 0, 1), (1, "has", 1, True, 2, 3), (1, "has", 2, False, 4, 5)]
    bad = [(0, "add", 1, None, 0, 1), (1, "has", 1, False, 2, 3)]
    assert check.linearizable(History.of(ok), _SetModel()).ok
    found = check.linearizable(History.of(bad), _SetModel())
    assert not found and found.model == "set"


class _Tickets:
    """A user model that refuses what cannot happen, unknown results too:
    one ticket; take() succeeds while one is left."""

    name = "tickets"

    def init(self) -> int:
        return 1

    def step(self, state: int, name: str, value: Any, result: Any) -> tuple[bool, Any]:
        return state > 0, state - 1


@pytest.mark.parametrize("status", ["info", None])  # timed out, or still pending
def test_an_operation_that_never_returned_may_never_take_effect_though_the_model_refuses_it(
    status: str | None,
) -> None:
    # Node 1's take began after node 0 took the only ticket: it cannot take
    # effect, and since it never returned it need not.
    h = History.of([(0, "take", None, None, 0, 1)])
    late = h.invoke(1, "take", time=2)
    if status == "info":
        late.info(time=3)
    h.add(0, "take", None, None, 4, 5, "fail")
    assert check.linearizable(h, _Tickets()).verdict == "linearizable"
    # Two completed takes still cannot both have had the ticket.
    h.add(2, "take", None, None, 6, 7)
    found = check.linearizable(h, _Tickets())
    assert found.verdict == "not linearizable"
    assert found.culprit is not None and found.culprit.node == 2


def test_a_history_of_refused_pending_operations_checks_as_its_completed_part_does() -> None:
    """Any number of refused, unreturned operations change no verdict."""
    rng = random.Random(3)
    for _ in range(50):
        rows = [(0, "take", None, None, 0.0, rng.uniform(0.1, 2))]
        if rng.random() < 0.5:
            rows.append((1, "take", None, None, 0.5, 3.0))  # concurrent: not linearizable
        history = History.of(rows)
        for k in range(rng.randrange(1, 6)):
            op = history.invoke(10 + k, "take", time=rng.uniform(2, 4))
            if rng.random() < 0.5:
                op.info(time=5)
        alone = check.linearizable(History.of(rows), _Tickets()).verdict
        assert check.linearizable(history, _Tickets()).verdict == alone


def test_the_report_names_the_first_operation_that_cannot_be_linearized() -> None:
    rows = [(0, "write", i, None, 2 * i, 2 * i + 1) for i in range(1, 50)]
    rows.insert(20, (1, "read", None, 3, 41.5, 41.8))  # written at 6, overwritten since
    rows.append((1, "read", None, 0, 200, 201))  # a second, later violation
    found = check.linearizable(History.of(rows), check.register(0))
    assert found.culprit is not None
    assert (found.culprit.name, found.culprit.result) == ("read", 3)
    assert found.window[-1] is found.culprit or found.culprit in found.window
    # The window starts near the culprit, not at the start of the history.
    assert min(op.invoke_time for op in found.window) >= 30
    report = found.report
    assert "ends when node 1 read returned 3 at t=41.800000s" in report
    assert "node 0   write 20   [40.000000s .. 41.000000s] ok" in report


def test_assert_linearizable_raises_with_the_report() -> None:
    rows = [(0, "write", 1, None, 0, 1), (1, "read", None, 0, 2, 3)]
    with pytest.raises(AssertionError, match="history is not linearizable"):
        check.assert_linearizable(History.of(rows), check.register(0))


def _register_history(ops: int, clients: int, seed: int) -> History:
    """A linearizable register history: each op takes effect at a random
    instant of its interval."""
    rng = random.Random(seed)
    free = [0.0] * clients
    planned = []
    for n in range(ops):
        c = rng.randrange(clients)
        start = free[c] + rng.uniform(0, 1)
        free[c] = end = start + rng.uniform(0.1, 3)
        planned.append((rng.uniform(start, end), c, "write" if n % 2 else "read", n, start, end))
    value: Any = None
    rows = []
    for _at, c, name, n, start, end in sorted(planned):
        if name == "write":
            value = n
        rows.append(
            (c, name, n if name == "write" else None, value if name == "read" else None, start, end)
        )
    return History.of(rows)


def test_thousands_of_operations_of_five_clients_check_within_a_fixed_step_budget() -> None:
    history = _register_history(3_000, 5, 1)
    found = check.linearizable(history, check.register(), max_steps=200_000, timeout=None)
    assert found.verdict == "linearizable", found.report


# The register checks reject this history at once (tests/explore/test_registers.py):
# a register without them is the search alone.
_SEARCH_ONLY = dataclasses.replace(check.register(), view=None)


def test_a_hopeless_search_gives_unknown_at_its_budget_instead_of_hanging() -> None:
    rows = [(i, "write", i, None, 0.0, 10.0) for i in range(40)]
    rows.append((40, "read", None, -1, 11.0, 12.0))
    found = check.linearizable(History.of(rows), _SEARCH_ONLY, max_steps=50_000)
    assert found.verdict == "unknown" and not found
    assert "budget of 50000 steps" in found.report


def test_a_timeout_in_real_seconds_gives_unknown_too() -> None:
    rows = [(i, "write", i, None, 0.0, 10.0) for i in range(40)]
    rows.append((40, "read", None, -1, 11.0, 12.0))
    assert check.linearizable(History.of(rows), _SEARCH_ONLY, timeout=0.05).verdict == "unknown"


# Bad input


def test_an_operation_name_the_model_lacks_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match="the register model has no operation 'increment'"):
        check.linearizable(History.of([(0, "increment", 1, None, 0, 1)]), check.register())


@pytest.mark.parametrize(
    ("model", "row", "named"),
    [
        (
            check.kv(),
            (0, "put", 5, None, 0, 1),
            r"the kv model cannot check operation #0 "
            r"\(node 0 put 5\): TypeError: .*; it takes put\(\(k, v\)\)",
        ),
        (check.kv(), (0, "get", ["a"], None, 0, 1), r"operation #0 \(node 0 get \['a'\]\)"),
        (
            check.register(),
            (0, "cas", 3, True, 0, 1),
            r"operation #0 \(node 0 cas 3\): "
            r"TypeError: .*; it takes write\(v\), read\(\) and cas\(\(old, new\)\)",
        ),
        (check.transactions(), (0, "txn", (("x", "k", 1),), None, 0, 1), r"operation #0 .*'x'"),
        (
            _SetModel(),
            (0, "add", [1], None, 0, 1),
            r"the set model cannot check operation #0 "
            r"\(node 0 add \[1\]\): TypeError: unhashable",
        ),
    ],
)
def test_a_malformed_operation_is_refused_naming_it_and_what_the_model_takes(
    model: Any, row: tuple[Any, ...], named: str
) -> None:
    # A failed operation first: left out, so the bad one is #1 of the history.
    history = History.of([(1, "anything", None, None, 0, 1, "fail"), row])
    with pytest.raises(ValueError, match=named.replace("#0", "#1")):
        check.linearizable(history, model)


def test_a_user_step_that_answers_no_pair_is_refused_naming_the_operation() -> None:
    model = check.Model("flags", lambda: 0, lambda state, name, value, result: True)
    with pytest.raises(ValueError, match=r"the flags model cannot check operation #0 \(node 0 set"):
        check.linearizable(History.of([(0, "set", None, None, 0, 1)]), model)


def test_something_that_is_not_a_model_is_refused() -> None:
    with pytest.raises(TypeError, match=r"model must be an askew\.check\.Model"):
        check.linearizable(History(), "register")


@pytest.mark.parametrize("options", [{"timeout": 0}, {"timeout": "1"}, {"max_steps": 0}])
def test_bad_budgets_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        check.linearizable(History(), check.register(), **options)


def test_an_operation_completes_once_and_not_before_it_began() -> None:
    h = History()
    op = h.invoke(0, "write", 1, time=5)
    with pytest.raises(ValueError, match="cannot return at t=4"):
        op.ok(time=4)
    op.ok(time=6)
    with pytest.raises(RuntimeError, match="already completed"):
        op.fail(time=7)


def test_a_history_without_a_clock_needs_times() -> None:
    with pytest.raises(TypeError, match="give the time"):
        History().invoke(0, "read")
    with pytest.raises(TypeError, match="name must be a str"):
        History().invoke(0, 3, time=0)  # type: ignore[arg-type]


# world.history in simulated runs


def test_world_history_records_on_the_virtual_clock_in_the_runs_order() -> None:
    @askew.simulate(seed=3, iterations=1)
    async def test(world: askew.World) -> None:
        a = world.spawn(_idle)
        async with world.history.op(a, "write", 1):
            await world.clock.advance(2)
        op = world.history.invoke(None, "read")
        op.ok(1)  # at the same instant: still after the write, in the run's order
        with pytest.raises(ZeroDivisionError):
            async with world.history.op(0, "write", 2):
                raise ZeroDivisionError
        ops = world.history.operations
        assert [(o.node, o.name, o.status) for o in ops] == [
            (0, "write", "ok"),
            (None, "read", "ok"),
            (0, "write", "info"),
        ]
        assert ops[0].invoke_time < 1e-3 and ops[0].return_time == ops[1].invoke_time >= 2
        assert check.linearizable(world.history, check.register()).ok
        with pytest.raises(ValueError, match="unknown node id 7"):
            world.history.invoke(7, "read")

    test()


async def _idle(node: Any) -> None:
    await node.recv()


def _simulated_histories(module: Any, seed: int, runs: int) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []

    @askew.simulate(seed=seed, iterations=runs)
    async def test(world: askew.World) -> None:
        history = await module.workload(world)
        found.append((str(history), check.linearizable(history, check.register()).verdict))

    test()
    return found


def test_the_planted_stale_read_is_found_and_the_fixed_register_passes() -> None:
    buggy = [v for _, v in _simulated_histories(stale_read, 7, 60)]
    fixed = [v for _, v in _simulated_histories(stale_read_fixed, 7, 60)]
    assert "not linearizable" in buggy
    assert set(fixed) == {"linearizable"}


def test_the_same_seed_records_the_same_history_and_verdict() -> None:
    assert _simulated_histories(stale_read, 11, 10) == _simulated_histories(stale_read, 11, 10)


# Transactions


def _txns(*rows: tuple[Any, ...]) -> History:
    return History.of(rows)


def test_a_lost_update_is_not_serializable() -> None:
    h = _txns(
        (0, "txn", (("r", "x", None), ("w", "x", 1)), (0,), 0, 2),
        (1, "txn", (("r", "x", None), ("w", "x", 2)), (0,), 1, 3),
    )
    assert check.serializable(h, 0).verdict == "not serializable"


def test_write_skew_is_not_serializable() -> None:
    h = _txns(
        (0, "txn", (("r", "x", None), ("r", "y", None), ("w", "x", 1)), (0, 0), 0, 2),
        (1, "txn", (("r", "x", None), ("r", "y", None), ("w", "y", 1)), (0, 0), 1, 3),
    )
    assert not check.serializable(h, 0)


def test_a_stale_but_consistent_read_is_serializable_but_not_strictly() -> None:
    h = _txns(
        (0, "txn", (("w", "x", 1),), (), 0, 1),
        (1, "txn", (("r", "x", None),), (0,), 2, 3),
    )
    assert check.serializable(h, 0).verdict == "serializable"
    assert check.linearizable(h, check.transactions(0)).verdict == "not linearizable"


def test_an_aborted_transaction_is_left_out_and_an_unknown_one_may_have_committed() -> None:
    aborted = _txns(
        (0, "txn", (("w", "x", 1),), None, 0, 1, "fail"),
        (1, "txn", (("r", "x", None),), (1,), 2, 3),
    )
    unknown = _txns(
        (0, "txn", (("w", "x", 1),), None, 0, 1, "info"),
        (1, "txn", (("r", "x", None),), (1,), 2, 3),
    )
    assert not check.serializable(aborted, 0)
    assert check.serializable(unknown, 0)
