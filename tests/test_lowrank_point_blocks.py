"""The block-Jacobi blocks of Newton-CG in a kept buffer (``FactorSpace.point_blocks``,
``FactorSpace.invert_blocks``): bit for bit the sparse product and the stacked inverse
they replace, and a solve through them the same solve (docs/tuning.md, "The block-Jacobi
blocks in a kept buffer")."""

from __future__ import annotations

import numpy as np
import pytest

import sdpembed.lowrank.space as space_module
from sdpembed import knn_graph, solve
from sdpembed.formulations.dvu import dvu
from sdpembed.lowrank.backend import _formulation_problem
from sdpembed.lowrank.space import FactorSpace


def _problem(n: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 4))
    y = np.where(rng.random(n) < 0.8, (X[:, 0] > 0).astype(int), -1)
    # random partners: degrees from 4 to well above, so chunks hold points of every degree
    return dvu(knn_graph(X, n_neighbors=4, n_random=2, random_state=seed), y,
               centroids="eliminated")


def _product(space: FactorSpace, Z: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The blocks as LOWRANK formed them before the kept buffer."""
    k = Z.shape[1]
    outer = w[:, None] * np.einsum("ea,eb->eab", Z, Z).reshape(-1, k * k)
    return np.asarray(space.B_abs_T @ outer).reshape(space.gp.n, k, k)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.int64)


@pytest.fixture
def kept(monkeypatch):
    """The kept path at every size, in chunks of 16 points (several per problem)."""
    monkeypatch.setattr(space_module, "_BLOCK_PRODUCT", 0)
    monkeypatch.setattr(space_module, "_BLOCK_SCRATCH", 1)


@pytest.mark.parametrize("k", [1, 3, 8])
def test_the_blocks_are_the_sparse_product_to_the_bit(kept, k):
    gp, _, _ = _formulation_problem(_problem())
    space = FactorSpace(gp)
    deg = np.diff(space.B_abs_T.indptr)
    assert deg.min() < deg.max()                      # chunks with padded slots
    rng = np.random.default_rng(k)
    W = space.project(rng.standard_normal((gp.n, k)))
    Z = space.diffs(W)
    w = rng.standard_normal(Z.shape[0])
    w[::3] = 0.0                                      # Huber's flat edges: signed zeros
    ref = _product(space, Z, w)
    got = space.point_blocks(Z, w)
    assert np.array_equal(_bits(got), _bits(ref))
    # the buffer is kept at the same rank and refilled, not accumulated
    again = space.point_blocks(Z, 2.0 * w)
    assert again is got and np.array_equal(_bits(again), _bits(_product(space, Z, 2.0 * w)))
    # another rank: another buffer, the same numbers as the product
    W2 = space.project(rng.standard_normal((gp.n, k + 2)))
    Z2 = space.diffs(W2)
    assert np.array_equal(_bits(space.point_blocks(Z2, w)), _bits(_product(space, Z2, w)))


def test_small_blocks_are_the_product_itself():
    gp, _, _ = _formulation_problem(_problem())
    space = FactorSpace(gp)
    Z = space.diffs(space.project(np.random.default_rng(0).standard_normal((gp.n, 3))))
    w = np.ones(Z.shape[0])
    a, b = space.point_blocks(Z, w), space.point_blocks(Z, w)
    assert a is not b and np.array_equal(_bits(a), _bits(_product(space, Z, w)))


def test_the_inverse_in_place_is_the_stacked_inverse_to_the_bit(kept):
    rng = np.random.default_rng(2)
    A = rng.standard_normal((70, 5, 5))
    A = A @ A.transpose(0, 2, 1) + 0.1 * np.eye(5)
    ref = np.linalg.inv(A)
    got = FactorSpace.invert_blocks(A)
    assert got is A and np.array_equal(_bits(got), _bits(ref))


def test_a_newton_solve_through_the_kept_blocks_is_the_same_solve(monkeypatch):
    """The same DVU with Newton-CG from the start, its blocks from the product and from the
    kept buffer: the same history, objective and certificate to the bit."""
    calls = []
    real = FactorSpace.invert_blocks

    def spy(blocks):
        calls.append(blocks.shape)
        return real(blocks)
    monkeypatch.setattr(FactorSpace, "invert_blocks", staticmethod(spy))

    def run():
        f = _problem(n=80, seed=1)
        rep = solve(f, solver="LOWRANK", inner="newton", tol=1e-6, blas_threads=1)
        hist = [{k: v for k, v in h.items() if "time" not in k and "second" not in k}
                for h in rep.extra["history"]]
        return rep.objective, rep.certified_gap, rep.status, hist
    base = run()
    n_base = len(calls)
    monkeypatch.setattr(space_module, "_BLOCK_PRODUCT", 0)
    monkeypatch.setattr(space_module, "_BLOCK_SCRATCH", 1)
    kept_run = run()
    assert n_base > 0 and len(calls) > n_base         # Newton-CG built blocks in both
    assert base[2] == "optimal" and kept_run[:3] == base[:3]
    assert kept_run[3] == base[3]
