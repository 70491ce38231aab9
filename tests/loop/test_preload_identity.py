# SPDX-License-Identifier: Apache-2.0
"""Inside a run each node is a machine of its own: its hostname and its
process and thread ids, in Python and in C, and the host's outside the run
(issue 24 item 16). Every run happens under askew-exec in a child."""

from __future__ import annotations

from preload_child import needs_preload, run_json

pytestmark = needs_preload

# Each node (and the test body) reports what Python and C say it is.
_IDENTITIES = """
import asyncio, ctypes, io, json, logging, os, platform, socket, sys, threading
import askew
libc = ctypes.CDLL(None, use_errno=True)
SEED = int(sys.argv[1])
stream = io.StringIO()
log = logging.getLogger("ids")
handler = logging.StreamHandler(stream)
handler.setFormatter(logging.Formatter("%(process)d %(thread)d %(threadName)s"))
log.addHandler(handler)
log.setLevel(logging.INFO)

def me():
    name = ctypes.create_string_buffer(128)
    libc.gethostname(name, 128)
    log.info("x")
    logged = stream.getvalue().splitlines()[-1].split()
    return dict(
        host=socket.gethostname(), uname=os.uname().nodename, node=platform.node(),
        c_host=name.value.decode(), pid=os.getpid(), c_pid=libc.getpid(),
        ppid=os.getppid(), c_ppid=libc.getppid(), ident=threading.get_ident(),
        native=threading.get_native_id(), c_tid=libc.gettid(),
        thread_ident=threading.current_thread().ident,
        thread_name=threading.current_thread().name,
        logged=[int(logged[0]), int(logged[1]), logged[2]],
        loop=asyncio.get_running_loop() is not None,
    )

out = {}
@askew.simulate(seed=SEED, iterations=1)
async def test(world):
    async def node(n):
        await asyncio.sleep(0.1)
        out[str(n.id)] = me()
    world.spawn(node)
    world.spawn(node, name="db1")
    await asyncio.sleep(1)
    out["body"] = me()
test()
out["host"] = dict(host=socket.gethostname(), pid=os.getpid(), c_pid=libc.getpid(),
                   real_pid=int(os.readlink("/proc/self")))
print(json.dumps(out))
"""


def test_each_node_has_its_hostname_and_seeded_ids_in_python_and_in_c() -> None:
    out = run_json(_IDENTITIES, "7")
    for key, host in (("0", "node-0"), ("1", "db1"), ("body", "localhost")):
        me = out[key]
        assert me["host"] == me["uname"] == me["node"] == me["c_host"] == host, me
        assert me["pid"] == me["c_pid"] == me["native"] == me["c_tid"], me
        assert me["ppid"] == me["c_ppid"]
        assert me["ident"] == me["thread_ident"]
        # logging's %(process)d and %(thread)d are the node's; the thread
        # is still found by name (threading keeps it by its real ident)
        assert me["logged"] == [me["pid"], me["ident"], "MainThread"]
        assert me["loop"]
    pids = {out[key]["pid"] for key in ("0", "1", "body")}
    assert len(pids) == 3 and out["host"]["pid"] not in pids
    # Outside the run the host's, in Python and C.
    host = out["host"]
    assert host["pid"] == host["c_pid"] == host["real_pid"]


def test_identities_replay_across_processes_and_follow_the_seed() -> None:
    first, again, other = (run_json(_IDENTITIES, seed) for seed in ("7", "7", "8"))
    for key in ("0", "1", "body"):
        for field in ("pid", "ppid", "ident", "host"):
            assert first[key][field] == again[key][field]
    assert first["host"]["pid"] != again["host"]["pid"]  # two real processes
    assert [first[k]["pid"] for k in "01"] != [other[k]["pid"] for k in "01"]


def test_a_name_longer_than_a_hostname_reports_its_first_label() -> None:
    long_name = "db1." + ".".join(["a" * 60] * 3)
    out = run_json(
        f"""
        import asyncio, ctypes, json, socket
        libc = ctypes.CDLL(None)
        seen = []
        def node(world):
            async def run(n):
                name = ctypes.create_string_buffer(128)
                libc.gethostname(name, 128)
                seen.append([socket.gethostname(), name.value.decode()])
            world.spawn(run, name={long_name!r})
            return asyncio.sleep(1)
        run_once(node)
        print(json.dumps(seen))
        """
    )
    assert out == [["db1", "db1"]]


def test_a_restarted_node_is_a_new_process_with_the_same_name() -> None:
    out = run_json(
        """
        import asyncio, json, os, socket, askew
        seen = []
        @askew.simulate(seed=3, iterations=1)
        async def test(world):
            async def node(n):
                seen.append((socket.gethostname(), os.getpid()))
                await asyncio.sleep(100)
            a = world.spawn(node, name="web")
            await asyncio.sleep(1)
            world.faults.crash(a)
            world.faults.restart(a)
            await asyncio.sleep(1)
        test()
        print(json.dumps(seen))
        """
    )
    (host0, pid0), (host1, pid1) = out
    assert host0 == host1 == "web"
    assert pid0 != pid1


def test_a_signal_to_the_nodes_pid_reaches_this_process_and_another_is_refused() -> None:
    out = run_json(
        """
        import asyncio, json, os, signal, threading, askew
        got = []
        signal.signal(signal.SIGUSR1, lambda *a: got.append("usr1"))
        @askew.simulate(seed=5, iterations=1)
        async def test(world):
            async def node(n):
                os.kill(os.getpid(), signal.SIGUSR1)
                signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
                await asyncio.sleep(0)
            world.spawn(node)
            await asyncio.sleep(1)
        test()
        import ctypes
        libc = ctypes.CDLL(None)
        refused = []
        for call in (lambda: os.kill(1, 0), lambda: libc.kill(1, 0), lambda: os.killpg(0, 0)):
            @askew.simulate(seed=5, iterations=1)
            async def kills(world):
                try:
                    call()  # init, or whatever pid 1 is: outside the run
                except (PermissionError, askew.NondeterminismError):
                    pass  # caught or not, the run fails
            try:
                kills()
            except askew.NondeterminismError as exc:
                refused.append(str(exc).splitlines()[0])
        print(json.dumps([got, refused]))
        """
    )
    got, (python, c, group) = out
    assert got == ["usr1", "usr1"]
    assert "os.kill(1, ...) inside a simulation would signal a process outside" in python
    assert "kill() was refused inside the simulation" in c
    assert "os.killpg() inside a simulation" in group


def test_without_the_preload_python_sees_the_same_identity_and_signals_still_arrive() -> None:
    code = """
        import asyncio, json, os, signal, socket, threading, askew
        got, seen = [], {}
        signal.signal(signal.SIGUSR1, lambda *a: got.append("usr1"))
        @askew.simulate(seed=7, iterations=1)
        async def test(world):
            async def node(n):
                await asyncio.sleep(0.1)
                seen[n.id] = [socket.gethostname(), os.getpid(), threading.get_ident()]
                os.kill(os.getpid(), signal.SIGUSR1)  # the node's pid: this process
                await asyncio.sleep(0)
            world.spawn(node, name="db1")
            await asyncio.sleep(1)
        test()
        print(json.dumps([seen[0], got]))
        """
    plain = run_json(code, preload=False)
    preloaded = run_json(code)
    assert plain == preloaded
    (host, _pid, _ident), got = plain
    assert host == "db1" and got == ["usr1"]
