# SPDX-License-Identifier: Apache-2.0
"""A bad ASKEW_* value is one usage error naming it before any test runs
(pytest) or any worker starts (`askew sweep`), never a failure of each
test that reads it: every variable askew parses is parsed when a session
starts (askew/_loop/settings.py, check_env)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_pytest

from askew._loop import settings

pytestmark = pytest.mark.usefixtures("clean_env")

# Each variable askew reads and parses: the others take free text.
PARSED = sorted(settings.ENV_VARIABLES - settings.FREE_TEXT_VARIABLES)


def test_the_free_text_variables_are_variables_askew_reads() -> None:
    assert settings.FREE_TEXT_VARIABLES < settings.ENV_VARIABLES
    assert {"ASKEW_CHECK_DETERMINISM", "ASKEW_SUPPRESS", "ASKEW_COVERAGE"} <= set(PARSED)


@pytest.mark.parametrize("variable", PARSED)
def test_a_session_start_parses_every_variable_askew_reads(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.check_env()  # none set: nothing to refuse
    monkeypatch.setenv(variable, "maybe")
    with pytest.raises(ValueError, match=variable):
        settings.check_env()


SOURCE = """
    import askew, os

    @askew.simulate(seed=1, iterations=2)
    async def test_one(world):
        open(os.environ["RAN"], "a").write("one\\n")

    @askew.simulate(seed=1, iterations=2)
    async def test_two(world):
        open(os.environ["RAN"], "a").write("two\\n")
"""


@pytest.mark.parametrize(
    "variable", ["ASKEW_CHECK_DETERMINISM", "ASKEW_SUPPRESS", "ASKEW_COVERAGE", "ASKEW_SEED"]
)
def test_a_bad_value_is_one_usage_error_before_any_test_runs(tmp_path: Path, variable: str) -> None:
    ran = tmp_path / "ran"
    proc = run_pytest(tmp_path, SOURCE, env={variable: "maybe", "RAN": str(ran)})
    assert proc.returncode == pytest.ExitCode.USAGE_ERROR, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR: askew: ")]
    assert len(errors) == 1 and variable in errors[0] and "'maybe'" in errors[0]
    assert not ran.exists()  # no test ran
