"""A backend solves the formulation it is given (issue 28): current parameter values,
added constraints, or a typed refusal; ``solver="auto"``; the builder functions.

Instances: 30-36 scikit-learn digits of classes 0-2 (CLARABEL solves them in about a
second). LOWRANK runs at ``tol=1e-5`` and must agree with CLARABEL (interior point,
about 1e-8 relative) to 1e-4 relative, the agreement the issue asks for; its certified
lower bound must not exceed CLARABEL's optimum by more than 1e-6 relative (CLARABEL's
own accuracy).
"""

import pickle
import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import load_digits

import sdpembed.formulations as F
from sdpembed import knn_graph, solve
from sdpembed.exceptions import InputError, UnboundedError, UnsupportedProblemError
from sdpembed.formulations import Formulation, GramFormulation
from sdpembed.formulations.dvu import dvu_problem, min_bounded_slack_weight
from sdpembed.solvers import AUTO_LOWRANK_MIN_POINTS, choose_backend

AGREE = 1e-4
BOUND_SLACK = 1e-6


@pytest.fixture(scope="module")
def data():
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(3)
    idx = np.flatnonzero(y < 3)[rng.permutation(int((y < 3).sum()))[:32]]
    X, y = X[idx].astype(float), y[idx].copy()
    y[rng.random(y.size) > 0.8] = -1
    return X, y, knn_graph(X, n_neighbors=2, n_random=1, random_state=0)


def _agree(f, **lowrank):
    rep = solve(f, solver="LOWRANK", tol=1e-5, **lowrank)
    ref = solve(f, solver="CLARABEL")
    assert abs(rep.objective - ref.objective) <= AGREE * abs(ref.objective), \
        (rep.objective, ref.objective)
    assert rep.certified_gap is not None
    assert rep.extra["lower_bound"] <= ref.objective + BOUND_SLACK * abs(ref.objective)
    return rep, ref


CHANGES = {
    "interval slack": (dict(), {"slack_weight": 0.05}),
    "equality trace": (dict(distances="equality", trace="min", trace_weight=1e-3),
                       {"trace_weight": 5e-2}),
    "snr": (dict(snr=2.0), {"snr": 6.0}),
    "quadratic slack": (dict(distances="quadratic"), {"slack_weight": 3.0}),
}


@pytest.mark.parametrize("case", list(CHANGES))
def test_dvu_parameters_are_read_at_solve_time(data, case):
    _, y, graph = data
    kw, change = CHANGES[case]
    f = F.dvu(graph, y, centroids="eliminated", **kw)
    for name, value in change.items():
        f.parameters[name].value = value
    rep, ref = _agree(f)
    fresh = solve(F.dvu(graph, y, centroids="eliminated", **{**kw, **change}), "CLARABEL")
    assert ref.objective == pytest.approx(fresh.objective, rel=1e-6)
    # and the change mattered: the builder's value gives another optimum
    before = solve(F.dvu(graph, y, centroids="eliminated", **kw), "CLARABEL")
    assert abs(before.objective - ref.objective) > 100 * AGREE * abs(ref.objective)


def test_explicit_centroids_read_parameters_too(data):
    _, y, graph = data
    f = F.dvu(graph, y, centroids="explicit", slack_weight=1.0)
    f.parameters["slack_weight"].value = 0.05
    _, ref = _agree(f)
    assert ref.objective == pytest.approx(
        solve(F.dvu(graph, y, centroids="eliminated", slack_weight=0.05), "CLARABEL").objective,
        rel=1e-6)


def test_mvu_parameter_is_read_at_solve_time(data):
    _, _, graph = data
    f = F.mvu(graph, distances="interval", slack_weight=100.0)
    f.parameters["slack_weight"].value = 40.0
    _, ref = _agree(f)
    assert ref.objective == pytest.approx(
        solve(F.mvu(graph, distances="interval", slack_weight=40.0), "CLARABEL").objective,
        rel=1e-6)


def test_unbounded_hint_quotes_the_current_slack_weight(data):
    _, y, graph = data
    f = F.dvu(graph, y, centroids="eliminated", slack_weight=1.0)
    threshold = min_bounded_slack_weight(dvu_problem(graph, y))
    f.parameters["slack_weight"].value = 0.5 * threshold
    for backend in ("CLARABEL", "LOWRANK"):
        with pytest.raises(UnboundedError) as info:
            solve(f, solver=backend)
        assert f"got {0.5 * threshold:.4g}" in str(info.value)
        assert f"{threshold:.4g}" in str(info.value)


def test_a_parameter_without_value_is_refused(data):
    _, y, graph = data
    f = F.dvu(graph, y, centroids="eliminated")
    f.parameters["slack_weight"].value = None
    with pytest.raises(InputError, match="slack_weight"):
        solve(f, solver="LOWRANK")


def _rewrapped(f, extra):
    """A Formulation rebuilt around a new cvxpy problem (what the issue's user did)."""
    problem = cp.Problem(f.problem.objective, f.problem.constraints + extra)
    return Formulation(problem, dict(f.variables), dict(f.parameters), dict(f.meta),
                       dict(f.expressions))


@pytest.mark.parametrize("reduce_face", [False, True])
def test_rebuilt_problem_is_refused_by_lowrank_and_solved_by_clarabel(data, reduce_face):
    _, y, graph = data
    f = F.dvu(graph, y, centroids="eliminated", reduce_face=reduce_face)
    g = _rewrapped(f, [cp.trace(f.expressions["gram"]) <= 5])
    with pytest.raises(UnsupportedProblemError, match="with_constraints"):
        solve(g, solver="LOWRANK")
    assert choose_backend(g)[0] != "LOWRANK"
    solve(g, solver="CLARABEL")
    assert np.trace(g.value("gram")) == pytest.approx(5.0, rel=1e-5)


def test_edited_problem_is_refused(data):
    _, y, graph = data
    f = F.dvu(graph, y, centroids="eliminated")
    other = cp.Problem(f.problem.objective, f.problem.constraints[:1])
    object.__setattr__(f, "problem", other)     # behind the description's back
    with pytest.raises(UnsupportedProblemError, match="changed after it was built"):
        solve(f, solver="LOWRANK")


def test_non_gram_formulation_is_refused(data):
    x = cp.Variable((2, 2), PSD=True, name="x")
    f = Formulation(cp.Problem(cp.Minimize(cp.trace(x)), [x[0, 0] >= 1]), {"x": x})
    with pytest.raises(UnsupportedProblemError, match="CLARABEL"):
        solve(f, solver="LOWRANK")


def test_with_constraints_keeps_the_original_and_conic_backends_honour_it(data):
    _, y, graph = data
    f = F.dvu(graph, y, centroids="eliminated")
    G = f.expressions["gram"]
    g = f.with_constraints([cp.trace(G) <= 5])
    assert isinstance(g, GramFormulation) and g.user_constraints and not f.user_constraints
    solve(g, solver="CLARABEL")
    assert np.trace(g.value("gram")) == pytest.approx(5.0, rel=1e-5)
    solve(f, solver="CLARABEL")
    assert np.trace(f.value("gram")) > 10
    with pytest.raises(InputError, match="not a cvxpy constraint"):
        f.with_constraints([cp.trace(G)])


def test_formulations_with_parameters_and_constraints_pickle(data):
    _, y, graph = data
    f = F.dvu(graph, y, centroids="eliminated")
    f.parameters["slack_weight"].value = 0.4
    g = f.with_constraints([cp.trace(f.expressions["gram"]) <= 5])
    for h in (f, g):
        h2 = pickle.loads(pickle.dumps(h))
        assert h2.parameters["slack_weight"].value == 0.4
        assert len(h2.user_constraints) == len(h.user_constraints)
    g2 = pickle.loads(pickle.dumps(g))
    solve(g2, solver="CLARABEL")
    assert np.trace(g2.value("gram")) == pytest.approx(5.0, rel=1e-5)
    assert g2.parameters["slack_weight"] is next(
        p for p in g2.problem.parameters() if p.name() == "slack_weight")


# --------------------------------------------------------------------------- auto
def test_auto_picks_lowrank_for_gram_sdps_beyond_the_threshold(data):
    X, y, graph = data
    f = F.dvu(graph, y, centroids="explicit")
    assert graph.n_nodes > AUTO_LOWRANK_MIN_POINTS
    rep = solve(f)
    assert rep.solver == "LOWRANK" and "Gram SDP on 32 points" in rep.selection
    small = knn_graph(X[:20], n_neighbors=2, n_random=1, random_state=0)
    y_small = np.r_[y[:20][:18], 0, 1]
    name, why = choose_backend(F.dvu(small, y_small, centroids="explicit"))
    assert name == "CLARABEL" and "interior-point" in why


def test_auto_for_mvu_the_gram_estimators_and_sequential_solves(data):
    """The other problem kinds: MVU beyond and below the threshold, the DVU and MVU
    estimators (full and on a reduced basis), and a Dinkelbach sequence of trace-ratio
    SDPs; each report says which backend ran and why."""
    from sdpembed import DVU, MVU
    from sdpembed.sequential import dinkelbach

    X, y, graph = data
    assert choose_backend(F.mvu(graph))[0] == "LOWRANK"
    small = knn_graph(X[:20], n_neighbors=2, n_random=1, random_state=0)
    name, why = choose_backend(F.mvu(small))
    assert name == "CLARABEL" and "Gram SDP on 20 points" in why
    for est in (DVU(n_components=2, random_state=0),
                DVU(n_components=2, basis_rank=10, random_state=0)):
        rep = est.fit(X, y).solve_report_
        assert rep.solver == "LOWRANK" and "Gram SDP on 32 points" in rep.selection
    rep = MVU(n_components=2, random_state=0).fit(X).solve_report_
    assert rep.solver == "LOWRANK" and rep.selection and rep.certified_gap is not None
    A, B = np.cov(X[:, :8].T), np.eye(8) + 0.1 * np.cov(X[:, 8:16].T)
    seq = dinkelbach(A, B, 2)
    assert seq.reports and all(r.solver == "CLARABEL" and "trace_ratio problem" in r.selection
                               for r in seq.reports)


def test_auto_avoids_what_lowrank_refuses_and_says_so(data):
    _, y, graph = data
    name, why = choose_backend(F.dvu(graph, y, centroids="eliminated", ratio=0.5))
    assert name == "CLARABEL" and "ratio" in why


def test_auto_for_an_eigen_relaxation_and_with_options():
    rng = np.random.default_rng(0)
    f = F.lda(rng.standard_normal((30, 5)), np.arange(30) % 3, 2)
    name, _ = choose_backend(f)
    assert name == "CLARABEL"
    with pytest.raises(InputError, match="name the backend"):
        solve(f, eps_abs=1e-3)


def test_auto_keeps_large_psd_cones_off_interior_point_backends():
    # check_sdp_size refuses CLARABEL above MAX_INTERIOR_POINT_DIM; auto must not pick it
    from sdpembed.relaxations import MAX_INTERIOR_POINT_DIM, fantope_trace

    p = MAX_INTERIOR_POINT_DIM + 1
    name, why = choose_backend(fantope_trace(np.diag(np.arange(p, dtype=float)), 2))
    assert name == "SCS" and f"{p} x {p} PSD cone" in why
    name, _ = choose_backend(fantope_trace(np.diag(np.arange(10.0)), 2))
    assert name == "CLARABEL"


def test_auto_never_picks_a_backend_the_memory_guard_refuses(data, monkeypatch):
    import sdpembed.solvers as solvers

    _, y, graph = data
    monkeypatch.setattr(solvers, "_available_memory", lambda: 1 << 20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        name, _ = choose_backend(F.dvu(graph, y, centroids="eliminated", ratio=0.5))
    assert name != "CLARABEL"


def test_builders_are_functions_of_the_package(data):
    import inspect

    from sdpembed.formulations.dvu import dvu

    assert F.dvu is dvu
    X, y, graph = data
    X = X[:, X.std(axis=0) > 0][:, :6]            # a few informative pixels
    calls = {"dvu": lambda: F.dvu(graph, y), "mvu": lambda: F.mvu(graph),
             "lda": lambda: F.lda(X, y, 2), "lpp": lambda: F.lpp(X, 2),
             "sda": lambda: F.sda(X, y, 2), "dne": lambda: F.dne(X, y, 2),
             "discriminative_projections": lambda: F.discriminative_projections(X, y, 2),
             "tca": lambda: F.tca(X, y, 2, alpha=0.1, beta=0.1),
             "gram_sdp": lambda: F.gram_sdp(graph.n_nodes)}
    builders = {n for n in F.__all__ if inspect.isfunction(getattr(F, n))}
    assert builders == set(calls) | {"otca_step"}   # otca_step takes TCA's operators
    for name, call in calls.items():
        f = call()
        assert isinstance(f, Formulation) and f.method in (name, "discriminative"), name


# --------------------------------------------------------------------------- LOWRANK + added
def _pairs(y, same: bool, k: int, seed: int = 0):
    lab = np.flatnonzero(y >= 0)
    cand = [(a, b) for a in lab for b in lab if a < b and (y[a] == y[b]) == same]
    rng = np.random.default_rng(seed)
    return np.array([cand[i] for i in rng.choice(len(cand), k, replace=False)])


def _sqdist(G, P):
    return G[P[:, 0], P[:, 0]] + G[P[:, 1], P[:, 1]] - 2 * G[P[:, 0], P[:, 1]]


def _added(kind, f, y):
    """The constraints of each kind of test, on f's Gram matrix: must-link pairs at most the
    20th percentile of the target distances, cannot-link pairs at least the 80th."""
    G = f.expressions["gram"]
    t = f.current_problem().target
    q20, q80 = np.percentile(t, [20, 80])
    ml, cl = _pairs(y, True, 6), _pairs(y, False, 6)
    return {"trace": [cp.trace(G) <= 5],
            "links": [_sqdist(G, ml) <= q20, _sqdist(G, cl) >= q80],
            "entry": [G[0, 1] == 0.0],
            "all": [cp.trace(G) <= 20, _sqdist(G, ml) <= q20, _sqdist(G, cl) >= q80,
                    G[0, 1] == 0.0]}[kind]


ADDED = [("interval", "trace", {}), ("interval", "links", {}), ("interval", "entry", {}),
         ("equality", "entry", {"distances": "equality"}), ("snr", "links", {"snr": 2.0}),
         pytest.param("interval", "all", {}, marks=pytest.mark.slow)]


@pytest.mark.parametrize("variant, kind, kw", ADDED)
def test_lowrank_honours_added_constraints(data, variant, kind, kw):
    """LOWRANK with added rows against CLARABEL on the same cvxpy problem: the objectives
    agree to 1e-4 and the certified bound lies below CLARABEL's optimum; the constraints
    hold at LOWRANK's point."""
    _, y, graph = data
    f = F.dvu(graph, y, centroids="eliminated", **kw)
    g = f.with_constraints(_added(kind, f, y))
    rep, ref = _agree(g)
    assert rep.status == "optimal" and rep.certified_gap <= 1e-5
    G = g.value("gram")
    gp = g.current_problem()
    viol = gp.constraints.residual(gp.constraints.values_of(G))
    assert np.max(viol) <= 1e-6 * max(1.0, np.max(np.abs(gp.constraints.rhs)))
    # and the added rows mattered: the optimum moved
    base = solve(f, solver="CLARABEL")
    assert abs(base.objective - ref.objective) > 100 * AGREE * abs(ref.objective)


def test_lowrank_honours_added_constraints_on_mvu_and_a_basis(data):
    X, y, graph = data
    f = F.mvu(graph)
    g = f.with_constraints([cp.trace(f.expressions["gram"]) <= 0.5 * 45.0])
    _agree(g)
    b = F.dvu(graph, y, centroids="eliminated", basis_rank=12,
              basis_graph=knn_graph(X, n_neighbors=6, n_random=0))
    gb = b.with_constraints([_sqdist(b.expressions["gram"], _pairs(y, True, 4)) <= 0.5])
    rep, ref = _agree(gb)
    assert rep.extra["reduced_solver"] is None or "alm" in str(rep.extra["reduced_solver"])
    with pytest.raises(UnsupportedProblemError, match="reduced_solver='ipm'"):
        solve(gb, solver="LOWRANK", reduced_solver="ipm")


def test_lowrank_refuses_what_it_cannot_represent(data):
    _, y, graph = data
    f = F.dvu(graph, y, centroids="eliminated")
    G = f.expressions["gram"]
    for con in (cp.norm(G[0, :]) <= 3, G[0, 0] + f.variables["eps"][0] <= 1):
        g = f.with_constraints([con])
        with pytest.raises(UnsupportedProblemError, match="constraint 0"):
            solve(g, solver="LOWRANK")
        assert choose_backend(g)[0] != "LOWRANK"
    solve(f.with_constraints([cp.norm(G[0, :]) <= 3]), solver="CLARABEL")


def test_infeasible_added_constraints_are_not_a_solution(data):
    """Equality distances and a trace bound below what they allow: CLARABEL proves it
    infeasible; LOWRANK must not return a point (its iterate stays far from feasible)."""
    from sdpembed.exceptions import InfeasibleError, SolverFailedError

    _, y, graph = data
    f = F.dvu(graph, y, centroids="eliminated", distances="equality")
    g = f.with_constraints([cp.trace(f.expressions["gram"]) <= 5])
    with pytest.raises(InfeasibleError):
        solve(g, solver="CLARABEL")
    with pytest.raises((InfeasibleError, SolverFailedError)):
        solve(g, solver="LOWRANK", max_outer=50)


def test_lowrank_verbose_prints_a_progress_table(data, capsys):
    """verbose=True prints one row per outer iteration (as SCS prints its own), and only
    while the solve runs."""
    import logging

    _, y, graph = data
    rep = solve(F.dvu(graph, y, centroids="explicit"), solver="LOWRANK", verbose=True)
    out = capsys.readouterr().out.splitlines()
    assert out[0].split("|")[0].strip() == "outer" and "certified" in out[0]
    rows = [line for line in out[2:] if line.strip()]
    assert len(rows) == rep.iterations
    last = rows[-1].split("|")
    assert int(last[0]) == rep.iterations and float(last[4]) == pytest.approx(
        rep.certified_gap, rel=0.01)
    assert not logging.getLogger("sdpembed.lowrank").handlers
    solve(F.dvu(graph, y, centroids="explicit"), solver="LOWRANK")
    assert capsys.readouterr().out == ""
