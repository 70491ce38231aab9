# SPDX-License-Identifier: Apache-2.0
"""libaskew-preload.so seen from Python: its exported surface, pass-through
outside a run, and what C and Python code see inside one.

Everything that needs the preload runs in a child process with LD_PRELOAD
set (this pytest process may not have it). A tiny test extension,
tests/c/probe_ext.c, calls the interposed functions directly and can play
the loop's part with a frozen clock and counter bytes. No test asserts on
how long anything took: a refused sleep is checked by its result and its
record, and one that really slept would trip the subprocess timeout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from conftest import hang_guard

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.find_spec("askew")
assert _spec is not None and _spec.submodule_search_locations is not None
ASKEW_DIR = Path(next(iter(_spec.submodule_search_locations)))
LIB = ASKEW_DIR / "libaskew-preload.so"
MAP = REPO / "preload" / "preload.map"
FNS = REPO / "preload" / "fns.def"
HEADER_DIR = REPO / "preload"
WALL_EPOCH_S = 1577836800
TIMEOUT = hang_guard(120)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not LIB.is_file(),
    reason="needs Linux and the built preload (run `make`)",
)


def _env(preload: bool = True, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = str(LIB)
    env.update(extra)
    return env


def run_python(
    code: str, *, preload: bool = True, pythonpath: Path | None = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = _env(preload, **extra)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(pythonpath), env.get("PYTHONPATH", "")) if p
        )
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def assert_ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="session")
def probe_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build tests/c/probe_ext.c into an importable _askew_probe module."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    source = REPO / "tests" / "c" / "probe_ext.c"
    if cc is None or not source.is_file() or not (HEADER_DIR / "askew_preload.h").is_file():
        pytest.skip("needs a C compiler and the source tree to build the probe extension")
    out = tmp_path_factory.mktemp("probe")
    target = out / f"_askew_probe{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-O1",
            "-std=c11",
            "-D_GNU_SOURCE",
            "-Wall",
            "-Werror",
            f"-I{sysconfig.get_paths()['include']}",
            f"-I{HEADER_DIR}",
            "-o",
            str(target),
            str(source),
            "-ldl",
            "-lpthread",
        ],
        check=True,
    )
    return out


# ---- the library's surface --------------------------------------------------


def _map_symbols() -> set[str]:
    text = re.sub(r"/\*.*?\*/", "", MAP.read_text(), flags=re.S)
    body = text.split("global:", 1)[1].split("local:", 1)[0]
    return {s.strip() for s in body.replace("\n", " ").split(";") if s.strip()}


@pytest.mark.skipif(shutil.which("nm") is None or not MAP.is_file(), reason="needs nm")
def test_the_library_exports_exactly_the_version_script() -> None:
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(LIB)], capture_output=True, text=True, check=True
    ).stdout
    exported = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
    assert exported == _map_symbols()


def _table_exports() -> set[str]:
    """fns.def's EXPORT rows, and the control API's entry point."""
    text = FNS.read_text()
    rows = re.findall(r"^ASKEW_FN\((\w+), (\w+), (\w+), (\w+)\)$", text, flags=re.M)
    assert len(rows) == text.count("\nASKEW_FN("), "a row of fns.def this test cannot read"
    assert {export for _, _, export, _ in rows} <= {"EXPORT", "INTERNAL"}
    return {name for name, _, export, _ in rows if export == "EXPORT"} | {"askew_preload_get_api"}


@pytest.mark.skipif(not MAP.is_file() or not FNS.is_file(), reason="needs the source tree")
def test_the_version_script_lists_exactly_the_table_s_interposers() -> None:
    # preload.map is checked in (docs/preload.md says why): this keeps it
    # fns.def's, and the nm test above keeps the library the map's.
    in_map, in_table = _map_symbols(), _table_exports()
    assert in_map == in_table, (
        f"preload.map lacks {sorted(in_table - in_map)}, "
        f"has beyond fns.def {sorted(in_map - in_table)}"
    )


@pytest.mark.skipif(shutil.which("readelf") is None, reason="needs readelf")
def test_the_library_needs_nothing_but_libc() -> None:
    out = subprocess.run(
        ["readelf", "-d", str(LIB)], capture_output=True, text=True, check=True
    ).stdout
    needed = set(re.findall(r"\(NEEDED\).*\[(.+?)\]", out))
    assert not any("python" in n for n in needed)
    assert needed <= {"libc.so.6", "libdl.so.2", "libpthread.so.0"}


def test_python_and_coreutils_run_unchanged_and_silent_under_the_preload() -> None:
    assert run_python("pass").stderr == ""
    for argv in (["true"], ["sh", "-c", "date +%s >/dev/null; ls / >/dev/null; echo ok"]):
        proc = subprocess.run(argv, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
        assert proc.returncode == 0
        assert proc.stderr == ""


# ---- outside a run: the real system ------------------------------------------


def test_outside_a_run_every_interposer_passes_through(probe_dir: Path) -> None:
    out = run_python(
        """
        import socket, time, _askew_probe as p
        t0 = time.time_ns()
        c = p.clock_gettime(time.CLOCK_REALTIME)
        assert t0 <= c <= time.time_ns(), (t0, c)
        assert p.pthread_create() == 0
        assert p.fork() == 0
        assert p.socket(socket.AF_INET) == 0
        assert p.nanosleep(0) == 0
        assert len(p.read_urandom(8)) == 8
        assert len(p.getrandom(16)) == 16 and p.draws() == 0
        print("ok")
        """,
        pythonpath=probe_dir,
    )
    assert assert_ok(out).strip() == "ok"


# ---- inside a run -----------------------------------------------------------------

_ENTER = f"""
import _askew_probe as p
WALL = ({WALL_EPOCH_S} + 5) * 10**9 + 250
MONO = 1000 * 10**9
p.enter(WALL, MONO)
"""


def test_inside_a_run_c_and_python_read_the_same_virtual_clock(probe_dir: Path) -> None:
    out = run_python(
        _ENTER
        + """
import datetime, time
r = dict(
    c_realtime=p.clock_gettime(time.CLOCK_REALTIME),
    c_time=p.time(),
    c_tod=p.gettimeofday(),
    time_ns=time.time_ns(),
    monotonic_ns=time.monotonic_ns(),
    perf_ns=time.perf_counter_ns(),
    tai=time.clock_gettime_ns(time.CLOCK_TAI),
    process=time.process_time_ns(),
    now=datetime.datetime.now(datetime.timezone.utc).isoformat(),
    localtime=time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
)
p.leave()
import json; print(json.dumps(r))
""",
        pythonpath=probe_dir,
    )
    r = json.loads(assert_ok(out))
    wall = (WALL_EPOCH_S + 5) * 10**9 + 250
    assert r["c_realtime"] == r["time_ns"] == wall
    assert r["c_time"] == WALL_EPOCH_S + 5
    assert r["c_tod"] == (WALL_EPOCH_S + 5) * 10**6
    assert r["monotonic_ns"] == r["perf_ns"] == r["process"] == 1000 * 10**9
    assert r["tai"] == wall + 37 * 10**9
    assert r["now"].startswith("2020-01-01T00:00:05")
    assert r["localtime"] == "2020-01-01 00:00:05"


def test_inside_a_run_entropy_comes_from_the_run_on_every_path(probe_dir: Path) -> None:
    out = run_python(
        _ENTER
        + """
import os, uuid
r = dict(
    urandom=os.urandom(4).hex(),
    getrandom=os.getrandom(4).hex(),  # syscall(SYS_getrandom), not getrandom()
    c_getentropy=p.getentropy(2).hex(),
    empty=(os.urandom(0), os.getrandom(0), p.getrandom(0)),
    uuid=str(uuid.uuid4()),
    draws=p.draws(),
)
urandom_read = p.read_urandom(2).hex()  # the device, opened in C: served as well
violations = p.violations()
p.leave()
import json; print(json.dumps(dict(r, empty=None, urandom_read=urandom_read, v=violations)))
""",
        pythonpath=probe_dir,
    )
    r = json.loads(assert_ok(out))
    assert r["urandom"] == "00010203"
    assert r["getrandom"] == "04050607"
    assert r["c_getentropy"] == "0809"
    assert r["uuid"] == "0a0b0c0d-0e0f-4011-9213-141516171819"
    assert r["draws"] == 4  # the three zero-length reads drew nothing
    assert r["urandom_read"] == "1a1b"
    assert r["v"] == []


def test_inside_a_run_threads_processes_and_sockets_are_refused_and_recorded(
    probe_dir: Path,
) -> None:
    out = run_python(
        _ENTER
        + """
import errno, os, socket, subprocess, threading
r = {}
try:
    threading.Thread(target=print).start()
except RuntimeError as e:
    r["thread"] = str(e)
try:
    socket.socket()
except PermissionError as e:
    r["socket"] = e.errno
try:
    socket.getaddrinfo("example.com", 80)
except OSError as e:
    r["dns"] = e.errno
r["localhost"] = len(socket.getaddrinfo("localhost", 80)) > 0
r["unix"] = socket.socketpair(socket.AF_UNIX)[0].family == socket.AF_UNIX
try:
    subprocess.run(["true"])
except OSError as e:
    r["subprocess"] = e.errno
r["c_thread"] = p.pthread_create()
r["c_fork"] = p.fork()
r["c_socket"] = p.socket(socket.AF_INET6)
r["v"] = p.violations()
p.leave()
import json; print(json.dumps(r))
""",
        pythonpath=probe_dir,
    )
    r = json.loads(assert_ok(out))
    assert "can't start new thread" in r["thread"]
    assert r["socket"] == r["dns"] == r["c_socket"] == 13  # EACCES
    assert r["localhost"] and r["unix"]
    assert r["subprocess"] == 11  # EAGAIN
    assert r["c_thread"] == r["c_fork"] == 11
    assert r["v"][0] == "pthread_create"
    assert {"socket", "getaddrinfo", "pthread_create", "fork"} <= set(r["v"])
    assert any(v in ("fork", "vfork", "posix_spawn", "execve") for v in r["v"][3:])


def test_inside_a_run_blocking_waits_return_at_once_with_their_timeout_result(
    probe_dir: Path,
) -> None:
    # Each of these would block for an hour; the subprocess timeout is two minutes.
    out = run_python(
        _ENTER
        + """
import queue, select, socket, threading, time
r = {}
time.sleep(3600)
lock = threading.Lock(); lock.acquire()
r["lock"] = lock.acquire(timeout=3600)
r["event"] = threading.Event().wait(3600)
a, b = socket.socketpair()
r["select"] = select.select([a], [], [], 3600)[0]
b.send(b"x")
r["ready"] = len(select.select([a], [], [], 3600)[0])
r["c_nanosleep"] = p.nanosleep(3600)
r["v"] = p.violations()
p.leave()
import json; print(json.dumps(r))
""",
        pythonpath=probe_dir,
    )
    r = json.loads(assert_ok(out))
    assert r["lock"] is False and r["event"] is False
    assert r["select"] == [] and r["ready"] == 1
    assert r["c_nanosleep"] == 0
    assert r["v"][0] == "clock_nanosleep"
    assert "sem_clockwait" in r["v"] or "sem_timedwait" in r["v"]
    assert r["v"].count("select") + r["v"].count("poll") + r["v"].count("epoll_wait") >= 1


def test_a_thread_started_before_the_run_keeps_real_time_and_the_gil_moves(
    probe_dir: Path,
) -> None:
    # A watchdog-like thread spins on the GIL while the run computes: the
    # GIL hand-off waits on a timed condvar on the simulation thread, which
    # must neither hang nor count as a refused wait.
    out = run_python(
        """
import threading, time, _askew_probe as p
seen, stop = [], threading.Event()
def watchdog():
    while not stop.is_set():
        seen.append(time.time())
        time.sleep(0.001)
t = threading.Thread(target=watchdog); t.start()
"""
        + _ENTER.replace("import _askew_probe as p", "")
        + """
total = 0
for i in range(3_000_000):
    total += i
inside = time.time()
v = p.violations()
p.leave()
stop.set(); t.join()
print(inside == WALL / 1e9, bool(seen) and all(abs(s - WALL / 1e9) > 1e6 for s in seen), v)
""",
        pythonpath=probe_dir,
    )
    assert assert_ok(out).strip() == "True True []"


def test_library_constructors_and_fork_children_see_the_real_system(probe_dir: Path) -> None:
    out = run_python(
        _ENTER
        + """
import os, time
p.leave()
pid = os.fork()
if pid == 0:
    os._exit(0 if abs(time.time() - WALL / 1e9) > 1e6 else 1)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
""",
        pythonpath=probe_dir,
    )
    assert assert_ok(out).strip() == "0"


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")
def test_self_test_fails_when_another_preload_shadows_the_clock(tmp_path: Path) -> None:
    shadow = tmp_path / "libshadow.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(shadow), str(REPO / "tests/c/probe_shadow.c"), "-ldl"],
        check=True,
    )
    code = """
import json
try:
    from askew._loop.preload import preload_status
    print(json.dumps(preload_status()))
except ImportError as e:
    print(json.dumps({"active": None, "self_test": repr(e)}))
"""
    env = _env(LD_PRELOAD=f"{shadow}:{LIB}")
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=TIMEOUT
    )
    status = json.loads(assert_ok(proc))
    if status["active"] is None:
        pytest.skip(f"askew does not import yet: {status['self_test']}")
    assert status["active"] is False
    assert "libshadow.so" in status["self_test"]


def test_ctypes_loading_the_preload_does_not_activate_it() -> None:
    code = f"""
import ctypes, json
ctypes.CDLL({str(LIB)!r}, mode=ctypes.RTLD_GLOBAL)
try:
    from askew._loop.preload import preload_status
    print(json.dumps(preload_status()))
except ImportError as e:
    print(json.dumps({{"active": None, "self_test": repr(e)}}))
"""
    status = json.loads(assert_ok(run_python(code, preload=False)))
    if status["active"] is None:
        pytest.skip(f"askew does not import yet: {status['self_test']}")
    assert status["active"] is False
    assert "dlopen" in status["self_test"]


def test_a_preload_of_another_abi_major_fails_every_run_naming_both_and_its_path(
    tmp_path: Path,
) -> None:
    _needs_askew()
    other = tmp_path / "libother-abi.so"
    source = REPO / "tests/c/probe_abi.c"
    subprocess.run(
        ["cc", "-shared", "-fPIC", f"-I{HEADER_DIR}", "-o", str(other), str(source)], check=True
    )
    code = """
import asyncio, json, askew, askew._loop.preload
status = askew._loop.preload.preload_status()  # outside a run: reported, no error
async def main():
    await asyncio.sleep(1)
try:
    askew.run(main(), seed=1)
    error = None
except RuntimeError as e:
    error = str(e)
print(json.dumps([status, error]))
"""
    status, error = json.loads(assert_ok(run_python(code, preload=False, LD_PRELOAD=str(other))))
    assert status["found"] is True and status["active"] is False
    assert status["path"] == str(other)
    assert error is not None, "the run went ahead without the preload it found"
    assert "preload ABI 2.0" in error and "speaks 1." in error and str(other) in error


# ---- with askew's own loop ------------------------------------------------------

_ASKEW_OK = "import askew._core, askew._loop.loop"


def _needs_askew() -> None:
    proc = run_python(_ASKEW_OK, preload=False)
    if proc.returncode != 0:
        pytest.skip(f"askew does not import yet: {proc.stderr.strip().splitlines()[-1:]}")


def test_askew_core_reports_the_preload_active_only_under_it() -> None:
    _needs_askew()
    code = "import askew, askew._loop.preload, json; print(json.dumps([askew.preload_active(), "
    code += "askew._loop.preload.preload_status()]))"
    active, status = json.loads(assert_ok(run_python(code)))
    assert active is True and status["found"] and status["path"] == str(LIB)
    inactive, status = json.loads(assert_ok(run_python(code, preload=False)))
    assert inactive is False and status["found"] is False


def test_a_c_thread_inside_a_simulation_raises_nondeterminism_error_naming_the_call(
    probe_dir: Path,
) -> None:
    _needs_askew()
    out = run_python(
        """
import time, askew, _askew_probe as p
seen = {}
async def main():
    seen["time"] = time.time()
    try:
        p.pthread_create()  # a C extension starting a thread, error ignored
        seen["after"] = True
    except Exception as e:
        seen["caught"] = repr(e)
try:
    askew.run(main(), seed=1, strategy="fifo")  # fifo: the first step reads time 0
except askew.NondeterminismError as e:
    print("raised:", str(e).splitlines()[0])
    print("frames:", "_askew_probe" in str(e))
print(seen.get("time") == askew._core.WALL_EPOCH)
""",
        pythonpath=probe_dir,
    )
    text = assert_ok(out)
    assert "raised: pthread_create() was refused inside the simulation" in text
    assert "frames: True" in text
    assert text.strip().endswith("True")


def test_a_refusal_without_the_gil_still_raises_in_the_simulation(probe_dir: Path) -> None:
    # pthread_create with the GIL released: on_violation runs without it and
    # must only schedule a pending call, which raises at the next bytecode.
    _needs_askew()
    out = run_python(
        """
import askew, _askew_probe as p
async def main():
    p.pthread_create_nogil()
    for _ in range(1000):
        pass
    return "not raised"
try:
    print(askew.run(main(), seed=2))
except askew.NondeterminismError as e:
    print("raised:", str(e).splitlines()[0])
""",
        pythonpath=probe_dir,
    )
    assert "raised: pthread_create() was refused inside the simulation" in assert_ok(out)


# ---- issue 11: what got past the preload ---------------------------------------


def _run_each(body: str, probe_dir: Path | None = None) -> dict[str, object]:
    """Run `body` (which defines ATTEMPTS: name -> callable) once per attempt
    in askew.run under the preload: what each attempt's run raised."""
    _needs_askew()
    out = run_python(
        body
        + """
import askew, json
r = {}
for name, f in ATTEMPTS.items():
    async def main(f=f):
        try:
            f()
        except OSError:
            pass  # caught: the run must fail all the same
    try:
        askew.run(main(), seed=1)
        r[name] = None
    except askew.NondeterminismError as e:
        r[name] = {"text": str(e), "task": e.task, "where": e.where}
print(json.dumps(r))
""",
        pythonpath=probe_dir,
    )
    return dict(json.loads(assert_ok(out)))


def test_io_on_a_socket_made_before_the_run_is_refused_inside_it() -> None:
    r = _run_each(
        """
import os, socket, _socket
srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); srv.bind(("127.0.0.1", 0))
cli = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); cli.connect(srv.getsockname())
a, b = socket.socketpair()
S = _socket.socket  # the C methods, below askew's Python-level refusals
ATTEMPTS = {
    "send": lambda: S.send(cli, b"x"),
    "sendto": lambda: S.sendto(srv, b"x", cli.getsockname()),
    "sendmsg": lambda: S.sendmsg(cli, [b"x"]),
    "recv": lambda: S.recv(srv, 1),
    "recvfrom": lambda: S.recvfrom(srv, 1),
    "write": lambda: os.write(cli.fileno(), b"x"),
    "read": lambda: os.read(srv.fileno(), 1),
    "unix": lambda: (S.send(a, b"x"), S.recv(b, 1)),
}
"""
    )
    for name in ("send", "sendto", "sendmsg", "recv", "recvfrom", "write", "read"):
        got = r[name]
        assert isinstance(got, dict), name
        assert f"{name}() was refused inside the simulation" in str(got["text"])
    assert r["unix"] is None


def test_reverse_lookups_are_refused_inside_a_run_unless_numeric() -> None:
    r = _run_each(
        """
import socket, _socket  # _socket's functions: below askew's Python-level refusals
ATTEMPTS = {
    "gethostbyaddr": lambda: _socket.gethostbyaddr("127.0.0.1"),
    "getfqdn": lambda: socket.getfqdn("127.0.0.1"),
    "getnameinfo": lambda: _socket.getnameinfo(("127.0.0.1", 80), 0),
    "numeric": lambda: _socket.getnameinfo(("127.0.0.1", 80), socket.NI_NUMERICHOST),
}
"""
    )
    assert "gethostbyaddr_r() was refused" in str(r["gethostbyaddr"]["text"])  # type: ignore[index]
    # socket.getfqdn itself is refused by the Python layer, before the preload.
    assert "socket.getfqdn() inside a simulation" in str(r["getfqdn"]["text"])  # type: ignore[index]
    assert "getnameinfo() was refused" in str(r["getnameinfo"]["text"])  # type: ignore[index]
    assert r["numeric"] is None


def test_forkpty_and_pty_fork_are_refused_inside_a_run() -> None:
    r = _run_each(
        """
import posix, pty
ATTEMPTS = {"forkpty": posix.forkpty, "pty.fork": pty.fork}  # posix: below os's refusal
"""
    )
    got = r["forkpty"]
    assert isinstance(got, dict)
    assert str(got["text"]).startswith("forkpty() was refused inside the simulation")
    # pty.fork calls os.forkpty, which the Python layer refuses first.
    assert str(r["pty.fork"]["text"]).startswith("os.forkpty() inside a simulation")  # type: ignore[index]


def test_preload_reports_name_the_task_the_users_line_and_the_c_caller() -> None:
    # Every refusal here returns an error the code under test catches, and
    # its task ends before any eval-breaker check: the report is made from
    # inside the refused call, where the task and the line still are.
    r = _run_each(
        """
import socket, _socket  # the C entry points, below askew's Python-level refusals
cli = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
ATTEMPTS = {
    "sendto": lambda: _socket.socket.sendto(cli, b"x", ("127.0.0.1", 9)),
    "getnameinfo": lambda: _socket.getnameinfo(("127.0.0.1", 80), 0),
    "socket": lambda: _socket.socket(),
}
"""
    )
    for name, got in r.items():
        assert isinstance(got, dict), name
        assert got["task"] == "Task-1 running main()", got
        assert str(got["where"]).startswith("<string>:") and "<lambda>" in str(got["where"])
    # sock_sendto is static in _socket: named from the file's symbol table.
    assert "(sock_sendto+0x" in str(r["sendto"]["text"])  # type: ignore[index]


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs nm")
def test_symbolize_names_static_functions_from_the_symbol_table() -> None:
    from askew._loop.preload import symbolize

    lib = str(LIB)
    out = subprocess.run(["nm", lib], capture_output=True, text=True, check=True).stdout
    statics = [ln.split() for ln in out.splitlines() if " t " in ln]
    addr, _, name = statics[0]
    assert symbolize(lib, int(addr, 16) + 4) == f"{name}+0x4"
    assert symbolize("/nonexistent", 16) is None


def test_entropy_drawn_during_an_import_does_not_shift_the_runs_stream(tmp_path: Path) -> None:
    # An extension's initialisation draws entropy in C the first time it is
    # imported (cryptography draws 16 bytes): only the first iteration of a
    # sweep imports it, so the draw must not move os.urandom after it, or an
    # iteration's reported seed would not replay alone.
    _needs_askew()
    (tmp_path / "draws_at_import.py").write_text("import os\nKEY = os.getrandom(16)\n")
    out = run_python(
        """
import askew, json, os
async def main(do_import):
    if do_import:
        import draws_at_import
    return os.urandom(8).hex()
plain = askew.run(main(False), seed=5)
first_import = askew.run(main(True), seed=5)
again = askew.run(main(True), seed=5)
print(json.dumps([plain, first_import, again]))
""",
        pythonpath=tmp_path,
    )
    plain, first_import, again = json.loads(assert_ok(out))
    assert plain == first_import == again


def test_work_handed_to_a_thread_pool_made_before_the_run_is_refused() -> None:
    # The pool's worker is parked or busy; either way the run must fail, every
    # time, and the advice must not be to start threads before the run.
    _needs_askew()
    out = run_python(
        """
import askew, concurrent.futures as cf, json, threading, time
pool = cf.ThreadPoolExecutor(2)
pool.submit(int).result()
async def main():
    return pool.submit(time.time).result()
r = []
for seed in range(10):
    try:
        askew.run(main(), seed=seed)
        r.append("ran")
    except askew.NondeterminismError as e:
        r.append(str(e))
# A hand-rolled Event between the run and a thread of the user's is let
# through: docs/preload.md says so.
go, done = threading.Event(), threading.Event()
t = threading.Thread(target=lambda: (go.wait(60), done.set())); t.start()
async def events():
    go.set(); done.wait()
    return "events ok"
r.append(askew.run(events(), seed=1))
t.join(); pool.shutdown()
print(json.dumps(r))
"""
    )
    *runs, events = json.loads(assert_ok(out))
    assert events == "events ok"
    for text in runs:
        assert text.startswith(("sem_post() was refused", "sem_wait() was refused")), text
        assert "Task-1 running main()" in text
        assert "before the run" not in text


def test_the_thread_refusal_does_not_advise_starting_threads_before_the_run(
    probe_dir: Path,
) -> None:
    _needs_askew()
    out = run_python(
        """
import askew, _askew_probe as p
async def main():
    p.pthread_create()
try:
    askew.run(main(), seed=1)
except askew.NondeterminismError as e:
    print(e)
""",
        pythonpath=probe_dir,
    )
    text = assert_ok(out)
    assert text.startswith("pthread_create() was refused")
    assert "before the run" not in text and "inline" in text


def test_openssl_and_sqlite_prngs_replay_across_processes_inside_a_run() -> None:
    # Both generators are used (and so seeded) before the run, and OpenSSL
    # mixes the pid and the thread's address into every draw: inside the run
    # the bytes must depend on the seed alone.
    _needs_askew()
    code = """
import askew, json, sqlite3, ssl
before = (ssl.RAND_bytes(8), sqlite3.connect(":memory:").execute("select random()").fetchone())
async def main():
    db = sqlite3.connect(":memory:")
    row = db.execute("select random(), hex(randomblob(8))").fetchone()
    return [ssl.RAND_bytes(16).hex(), ssl.RAND_bytes(0).hex(), list(row)]
inside = askew.run(main(), seed=11)
after = (ssl.RAND_bytes(8), sqlite3.connect(":memory:").execute("select random()").fetchone())
print(json.dumps([inside, len(after[0]) == 8 and after[1] is not None]))
"""
    runs = [json.loads(assert_ok(run_python(code, PYTHONHASHSEED=str(h)))) for h in (1, 2)]
    assert runs[0] == runs[1]
    (rand, empty, (sql_random, blob)), outside_ok = runs[0]
    assert len(rand) == 32 and empty == "" and len(blob) == 16 and outside_ok
    assert isinstance(sql_random, int)
