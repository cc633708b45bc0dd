"""Every warning of the toolkit points at the caller's line (``sdpembed.exceptions.warn``).

A warning attributed to a line inside sdpembed or scikit-learn tells a user nothing, and a
``warnings.filterwarnings(..., module=...)`` written for their own module would not match
it. Each test below triggers one warning class through the public call a user writes and
asserts that the warning's ``filename`` is this file and its ``lineno`` the calling line.
"""

from __future__ import annotations

import inspect
import sys
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits, load_iris
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sdpembed import exceptions
from sdpembed.estimators import DVU, LDA, LGC, DiscriminativeProjections
from sdpembed.exceptions import (
    DegenerateEmbeddingWarning,
    EmbeddingWorseThanInputWarning,
    HeldOutCheckSkippedWarning,
    InaccurateSolutionWarning,
    RankDeficiencyWarning,
)

HERE = __file__


def _line() -> int:
    """The line number of the caller (the line that triggers the warning)."""
    return inspect.currentframe().f_back.f_lineno


def _only(caught, category):
    found = [w for w in caught if issubclass(w.category, category)]
    assert found, f"no {category.__name__} among {[w.category for w in caught]}"
    return found


def _assert_here(caught, category, line):
    for w in _only(caught, category):
        assert w.filename == HERE, f"{category.__name__} points at {w.filename}:{w.lineno}"
        assert w.lineno == line


@pytest.fixture(params=["native", "frame walk"])
def both_paths(request, monkeypatch):
    """Run a test with ``skip_file_prefixes`` (Python >= 3.12) and with the frame walk."""
    if request.param == "native" and sys.version_info < (3, 12):
        pytest.skip("warnings.warn(skip_file_prefixes=...) needs Python >= 3.12")
    monkeypatch.setattr(exceptions, "_HAS_SKIP_FILE_PREFIXES", request.param == "native")


def test_embedding_worse_than_input_points_at_fit(both_paths):
    # a graph of random edges only cannot follow the classes (test_gram_estimators)
    from sdpembed.datasets import partial_labels

    X, y = load_digits(return_X_y=True)
    X, y = X[:150].astype(float), y[:150]
    yp = partial_labels(y, 0.8, random_state=0)
    est = DVU(n_neighbors=0, n_random=3, validation_splits=1, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line(); est.fit(X, yp)  # noqa: E702
    _assert_here(caught, EmbeddingWorseThanInputWarning, line)


def test_held_out_check_skipped_points_at_fit(both_paths, monkeypatch):
    # every pre-fit fails (as when each hits its time_limit) while the full fit succeeds:
    # the fit is returned unchecked, and says so at the user's line
    from sdpembed.datasets import partial_labels
    from sdpembed.estimators import gram
    from sdpembed.exceptions import SolverFailedError

    calls = []

    def first_fails(*args, **kwargs):
        calls.append(kwargs.get("solver"))
        if len(calls) == 1:                 # the one pre-fit (validation_splits=1)
            raise SolverFailedError("stopped at its time_limit (simulated)")
        return real(*args, **kwargs)

    real = gram.solve
    monkeypatch.setattr(gram, "solve", first_fails)
    X, y = load_digits(return_X_y=True)
    X, y = X[:80].astype(float), y[:80]
    yp = partial_labels(y, 0.8, random_state=0)
    est = DVU(n_neighbors=3, validation_splits=1, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line(); est.fit(X, yp)  # noqa: E702
    assert len(calls) == 2
    assert est.validation_["skipped"].startswith("every held-out fit failed: SolverFailedError")
    _assert_here(caught, HeldOutCheckSkippedWarning, line)
    (w,) = _only(caught, HeldOutCheckSkippedWarning)
    assert "returned unchecked" in str(w.message) and "time_limit" in str(w.message)


def test_held_out_check_turned_off_does_not_warn_that_it_was_skipped():
    from sdpembed.datasets import partial_labels

    X, y = load_digits(return_X_y=True)
    X, y = X[:80].astype(float), y[:80]
    yp = partial_labels(y, 0.8, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = DVU(n_neighbors=3, validation_fraction=None, random_state=0).fit(X, yp)
    assert est.validation_ == {"skipped": "validation_fraction=None"}
    assert not [w for w in caught if issubclass(w.category, HeldOutCheckSkippedWarning)]


def _iris_dvu():
    from sdpembed.formulations import dvu
    from sdpembed.graphs import knn_graph

    X, y = load_iris(return_X_y=True)
    X, y = X[::5], y[::5].copy()
    y[1::2] = -1
    return dvu(knn_graph(X, n_neighbors=3, n_random=1, random_state=0), y, slack_weight=1.0)


@pytest.mark.parametrize("solver, options", [
    # CLARABEL asked for 1e-15 stops on its own (insufficient progress) at its reduced
    # accuracy, AlmostSolved after 18 of its 200 iterations: not cut, a result
    ("CLARABEL", {"tol_gap_abs": 1e-15, "tol_gap_rel": 1e-15, "tol_feas": 1e-15}),
    # LOWRANK asked for 1e-6 and cut by max_outer=8 with a certified gap of 5.3e-3: its
    # bound is proven (at the default tol it certifies at outer 8 since the barrier runs
    # one pass early; with the barrier paid for by the subproblems' work it certifies 1e-6
    # within 8, so that run is switched off here: ``no_paid_barrier``)
    ("LOWRANK", {"max_outer": 8, "tol": 1e-6, "time_limit": 600}),
])
def test_inaccurate_solution_points_at_solve(both_paths, solver, options, no_paid_barrier):
    # a cut conic iterate is refused (SolverLimitError), no longer a source of this warning
    from sdpembed.solvers import solve

    f = _iris_dvu()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line(); rep = solve(f, solver=solver, **options)  # noqa: E702
    assert rep.status == "optimal_inaccurate" and not rep.extra.get("stopped_by_limit")
    _assert_here(caught, InaccurateSolutionWarning, line)


def test_inaccurate_placement_points_at_the_call(both_paths):
    from sdpembed.outofsample import place_by_distances

    rng = np.random.default_rng(8)
    Z = rng.normal(size=(60, 3))
    Xn = rng.normal(size=(20, 4))
    D = ((Xn[:, None, :] - np.c_[Z, np.zeros(60)][None]) ** 2).sum(-1)
    ind = np.argsort(D, axis=1)[:, :8]
    sq = np.take_along_axis(D, ind, axis=1) * np.random.default_rng(9).uniform(0.3, 2.0, (20, 8))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line(); place_by_distances(Z, ind, sq, max_newton=3)  # noqa: E702
    _assert_here(caught, InaccurateSolutionWarning, line)


def test_degenerate_embedding_points_at_fit_through_a_pipeline(both_paths):
    # iris with d = 3: the label-only direction maps every instance to 0 (the class docstring);
    # through a Pipeline the call goes through scikit-learn's frames too
    X, y = load_iris(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), DiscriminativeProjections(n_components=3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line(); pipe.fit_transform(X, y)  # noqa: E702
    _assert_here(caught, DegenerateEmbeddingWarning, line)


def test_rank_deficiency_points_at_fit(both_paths):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 30))
    y = np.repeat([0, 1], 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line(); LDA().fit(X, y)  # noqa: E702
    _assert_here(caught, RankDeficiencyWarning, line)


def test_orphans_warning_points_at_fit(both_paths):
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (20, 2)), rng.normal(100, 1, (20, 2))]
    ys = np.full(40, -1)
    ys[[0, 1, 2]] = [0, 1, 1]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = _line(); LGC(n_neighbors=3, orphans="prior").fit(X, ys)  # noqa: E702
    found = [w for w in caught if "connected components" in str(w.message)]
    assert found and all(w.filename == HERE and w.lineno == line for w in found)


def test_every_warning_class_is_covered_and_issued_through_warn():
    """The tests above cover each warning class of sdpembed.exceptions; the library calls
    ``warnings.warn`` nowhere but in ``exceptions.warn`` (a new call site would bypass it)."""
    from pathlib import Path

    classes = {name for name, obj in vars(exceptions).items()
               if isinstance(obj, type) and issubclass(obj, Warning)}
    assert classes == {"InaccurateSolutionWarning", "DegenerateEmbeddingWarning",
                       "EmbeddingWorseThanInputWarning", "RankDeficiencyWarning",
                       "HeldOutCheckSkippedWarning"}
    package = Path(exceptions.__file__).parent
    direct = [str(p.relative_to(package)) for p in package.rglob("*.py")
              if "warnings.warn(" in p.read_text() and p.name != "exceptions.py"]
    assert direct == []


def test_warn_from_the_outermost_frame_does_not_fail(monkeypatch):
    # the frame walk runs off the stack when only library frames are left: it still warns
    monkeypatch.setattr(exceptions, "_HAS_SKIP_FILE_PREFIXES", False)
    monkeypatch.setattr(exceptions, "_library_prefixes", lambda: ("",))   # every frame skipped
    with pytest.warns(UserWarning, match="edge"):
        exceptions.warn("edge", UserWarning)
