"""Published MVU variants written as user code (``examples/plot_user_variants.py`` and
:func:`sdpembed.sequential.minimum_volume_embedding`): Colored MVU, shrink-only MVU and
Minimum Volume Embedding, each against a second solver.

Tolerance 1e-4 relative between LOWRANK (certified) and CLARABEL (interior point):
observed differences on these instances are ~1e-6; the slack covers the certificate
tolerance (1e-5 relative gap by default) and CLARABEL's own accuracy.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from sdpembed import knn_graph, solve
from sdpembed.demo import load_demo_data
from sdpembed.exceptions import InputError
from sdpembed.formulations import mvu
from sdpembed.sequential import minimum_volume_embedding, minimum_volume_step

RTOL = 1e-4
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "plot_user_variants.py"


def _load():
    spec = importlib.util.spec_from_file_location("_example_plot_user_variants", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example():
    return _load()


@pytest.fixture(scope="module")
def digits():
    X, y = load_demo_data(30, random_state=0)
    return knn_graph(X, n_neighbors=4, n_random=1, random_state=0), y


def _solve(f, solver):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return solve(f, solver=solver)


def _rel(a, b):
    return abs(a - b) / max(1.0, abs(b))


def test_colored_mvu_lowrank_matches_clarabel(example, digits):
    graph, y = digits
    ref = _solve(example.colored_mvu(graph, y), "CLARABEL")
    f = example.colored_mvu(graph, y)
    low = _solve(f, "LOWRANK")
    assert low.status == "optimal" and low.certified_gap <= 1e-5
    assert _rel(low.objective, ref.objective) <= RTOL
    # the point honours MVU's distances and its value is the alignment reported
    G = f.value("gram")
    i, j = graph.edges.T
    D = G[i, i] + G[j, j] - 2 * G[i, j]
    target = graph.sqdist / graph.sqdist.mean()
    assert np.max(np.abs(D - target)) <= 1e-4 * target.max()
    Y = np.eye(int(y.max()) + 1)[y]
    assert -np.sum((Y @ Y.T) * G) == pytest.approx(low.objective, rel=1e-8)
    # aligning with the labels changes the solution: MVU's trace is larger
    assert -_solve(mvu(graph), "CLARABEL").objective > np.trace(G) * (1 + 1e-3)


def test_shrink_only_mvu(example, digits):
    """Relaxing MVU's equalities to <= can only raise the trace; every row holds; two conic
    backends agree; LOWRANK reads the <= rows as shrink-only distance edges and certifies
    CLARABEL's optimum, and equals the builder's ``mvu(graph, distances="shrink")``."""
    graph, _ = digits
    f = example.shrink_only_mvu(graph)
    ref = _solve(f, "CLARABEL")
    G = f.value("gram")
    i, j = graph.edges.T
    target = graph.sqdist / graph.sqdist.mean()
    assert np.all(G[i, i] + G[j, j] - 2 * G[i, j] <= target + 1e-6)
    assert -ref.objective >= -_solve(mvu(graph), "CLARABEL").objective * (1 - 1e-6)
    scs = _solve(example.shrink_only_mvu(graph), "SCS")
    assert _rel(scs.objective, ref.objective) <= 1e-3      # SCS: first order, eps 1e-6
    low = _solve(example.shrink_only_mvu(graph), "LOWRANK")
    assert low.status == "optimal" and low.certified_gap <= 1e-4
    assert _rel(low.objective, ref.objective) <= RTOL
    # the certificate's bound is below CLARABEL's optimum (weak duality), and the point is
    # feasible: every row <= its target
    assert low.extra["lower_bound"] <= ref.objective + 1e-7 * abs(ref.objective)
    f_low = example.shrink_only_mvu(graph)
    low2 = _solve(f_low, "LOWRANK")
    G = f_low.value("gram")
    assert np.all(G[i, i] + G[j, j] - 2 * G[i, j] <= target * (1 + 1e-9))
    assert _rel(low2.objective, _solve(mvu(graph, distances="shrink"), "LOWRANK").objective) \
        <= RTOL


def test_mve_step_lowrank_matches_clarabel(digits):
    """One MVE step (a linear-objective SDP) from the same eigenvectors: LOWRANK's certified
    optimum is CLARABEL's."""
    graph, _ = digits
    base = mvu(graph)
    _solve(base, "CLARABEL")
    w, V = np.linalg.eigh(base.value("gram"))
    Vd = V[:, ::-1][:, :2]
    ref = _solve(minimum_volume_step(base, Vd), "CLARABEL")
    low = _solve(minimum_volume_step(base, Vd), "LOWRANK")
    assert low.status == "optimal"
    assert _rel(low.objective, ref.objective) <= RTOL
    # the step maximises <2 Vd Vd^T - I, G>, which is at least its value at the start
    start = float(2 * w[::-1][:2].sum() - w.sum())
    assert -ref.objective >= start - 1e-6 * abs(start)


def test_mve_sequence_raises_the_spectral_gap(digits):
    graph, _ = digits
    result = minimum_volume_embedding(graph, 2, solver="CLARABEL", max_iter=2)
    h = np.array(result.history)
    assert len(result.reports) == len(h) == 3
    assert np.all(np.diff(h) >= -1e-6 * np.abs(h[1:]))       # Ky Fan: monotone
    assert h[-1] > h[0] * (1 + 1e-3)                          # and it moves
    lam = np.linalg.eigvalsh(result.gram)[::-1]
    assert float(lam[:2].sum() - lam[2:].sum()) == pytest.approx(h[-1], rel=1e-6)


def test_mve_validation(digits):
    graph, _ = digits
    with pytest.raises(InputError, match="n_components"):
        minimum_volume_embedding(graph, 0, solver="CLARABEL")
    with pytest.raises(InputError, match="tol"):
        minimum_volume_embedding(graph, 2, solver="CLARABEL", tol=-1.0)
    base = mvu(graph)
    with pytest.raises(InputError, match="orthonormal"):
        minimum_volume_step(base, np.ones((graph.n_nodes, 2)))
    with pytest.raises(InputError, match="shape"):
        minimum_volume_step(base, np.eye(3))


def test_example_runs(example):
    result = example.run(solver="CLARABEL", n_samples=24, mve_steps=1)
    assert result["colored"].objective < 0 and result["shrink"].objective < 0
    assert len(result["mve"].history) == 2
