# SPDX-License-Identifier: Apache-2.0
"""Randomness C code reaches past getrandom, inside a run under askew-exec:
libc's global generators reseeded per run (issue 22 item 3), the random
devices served however they are reached (issue 22 item 6, issue 24 item
18), the kernel's other entropy refused by name, and temporary names drawn
from the run (issue 24 item 21). Every run happens in a child."""

from __future__ import annotations

from pathlib import Path

from preload_child import needs_preload, run_exec, run_json

pytestmark = needs_preload

_LIBC_DRAWS = """
import ctypes, json, sys, askew
from askew._run.runner import iteration_seed
libc = ctypes.CDLL(None)
libc.drand48.restype = ctypes.c_double
def draws():
    return [libc.rand(), libc.random(), libc.drand48()]
seen = {}
@askew.simulate(seed=11, iterations=3)
async def sweep(world):
    seen.setdefault("sweep", []).append(draws())
libc.srand(5)
libc.srand48(5)
host = [libc.rand(), libc.drand48()]
sweep()
host += [libc.rand(), libc.drand48()]
@askew.simulate(seed=iteration_seed(11, 1), iterations=1)
async def alone(world):
    seen["alone"] = draws()
alone()
libc.srand(5)
libc.srand48(5)
expected = [libc.rand(), libc.drand48(), libc.rand(), libc.drand48()]
print(json.dumps([seen, host, expected]))
"""


def test_libc_generators_draw_what_the_seed_draws_alone_and_the_host_keeps_its_own() -> None:
    seen, host, expected = run_json(_LIBC_DRAWS)
    sweep = seen["sweep"]
    assert len(sweep) == 3
    # Iteration 1 of the sweep draws what its seed draws alone, though
    # iteration 0 drew before it in the same process.
    assert sweep[1] == seen["alone"]
    assert sweep[0] != sweep[1] != sweep[2]
    # The host's sequences went on as if no run had drawn from them.
    assert host == expected
    # And they replay in another process.
    assert run_json(_LIBC_DRAWS)[0] == seen


_DEVICES = """
import ctypes, json, os, sys, askew
tmp = sys.argv[1]
os.symlink("/dev/urandom", os.path.join(tmp, "rnd"))
before = os.open("/dev/urandom", os.O_RDONLY)
libc = ctypes.CDLL(None)
libc.getauxval.restype = ctypes.c_ulong
AT_RANDOM = 25
def at_random():
    return ctypes.string_at(libc.getauxval(AT_RANDOM), 16).hex()
host_at_random = at_random()
out = {}
@askew.simulate(seed=21, iterations=1)
async def test(world):
    for path in ("/dev/urandom", "/dev/./urandom", "//dev/urandom", "/dev/../dev/random",
                 os.path.join(tmp, "rnd")):
        with open(path, "rb") as f:
            out[path] = f.read(8).hex()
    os.chdir("/")
    with open("dev/urandom", "rb", buffering=0) as f:
        out["relative"] = f.read(8).hex()
    out["before"] = os.read(before, 8).hex()
    out["at_random"] = at_random()
    out["at_random_again"] = at_random()
test()
out["host_at_random"] = host_at_random == at_random()
print(json.dumps(out))
"""


def test_the_random_devices_are_served_from_the_run_however_they_are_reached(
    tmp_path: Path,
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = run_json(_DEVICES, str(tmp_path / "a"))
    again = run_json(_DEVICES, str(tmp_path / "b"))
    assert first.pop("host_at_random") is True  # the process's own, outside
    again.pop("host_at_random")
    first = {k.replace(str(tmp_path / "a"), "tmp"): v for k, v in first.items()}
    again = {k.replace(str(tmp_path / "b"), "tmp"): v for k, v in again.items()}
    assert first == again  # every path read the run's stream, in both processes
    values = [v for k, v in first.items() if not k.startswith("at_random")]
    assert len(set(values)) == len(values)  # each read drew on
    assert first["at_random"] == first["at_random_again"]  # one per run


def test_the_kernels_uuid_and_a_processs_auxv_are_refused_by_the_name_the_kernel_gives() -> None:
    out = run_json(
        """
        import json, os, askew
        out = []
        for path in ("/proc/sys/kernel/random/uuid", "/proc/sys/kernel/random/../random/uuid",
                     "/proc/self/auxv", "/proc/thread-self/auxv"):
            @askew.simulate(seed=1, iterations=1)
            async def test(world):
                with open(path) as f:
                    f.read()
            try:
                test()
                out.append("read")
            except askew.NondeterminismError as exc:
                out.append(str(exc).splitlines()[0])
        print(json.dumps(out))
        """
    )
    assert len(out) == 4
    for line in out:
        assert "was refused inside the simulation" in line, line
        assert "kernel's entropy" in line


def test_temporary_names_made_in_c_replay_across_processes(tmp_path: Path) -> None:
    code = """
    import ctypes, json, os, sys, askew
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mkdtemp.restype = ctypes.c_char_p
    libc.mktemp.restype = ctypes.c_char_p
    where = sys.argv[1].encode()
    names = []
    @askew.simulate(seed=4, iterations=1)
    async def test(world):
        t = ctypes.create_string_buffer(where + b"/f-XXXXXX")
        fd = libc.mkstemp(t)
        assert fd >= 0
        os.close(fd)
        names.append(os.path.basename(t.value.decode()))
        t = ctypes.create_string_buffer(where + b"/s-XXXXXX.log")
        os.close(libc.mkstemps(t, 4))
        names.append(os.path.basename(t.value.decode()))
        d = libc.mkdtemp(ctypes.create_string_buffer(where + b"/d-XXXXXX"))
        names.append(os.path.basename(d.decode()))
        n = libc.mktemp(ctypes.create_string_buffer(where + b"/n-XXXXXX"))
        names.append(os.path.basename(n.decode()))
        bad = ctypes.create_string_buffer(where + b"/no-x")
        names.append([libc.mkstemp(bad), ctypes.get_errno()])
    test()
    print(json.dumps(names))
    """
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = run_json(code, str(tmp_path / "a"))
    assert first == run_json(code, str(tmp_path / "b"))
    assert first[-1] == [-1, 22]  # EINVAL: no XXXXXX
    file, suffixed, directory, name = first[:4]
    assert (tmp_path / "a" / file).is_file() and (tmp_path / "a" / suffixed).is_file()
    assert suffixed.endswith(".log") and (tmp_path / "a" / directory).is_dir()
    assert not (tmp_path / "a" / name).exists()  # mktemp only names
    # Outside a run: glibc's own names.
    outside = run_exec(
        """
        import ctypes, sys
        libc = ctypes.CDLL(None)
        t = ctypes.create_string_buffer(sys.argv[1].encode() + b"/f-XXXXXX")
        print(libc.mkstemp(t) >= 0, t.value.decode())
        """,
        str(tmp_path),
    )
    ok, path = outside.stdout.split()
    assert ok == "True" and Path(path).is_file()
