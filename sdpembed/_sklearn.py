"""The private scikit-learn names sdpembed uses, imported here and nowhere else.

The estimators declare their parameters as scikit-learn's own estimators do
(``_parameter_constraints`` of :class:`Interval`, :class:`StrOptions`, ...,
checked on ``fit`` by :func:`_fit_context`), so that a bad parameter raises
scikit-learn's :class:`InvalidParameterError` and the estimator checks see
scikit-learn's behaviour. These names live in private modules, which a
release may move or change: ``pyproject.toml`` pins the range of scikit-learn
releases tested, and a release that breaks them needs a change here only.
"""

from __future__ import annotations

from sklearn.base import _fit_context
from sklearn.utils import _safe_indexing
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    InvalidParameterError,
    StrOptions,
    validate_parameter_constraints,
)

__all__ = ["HasMethods", "Interval", "InvalidParameterError", "StrOptions", "_fit_context",
           "_safe_indexing", "validate_parameter_constraints"]
