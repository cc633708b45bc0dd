"""Typed errors of sdpembed.

Every error raised on purpose by the toolkit derives from :class:`SdpEmbedError`,
so ``except sdpembed.exceptions.SdpEmbedError`` catches them all. Input errors
also derive from :class:`ValueError` so that scikit-learn's estimator checks
recognise them; solver errors derive from :class:`RuntimeError`.

Messages say what to change, not only what went wrong.
"""

from __future__ import annotations

__all__ = [
    "SdpEmbedError",
    "InputError",
    "DuplicatePointsError",
    "DisconnectedGraphError",
    "LabelError",
    "ProblemTooLargeError",
    "SolverError",
    "SolverMissingError",
    "InfeasibleError",
    "UnboundedError",
    "SolverFailedError",
    "InaccurateSolutionWarning",
]


class SdpEmbedError(Exception):
    """Base class of every error raised by sdpembed."""


class InputError(SdpEmbedError, ValueError):
    """Bad input detected before any solver runs (shapes, NaN, options)."""


class DuplicatePointsError(InputError):
    """Two graph neighbours have zero target distance (duplicate points)."""


class DisconnectedGraphError(InputError):
    """The neighbourhood graph has more than one connected component."""


class LabelError(InputError):
    """Labels unusable for the method (one class, a class of one sample, ...)."""


class ProblemTooLargeError(InputError):
    """The formulation would not fit in memory for the chosen backend."""


class SolverError(SdpEmbedError, RuntimeError):
    """A backend did not return an optimal solution."""


class SolverMissingError(SolverError):
    """The requested backend is not installed; the message names the install command."""


class InfeasibleError(SolverError):
    """The backend proved the problem infeasible."""


class UnboundedError(SolverError):
    """The backend proved the problem unbounded."""


class SolverFailedError(SolverError):
    """The backend stopped without a usable solution (numerical trouble, limits)."""


class InaccurateSolutionWarning(UserWarning):
    """The backend returned ``optimal_inaccurate``: usable but looser than asked."""
