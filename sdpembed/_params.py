"""Declared parameter constraints: one declaration read by a builder and by its estimator.

A problem builder (:func:`sdpembed.formulations.dvu`, ...) declares the valid values of its
parameters as scikit-learn's estimators do (``Interval``, ``StrOptions``, ``"boolean"``,
types, ``None``) and is wrapped by :func:`declared`, which checks every argument passed
against that table before the builder's body runs. The estimator that calls the builder
reuses the same entries in its ``_parameter_constraints`` (:func:`constraints_of`), so a
bad value gets the same :class:`~sdpembed.exceptions.ParameterError` (naming the parameter
and the valid range) whether it is passed to the builder or to the estimator, before any
solver runs.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from numbers import Integral, Real

import numpy as np

from ._sklearn import Interval, InvalidParameterError, validate_parameter_constraints
from .exceptions import ParameterError

__all__ = ["Range", "NONNEGATIVE", "POSITIVE", "POSITIVE_INT", "NONNEGATIVE_INT", "RANK_TOL_RANGE",
           "check_parameters", "declared", "constraints_of"]

class Range(Interval):
    """scikit-learn's ``Interval``, refusing booleans: ``True`` is not the number 1.

    An open end at infinity excludes infinity, and NaN is refused (scikit-learn's rules).
    """

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


#: a finite number >= 0 (NaN and inf refused)
NONNEGATIVE = Range(Real, 0, None, closed="left")
#: a finite number > 0
POSITIVE = Range(Real, 0, None, closed="neither")
#: an integer >= 1
POSITIVE_INT = Range(Integral, 1, None, closed="left")
#: an integer >= 0
NONNEGATIVE_INT = Range(Integral, 0, None, closed="left")
#: the threshold of the rank-revealing step, in [0, 1)
RANK_TOL_RANGE = Range(Real, 0, 1, closed="left")


def check_parameters(constraints: Mapping[str, list], values: Mapping[str, object],
                     caller: str) -> None:
    """Check ``values`` against ``constraints`` (scikit-learn's rules).

    Raises
    ------
    ParameterError
        Naming the first parameter whose value satisfies none of its constraints and
        what it accepts, e.g. ``The 'slack_weight' parameter of dvu must be a float in
        the range [0.0, inf). Got -1 instead.``
    """
    try:
        validate_parameter_constraints(dict(constraints), dict(values), caller_name=caller)
    except InvalidParameterError as exc:
        raise ParameterError(str(exc)) from None


def declared(constraints: Mapping[str, list]) -> Callable:
    """Decorator: the builder checks its arguments against ``constraints`` on every call.

    Every name of ``constraints`` must be a parameter of the builder (checked when the
    decorator is applied). The table is kept as the wrapper's ``parameter_constraints``
    attribute, for the estimators (:func:`constraints_of`) and the tests.
    """
    def decorate(builder: Callable) -> Callable:
        signature = inspect.signature(builder)
        unknown = set(constraints) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{builder.__qualname__} has no parameters {sorted(unknown)}")

        @functools.wraps(builder)
        def checked(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            check_parameters(constraints, bound.arguments, builder.__name__)
            return builder(*args, **kwargs)

        checked.parameter_constraints = dict(constraints)
        return checked

    return decorate


def constraints_of(builder: Callable, *names: str) -> dict[str, list]:
    """The declared constraints of ``builder``'s parameters ``names`` (all when none given).

    For an estimator's ``_parameter_constraints``: the estimator's parameters that go
    to the builder unchanged are checked against the builder's own declaration.
    """
    table = builder.parameter_constraints
    return {name: table[name] for name in (names or table)}
