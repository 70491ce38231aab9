# SPDX-License-Identifier: Apache-2.0
"""Regressions for issue 11 ("Hardening"): each test is one claim that a
hostile or careless user once broke. The fuzzers live in test_fuzz.py."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import math
import os
import subprocess
import sys
import textwrap
import warnings
import weakref
from typing import Any, NamedTuple

import pytest
from conftest import hang_guard, run_sim

import askew
from askew._loop.loop import SimLoop
from askew.errors import NondeterminismError, SimulationFailure

pytestmark = pytest.mark.usefixtures("clean_env")


async def idle(node: Any) -> None:
    while True:
        await node.recv()


# ---- 1. reset with work whose drop runs code ----------------------------------------


def test_reset_survives_a_pending_timer_that_holds_a_suspended_async_generator() -> None:
    loop = SimLoop(1)
    closed: list[bool] = []

    async def agen() -> Any:
        try:
            yield 1
            yield 2
        finally:
            closed.append(True)

    async def main() -> None:
        gen = agen()
        await gen.__anext__()
        # The timer's callback is the only reference to the suspended
        # generator: dropping it runs askew's finalizer hook, which queues.
        loop.call_later(10, lambda g=gen: g)

    loop.run_until_complete(main())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loop.reset(2)  # aborted the process (sched.c's "pending == 0" assertion)
        gc.collect()
    # The generator goes with its run: no aclose() task made and dropped.
    assert not [w for w in caught if "never awaited" in str(w.message)], caught
    assert loop._now_ns == 0
    loop.run_until_complete(asyncio.sleep(1))
    loop.close()


def test_reset_survives_a_drop_that_queues_callbacks_and_sends_messages() -> None:
    sent: list[int] = []

    class Sneaky:
        """Dropped at reset; its finalizer queues a callback and a message."""

        def __init__(self, loop: SimLoop, node: Any) -> None:
            self.loop, self.node = loop, node

        def __del__(self) -> None:
            self.loop.call_soon(lambda: None)
            self.loop.call_later(5, lambda: None)
            sent.append(1)

    loop = SimLoop(3)

    async def main() -> None:
        late, soon = Sneaky(loop, None), Sneaky(loop, None)
        loop.call_later(10, lambda s=late: s)
        loop.call_soon(lambda s=soon: s)
        del late, soon  # the queued callbacks hold the only references

    loop.run_until_complete(main())
    loop.reset(4)
    assert sent == [1, 1]
    assert loop._now_ns == 0
    loop.run_until_complete(asyncio.sleep(0.5))
    loop.close()


def test_work_queued_by_a_logged_payload_dropped_at_reset_does_not_leak_into_the_next_run() -> None:
    ran: list[str] = []
    loop = SimLoop(5)

    class Payload:
        __slots__ = ()

        def __del__(self) -> None:
            loop.call_soon(ran.append, "stray")

    loop._net.set_payload_check(None)
    a = loop._net.node_add()
    loop._net.send_from(a << 32, a, Payload())  # the log keeps the last reference
    loop._clear()  # the message leaves the wire; the log stays until reset
    loop.reset(6)
    loop.run_until_complete(asyncio.sleep(1))
    assert ran == []
    loop.close()


# ---- 2. two receivers on one node -----------------------------------------------------


def test_a_second_concurrent_recv_on_one_node_is_refused_clearly() -> None:
    async def body(world: askew.World) -> None:
        async def node_main(node: Any) -> None:
            first = asyncio.ensure_future(node.recv(timeout=1))
            await asyncio.sleep(0)
            with pytest.raises(RuntimeError, match="already waiting in recv"):
                await node.recv(timeout=1)
            # The first receiver was not disturbed: it still gets its timeout.
            assert await first is None
            node.done = True

        h = world.spawn(node_main)
        await world.clock.advance(2)
        assert h.done

    run_sim(body)


def test_recv_after_a_cancelled_or_timed_out_recv_is_served() -> None:
    async def body(world: askew.World) -> None:
        async def node_main(node: Any) -> None:
            assert await node.recv(timeout=0.1) is None
            waiting = asyncio.ensure_future(node.recv())
            await asyncio.sleep(0)
            waiting.cancel()
            await asyncio.sleep(0)
            node.got = await node.recv(timeout=5)

        async def sender(node: Any) -> None:
            await asyncio.sleep(1)
            node.send(0, "hi")

        h = world.spawn(node_main)
        world.spawn(sender)
        await world.clock.advance(6)
        assert h.got.payload == "hi"

    run_sim(body)


# ---- 3 and 4. bounds on every knob, errors that name it ------------------------------


@pytest.mark.parametrize("steps", [2**64, 2**64 + 3, 2**100])
def test_a_step_budget_of_2_64_or_more_is_refused_not_wrapped(steps: int) -> None:
    with pytest.raises(ValueError, match=r"max_steps must be < 2\*\*64.*" + str(steps)):
        askew.simulate(seed=1, max_steps=steps)


def test_a_step_budget_reaches_c_intact_or_not_at_all() -> None:
    loop = SimLoop(1)
    with pytest.raises(ValueError, match="max_steps"):
        loop._configure("fifo", 2**64 + 3, 0, 0, (0, 0), (0, 0))
    loop._configure("fifo", 2**64 - 1, 0, 0, (0, 0), (0, 0))
    loop.close()


def test_a_step_budget_near_the_limit_still_runs() -> None:
    async def body(world: askew.World) -> None:
        await asyncio.sleep(1)

    run_sim(body, max_steps=2**64 - 1)


@pytest.mark.parametrize("max_time", [1e-10, 4e-10])
def test_a_time_budget_that_rounds_to_zero_ns_is_refused_not_unbounded(max_time: float) -> None:
    with pytest.raises(ValueError, match="max_time must be at least 1e-09"):
        askew.simulate(seed=1, max_time=max_time)


def test_a_one_nanosecond_time_budget_is_enforced() -> None:
    async def body(world: askew.World) -> None:
        await asyncio.sleep(1)

    with pytest.raises(askew.errors.BudgetExceeded):
        run_sim(body, max_time=1e-9)


@pytest.mark.parametrize("max_time", [math.inf, math.nan, 10**400, -1.0])
def test_an_out_of_range_max_time_is_an_error_naming_max_time(max_time: float) -> None:
    with pytest.raises(ValueError, match="max_time must be"):
        askew.simulate(seed=1, max_time=max_time)


def test_a_huge_max_time_means_until_virtual_time_ends() -> None:
    async def body(world: askew.World) -> None:
        await asyncio.sleep(1e6)

    run_sim(body, max_time=1e300)


def test_the_max_time_variable_is_bounded_like_the_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from askew._loop.settings import env_knobs

    for text in ("1e-10", "nan"):
        monkeypatch.setenv("ASKEW_MAX_TIME", text)
        with pytest.raises(ValueError, match="ASKEW_MAX_TIME"):
            env_knobs()
    monkeypatch.setenv("ASKEW_MAX_TIME", "1")
    monkeypatch.setenv("ASKEW_MAX_STEPS", str(2**64))
    with pytest.raises(ValueError, match="ASKEW_MAX_STEPS must be < 2"):
        env_knobs()


@pytest.mark.parametrize("offset", [math.nan, math.inf, -math.inf, 1e12, 9.2e9, -9.2e9])
def test_a_skew_offset_out_of_range_is_an_error_naming_offset(offset: float) -> None:
    async def body(world: askew.World) -> None:
        world.spawn(idle)
        with pytest.raises(ValueError, match="offset must be"):
            world.faults.skew(0, offset=offset)
        world.faults.skew(0, offset=-3e9)  # a large offset in range still works

    run_sim(body)


@pytest.mark.parametrize(
    "latency", [(0, 1e12), (0, math.nan), (0, math.inf), (1e300, 1e300), (0, 10**400)]
)
def test_a_latency_out_of_range_is_an_error_naming_latency(latency: Any) -> None:
    async def body(world: askew.World) -> None:
        with pytest.raises(ValueError, match=r"latency (lo|hi) must be"):
            world.net.configure(latency=latency)

    run_sim(body)


def test_advancing_the_clock_by_an_impossible_span_is_an_error_naming_it() -> None:
    async def body(world: askew.World) -> None:
        with pytest.raises(ValueError, match=r"advance\(seconds=...\) must be at most"):
            await world.clock.advance(1e300)

    run_sim(body)


# ---- 5. reports survive user __repr__ -------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BadRepr:
    x: int

    def __repr__(self) -> str:
        raise RuntimeError("repr refused")


class WrongRepr(NamedTuple):
    x: int

    def __repr__(self) -> Any:
        return 42


@pytest.mark.parametrize("payload", [BadRepr(1), WrongRepr(1)], ids=["raises", "not-str"])
def test_a_payload_whose_repr_fails_does_not_replace_the_report(payload: Any) -> None:
    async def body(world: askew.World) -> None:
        async def talk(node: Any) -> None:
            node.send(1 - node.id, payload)
            await node.recv()

        world.spawn(talk)
        world.spawn(talk)
        await world.clock.advance(1)
        raise AssertionError("the test's own failure")

    with pytest.raises(SimulationFailure) as info:
        run_sim(body, seed=5)
    report = info.value.report
    assert "the test's own failure" in report
    assert "seed=5" in report and "replay:" in report
    assert f"<{type(payload).__name__} object; its __repr__" in report


def test_an_exception_whose_str_raises_is_still_reported_with_its_seed() -> None:
    class Opaque(Exception):
        def __str__(self) -> str:
            raise ValueError("no")

    async def body(world: askew.World) -> None:
        raise Opaque()

    with pytest.raises(SimulationFailure) as info:
        run_sim(body, seed=6)
    assert "Opaque" in info.value.report and "seed=6" in info.value.report


class CallableWithBadRepr:
    def __call__(self) -> None:
        raise ValueError("the callback's own error")

    def __repr__(self) -> str:
        raise RuntimeError("repr refused")


def test_a_failing_callback_whose_repr_raises_reports_its_own_error() -> None:
    async def body(world: askew.World) -> None:
        asyncio.get_running_loop().call_soon(CallableWithBadRepr())
        await asyncio.sleep(1)

    with pytest.raises(SimulationFailure, match="the callback's own error"):
        run_sim(body)


def test_a_deadlock_report_survives_an_awaited_object_whose_repr_raises() -> None:
    class Stuck(asyncio.Future):  # type: ignore[type-arg]
        def __repr__(self) -> str:
            raise RuntimeError("repr refused")

    async def body(world: askew.World) -> None:
        await Stuck()

    with pytest.raises(askew.DeadlockError) as info:
        run_sim(body, seed=9)
    assert "<Stuck object; its __repr__ raised RuntimeError>" in info.value.report
    assert "seed=9" in info.value.report


# ---- 6. immutable subclasses only -----------------------------------------------------


class TagStr(str):
    pass


class TagInt(int):
    pass


class TagTuple(tuple):  # type: ignore[type-arg]
    pass


class TagBytes(bytes):
    pass


class SlotFloat(float):
    __slots__ = ("note",)


class Point(NamedTuple):
    x: int
    y: int


class Frozen(TagStr):
    __slots__ = ()


@pytest.mark.parametrize(
    "payload",
    [TagStr("a"), TagInt(1), TagTuple((1,)), TagBytes(b"x"), SlotFloat(1.5), Frozen("b")],
    ids=["str", "int", "tuple", "bytes", "slotted-float", "slotless-over-dict"],
)
def test_a_subclass_of_an_immutable_type_with_state_of_its_own_is_refused(payload: Any) -> None:
    async def body(world: askew.World) -> None:
        async def sender(node: Any) -> None:
            with pytest.raises(TypeError, match="can be changed after sending"):
                node.send(0, payload)
            with pytest.raises(TypeError, match="can be changed after sending"):
                node.send(0, (1, (payload,)))
            node.ok = True

        h = world.spawn(sender)
        await asyncio.sleep(0.1)
        assert h.ok

    run_sim(body)


def test_a_stateless_subclass_of_an_immutable_type_is_accepted() -> None:
    class Plain(int):
        __slots__ = ()

    async def body(world: askew.World) -> None:
        async def sender(node: Any) -> None:
            node.send(1, Point(1, 2))
            node.send(1, Plain(3))

        async def receiver(node: Any) -> None:
            node.got = [(await node.recv()).payload, (await node.recv()).payload]

        world.spawn(sender)
        r = world.spawn(receiver)
        await world.clock.advance(1)
        assert r.got == [Point(1, 2), 3]

    run_sim(body)


# ---- 7. handles hash by what the run fixes --------------------------------------------


def test_node_handles_iterate_a_set_in_the_same_order_in_every_process(tmp_path: Any) -> None:
    script = tmp_path / "handles.py"
    script.write_text(
        textwrap.dedent(
            """
            import os

            import askew

            # Shift where the handles land in memory, differently per process.
            junk = [object() for _ in range(37 * len(os.environ["SALT"]))]

            async def idle(node):
                while True:
                    await node.recv()

            @askew.simulate(seed=11, iterations=1)
            async def t(world):
                handles = [world.spawn(idle) for _ in range(12)]
                for h in set(handles):
                    world.log.emit(f"visit {h.id}")
                print(world.log.hash)

            t()
            """
        )
    )
    hashes = set()
    for salt in range(4):
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": os.getcwd(), "SALT": "x" * salt}
        out = subprocess.run(
            [sys.executable, str(script)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        hashes.add(out.stdout.strip())
    assert len(hashes) == 1


def test_node_handles_hash_by_id() -> None:
    async def body(world: askew.World) -> None:
        handles = [world.spawn(idle) for _ in range(5)]
        assert [hash(h) for h in handles] == [hash(i) for i in range(5)]
        assert len(set(handles) | set(handles)) == 5

    run_sim(body)


# ---- 8. an ended world refuses reads too ----------------------------------------------


def test_an_ended_world_refuses_to_read_its_log_or_stats() -> None:
    kept: list[askew.World] = []

    @askew.simulate(seed=1, iterations=2)
    async def t(world: askew.World) -> None:
        kept.append(world)
        world.spawn(idle)
        world.log.emit(f"run {len(kept)}")

    t()
    old = kept[0]
    for read in (
        lambda: list(old.log),
        lambda: len(old.log),
        lambda: old.log.hash,
        lambda: old.log.recent(3),
        lambda: old.net.stats(),
        lambda: old.now,
    ):
        with pytest.raises(RuntimeError, match="run has ended"):
            read()
    assert "ended" in repr(old)


# ---- 9. an abandoned loop is collected ------------------------------------------------


def test_a_loop_dropped_with_pending_timers_and_callbacks_is_collected() -> None:
    refs = []
    for i in range(20):
        loop = SimLoop(i)
        # Each queue holds a reference back to the loop: a cycle through C.
        loop.call_later(5, lambda lp=loop: lp)
        loop.call_soon(lambda lp=loop: lp)
        refs.append(weakref.ref(loop))
        del loop
    gc.collect()
    assert [r for r in refs if r() is not None] == []


def test_a_loop_dropped_with_a_message_in_flight_is_collected() -> None:
    refs = []
    for i in range(5):
        loop = SimLoop(i)
        loop._net.set_payload_check(None)
        a, b = loop._net.node_add(), loop._net.node_add()
        loop._net.configure(10**9, 10**9, 0, 0, -1, -1)

        class Carrier:
            __slots__ = ("loop",)

        c = Carrier()
        c.loop = loop  # the payload in flight refers back to the loop
        loop._net.send_from(a << 32, b, c)
        refs.append(weakref.ref(loop))
        del loop, c
    gc.collect()
    assert [r for r in refs if r() is not None] == []


# ---- 11. the divergence report names the right event ----------------------------------


def test_a_divergence_report_names_the_first_event_of_the_longer_run() -> None:
    from askew._report.report import Outcome, divergence
    from askew._world.log import Event

    common = [Event(0.0, "world", None, "a")]
    extra = Event(1.0, "world", None, "only in run 2")
    short = Outcome(None, None, 0.0, 1, 1, common)
    long = Outcome(None, None, 0.0, 1, 2, [*common, extra])

    async def t(world: askew.World) -> None:
        pass

    text = divergence(t, 1, 0, short, long)
    assert "run 2 logged more events, starting with #1" in text and "only in run 2" in text
    text = divergence(t, 1, 0, long, short)
    assert "run 1 logged more events, starting with #1" in text and "only in run 2" in text


def test_check_determinism_names_the_extra_event_of_a_nondeterministic_test() -> None:
    flips = iter(range(100))

    @askew.simulate(seed=1, iterations=1, check_determinism=True)
    async def t(world: askew.World) -> None:
        world.log.emit("both runs")
        if next(flips) % 2:
            world.log.emit("second run only")

    with pytest.raises(NondeterminismError, match=r"run 2 logged more events.*second run only"):
        t()


# ---- 12. C never trusts __len__ ---------------------------------------------------------


class LiarGroup:
    """Says it has one member, iterates many."""

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Any:
        return iter(self.ids)


def test_partition_sizes_its_buffer_from_what_it_read_not_from_len() -> None:
    loop = SimLoop(1)
    ids = [loop._net.node_add() for _ in range(64)]
    loop._net.partition([LiarGroup(ids[:32]), LiarGroup(ids[32:])])
    assert loop._net.link(0, 40)[4] and not loop._net.link(0, 1)[4]
    with pytest.raises(ValueError):
        loop._net.partition([LiarGroup([0, 1] * 40)])  # overlapping: refused, not written
    loop.close()


def test_partition_survives_groups_that_change_while_read() -> None:
    loop = SimLoop(1)
    for _ in range(8):
        loop._net.node_add()
    outer: list[Any] = []

    class Grower:
        def __iter__(self) -> Any:
            outer.extend([[7]] * 1000)  # grows the outer list mid-read
            return iter([0, 1])

    outer.extend([Grower(), [2, 3]])
    loop._net.partition(outer)
    assert loop._net.link(0, 2)[4]
    loop.close()


# ---- 10. methods, *args, and a class given as the seed --------------------------------


def test_simulate_supports_test_methods_with_fixtures(tmp_path: Any) -> None:
    from conftest import run_pytest

    result = run_pytest(
        tmp_path,
        """
        import askew

        class TestX:
            @askew.simulate(seed=3, iterations=2)
            async def test_method(self, world, tmp_path):
                assert isinstance(self, TestX) and tmp_path.exists()
                await world.clock.advance(1)
                assert world.now >= 1

            @askew.simulate(seed=4, iterations=1)
            async def test_method_fails_with_its_seed(self, world):
                assert world.seed == -1
        """,
    )
    assert "1 failed, 1 passed" in result.stdout, result.stdout
    assert "seed=4" in result.stdout and "TestX::test_method_fails_with_its_seed" in result.stdout


def test_replay_runs_a_test_method_given_bound() -> None:
    class TestY:
        seen: int | None = None

        @askew.simulate(seed=1, iterations=1)
        async def test_it(self, world: askew.World) -> None:
            self.seen = world.seed

    inst = TestY()
    askew.Replay.run(inst.test_it, seed=99)
    assert inst.seen == 99


def test_a_test_taking_star_args_gets_the_world() -> None:
    got: list[Any] = []

    @askew.simulate(seed=8, iterations=1)
    async def t(*args: Any) -> None:
        got.extend(args)

    t()
    assert len(got) == 1 and isinstance(got[0], askew.World) and got[0].seed == 8


def test_a_class_given_as_the_seed_is_refused_naming_the_seed() -> None:
    class SomeClass:
        pass

    with pytest.raises(TypeError, match=r"seed must be an int.*SomeClass"):
        askew.simulate(seed=SomeClass)  # type: ignore[arg-type]


def test_a_method_without_a_world_parameter_is_refused_clearly() -> None:
    with pytest.raises(TypeError, match="after self, for a method"):

        @askew.simulate(seed=1)
        async def test_m(self: Any) -> None:
            pass


# ---- 13. what the Python layer can close without askew-exec ---------------------------

_ENTROPY_SCRIPT = """
import random, secrets, sys, tempfile
import askew

out = []

@askew.simulate(seed=int(sys.argv[1]), iterations=2)
async def t(world):
    out.append((
        random.Random().random(),
        random.SystemRandom().getrandbits(64),
        secrets.token_hex(8),
        next(tempfile._get_candidate_names()),
    ))
    random.seed()  # the module generator, reseeded with no seed
    out.append(random.random())

t()
print(out)
"""


def test_unseeded_random_secrets_and_tempfile_names_follow_the_seed_in_every_process(
    tmp_path: Any,
) -> None:
    script = tmp_path / "entropy.py"
    script.write_text(_ENTROPY_SCRIPT)

    def run(seed: int, hashseed: str) -> str:
        env = {**os.environ, "PYTHONHASHSEED": hashseed, "PYTHONPATH": os.getcwd()}
        return subprocess.run(
            [sys.executable, str(script), str(seed)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    first = run(1, "0")
    assert run(1, "123") == first  # another process, another hash seed: the same draws
    assert run(2, "0") != first  # and they do come from the seed


_ESCAPES = {
    "subprocess.run": lambda: subprocess.run(["true"], check=False),
    "subprocess.check_output": lambda: subprocess.check_output(["true"]),
    "os.system": lambda: os.system("true"),
    "os.fork": lambda: os.fork(),
    "_thread.start_new_thread": lambda: __import__("_thread").start_new_thread(print, ()),
    "socket.connect": lambda: __import__("socket").socket().connect(("127.0.0.1", 9)),
    "socket.getfqdn": lambda: __import__("socket").getfqdn("8.8.8.8"),
    "socket.gethostbyaddr": lambda: __import__("socket").gethostbyaddr("127.0.0.1"),
}


@pytest.mark.parametrize("name", sorted(_ESCAPES))
def test_a_python_level_escape_fails_the_run_even_when_caught(name: str) -> None:
    async def body(world: askew.World) -> None:
        try:
            _ESCAPES[name]()
        except Exception:  # the code under test swallows it
            pass
        await asyncio.sleep(0)

    # Under askew-exec the preload may refuse the C call first ("... was
    # refused inside the simulation"); either way the caught refusal fails it.
    with pytest.raises(NondeterminismError, match=r"inside (a|the) simulation"):
        run_sim(body)


def test_a_socket_made_before_the_run_cannot_do_io_inside_it() -> None:
    import socket

    a, b = socket.socketpair()
    try:

        async def body(world: askew.World) -> None:
            with pytest.raises(NondeterminismError, match=r"socket\.send\(\)"):
                a.send(b"x")
            with pytest.raises(NondeterminismError, match=r"socket\.recv\(\)"):
                b.recv(1)

        with pytest.raises(NondeterminismError):
            run_sim(body)
        a.send(b"y")  # outside the run, the real thing again
        assert b.recv(1) == b"y"
    finally:
        a.close()
        b.close()


def test_the_scope_puts_back_every_name_it_closed() -> None:
    import _thread
    import random as random_module
    import socket
    import tempfile

    def names() -> list[Any]:
        return [
            subprocess.Popen._execute_child,  # type: ignore[attr-defined]
            os.system,
            os.fork,
            _thread.start_new_thread,
            random_module._urandom,  # type: ignore[attr-defined]
            random_module.Random.seed,
            random_module.seed,
            "connect" in vars(socket.socket),
            socket.getaddrinfo,
            tempfile._name_sequence,  # type: ignore[attr-defined]
        ]

    before = names()

    async def body(world: askew.World) -> None:
        assert names() != before

    run_sim(body)
    assert names() == before


def test_a_second_import_of_the_core_gets_its_own_module_state() -> None:
    """askew._core keeps its types, strings and free list in module state: a
    second module object (reinit after sys.modules lost the first) has
    types of its own, and loops of both run side by side in one process."""
    script = textwrap.dedent(
        """
        import asyncio, gc, importlib, sys
        import askew
        from askew import _core as first
        del sys.modules["askew._core"]
        second = importlib.import_module("askew._core")
        assert first is not second and first.Handle is not second.Handle
        second._configure_errors(RuntimeError)
        raw = second.Loop()
        handle = raw.call_soon(print, "second")
        assert type(handle) is second.Handle, type(handle)
        handle.cancel()
        loop = askew.new_event_loop()
        async def main():
            await asyncio.sleep(0.5)
            return 7
        assert loop.run_until_complete(main()) == 7
        loop.close()
        del raw, handle, first, second
        gc.collect()
        print("ok")
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=hang_guard(60),
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
