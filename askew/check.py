# SPDX-License-Identifier: Apache-2.0
"""askew.check: whether a run's history is linearizable (or serializable)
against a model. The public face of the checker, askew/_explore/check.py."""

from ._explore.check import (
    UNKNOWN,
    CheckResult,
    Model,
    assert_linearizable,
    counter,
    fifo_queue,
    kv,
    linearizable,
    register,
    serializable,
    transactions,
)

__all__ = [
    "UNKNOWN",
    "CheckResult",
    "Model",
    "assert_linearizable",
    "counter",
    "fifo_queue",
    "kv",
    "linearizable",
    "register",
    "serializable",
    "transactions",
]
