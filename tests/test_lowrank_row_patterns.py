"""The objective's low-rank part applied through its distinct rows
(:mod:`sdpembed.lowrank.row_patterns`) against the plain products."""

from __future__ import annotations

import numpy as np
import pytest

from sdpembed.formulations.dvu import dvu
from sdpembed.formulations.matrices import DiagPlusLowRank
from sdpembed.graphs import knn_graph
from sdpembed.lowrank.row_patterns import PATTERN_MIN_N, RowPatternProduct
from sdpembed.lowrank.space import FactorSpace


def _dvu_problem(n: int, snr: float | None = None):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 5))
    y = rng.integers(0, 6, n)
    y[rng.random(n) > 0.7] = -1                  # unlabelled: zero rows of U
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    return dvu(graph, y, snr=snr).current_problem()


def _plain_low_rank(M: DiagPlusLowRank, X: np.ndarray) -> np.ndarray:
    T = M.U.T @ X
    return M.U @ (M.s[:, None] * T if X.ndim > 1 else M.s * T)


@pytest.mark.parametrize("snr", [None, 4.0])
def test_dvu_objective_through_its_patterns_equals_the_plain_products(snr):
    gp = _dvu_problem(PATTERN_MIN_N + 100, snr)
    C = gp.full_objective()
    low = RowPatternProduct.of(C)
    assert low is not None
    # six classes: at most a pattern per class, fewer than the columns
    assert low.Ubar.shape[0] <= 6 < C.U.shape[1]
    rng = np.random.default_rng(1)
    for X in (rng.standard_normal(gp.n), rng.standard_normal((gp.n, 7))):
        ref = _plain_low_rank(C, X)
        got = low.apply(X)
        assert got.shape == ref.shape
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * np.abs(ref).max())
    space = FactorSpace(gp)
    assert space._C_low is not None
    W = space.project(rng.standard_normal((gp.n, 7)))
    ref = C.matvec(W)
    np.testing.assert_allclose(space.apply_C(W), ref, rtol=0, atol=1e-13 * np.abs(ref).max())
    if snr is not None:
        ref = space.H.matvec(W)
        np.testing.assert_allclose(space.apply_H(W), ref, rtol=0,
                                   atol=1e-13 * np.abs(ref).max())


def test_patterns_with_a_sparse_part_and_zero_rows():
    rng = np.random.default_rng(2)
    n, r = 2400, 9
    rows = rng.standard_normal((4, r))
    pick = rng.integers(0, 5, n)                 # 4 patterns and the zero row
    U = np.where(pick[:, None] < 4, rows[np.minimum(pick, 3)], 0.0)
    import scipy.sparse as sp
    S = sp.random(n, n, density=2e-4, random_state=3)
    S = sp.csr_matrix(S + S.T)
    S.setdiag(0.0)
    S.eliminate_zeros()
    M = DiagPlusLowRank(rng.uniform(1, 2, n), U, rng.uniform(-1, 1, r), S)
    low = RowPatternProduct.of(M)
    assert low is not None and low.Ubar.shape[0] == 4
    from sdpembed.lowrank.row_patterns import apply_structured
    X = rng.standard_normal((n, 3))
    ref = M.matvec(X)
    np.testing.assert_allclose(apply_structured(M, low, X), ref, rtol=0,
                               atol=1e-13 * np.abs(ref).max())


def test_plain_products_where_the_patterns_do_not_pay():
    rng = np.random.default_rng(4)
    n = PATTERN_MIN_N
    # below the size threshold
    small = _dvu_problem(300).full_objective()
    assert RowPatternProduct.of(small) is None
    assert FactorSpace(_dvu_problem(300))._C_low is None
    # every row its own: more patterns than columns
    assert RowPatternProduct.of(DiagPlusLowRank(np.ones(n), rng.standard_normal((n, 6)),
                                                np.ones(6))) is None
    # no low-rank part, or an all-zero one
    assert RowPatternProduct.of(DiagPlusLowRank.zeros(n)) is None
    assert RowPatternProduct.of(DiagPlusLowRank(np.ones(n), np.zeros((n, 3)),
                                                np.ones(3))) is None
