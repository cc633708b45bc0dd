"""Builders and estimators read one declaration of each parameter's valid values.

Every public builder of :mod:`sdpembed.formulations` declares its parameters' constraints
(``builder.parameter_constraints``) and checks them on every call; the estimator that calls
it reuses the same entries in ``_parameter_constraints``. For every declared parameter and
every value that satisfies none of its constraints, the builder raises
:class:`~sdpembed.exceptions.ParameterError` naming the parameter, and so does the
estimator's ``fit`` for the parameters it shares with the builder: same class, before any
solver runs.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from sklearn.utils._param_validation import generate_invalid_param_val, make_constraint

from sdpembed import estimators as est
from sdpembed import formulations as fm
from sdpembed._params import declared
from sdpembed._sklearn import Interval, StrOptions
from sdpembed.exceptions import InputError, ParameterError, SdpEmbedError
from sdpembed.graphs import knn_graph
from sdpembed.scatter.tca import tca_operators

_rng = np.random.default_rng(0)
X = _rng.normal(size=(16, 4))
Y = np.array([0, 1] * 8)
Y_PARTIAL = np.where(np.arange(16) < 12, Y, -1)
GRAPH = knn_graph(X, n_neighbors=3, n_random=1, random_state=0)
OPERATORS = tca_operators(X - X.mean(axis=0), Y_PARTIAL, alpha=1.0)

Xc = X - X.mean(axis=0)

#: builder -> (itself, the keyword arguments of a valid call, its estimator or None, the
#: estimator's fit arguments)
BUILDERS = {
    "dvu": (fm.dvu, {"graph": GRAPH, "y": Y_PARTIAL}, est.DVU, (X, Y_PARTIAL)),
    "mvu": (fm.mvu, {"graph": GRAPH}, est.MVU, (X,)),
    "gram_sdp": (fm.gram_sdp, {"n": 5}, None, None),
    "lda": (fm.lda, {"X": X, "y": Y}, est.LDA, (X, Y)),
    "lpp": (fm.lpp, {"X": X}, est.LPP, (X,)),
    "sda": (fm.sda, {"X": X, "y": Y_PARTIAL}, est.SDA, (X, Y_PARTIAL)),
    "dne": (fm.dne, {"X": X, "y": Y, "n_components": 2}, est.DNE, (X, Y)),
    "discriminative_projections": (fm.discriminative_projections, {"X": X, "y": Y},
                                   est.DiscriminativeProjections, (X, Y)),
    "tca": (fm.tca, {"X": Xc, "y": Y_PARTIAL, "n_components": 1, "alpha": 1.0, "beta": 1.0},
            est.TCA, (X, Y_PARTIAL)),
    "otca_step": (fm.otca_step, {"operators": OPERATORS, "beta": 1.0, "gamma": 1.0,
                                 "n_components": 1}, est.OTCA, (X, Y_PARTIAL)),
}

#: parameters of a builder that are data, not settings (validated by the data checks)
DATA = {"graph", "y", "X", "operators"}


def _satisfies(constraints, value) -> bool:
    return any(make_constraint(c).is_satisfied_by(value) for c in constraints)


def _invalid_values(constraints) -> list:
    """Values that satisfy none of ``constraints``: each bound's neighbour outside it, an
    unknown option, a string, NaN, infinity and a boolean where a number is expected."""
    candidates = ["not-a-valid-value", np.nan, np.inf, -1, -0.5, True]
    for c in constraints:
        if isinstance(c, (Interval, StrOptions)):
            candidates.append(generate_invalid_param_val(c))
        if isinstance(c, Interval) and c.right is not None:
            candidates.append(c.right)
    out = []
    for v in candidates:
        if not _satisfies(constraints, v) and not any(v is w or v == w for w in out):
            out.append(v)
    return out


def _cases():
    for name, (builder, *_rest) in BUILDERS.items():
        for param, constraints in builder.parameter_constraints.items():
            for bad in _invalid_values(constraints):
                yield pytest.param(name, param, bad, id=f"{name}-{param}-{_label(bad)}")


def _label(value) -> str:
    """A test id that does not depend on set order (a generated unknown option lists the
    valid ones in hash order, so the same value would get another id in another process,
    and pytest-xdist's workers would collect different tests)."""
    if isinstance(value, str) and value.startswith("not "):
        return "an-unknown-option"
    return repr(value)


def test_every_public_builder_declares_its_settings():
    # the table is complete: every parameter of a public builder that is not data is declared
    assert set(BUILDERS) == set(fm.__all__) - {"Formulation", "GramFormulation"}
    for name, (builder, *_rest) in BUILDERS.items():
        params = set(inspect.signature(builder).parameters) - DATA
        declared_ = set(builder.parameter_constraints)
        assert params <= declared_, f"{name}: undeclared parameters {params - declared_}"


@pytest.mark.parametrize("name", list(BUILDERS))
def test_estimator_reuses_the_builders_declaration(name):
    builder, _, estimator, _ = BUILDERS[name]
    if estimator is None:
        return
    shared = set(builder.parameter_constraints) & set(estimator._parameter_constraints) - {
        "graph", "n_components"}    # DVU/MVU's graph and the dimension may be None there
    assert shared, f"{estimator.__name__} shares no parameter with {name}"
    for param in shared:
        assert estimator._parameter_constraints[param] is builder.parameter_constraints[param], \
            f"{estimator.__name__}.{param} is declared apart from {name}'s"


@pytest.mark.parametrize(("name", "param", "bad"), list(_cases()))
def test_bad_value_same_error_from_builder_and_estimator(name, param, bad):
    builder, kwargs, estimator, fit_args = BUILDERS[name]
    with pytest.raises(ParameterError, match=f"'{param}' parameter of ") as from_builder:
        builder(**{**kwargs, param: bad})
    assert isinstance(from_builder.value, SdpEmbedError)
    assert isinstance(from_builder.value, InputError)
    if estimator is None or param not in inspect.signature(estimator).parameters \
            or _satisfies(estimator._parameter_constraints[param], bad):
        return       # not an estimator parameter, or one whose estimator form accepts more
    with pytest.raises(ParameterError, match=f"'{param}' parameter of ") as from_estimator:
        estimator(**{param: bad}).fit(*fit_args)
    assert type(from_estimator.value) is type(from_builder.value)


def test_valid_calls_pass():
    # the base calls of the table are valid: the failures above come from the bad value
    for name, (builder, kwargs, *_rest) in BUILDERS.items():
        assert builder(**kwargs) is not None, name


def test_the_message_names_the_range():
    with pytest.raises(ParameterError, match=r"'slack_weight' parameter of dvu must be a "
                       r"float in the range \[0(\.0)?, inf\)\. Got -1 instead"):
        fm.dvu(GRAPH, Y_PARTIAL, slack_weight=-1)
    with pytest.raises(ParameterError, match=r"'slack_weight' parameter of DVU must be a "
                       r"float in the range \[0(\.0)?, inf\)\. Got -1 instead"):
        est.DVU(slack_weight=-1).fit(X, Y_PARTIAL)


def test_declared_refuses_an_unknown_name():
    with pytest.raises(TypeError, match="no parameters"):
        declared({"missing": [int]})(lambda a: a)
