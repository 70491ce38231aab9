# SPDX-License-Identifier: Apache-2.0
"""askew's pytest plugin (entry point pytest11).

--askew-seed and --askew-iterations mirror ASKEW_SEED and ASKEW_ITERATIONS
for @askew.simulate tests. Plain pytest needs nothing else: a simulated test
is an ordinary sync function.
"""

from __future__ import annotations

import os

import pytest

from ._config import check_iterations, check_seed


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("askew", "askew deterministic simulation")
    group.addoption(
        "--askew-seed",
        type=int,
        default=None,
        help="base seed for @askew.simulate tests (as ASKEW_SEED)",
    )
    group.addoption(
        "--askew-iterations",
        type=int,
        default=None,
        help="iterations per @askew.simulate test (as ASKEW_ITERATIONS)",
    )


def pytest_configure(config: pytest.Config) -> None:
    seed = config.getoption("askew_seed", None)
    iterations = config.getoption("askew_iterations", None)
    if seed is not None:
        os.environ["ASKEW_SEED"] = str(check_seed(seed, "--askew-seed"))
    if iterations is not None:
        os.environ["ASKEW_ITERATIONS"] = str(check_iterations(iterations, "--askew-iterations"))
