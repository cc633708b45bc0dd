"""The barrier's edge Gram matrices in kept buffers (sdpembed.lowrank.edge_gram): entry
for entry the sparse products they replace, factored in place (docs/tuning.md, "The warm
barrier's page faults; a sweep's barrier paid for")."""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from sdpembed.graphs import knn_graph
from sdpembed.lowrank.barrier_path import _cholesky_ridged
from sdpembed.lowrank.edge_gram import EdgeGrams


def _incidence(n: int = 40, seed: int = 0) -> sp.csr_matrix:
    X = np.random.default_rng(seed).standard_normal((n, 3))
    g = knn_graph(X, n_neighbors=4, n_random=1, random_state=seed)
    i, j = np.asarray(g.edges).T
    m = i.size
    rows = np.repeat(np.arange(m), 2)
    cols = np.column_stack([np.minimum(i, j), np.maximum(i, j)]).ravel()
    vals = np.tile([1.0, -1.0], m)
    return sp.csr_matrix((vals, (rows, cols)), shape=(m, n))


def test_forms_the_sparse_products_to_the_bit_and_factors_in_place():
    E = _incidence()
    n = E.shape[1]
    rng = np.random.default_rng(1)
    A, B = rng.standard_normal((2, n, n))
    A, B = A @ A.T + np.eye(n), B @ B.T + np.eye(n)
    grams = EdgeGrams(E)
    assert grams.kept
    ref_A, ref_B = np.asarray(E @ (E @ A).T), np.asarray(E @ (E @ B).T)
    PA = grams.form(A, 0)
    assert PA.flags.f_contiguous and np.array_equal(PA, ref_A)
    box = rng.random(E.shape[0])

    def schur():
        H = grams.form(B, 1)
        H *= PA
        H[np.diag_indices(H.shape[0])] += box
        return H
    ref = ref_B * ref_A
    ref[np.diag_indices(ref.shape[0])] += box
    cf, cf_ref = grams.cho_factor(schur), _cholesky_ridged(ref)
    assert cf[1] == cf_ref[1]
    assert np.array_equal(np.triu(cf[0]), np.triu(cf_ref[0]))
    assert np.shares_memory(cf[0], grams._buf[1])          # factored in place
    rhs = rng.standard_normal(E.shape[0])
    assert np.array_equal(sla.cho_solve(cf, rhs), sla.cho_solve(cf_ref, rhs))
    assert np.array_equal(grams.form(A, 0), ref_A)         # the buffer reused


def test_a_matrix_that_is_not_an_incidence_takes_the_sparse_products():
    E = _incidence()
    E2 = E.multiply(2.0).tocsr()
    grams = EdgeGrams(E2)
    assert not grams.kept
    n = E.shape[1]
    A = np.eye(n)
    assert np.array_equal(grams.form(A, 0), np.asarray(E2 @ (E2 @ A).T))


def test_an_indefinite_matrix_is_retried_with_the_ridge_then_refused():
    E = _incidence()
    grams = EdgeGrams(E)
    n = E.shape[1]
    calls = []

    def singular():                      # E E^T has rank n - 1 < m: singular
        calls.append(1)
        return grams.form(np.eye(n), 1)
    got = grams.cho_factor(singular)
    assert len(calls) >= 2                # rebuilt for every try after a failure
    if got is None:
        assert len(calls) == 3

    def indefinite():
        H = grams.form(np.eye(n), 1)
        H[0, 0] = -1.0
        return H
    assert grams.cho_factor(indefinite) is None
