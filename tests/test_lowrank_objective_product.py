"""The objective's and the SNR functional's products in the full space
(``FactorSpace.apply_C`` / ``apply_H``): the diagonal-plus-low-rank matrix applied with
the low-rank product accumulated by the BLAS into the diagonal's, against the dense matrix
and against ``DiagPlusLowRank.matvec`` whose sums they keep (to the bit where scipy's
and numpy's BLAS share kernels, as here; the test allows a few units in the last place,
since another BLAS may block the sums otherwise); the gradient's
centring in place, the same numbers as the copying one (docs/tuning.md, "9,298: the
objective's product accumulated in place")."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import sdpembed.lowrank.space as space_module
from sdpembed import knn_graph
from sdpembed.formulations.dvu import dvu_problem
from sdpembed.lowrank.space import FactorSpace


def _space(n: int = 300, seed: int = 0, snr: float | None = 3.0) -> FactorSpace:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 5))
    y = np.where(rng.random(n) < 0.7, rng.integers(0, 4, n), -1)
    graph = knn_graph(X, n_neighbors=3, n_random=0)
    return FactorSpace(dvu_problem(graph, y, snr=snr, trace="max", trace_weight=0.3))


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


def _same_sums(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal to within 4 units in the last place of the largest entry."""
    return bool(np.max(np.abs(got - want)) <= 4 * np.finfo(float).eps * np.max(np.abs(want)))


@pytest.mark.parametrize("k", [1, 2, 5, 17])
@pytest.mark.parametrize("order", ["C", "F"])
def test_products_are_matvec_and_the_dense_product(k, order, monkeypatch):
    calls = []
    gemm = space_module._dgemm
    monkeypatch.setattr(space_module, "_dgemm", lambda *a, **kw: calls.append(1) or gemm(*a, **kw))
    space = _space()
    assert space.C.U.shape[1] > 0 and space.C.sparse is None
    rng = np.random.default_rng(k)
    W = np.asarray(rng.standard_normal((space.gp.n, k)), order=order)
    W0 = W.copy()
    for M, apply in ((space.C, space.apply_C), (space.H, space.apply_H)):
        got = apply(W)
        assert got.shape == W.shape
        assert _same_sums(got, M.matvec(W))
        ref = M.dense() @ W
        assert np.max(np.abs(got - ref)) <= 1e-13 * np.max(np.abs(ref))
    assert np.array_equal(_bits(W), _bits(W0))      # the argument is left as it was
    assert len(calls) == (0 if k == 1 else 2)        # one column: matvec's own product


def test_a_sparse_part_takes_matvec():
    space = _space(snr=None)
    n = space.gp.n
    S = sp.random(n, n, density=0.01, random_state=1, format="csr")
    S = (S + S.T).tocsr()
    S.setdiag(0.0)
    S.eliminate_zeros()
    space.C = dataclasses.replace(space.C, sparse=S)
    W = np.random.default_rng(2).standard_normal((n, 4))
    got = space.apply_C(W)
    assert _same_sums(got, space.C.matvec(W))
    ref = space.C.dense() @ W
    assert np.max(np.abs(got - ref)) <= 1e-13 * np.max(np.abs(ref))


def test_centring_in_place_is_the_copying_centring():
    space = _space()
    G = np.random.default_rng(3).standard_normal((space.gp.n, 6)) + 5.0
    ref = space.project(G)
    assert not np.shares_memory(ref, G)
    got = space.project(G, inplace=True)
    assert got is G
    assert np.array_equal(_bits(got), _bits(ref))
    assert np.max(np.abs(got.mean(axis=0))) <= 1e-14 * np.max(np.abs(got))
