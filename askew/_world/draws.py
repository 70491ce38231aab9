# SPDX-License-Identifier: Apache-2.0
"""world.random in a shrunk run that asked for its draws toward zero
(suppress key "random:zero", askew/_explore/shrink.py): every draw is the
smallest the method can give (random() 0.0, randrange and choice their
first, uniform(a, b) a, shuffle a fixed order) and the distributions whose
samplers reject (normal, lognormal, gamma, beta, von Mises, binomial) their
centre, so that no method loops forever on constant draws. World.random
makes it; nothing else uses it.
"""

from __future__ import annotations

import math
import random
from typing import Any


class Zeros(random.Random):
    """A random.Random whose draws are all zero."""

    def random(self) -> float:
        return 0.0

    def getrandbits(self, k: int) -> int:
        return 0

    def normalvariate(self, mu: float = 0.0, sigma: float = 1.0) -> float:
        return mu

    def gauss(self, mu: float = 0.0, sigma: float = 1.0) -> float:
        return mu

    def lognormvariate(self, mu: float, sigma: float) -> float:
        return math.exp(mu)

    def gammavariate(self, alpha: float, beta: float) -> float:
        return alpha * beta

    def betavariate(self, alpha: float, beta: float) -> float:
        return alpha / (alpha + beta)

    def vonmisesvariate(self, mu: float, kappa: float) -> float:
        return mu

    def binomialvariate(self, n: int = 1, p: float = 0.5) -> int:
        return 0

    def __repr__(self) -> str:
        return "<askew world.random drawing zeros (a shrunk run)>"

    def __reduce__(self) -> Any:
        return (Zeros, (0,))
