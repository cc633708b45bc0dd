"""Typed errors of sdpembed.

Every error raised on purpose by the toolkit derives from :class:`SdpEmbedError`,
so ``except sdpembed.exceptions.SdpEmbedError`` catches them all. Input errors
also derive from :class:`ValueError` so that scikit-learn's estimator checks
recognise them; solver errors derive from :class:`RuntimeError`. Dataset
errors derive from the built-in error a caller would expect (a missing archive
is a :class:`FileNotFoundError`, a bad checksum an :class:`OSError`, a bad
layout a :class:`ValueError`).

The modules that raise an error re-export it (``sdpembed.datasets.DatasetError``,
``sdpembed.relaxations.SingularMatrixError``, ``sdpembed.experiments.SpecError``).

Messages say what to change, not only what went wrong.
"""

from __future__ import annotations

import os
import sys
import warnings

from ._sklearn import InvalidParameterError

__all__ = [
    "SdpEmbedError",
    "EmbeddingWorseThanInputWarning",
    "HeldOutCheckSkippedWarning",
    "InputError",
    "ParameterError",
    "DuplicatePointsError",
    "DisconnectedGraphError",
    "LabelError",
    "ProblemTooLargeError",
    "UnsupportedProblemError",
    "SingularMatrixError",
    "SpecError",
    "OutputError",
    "DatasetError",
    "DatasetNotFoundError",
    "ChecksumError",
    "DatasetFormatError",
    "SolverError",
    "SolverMissingError",
    "InfeasibleError",
    "UnboundedError",
    "SolverFailedError",
    "SolverLimitError",
    "InaccurateSolutionWarning",
    "DegenerateEmbeddingError",
    "DegenerateEmbeddingWarning",
    "RankDeficiencyWarning",
    "warn",
]


class SdpEmbedError(Exception):
    """Base class of every error raised by sdpembed."""


class InputError(SdpEmbedError, ValueError):
    """Bad input detected before any solver runs (shapes, NaN, options)."""


class ParameterError(InputError, InvalidParameterError):
    """An estimator parameter violates its declared constraints (``_parameter_constraints``).

    Also scikit-learn's ``InvalidParameterError`` (a ``ValueError`` and a
    ``TypeError``), so code written for scikit-learn catches it unchanged.
    """


class DuplicatePointsError(InputError):
    """Two graph neighbours have zero target distance (duplicate points)."""


class DisconnectedGraphError(InputError):
    """The neighbourhood graph has more than one connected component."""


class LabelError(InputError):
    """Labels unusable for the method (one class, a class of one sample, ...)."""


class ProblemTooLargeError(InputError):
    """The formulation would not fit in memory for the chosen backend."""


class UnsupportedProblemError(InputError):
    """The backend cannot solve the problem it is handed exactly as posed.

    Raised before any work: a backend that reads the structured description of
    a formulation (``"LOWRANK"``) refuses a problem it cannot represent (a
    constraint that is not affine in the Gram matrix, a cvxpy problem rebuilt
    behind the description's back) instead of solving something else. The
    message names what it cannot honour and the backends that can.
    """


class SingularMatrixError(InputError):
    """The constraint matrix ``B`` of a pencil is singular (or nearly so).

    Pass ``regularization`` (uses ``B + regularization * I``) or reduce the data
    with PCA first; the toolkit never regularises silently.
    """


class SpecError(InputError):
    """An experiment spec is invalid; the message starts with the offending field."""


class OutputError(SdpEmbedError, OSError):
    """An experiment's output folder cannot be used.

    It cannot be written, holds another run's results (resume or overwrite
    them explicitly), or is being written by another run (the message names it).
    """


class DatasetError(SdpEmbedError):
    """A dataset could not be provided (missing, corrupt, unreadable)."""


class DatasetNotFoundError(DatasetError, FileNotFoundError):
    """The archive is missing and could not be downloaded; the message says where to put it."""


class ChecksumError(DatasetError, OSError):
    """A source file's sha256 differs from the recorded one."""


class DatasetFormatError(DatasetError, ValueError):
    """A source file or an archive does not have the documented layout."""


class SolverError(SdpEmbedError, RuntimeError):
    """A backend did not return an optimal solution."""


class SolverMissingError(SolverError):
    """The requested backend is not installed; the message names the install command."""


class InfeasibleError(SolverError):
    """The backend proved the problem infeasible."""


class UnboundedError(SolverError):
    """The backend proved the problem unbounded."""


class SolverFailedError(SolverError):
    """The backend stopped without a usable solution (numerical trouble, limits).

    Where the backend returned a point that is not a result (far from optimal, or below
    its own bound, see :mod:`sdpembed.solve_status`), the error carries it:
    ``objective``, ``bound`` (a proven lower bound, or ``None``), ``gap`` (the backend's
    reported gap) and ``point`` (LOWRANK: the factor :math:`F`, :math:`G = FF^T`; other
    backends: :math:`G`); all ``None`` when unknown. A point refused for what its
    violations can buy (rule 5) also carries that price, ``violation_worth`` (relative,
    in the objective's unit; else ``None``).
    """

    def __init__(self, message: str = "", *, objective: float | None = None,
                 bound: float | None = None, gap: float | None = None,
                 point: object = None, violation_worth: float | None = None) -> None:
        super().__init__(message)
        self.objective = objective
        self.bound = bound
        self.gap = gap
        self.point = point
        self.violation_worth = violation_worth


class SolverLimitError(SolverFailedError):
    """The backend stopped at its iteration or time limit before converging.

    Its last iterate is neither primal nor dual feasible, and nothing it reports (the
    solver's gap, its residuals) bounds its distance from the optimum, so it is not a
    result (:mod:`sdpembed.solve_status`). Raise the limit named in the message. Besides
    the fields of :class:`SolverFailedError` (``gap`` is the solver's gap of the iterate),
    the error carries ``report``, the :class:`~sdpembed.report.SolveReport` of that last
    iterate (status, objective, residuals, ``extra["solver_gap"]``), for inspection;
    ``None`` where the backend wrote no iterate.
    """

    def __init__(self, message: str = "", *, report: object = None,
                 objective: float | None = None, bound: float | None = None,
                 gap: float | None = None, point: object = None) -> None:
        super().__init__(message, objective=objective, bound=bound, gap=gap, point=point)
        self.report = report


class InaccurateSolutionWarning(UserWarning):
    """The backend returned ``optimal_inaccurate``: usable but looser than asked."""


class DegenerateEmbeddingError(SdpEmbedError, ValueError):
    """Every learned direction maps the training data to (numerically) one point."""


class DegenerateEmbeddingWarning(UserWarning):
    """Some learned directions map the training data to (numerically) one point."""


class EmbeddingWorseThanInputWarning(UserWarning):
    """On labels held out of DVU's pre-fits, the k-NN vote on the learned embedding may be 5
    points or more less accurate than the same vote on the input features (the held-out rows
    do not rule it out at 90 % confidence): the neighbourhood graph may not follow the
    classes (more neighbours, another metric, or a graph of one's own)."""


class HeldOutCheckSkippedWarning(UserWarning):
    """DVU's held-out check (``validation_fraction``) was asked for but could not run: every
    held-out pre-fit failed (the solver's error is in ``validation_["skipped"]``), so nothing
    says whether the embedding classifies worse than the input features. The full fit
    succeeded; its result is returned unchecked."""


class RankDeficiencyWarning(UserWarning):
    """The rank-revealing step excluded directions that carried information
    (e.g. directions of infinite Fisher ratio when features outnumber labelled points)."""


#: ``warnings.warn`` takes ``skip_file_prefixes`` from Python 3.12 on; before, :func:`warn`
#: counts the frames itself
_HAS_SKIP_FILE_PREFIXES = sys.version_info >= (3, 12)


def _library_prefixes() -> tuple[str, ...]:
    """Folders whose frames are not the user's: this package, and scikit-learn when loaded
    (its ``fit`` wrapper, ``fit_transform``, ``set_output`` and meta-estimators call ours)."""
    prefixes = [os.path.dirname(os.path.abspath(__file__)) + os.sep]
    sklearn = sys.modules.get("sklearn")
    if sklearn is not None and getattr(sklearn, "__file__", None):
        prefixes.append(os.path.dirname(os.path.abspath(sklearn.__file__)) + os.sep)
    return tuple(prefixes)


def warn(message: str, category: type[Warning]) -> None:
    """Issue a warning attributed to the first frame outside sdpembed and scikit-learn.

    Every warning of the toolkit goes through here, so that it points at the user's line
    (``DVU().fit(X, y)``, ``solve(f)``) whatever the depth of the call inside the library;
    a fixed ``stacklevel`` would point into the library whenever the call path changes.
    """
    prefixes = _library_prefixes()
    if _HAS_SKIP_FILE_PREFIXES:
        warnings.warn(message, category, skip_file_prefixes=prefixes)
        return
    frame = sys._getframe(1)
    level = 2                                       # 1 is this function, 2 its caller
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(prefixes):
        frame = frame.f_back
        level += 1
    # past the outermost frame (the library was the whole stack) warnings.warn reports sys
    warnings.warn(message, category, stacklevel=level - 1 if frame is None else level)
