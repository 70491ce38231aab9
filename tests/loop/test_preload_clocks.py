# SPDX-License-Identifier: Apache-2.0
"""Real time C code can still reach inside a run, under askew-exec: the
kernel's clocks through /proc and its other calls (issue 24 item 17),
timers and real-time events (item 19), and timed condvar waits, which must
cost virtual time (item 20). Each is served from virtual time or refused by
name. Every run happens in a child; a wait that really waited would trip
the child's hang guard, never an assertion on time."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest
from preload_child import cxx_probe, needs_preload, run_json

pytestmark = needs_preload

# Run `body` (the source of an async function of the world) once, and print
# [what it returned, or None, and the first line of the refusal that failed
# it, or None].
_ONE_RUN = """
import asyncio, ctypes, json, os, signal, sys, time
libc = ctypes.CDLL(None, use_errno=True)
async def body(world):
{body}
out = run_once(body, seed=9)
print(json.dumps([out.get("value"), out.get("refused")]))
"""


def one_run(body: str, *args: str) -> tuple[object, str | None]:
    code = _ONE_RUN.format(body="\n".join("    " + line for line in body.strip().splitlines()))
    value, refused = run_json(code, *args)
    return value, refused


@pytest.mark.parametrize(
    "path",
    [
        "/proc/uptime",
        "/proc/self/stat",
        "/proc/self/schedstat",
        "/proc/thread-self/stat",
        "/proc/stat",
        "/proc/./uptime",
    ],
)
def test_the_kernels_clocks_through_proc_are_refused_by_name(path: str) -> None:
    value, refused = one_run(f"return open({path!r}).read()")
    assert value is None
    assert refused is not None and "was refused inside the simulation" in refused
    assert "real clock" in refused


def test_psutil_times_are_refused_inside_a_run() -> None:
    pytest.importorskip("psutil")
    for call in ("psutil.cpu_times()", "psutil.Process().create_time()", "psutil.boot_time()"):
        value, refused = one_run(f"import psutil\nreturn str({call})")
        assert value is None and refused is not None and "real clock" in refused, call


def test_the_kernels_other_readings_are_virtual() -> None:
    x86 = platform.machine() == "x86_64"
    value, refused = one_run(
        f"""
class Sysinfo(ctypes.Structure):
    _fields_ = [("uptime", ctypes.c_long), ("rest", ctypes.c_char * 256)]
class Timex(ctypes.Structure):
    _fields_ = [("modes", ctypes.c_uint), ("pad", ctypes.c_long * 8),
                ("sec", ctypes.c_long), ("usec", ctypes.c_long), ("rest", ctypes.c_char * 256)]
class Ntp(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("usec", ctypes.c_long), ("rest", ctypes.c_char * 256)]
class Tms(ctypes.Structure):
    _fields_ = [("utime", ctypes.c_long), ("stime", ctypes.c_long),
                ("cutime", ctypes.c_long), ("cstime", ctypes.c_long)]
await asyncio.sleep(5)
info, tx, ntp, tms = Sysinfo(), Timex(), Ntp(), Tms()
assert libc.sysinfo(ctypes.byref(info)) == 0
assert libc.adjtimex(ctypes.byref(tx)) >= 0
assert libc.ntp_gettimex(ctypes.byref(ntp)) >= 0
ticks = libc.syscall({100 if x86 else 153}, ctypes.byref(tms))  # SYS_times
usage = (ctypes.c_long * 18)()
assert libc.syscall({98 if x86 else 165}, 0, usage) == 0  # SYS_getrusage(RUSAGE_SELF)
return [info.uptime, int(time.monotonic()), tx.sec, ntp.sec, int(time.time()),
        ticks // os.sysconf("SC_CLK_TCK"), tms.stime,
        usage[0] + usage[1] / 1e6, usage[2] + usage[3] / 1e6, time.process_time()]
"""
    )
    assert refused is None
    uptime, monotonic, timex, ntp, wall, elapsed, stime, user, system, cpu = value  # type: ignore[misc]
    assert uptime == monotonic == elapsed == 5
    assert timex == ntp == wall < 1600000000  # 2020, not today
    assert stime == system == 0
    assert abs(user - cpu) < 1e-6  # the node's virtual CPU time, all of it user time


def test_a_timerfd_made_before_the_run_cannot_be_read_inside_it() -> None:
    out = run_json(
        """
        import ctypes, json, askew
        libc = ctypes.CDLL(None)
        fd = libc.timerfd_create(1, 0)  # CLOCK_MONOTONIC, before the run
        assert fd >= 0
        async def main():
            libc.timerfd_gettime(fd, ctypes.create_string_buffer(32))
        try:
            askew.run(main(), seed=1)
            print(json.dumps("read"))
        except askew.NondeterminismError as exc:
            print(json.dumps(str(exc).splitlines()[0]))
        """
    )
    assert "timerfd_gettime() was refused inside the simulation" in out, out


def test_a_file_written_in_a_run_carries_the_nodes_wall_clock(tmp_path: Path) -> None:
    value, refused = one_run(
        """
path = os.path.join(sys.argv[1], "f")
with open(path, "w") as f:
    f.write("x")
import tempfile
with tempfile.NamedTemporaryFile(dir=sys.argv[1], delete=False) as t:
    t.write(b"y")
await asyncio.sleep(3)
with open(path, "a") as f:
    f.write("z")
return [os.stat(path).st_mtime, os.stat(t.name).st_mtime, time.time()]
""",
        str(tmp_path),
    )
    assert refused is None
    written, temp, now = value  # type: ignore[misc]
    assert written == now  # the last write, in the same step
    assert now - 3.01 < temp < now - 3  # 3 virtual seconds (and a few steps' CPU) before


@pytest.mark.parametrize(
    "arm",
    [
        "signal.setitimer(signal.ITIMER_REAL, 0.5)",
        "signal.alarm(2)",
        "libc.timerfd_create(1, 0)",
        "libc.timer_create(1, None, ctypes.byref(ctypes.c_void_p()))",
    ],
)
def test_a_timer_armed_in_real_time_is_refused(arm: str) -> None:
    _value, refused = one_run(
        f"""
signal.signal(signal.SIGALRM, lambda *a: None)
try:
    {arm}
except OSError:
    pass  # caught or not, the run fails
return "armed"
"""
    )
    assert refused is not None and "real clock" in refused, refused


def test_disarming_a_timer_and_sigtimedwait_cost_nothing_real() -> None:
    value, refused = one_run(
        """
signal.setitimer(signal.ITIMER_REAL, 0)  # disarming passes
signal.alarm(0)
t0 = time.monotonic()
got = signal.sigtimedwait({signal.SIGUSR2}, 3)  # nothing can send it: 3 virtual s
return [got, time.monotonic() - t0]
"""
    )
    assert refused is None
    assert value == [None, 3.0]


def test_select_on_a_pipe_from_a_child_started_before_the_run_is_refused() -> None:
    out = run_json(
        """
        import asyncio, json, os, select, subprocess, askew
        child = subprocess.Popen(["sh", "-c", "sleep 0.2; echo late"], stdout=subprocess.PIPE)
        out = {}
        @askew.simulate(seed=2, iterations=1)
        async def own(world):
            r, w = os.pipe()  # made in the run: both ends are the run's
            os.write(w, b"x")
            out["own"] = select.select([r], [], [], 5)[0] == [r]
        own()
        @askew.simulate(seed=2, iterations=1)
        async def outside(world):
            select.select([child.stdout], [], [], 5)
        try:
            outside()
        except askew.NondeterminismError as exc:
            out["outside"] = str(exc).splitlines()[0]
        child.wait()
        print(json.dumps(out))
        """
    )
    assert out["own"] is True
    assert "select() was refused" in out["outside"] and "fed from outside" in out["outside"]


def test_a_timed_condvar_wait_in_cxx_moves_virtual_time_to_its_deadline() -> None:
    # std::condition_variable::wait_for(lk, 200ms, pred) ends only once
    # steady_clock passes the deadline: a wait that cost no virtual time
    # would never end (the child's hang guard would trip).
    value, refused = one_run(
        """
probe = ctypes.CDLL(sys.argv[1])
t0 = time.monotonic()
waited = probe.probe_wait_for_ms(200)
return [waited, round(time.monotonic() - t0, 6)]
""",
        str(cxx_probe()),
    )
    assert refused is None
    assert value == [200, 0.2]
