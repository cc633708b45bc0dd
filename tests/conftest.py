import os
from pathlib import Path

import numpy as np
import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def usps_archive() -> Path:
    """The USPS archive: under ``SDPEMBED_DATA``, else the shared data folder; skips if absent."""
    path = Path(os.environ.get("SDPEMBED_DATA", SHARED_DATA)) / "usps.npz"
    if not path.exists():
        path = SHARED_DATA / "usps.npz"
    if not path.exists():
        pytest.skip(f"USPS archive not found at {path}; set SDPEMBED_DATA")
    return path


@pytest.fixture(scope="session")
def usps_path() -> Path:
    """Path of the USPS archive (skips when absent)."""
    return usps_archive()


@pytest.fixture(scope="session")
def usps_small():
    """40 USPS digits (8 each of digits 0-4), 2 labels per class hidden, as float64."""
    path = usps_archive()
    with np.load(path, allow_pickle=False) as z:
        X, y = z["X"].astype(float), z["y"]
    rng = np.random.default_rng(0)
    idx = np.concatenate([rng.choice(np.flatnonzero(y == k), 8, replace=False) for k in range(5)])
    Xs, ys = X[idx], y[idx].copy()
    hidden = np.zeros(len(idx), dtype=bool)
    for k in range(5):  # hide 2 of 8 per class: 6 labelled per class remain
        hidden[np.flatnonzero(ys == k)[:2]] = True
    y_partial = ys.copy()
    y_partial[hidden] = -1
    return Xs, ys, y_partial, hidden


@pytest.fixture
def moons_dvu():
    """A factory: ``(n, seed)`` -> DVU (centroids eliminated) on two moons, 5-NN without
    random partners, 80 % labelled: few edges join the moons, so the dual feasible set is
    thin (lambda_min of S small over the whole box); the dual barrier's test problem."""
    from sklearn.datasets import make_moons

    from sdpembed.formulations.dvu import dvu
    from sdpembed.graphs import knn_graph

    def make(n: int, seed: int):
        X, y = make_moons(n, noise=0.1, random_state=seed)
        y = np.where(np.random.default_rng(seed).random(n) < 0.8, y, -1)
        return dvu(knn_graph(X, n_neighbors=5, n_random=0), y, centroids="eliminated")
    return make


#: The optimum of ``moons_dvu(40, 0)``: CSDP's objective (``optimal_inaccurate``, its
#: violations priced at 1.2e-6 of it at its own multipliers). CLARABEL's point
#: (``AlmostSolved``, -0.545966, 7e-6 above it) is refused since its violations are priced
#: at 2.81e-5 of its objective (rule 5 of :mod:`sdpembed.solve_status`; docs/tuning.md,
#: "Conic points priced at their own multipliers"), so the optimum is recorded.
MOONS40_OPTIMUM = -0.5459698627244491


@pytest.fixture
def moons40(moons_dvu):
    """``(f, optimum, space, pen)``: ``moons_dvu(40, 0)``, its recorded optimum
    (:data:`MOONS40_OPTIMUM`) and LOWRANK's factor space and penalty."""
    from sdpembed.lowrank.backend import _formulation_problem
    from sdpembed.lowrank.penalty import DistancePenalty
    from sdpembed.lowrank.space import FactorSpace

    f = moons_dvu(40, 0)
    gp, _, _ = _formulation_problem(f)
    return f, MOONS40_OPTIMUM, FactorSpace(gp), DistancePenalty(gp)


@pytest.fixture
def outer_loop():
    """A factory: formulation ``f`` (``options``: a ``LowRankOptions``, default ones if
    ``None``; ``rank``: of the random start factor) -> ``(_OuterLoop, DistancePenalty)`` of
    LOWRANK at its start, for tests of the loop's rules."""
    import time

    from sdpembed.lowrank.alm import _ALM
    from sdpembed.lowrank.backend import _formulation_problem
    from sdpembed.lowrank.options import LowRankOptions
    from sdpembed.lowrank.outer import _OuterLoop
    from sdpembed.lowrank.penalty import DistancePenalty
    from sdpembed.lowrank.result import _SolveState
    from sdpembed.lowrank.space import FactorSpace

    def make(f, options=None, rank=4):
        gp, basis, _ = _formulation_problem(f)
        opts = LowRankOptions() if options is None else options
        space = FactorSpace(gp, basis, limits=opts.dense_limits)
        pen = DistancePenalty(gp)
        W = space.project(np.random.default_rng(0).standard_normal((space.dim, rank)))
        loop = _OuterLoop(space, pen, _ALM(space, pen, opts), opts, _SolveState(),
                          time.perf_counter(), W)
        return loop, pen

    return make


@pytest.fixture
def no_paid_barrier(monkeypatch):
    """LOWRANK without the cold dual barrier bought once the subproblems have done its
    estimated work (``DualOptimum.paid_for``; docs/tuning.md, "The last rows over 10 s at
    n <= 600"): on small interval problems it certifies at the first outer iteration, so a
    test of a solve cut short by ``max_outer`` (or of the outer loop's later iterations)
    switches it off to reach the state it is about. The barrier at its usual pass is kept."""
    from sdpembed.lowrank.dual_barrier import DualOptimum

    monkeypatch.setattr(DualOptimum, "paid_for", lambda self, work: False)


def _partial_digits(n, n_class=10):
    """``n`` of scikit-learn's digits (of the first ``n_class`` classes; seed 0), about 30 %
    unlabelled (``-1``), their 3-neighbour graph with one random partner, and the generator
    after its draws: ``(X, y, graph, rng)``."""
    from sklearn.datasets import load_digits

    from sdpembed.graphs import knn_graph

    X, y = load_digits(n_class=n_class, return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(y.size)[:n]
    X, y = X[idx].astype(float), y[idx].copy()
    y[rng.random(idx.size) > 0.7] = -1
    return X, y, knn_graph(X, n_neighbors=3, n_random=1, random_state=0), rng


def digits_dvu(n: int, n_neighbors: int, **kwargs):
    """DVU (eliminated centroids) on ``n`` of scikit-learn's digits (seed 0), about 20 %
    unlabelled (seed 1), their ``n_neighbors``-NN graph with one random partner;
    ``kwargs`` go to :func:`~sdpembed.formulations.dvu.dvu`."""
    from sklearn.datasets import load_digits

    from sdpembed.formulations.dvu import dvu
    from sdpembed.graphs import knn_graph

    X, y = load_digits(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(y))[:n]
    X, y = X[idx], y[idx]
    y_obs = np.where(np.random.default_rng(1).random(n) < 0.8, y, -1)
    return dvu(knn_graph(X, n_neighbors=n_neighbors, n_random=1, random_state=0), y_obs,
               centroids="eliminated", **kwargs)


@pytest.fixture(scope="session")
def partial_digits():
    """``partial_digits(n, n_class=10)``: ``(X, y, graph, rng)``, ``n`` partially labelled
    digits, their graph and the generator after its draws (:func:`_partial_digits`)."""
    return _partial_digits


@pytest.fixture(scope="session")
def digits90():
    """90 of scikit-learn's digits, about 30 % unlabelled, and their graph:
    ``(X, y, graph)`` (:func:`_partial_digits`)."""
    return _partial_digits(90)[:3]


@pytest.fixture
def differential_formulation():
    """The formulation of a differential instance: ``f = differential_formulation(seed)``
    (``problems.differential.make_instance(seed).build()``)."""
    from problems.differential import make_instance

    return lambda seed: make_instance(seed).build()[0]


@pytest.fixture
def quiet_solve():
    """:func:`sdpembed.solve` with its warnings silenced: ``quiet_solve(f, solver, **options)``."""
    import warnings

    from sdpembed import solve

    def run(f, solver, **options):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return solve(f, solver, **options)

    return run


@pytest.fixture
def made_certificates(monkeypatch):
    """Every certificate LOWRANK's ``_certificate_from_eig`` makes in the test, in order."""
    import sdpembed.lowrank.certificate as certificate

    made = []
    original = certificate._certificate_from_eig

    def record(*args, **kwargs):
        cert = original(*args, **kwargs)
        made.append(cert)
        return cert

    monkeypatch.setattr(certificate, "_certificate_from_eig", record)
    return made


@pytest.fixture
def returns_of(monkeypatch):
    """``outs = returns_of(owner, "name")``: ``owner.name`` wrapped for the test, each call's
    return value appended to ``outs`` (the call itself unchanged)."""

    def watch(owner, name):
        outs, real = [], getattr(owner, name)

        def wrapped(*args, **kwargs):
            out = real(*args, **kwargs)
            outs.append(out)
            return out

        monkeypatch.setattr(owner, name, wrapped)
        return outs

    return watch


#: Generated tests that run with the slow ones (``-m slow``): test function -> (a part of
#: the id, the ends of the ids). Each one's check is also made by a faster test of the
#: default suite, named beside it (docs/tuning.md, "The default suite under 10 minutes").
SLOW_GENERATED = {
    # scikit-learn's two checks that fit MVU (LOWRANK, 3 neighbours and a random partner)
    # on normal points in 2-D, where 4-cliques leave no strictly feasible point and the
    # solve goes on to the clique face (docs/tuning.md, "MVU on 100 normal points in
    # 2-D"): the costliest solves of the default suite when marked. Unfitted is
    # refused: MVU's check_estimators_unfitted; fitted is accepted: every MVU check that
    # fits and then transforms (check_fit_idempotent, check_transformer_general);
    # n_features_in_ set by fit and checked by transform: MVU's
    # check_n_features_in_after_fitting; both checks themselves run on DVU (the same base
    # class sets and checks what they test)
    "test_sklearn_api": ("MVU(", ("-check_fit_check_is_fitted]", "-check_n_features_in]")),
}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark :data:`SLOW_GENERATED`'s tests slow before ``-m`` selects (tryfirst)."""
    for item in items:
        rule = SLOW_GENERATED.get(getattr(item, "originalname", None) or item.name)
        if rule is not None and rule[0] in item.name and item.name.endswith(rule[1]):
            item.add_marker(pytest.mark.slow)
