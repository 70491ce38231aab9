# SPDX-License-Identifier: Apache-2.0
"""The register checks that need no search (askew/_explore/registers.py):
impossible reads rejected at once, the zone test deciding whole histories
of any size, each agreeing with the search on thousands of random small
histories, and a report whose window is the few operations that prove it."""

from __future__ import annotations

import dataclasses
import random

from askew import History, check


def random_history(rng: random.Random) -> History:
    """Up to eight operations on four nodes: writes (of distinct values or
    not), reads of written, initial or unwritten values, some cas, some
    left pending."""
    rows: list[tuple[object, ...]] = []
    unique = rng.random() < 0.7
    written: list[object] = []
    for i in range(rng.randint(1, 8)):
        a = rng.uniform(0, 10)
        b = a + rng.uniform(0, 4)
        kind = rng.random()
        if kind < 0.45:
            v = i + 1 if unique else rng.randint(0, 3)
            written.append(v)
            rows.append((rng.randrange(4), "write", v, None, a, b))
        elif kind < 0.9 or not written:
            result = rng.choice([*written, None, 99])
            rows.append((rng.randrange(4), "read", None, result, a, b))
        else:
            rows.append(
                (rng.randrange(4), "cas", (rng.choice(written), 100 + i), rng.random() < 0.5, a, b)
            )
        if rng.random() < 0.1:
            node, name, value, _, a, _ = rows[-1]
            rows[-1] = (node, name, value, None, a, None)  # never returned
    return History.of(rows)


def sequential_history(rng: random.Random, n: int, perturb: bool) -> History:
    """Operations that took effect at a random instant of their interval (so
    linearizable), with one read's result changed when `perturb`."""
    planned = []
    for i in range(n):
        a = rng.uniform(0, 10)
        b = a + rng.uniform(0, 5)
        planned.append((rng.uniform(a, b), a, b, "write" if rng.random() < 0.5 else "read", i + 1))
    state = None
    rows: list[tuple[object, ...]] = []
    for _, a, b, name, v in sorted(planned):
        if name == "write":
            state = v
            rows.append((0, "write", v, None, a, b))
        else:
            rows.append((1, "read", None, state, a, b))
    reads = [i for i, r in enumerate(rows) if r[1] == "read"]
    if perturb and reads:
        i = rng.choice(reads)
        choices = [r[2] for r in rows if r[1] == "write"] + [None]
        rows[i] = (*rows[i][:3], rng.choice(choices), *rows[i][4:])
    return History.of(rows)


def test_the_checks_without_search_agree_with_the_search_on_random_histories() -> None:
    searched = dataclasses.replace(check.register(), view=None)
    rng = random.Random(26)
    decided = 0
    for i in range(6000):
        h = (
            random_history(rng)
            if i % 2
            else sequential_history(rng, rng.randint(2, 10), i % 4 == 0)
        )
        fast = check.linearizable(h, check.register())
        assert fast.verdict == check.linearizable(h, searched).verdict, str(h)
        decided += fast.steps == 0
    assert decided > 4000  # most were decided without a step of search


def overlapping_writes(n: int, read: object) -> History:
    rows: list[tuple[object, ...]] = [(i, "write", i, None, 0.0, 10.0) for i in range(n)]
    rows.append((n, "read", None, read, 11.0, 12.0))
    return History.of(rows)


def test_a_read_of_a_value_nobody_wrote_is_rejected_at_once_among_any_number_of_writes() -> None:
    found = check.linearizable(overlapping_writes(200, -1), check.register())
    assert found.verdict == "not linearizable"
    assert found.steps < 10_000  # the shortest prefix's bisection only; 2^200 without
    assert "returned -1: a value no operation wrote (rejected before any search)" in found.report
    assert len(found.proof) == 1


def test_two_hundred_overlapping_writes_and_a_read_of_one_are_decided_without_search() -> None:
    found = check.linearizable(overlapping_writes(200, 3), check.register())
    assert found.ok and found.steps == 0


def test_a_read_of_an_overwritten_value_names_the_write_that_overwrote_it() -> None:
    h = History.of(
        [
            (0, "write", 1, None, 0.0, 1.0),
            (1, "write", 2, None, 2.0, 3.0),
            (2, "read", None, 1, 4.0, 5.0),
            *[(3 + i, "write", 10 + i, None, 4.0, 9.0) for i in range(30)],
        ]
    )
    found = check.linearizable(h, check.register())
    assert found.verdict == "not linearizable"
    assert "every write of it returned before node 1 write(2) began" in found.report
    assert [op.value for op in found.proof] == [1, 2, None]


def test_the_zone_test_names_the_two_values_that_conflict() -> None:
    # Reads see 1 then 2 then 1 again, each after the last returned.
    h = History.of(
        [
            (0, "write", 1, None, 0.0, 1.0),
            (1, "write", 2, None, 0.0, 1.0),
            (2, "read", None, 1, 2.0, 3.0),
            (2, "read", None, 2, 4.0, 5.0),
            (2, "read", None, 1, 6.0, 7.0),
        ]
    )
    found = check.linearizable(h, check.register())
    assert found.verdict == "not linearizable"
    assert "1 and 2 must each hold over a stretch of time" in found.report
    assert len(found.proof) == 5


def test_a_kv_history_is_checked_key_by_key_without_search() -> None:
    rows: list[tuple[object, ...]] = []
    for k in range(50):
        rows += [(i, "put", (k, 100 * k + i), None, 0.0, 10.0) for i in range(20)]
        rows.append((99, "get", k, 100 * k + 7, 11.0, 12.0))
    assert check.linearizable(History.of(rows), check.kv()).steps == 0
    rows.append((98, "get", 3, 12345, 11.0, 12.0))
    found = check.linearizable(History.of(rows), check.kv())
    assert found.verdict == "not linearizable"
    assert "get(3) returned 12345" in found.report
