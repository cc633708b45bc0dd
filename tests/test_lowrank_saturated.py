"""LOWRANK above ``limits.eig`` grows the rank only from a saturated factor: one whose
smallest singular value is above ``_SATURATED`` times its largest (docs/tuning.md, "Rank
growth only from a saturated factor at n > limits.eig")."""

from types import SimpleNamespace

import numpy as np
import pytest

from sdpembed.lowrank.escape import _ESCAPE_BLOCK
from sdpembed.lowrank.options import DenseLimits
from sdpembed.lowrank.stall import _SATURATED, StallGrowth, _saturated


def _factor(singular_values, n=40, seed=0):
    # W = U diag(s) V^T with orthonormal U, V: its singular values are exactly s
    rng = np.random.default_rng(seed)
    k = len(singular_values)
    U, _ = np.linalg.qr(rng.standard_normal((n, k)))
    V, _ = np.linalg.qr(rng.standard_normal((k, k)))
    return (U * np.asarray(singular_values)) @ V.T


@pytest.mark.parametrize("smallest, above_eig, expected", [
    (10 * _SATURATED, True, True),      # every column carries weight: grow
    (0.1 * _SATURATED, True, False),    # a column the subproblems leave near zero: no growth
    (0.1 * _SATURATED, False, True),    # n <= limits.eig: the rule does not apply
])
def test_saturated_reads_the_factors_singular_values(smallest, above_eig, expected):
    W = _factor([1.0, 0.5, 0.2, smallest])
    space = SimpleNamespace(dim=40, limits=DenseLimits(eig=20 if above_eig else 800))
    assert _saturated(space, W) is expected


class _Loop(StallGrowth):
    """The attributes :meth:`StallGrowth._grow_on_stall` reads, with a cache that hands out
    one negative eigenpair and a ``_grow`` that records its directions."""

    def __init__(self, W, eig):
        self.W, self.y, self.nu, self.grown = W, None, None, []
        self.space = SimpleNamespace(dim=W.shape[0], limits=DenseLimits(eig=eig))
        self.opts = SimpleNamespace(max_rank=200)
        lam = np.array([-1e-3] + [1.0] * (_ESCAPE_BLOCK - 1))
        X = np.eye(W.shape[0])[:, :_ESCAPE_BLOCK]
        self.cache = SimpleNamespace(bottom=lambda space, y, nu, k: (lam[:k], X[:, :k]))

    def _grow(self, vectors, entry):
        self.grown.append(len(vectors))


@pytest.mark.parametrize("smallest, eig, grows", [
    (10 * _SATURATED, 20, True),
    (0.1 * _SATURATED, 20, False),
    (0.1 * _SATURATED, 800, True),
])
def test_stall_growth_only_from_a_saturated_factor_above_limits_eig(smallest, eig, grows):
    loop = _Loop(_factor([1.0, 0.5, 0.2, smallest]), eig)
    entry = {}
    assert loop._grow_on_stall(entry) is grows
    assert loop.grown == ([1] if grows else [])
    assert ("stall_lambda_min" in entry) is grows
