"""Every estimator of :mod:`sdpembed.estimators` validates its parameters the scikit-learn way.

Declared constraints (``_parameter_constraints``, one per ``__init__`` parameter) checked by
``fit`` under ``_fit_context``: scikit-learn's own ``check_param_validation`` sets each
parameter to a value of the wrong type and to one outside its constraint, and expects
``InvalidParameterError`` from ``fit`` (and ``fit_transform``, ``predict`` ... where the
estimator has them) before any work. The toolkit raises
:class:`~sdpembed.exceptions.ParameterError`, which is both that and an ``InputError``.
"""

from __future__ import annotations

import inspect

import pytest
from sklearn.utils.estimator_checks import check_param_validation

import sdpembed.estimators as E
from sdpembed.exceptions import InputError, ParameterError

ESTIMATORS = [getattr(E, name) for name in E.__all__
              if inspect.isclass(getattr(E, name)) and name != "ProjectionEstimator"]


def test_every_estimator_is_listed():
    # guards the list itself: the estimators the package documents are all here
    names = {cls.__name__ for cls in ESTIMATORS}
    assert {"DVU", "MVU", "LDA", "LPP", "PCA", "SDA", "DiscriminativeProjections", "DNE",
            "TCA", "OTCA", "LGC", "GFHF"} <= names


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_parameters_are_declared_and_checked_in_fit(cls):
    assert set(cls._parameter_constraints) == set(cls._get_param_names())
    check_param_validation(cls.__name__, cls())


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_the_error_is_the_toolkits(cls):
    import numpy as np

    X = np.random.default_rng(0).standard_normal((12, 3))
    y = np.arange(12) % 2
    name = next(iter(cls._parameter_constraints))
    with pytest.raises(ParameterError, match=f"'{name}' parameter") as info:
        cls().set_params(**{name: object()}).fit(X, y)
    assert isinstance(info.value, InputError)


def test_projection_estimators_document_their_shared_parameters_themselves():
    """Each projection estimator's page documents method, solver, solver_options and
    rank_tol in full, and no estimator's docstring sends readers to a private module."""
    import re

    import sdpembed.estimators as E
    from sdpembed.estimators._projection import PROJECTION_PARAMETERS

    for name in E.__all__:
        doc = getattr(E, name).__doc__
        assert not re.search(r"sdpembed\.estimators\._\w+", doc), name
        assert "{projection_parameters}" not in doc, name
    for name in ("LDA", "SDA", "LPP", "PCA", "DiscriminativeProjections",
                 "ProjectionEstimator"):
        doc = getattr(E, name).__doc__
        params = doc[doc.index("Parameters"):]
        for line in PROJECTION_PARAMETERS.splitlines():
            assert line.strip() in params, (name, line)
    for name in ("DNE", "TCA"):     # their own wording of the same parameters
        doc = getattr(E, name).__doc__
        for p in ("method :", "solver :", "solver_options :", "rank_tol :"):
            assert p in doc, (name, p)
