# SPDX-License-Identifier: Apache-2.0
"""bench/_harness.py: a broken askew fails a benchmark loudly (an exception,
a non-zero exit), and only a peer that is genuinely absent is listed as
unavailable, with the reason."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from conftest import hang_guard

BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.fixture
def harness(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    monkeypatch.syspath_prepend(str(BENCH))
    import _harness

    yield _harness


def _failing_after(calls: int) -> object:
    """A side factory whose runner works `calls` times, then raises."""

    def factory() -> object:
        done = [0]

        def run() -> int:
            done[0] += 1
            if done[0] > calls:
                raise RuntimeError("askew side broke")
            return 1

        return run

    return factory


@pytest.mark.parametrize("calls", [0, 1], ids=["at warm-up", "mid-run"])
def test_a_failing_askew_side_raises_out_of_compare(harness: ModuleType, calls: int) -> None:
    sides = [harness.Side("askew", _failing_after(calls))]
    with pytest.raises(RuntimeError, match="askew side broke"):
        harness.compare(sides, repeats=2, warmup=1)


def test_a_bench_with_a_broken_askew_exits_non_zero_and_prints_no_n_a(tmp_path: Path) -> None:
    driver = tmp_path / "driver.py"
    driver.write_text(
        textwrap.dedent(
            f"""
            import sys
            sys.path.insert(0, {str(BENCH)!r})
            import askew

            def broken(*args, **kwargs):
                raise RuntimeError("askew is broken on purpose")

            askew.new_event_loop = broken
            import bench_timer
            sys.exit(bench_timer.main(["--quick", "--repeats", "1"]))
            """
        )
    )
    proc = subprocess.run(
        [sys.executable, str(driver)],
        capture_output=True,
        text=True,
        timeout=hang_guard(120),
        check=False,
    )
    assert proc.returncode != 0, proc.stdout
    assert "askew is broken on purpose" in proc.stderr
    assert "unavailable" not in proc.stdout and "n/a" not in proc.stdout


def test_a_failing_bench_child_raises(harness: ModuleType) -> None:
    with pytest.raises(harness.BenchFailed, match="exited 3"):
        harness.run_child(
            ["-c", "import sys; print('partial'); sys.exit(3)"], timeout=hang_guard(60)
        )


def test_a_missing_peer_is_listed_unavailable_with_the_reason(
    harness: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    def peer() -> object:
        return harness.import_peer("askew_no_such_peer", min_python=None)

    def stock() -> object:
        return lambda: 1

    results = harness.compare([harness.Side("stock", stock), harness.Side("peer", peer)], repeats=2)
    by_name = harness.by_name(results)
    assert by_name["stock"].unavailable is None and len(by_name["stock"].per_op_ns) == 2
    assert by_name["peer"].unavailable == (
        "askew_no_such_peer is not installed for this Python "
        "(ModuleNotFoundError: No module named 'askew_no_such_peer')"
    )
    harness.print_table("t", results, unit="op", reference="stock")
    assert "peer                      unavailable: askew_no_such_peer is not installed" in (
        capsys.readouterr().out
    )


def test_a_peer_on_too_old_a_python_is_unavailable(harness: ModuleType) -> None:
    with pytest.raises(harness.Unavailable, match=r"needs Python 3\.12\+"):
        harness.import_peer("simloom", min_python=(99, 0))


def test_an_installed_peer_that_fails_to_import_raises(
    harness: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "askew_broken_peer.py").write_text("import askew_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="askew_absent_dependency"):
        harness.import_peer("askew_broken_peer", min_python=None)
