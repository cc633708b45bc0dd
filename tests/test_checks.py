"""Integer-valued parameters refuse non-integers, as scikit-learn's ``Interval(Integral, ...)``.

``int(2.7)`` is 2: a builder that cast its counts silently solved another
problem than the one asked for. Each public function below takes an integer
count; given 2.5, 2.0 or ``True`` it must raise ``InputError`` naming the
parameter and the value given (the builders declared with :mod:`sdpembed._params` in
scikit-learn's wording), and numpy integers must keep working.
"""

from __future__ import annotations

import numpy as np
import pytest

from sdpembed import formulations, outofsample, recovery, relaxations, scatter, sequential
from sdpembed._checks import as_int
from sdpembed.exceptions import InputError
from sdpembed.formulations.gram import laplacian_basis
from sdpembed.graphs import knn_graph
from sdpembed.tangent import tangent_kneighbors


def _data():
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    X, y = X[::5], y[::5].copy()
    y_partial = y.copy()
    y_partial[1::2] = -1
    return X, y, y_partial


X, Y, Y_PARTIAL = _data()
G = X @ X.T
A, B = np.cov(X.T) + np.eye(4), np.eye(4)

#: (call with the parameter set to v, parameter name); each call is valid for v = 2
CASES = [
    (lambda v: laplacian_basis(knn_graph(X, 3), rank=v), "basis_rank"),
    (lambda v: formulations.sda(X, Y_PARTIAL, n_components=v), "n_components"),
    (lambda v: formulations.lda(X, Y, n_components=v), "n_components"),
    (lambda v: formulations.dne(X, Y, n_components=2, n_neighbors=v), "n_neighbors"),
    (lambda v: formulations.discriminative_projections(X, Y_PARTIAL, n_components=v),
     "n_components"),
    (lambda v: scatter.knn_affinity(X, n_neighbors=v), "n_neighbors"),
    (lambda v: scatter.discriminant_adjacency(X, Y, n_neighbors=v), "n_neighbors"),
    (lambda v: scatter.tca_graph(X, n_neighbors=v), "n_neighbors"),
    (lambda v: scatter.class_indicator(Y.astype(int) % 2, n_classes=v), "n_classes"),
    (lambda v: scatter.otca_basis(A, np.eye(4)[:, :3], n_components=v), "n_components"),
    (lambda v: outofsample.fitted_neighbors(X[:3], X, v), "n_neighbors"),
    (lambda v: recovery.embedding_from_gram(G, v), "n_components"),
    (lambda v: recovery.embedding_from_factor(X, v), "n_components"),
    (lambda v: relaxations.trace_ratio_iteration(A, B, 1, max_iter=v), "max_iter"),
    (lambda v: sequential.dinkelbach(A, B, 1, solver="CLARABEL", max_iter=v), "max_iter"),
    (lambda v: tangent_kneighbors(np.random.default_rng(0).random((6, 256)), n_neighbors=v),
     "n_neighbors"),
]


@pytest.mark.parametrize("call, name", CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
@pytest.mark.parametrize("bad", [2.5, 2.0, True])
def test_integer_parameters_refuse_non_integers(call, name, bad):
    # as_int's message, or the declared builders' (sdpembed._params, scikit-learn's wording)
    own = f"^{name} must be an integer.*; got {bad!r} "
    declared = rf"^The '{name}' parameter of \w+ must be an int .*Got {bad!r} instead\.$"
    with pytest.raises(InputError, match=f"{own}|{declared}"):
        call(bad)


@pytest.mark.parametrize("call, name", CASES, ids=[f"{i}-{c[1]}" for i, c in enumerate(CASES)])
def test_integer_parameters_take_numpy_integers(call, name):
    call(np.int64(2))  # raises nothing


def test_as_int_names_the_parameter_and_the_range():
    assert as_int(np.int32(3), "k", 1) == 3 and type(as_int(np.int32(3), "k", 1)) is int
    with pytest.raises(InputError, match=r"^k must be an integer >= 1; got 0 \(integer\)$"):
        as_int(0, "k", 1)
    with pytest.raises(InputError, match=r"^k must be an integer in \[1, 4\]; got '3' \(string\)$"):
        as_int("3", "k", 1, 4)
