"""scikit-learn's declarative parameter validation, raising the toolkit's typed error."""

from __future__ import annotations

from .._sklearn import InvalidParameterError
from ..exceptions import ParameterError

__all__ = ["TypedParameterValidation"]


class TypedParameterValidation:
    """Mixin: ``_validate_params`` (called by ``_fit_context``) raises :class:`ParameterError`.

    The check itself is scikit-learn's, against the class's
    ``_parameter_constraints``; only the error type changes, to one that is
    both :class:`~sdpembed.exceptions.InputError` and scikit-learn's
    ``InvalidParameterError``.
    """

    def _validate_params(self):
        try:
            super()._validate_params()
        except InvalidParameterError as exc:
            if isinstance(exc, ParameterError):
                raise
            raise ParameterError(str(exc)) from None
