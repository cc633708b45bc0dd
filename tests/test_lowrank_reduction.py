"""Facial reduction beyond cliques (``sdpembed.lowrank.reduction``): equality rows on data of
low dimension that admit no strictly feasible point although no clique (or not only the
cliques) says so. The exposing matrix is checked against its definition, the solve on its
face against CSDP's recorded optima, and a face computed too small must not certify."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest

from problems.differential import make_instance
from sdpembed.exceptions import InaccurateSolutionWarning
from sdpembed.lowrank import backend
from sdpembed.lowrank.face import ROUNDING_FLOOR, clique_null_vectors
from sdpembed.lowrank.options import LowRankOptions
from sdpembed.lowrank.reduction import (
    COST_RTOL,
    ReducedFace,
    reduce_face,
    solve_on_reduced_face,
)
from sdpembed.solvers import solve

#: CSDP's objectives (``optimal``) of differential seeds 111924 (equality DVU, explicit
#: centroids, 40 points in 3-D, three added rows; no rank-deficient clique; LOWRANK refused
#: it before) and 90940 (equality MVU, 29 points, one 5-clique of rank 3; tests/test_face.py)
CSDP_111924 = -0.5738730118872902
CSDP_90940 = -22.57420288904263


def _gp(seed, sizes=None):
    f, _ = (make_instance(seed) if sizes is None else make_instance(seed, sizes)).build()
    return f, backend._formulation_problem(f)[0]


def test_the_exposing_matrix_is_psd_with_zero_value_and_exposes_beyond_the_cliques():
    """Seed 111924: W = sum_e z_e a_e a_e^T is PSD (to rounding), z^T D = 0 (to rounding),
    and it exposes all of 1-perp but a face of the data's dimension (3 or 4), where no
    clique exposes anything."""
    _, gp = _gp(111924)
    assert not clique_null_vectors(gp)
    rf = reduce_face(gp)
    assert rf is not None
    n = gp.n
    i, j = np.asarray(gp.edges).T
    A = np.zeros((n, n))
    np.add.at(A, (i, i), rf.z)
    np.add.at(A, (j, j), rf.z)
    np.add.at(A, (i, j), -rf.z)
    np.add.at(A, (j, i), -rf.z)
    ev = np.linalg.eigvalsh(A)
    assert ev[0] >= -1e-9 * ev[-1]
    assert abs(rf.cost) <= COST_RTOL
    assert rf.Q.shape[1] in (3, 4) and rf.U.shape[1] + rf.Q.shape[1] == n - 1
    # [1/sqrt(n), U, Q] orthonormal; W vanishes on the face
    P = np.c_[np.full(n, 1 / np.sqrt(n)), rf.U, rf.Q]
    assert np.allclose(P.T @ P, np.eye(n), atol=1e-10)
    assert np.abs(rf.Q.T @ A @ rf.Q).max() <= 1e-9 * ev[-1]


def test_rows_with_a_strictly_feasible_point_expose_nothing():
    """Seed 112333 (equality DVU on 10-dimensional data, its rows' interior 1.0e-2): no gap
    in the auxiliary problem's spectrum, so no face; and distances that are not equalities
    are never reduced."""
    _, gp = _gp(112333)
    assert reduce_face(gp) is None
    _, gp = _gp(111770)          # quadratic MVU
    assert gp.distances != "equality" and reduce_face(gp) is None


def _solve(f, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InaccurateSolutionWarning)
        return solve(f, solver="LOWRANK", **options)


def test_seed_111924_certified_on_the_reduced_face_at_csdps_optimum():
    """Before: ``SolverFailedError`` after 42 outer iterations (no strictly feasible point;
    its point 9e-7 off the rows, 6.2e-4 below CSDP's optimum). Now solved on the face of
    dimension 4 that facial reduction exposes: ``optimal``, feasible to rounding, at CSDP's
    objective, the lifted bound below it."""
    f, _ = _gp(111924)
    rep = _solve(f)
    fr = rep.extra["facial_reduction"]
    assert fr["solve"]["status"] in ("optimal", "optimal_inaccurate") and fr["cliques"] == 0
    assert rep.status == "optimal" and rep.certified_gap <= 1e-4
    assert rep.primal_infeasibility <= 1e-9
    assert rep.objective == pytest.approx(CSDP_111924, rel=1e-7)
    assert rep.bound <= CSDP_111924 + 1e-9 * abs(CSDP_111924) and rep.bound <= rep.objective
    assert "exact rational" in rep.extra["certificate"]


@pytest.mark.slow
def test_seed_90940_certified_on_the_reduced_face_at_csdps_optimum():
    """Equality MVU whose clique exposes one direction and facial reduction 25 (the
    framework is universally rigid in R^3): solved on the face of dimension 3."""
    f, _ = _gp(90940, (12, 60))
    rep = _solve(f)
    fr = rep.extra["facial_reduction"]
    assert fr["exposed"] > fr["cliques"] and fr["face_dimension"] == 3
    assert rep.status == "optimal" and rep.primal_infeasibility <= ROUNDING_FLOOR
    assert rep.objective == pytest.approx(CSDP_90940, rel=1e-8)
    assert rep.bound <= CSDP_90940 + 1e-9 * abs(CSDP_90940)


@pytest.mark.slow
def test_a_face_computed_too_small_gives_no_wrong_answer():
    """Seed 111924 with one direction of its face moved to the exposed ones (a face that
    excludes the feasible points of rank 3 in general position): the route either gives up
    (the full solve then runs as without it) or returns a point restored onto the rows whose
    objective and exactly checked bound hold CSDP's optimum between them within tol; never
    that wrong face's optimum."""
    _, gp = _gp(111924)
    rf = reduce_face(gp)
    wrong = ReducedFace(U=np.c_[rf.U, rf.Q[:, :1]], Q=rf.Q[:, 1:], z=rf.z, ratio=rf.ratio,
                        cost=rf.cost, iterations=rf.iterations, factor=rf.factor)
    opts = LowRankOptions(time_limit=60.0)
    record: dict = {}
    out = solve_on_reduced_face(gp, wrong, opts, record, time.perf_counter() + 60.0)
    # on the wrong face itself the solve's optimum lies above CSDP's (a smaller set)
    assert record["status"] in ("optimal", "optimal_inaccurate")
    if out is None:
        assert record["reason"] in ("not certified", "no bound", "not restored")
        return
    assert out.bound <= CSDP_111924 + 1e-9 * abs(CSDP_111924)
    assert out.objective >= CSDP_111924 - 1e-6 * abs(CSDP_111924)
    assert out.objective - out.bound <= 1e-4 * abs(out.objective)
