# SPDX-License-Identifier: Apache-2.0
"""What a refusal does, and what is not refused, under askew-exec: a
process that dies after a refusal says which seed killed it and the next
session knows it (issue 22 item 6); glibc's aio threads are refused (issue
24 item 21); calls whose result does not depend on what was refused are let
through: RSA PKCS#1 v1.5 signing in cryptography's own OpenSSL, SQLite's
sorter threads (item 23), a concurrent.futures.Future set on the loop
thread (item 25). Every run happens in a child."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from preload_child import (
    cxx_probe,
    needs_preload,
    run_argv,
    run_exec,
    run_json,
)

pytestmark = needs_preload


# A simulated test (executor="refuse": its runs take no thread) whose second
# iteration starts a C++ std::thread: the preload refuses it, nobody catches
# the std::system_error, and the process dies in std::terminate (leveldb's
# compaction did this to a whole session).
_DYING_SUITE = """
import ctypes, os
import askew
from askew._run.runner import iteration_seed

DIES = iteration_seed(77, 1)

@askew.simulate(seed=77, iterations=3, executor="refuse")
async def test_dies(world):
    if os.environ.get("DIE") and world.seed == DIES:
        ctypes.CDLL({probe!r}).probe_start_thread()

def test_other():
    pass
"""


def _session(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return run_argv([sys.executable, "-m", "pytest", "-q", *args], cwd=tmp_path, **env)


def test_a_death_after_a_refusal_names_the_seed_and_the_next_session_knows_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_mod.py").write_text(_DYING_SUITE.format(probe=str(cxx_probe())))
    seed = int(
        run_exec(
            "from askew._run.runner import iteration_seed; print(iteration_seed(77, 1))",
            preload=False,
        ).stdout
    )
    died = _session(tmp_path, "test_mod.py", DIE="1")
    assert died.returncode != 0
    report = died.stderr
    assert "askew: the process is dying of SIGABRT" in report
    assert "after the preload refused pthread_create()" in report
    assert f"seed: {seed}" in report
    # Under askew-exec: the replay is one too, or C code would see another world.
    replay = (
        f"replay: ASKEW_SEED={seed} ASKEW_ITERATIONS=1 askew-exec pytest 'test_mod.py::test_dies'"
    )
    assert replay in report
    crashes = list((tmp_path / ".askew" / "crashes").glob("crash-*.txt"))
    assert len(crashes) == 1 and f"recorded for the next session: {crashes[0]}" in report
    # The next session: --lf selects the test that killed the last one, the
    # seed database runs its seed first, and the record is taken.
    again = _session(tmp_path, "--lf", "test_mod.py")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 passed, 1 deselected" in again.stdout  # test_other: not the one
    assert not list((tmp_path / ".askew" / "crashes").glob("crash-*.txt"))
    rows = [json.loads(p.read_text()) for p in (tmp_path / ".askew" / "seeds").glob("*.json")]
    assert [row["seeds"] for row in rows] == [[[seed, 1]]]  # remembered, passed once since


def test_a_death_outside_pytest_still_prints_the_seed_and_how_to_replay() -> None:
    proc = run_exec(
        """
        import ctypes, sys, askew
        async def main():
            ctypes.CDLL(sys.argv[1]).probe_start_thread()
        askew.run(main(), seed=123)
        """,
        str(cxx_probe()),
    )
    assert proc.returncode != 0
    assert "askew: the process is dying of SIGABRT" in proc.stderr
    assert "seed: 123" in proc.stderr
    assert "replay: the same command with ASKEW_SEED=123 ASKEW_ITERATIONS=1" in proc.stderr
    assert "recorded" not in proc.stderr  # no test noted: nothing to record


def test_posix_aio_is_refused_inside_a_run() -> None:
    out = run_json(
        """
        import ctypes, json
        libc = ctypes.CDLL(None, use_errno=True)
        calls = ("aio_read", "aio_write", "aio_read64")
        print(json.dumps([
            run_once(lambda w: getattr(libc, name)(ctypes.create_string_buffer(512)))
            for name in calls
        ]))
        """
    )
    for outcome in out:
        line = outcome["refused"]
        assert "was refused inside the simulation" in line and "thread" in line, line


def test_rsa_pkcs1v15_signing_passes_and_key_generation_is_still_refused(
    tmp_path: Path,
) -> None:
    crypto = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa")
    from cryptography.hazmat.primitives import serialization

    pem = crypto.generate_private_key(public_exponent=65537, key_size=1024).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    (tmp_path / "key.pem").write_bytes(pem)
    code = """
    import json, sys, askew
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
    # Loaded, not made: the object's generator is first seeded inside the run.
    key = serialization.load_pem_private_key(open(sys.argv[1], "rb").read(), None)
    eck = ec.generate_private_key(ec.SECP256R1())
    async def sign():  # 40 signatures: the blinding is remade after 32
        return [key.sign(b"m%d" % i, padding.PKCS1v15(), hashes.SHA256()).hex()
                for i in range(40)]
    async def pss():
        pad = padding.PSS(padding.MGF1(hashes.SHA256()), padding.PSS.MAX_LENGTH)
        return key.sign(b"m", pad, hashes.SHA256()).hex()
    async def ecdsa():
        return eck.sign(b"m", ec.ECDSA(hashes.SHA256())).hex()
    async def keygen():
        return str(rsa.generate_private_key(public_exponent=65537, key_size=1024))
    print(json.dumps({f.__name__: run_once(lambda w: f()) for f in (sign, pss, ecdsa, keygen)}))
    """
    first = run_json(code, str(tmp_path / "key.pem"))
    signatures = first["sign"]["value"]
    assert isinstance(signatures, list) and len(signatures) == 40
    assert signatures == run_json(code, str(tmp_path / "key.pem"))["sign"]["value"]
    for name in ("pss", "ecdsa", "keygen"):  # their output is the generator's
        assert "time() from " in first[name]["refused"], first[name]


def test_sqlites_sorter_threads_are_not_refused() -> None:
    out = run_json(
        """
        import json, sqlite3, askew
        async def main():
            db = sqlite3.connect(":memory:")
            db.execute("PRAGMA threads=4")
            db.execute("PRAGMA cache_size=-64")  # small: the sort spills and splits
            db.execute("create table t(x, y)")
            rows = ((i * 7919 % 100003, "p" * 50) for i in range(200000))
            db.executemany("insert into t values (?, ?)", rows)
            db.execute("create index i on t(x, y)")
            return [r[0] for r in db.execute("select x from t order by y, x limit 3")]
        print(json.dumps(askew.run(main(), seed=1)))
        """
    )
    assert out == [0, 0, 1]


def test_a_future_set_on_the_loop_thread_is_no_handoff_and_a_waiting_thread_is() -> None:
    out = run_json(
        """
        import concurrent.futures as cf, json, threading, time, askew
        cf.ThreadPoolExecutor  # thread.py imported, as any pool user has it
        other = threading.Thread(target=time.sleep, args=(1,), daemon=True)
        other.start()  # another thread exists, which waits on nothing of ours
        async def own():
            f = cf.Future()
            f.add_done_callback(lambda f: None)
            f.set_result(3)
            return f.result()
        out = [askew.run(own(), seed=1)]
        waiting = cf.Future()
        t = threading.Thread(target=waiting.result, daemon=True)
        t.start()
        def state():
            with open(f"/proc/self/task/{t.native_id}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0]
        while not waiting._condition._waiters or state() != "S":
            time.sleep(0.001)  # until it sleeps on its lock in result()
        async def hand():
            waiting.set_result(4)  # wakes a thread that waits for it
        try:
            askew.run(hand(), seed=1)
            out.append("ran")
        except askew.NondeterminismError as exc:
            out.append(str(exc).splitlines()[0])
        print(json.dumps(out))
        """
    )
    assert out[0] == 3
    assert out[1].startswith("sem_post() was refused"), out[1]
