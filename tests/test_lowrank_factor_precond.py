"""LOWRANK's ``lbfgs_precond`` (the Kronecker initial inverse Hessian of
:mod:`sdpembed.lowrank.factor_precond`): the same optimum as CLARABEL, certified, and the
preconditioner itself symmetric positive definite on the centred factors.

Outcomes only (no timing)."""

import numpy as np
import pytest
from sklearn.datasets import load_digits

from sdpembed.exceptions import InputError
from sdpembed.formulations.dvu import dvu
from sdpembed.graphs import knn_graph
from sdpembed.lowrank.backend import _formulation_problem
from sdpembed.lowrank.factor_precond import KroneckerPreconditioner
from sdpembed.lowrank.penalty import DistancePenalty
from sdpembed.lowrank.space import FactorSpace
from sdpembed.solvers import solve


def _small_dvu():
    X, y = load_digits(return_X_y=True)
    X, y = X[:80], y[:80]
    y_obs = np.where(np.arange(80) % 5 == 0, -1, y)
    return dvu(knn_graph(X, n_neighbors=3, n_random=1, random_state=0), y_obs,
               centroids="eliminated")


#: CLARABEL's optimum of :func:`_small_dvu` (status optimal, its gap 1.0e-9; default LOWRANK
#: at tol 1e-6: -1.8390092, certified 1.7e-7)
CLARABEL_SMALL_DVU = -1.839007190291737


@pytest.mark.parametrize("kind", ["rank", "graph", "kron"])
def test_preconditioned_lbfgs_certifies_the_clarabel_optimum(kind):
    reference = CLARABEL_SMALL_DVU
    rep = solve(_small_dvu(), solver="LOWRANK", tol=1e-5, lbfgs_precond=kind)
    assert rep.status == "optimal", (rep.status, rep.certified_gap)
    assert rep.certified_gap is not None and rep.certified_gap <= 1e-5
    # CLARABEL's optimum to its own accuracy (about 1e-7 relative) plus the certified gap
    assert abs(rep.objective - reference) <= 2e-5 * max(1.0, abs(reference))


@pytest.mark.parametrize("kind", ["rank", "graph", "kron"])
def test_the_preconditioner_is_symmetric_positive_definite(kind):
    gp, basis, _ = _formulation_problem(_small_dvu())
    space = FactorSpace(gp, basis)
    rng = np.random.default_rng(0)
    W = space.project(rng.standard_normal((space.dim, 4)))
    M = KroneckerPreconditioner(space, W, kind, DistancePenalty(gp).curvature_weights(1.0))
    U = np.array([space.project(rng.standard_normal(W.shape)).ravel() for _ in range(6)])
    MU = np.array([M(u) for u in U])
    gram = U @ MU.T
    np.testing.assert_allclose(gram, gram.T, rtol=1e-9, atol=1e-12 * np.abs(gram).max())
    assert np.linalg.eigvalsh(0.5 * (gram + gram.T)).min() > 0
    M.update(W.ravel() * 2.0)        # a refresh keeps the shape
    assert M(U[0]).shape == U[0].shape


def test_an_unknown_preconditioner_is_refused():
    with pytest.raises(InputError, match="lbfgs_precond"):
        solve(_small_dvu(), solver="LOWRANK", lbfgs_precond="amg")
