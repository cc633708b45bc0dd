"""The eigenproblems as data: :class:`Pencil`, its checks and the size guard of the SDPs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import cvxpy as cp
import numpy as np

from .._typing import ArrayLike
from ..backends.table import CONIC_BACKENDS
from ..exceptions import InputError, ProblemTooLargeError, SingularMatrixError

#: Kinds of eigenproblem a :class:`Pencil` can describe.
KINDS = ("trace", "ratio_trace", "trace_ratio")

#: ``B`` counts as singular when ``lambda_min(B) <= SINGULAR_RCOND * lambda_max(B)``.
SINGULAR_RCOND = 1e-10

#: Default ``rank_tol`` of :func:`numerical_range` and :func:`reduce_pencil`: eigenvalues of
#: the unit-diagonal (Jacobi-scaled) matrix at or below it count as zero. For a scatter
#: matrix this is :math:`10^{-4}` on the singular values of the standardised data, the
#: threshold scikit-learn's ``LinearDiscriminantAnalysis`` uses (its ``tol``).
RANK_TOL = 1e-8

#: Largest matrix side accepted for interior-point backends: their Newton
#: systems hold dense blocks of size ``p(p+1)/2`` squared per PSD cone.
MAX_INTERIOR_POINT_DIM = 150



class Pencil(NamedTuple):
    """An eigenproblem as returned by the estimators' ``_pencil`` hook.

    Attributes
    ----------
    A, B : ndarray, shape (m, m)
        Symmetric matrices. ``B`` is ignored (may be ``None``) for ``kind="trace"``.
    sense : {"min", "max"}
        Whether the ``d`` smallest or largest solutions are wanted.
    kind : {"trace", "ratio_trace", "trace_ratio"}
        ``"trace"``: extreme eigenvectors of ``A`` (Fantope);
        ``"ratio_trace"``: extreme generalized eigenvectors of ``(A, B)``;
        ``"trace_ratio"``: optimum of ``tr(P'AP) / tr(P'BP)`` over orthonormal ``P``.
    meta : dict or None
        Method-specific data carried into the formulation's ``meta``.
    """

    A: np.ndarray
    B: np.ndarray | None
    sense: str
    kind: str
    meta: dict | None = None


@dataclass
class TraceRatioResult:
    """Outcome of :func:`trace_ratio_iteration` (and, extended, of
    :func:`sdpembed.sequential.dinkelbach`).

    Attributes
    ----------
    value : float
        The trace-ratio optimum :math:`\\lambda^* = \\langle A, Y\\rangle / \\langle B, Y\\rangle`.
    vectors : ndarray, shape (p, d)
        Orthonormal basis of the optimal subspace, ordered by the eigenvalues
        of :math:`P^\\top (A - \\lambda^* B) P` (best first).
    Y : ndarray, shape (p, p)
        The Fantope point (projector) of the last iterate.
    history : list of float
        :math:`\\lambda_k` per iteration, starting value first.
    iterations : int
    converged : bool
    seconds : float
        Wall time of the whole iteration.
    """

    value: float
    vectors: np.ndarray
    Y: np.ndarray
    history: list[float]
    iterations: int
    converged: bool
    seconds: float = 0.0


# ---------------------------------------------------------------- validation
def _check_sense(sense: str) -> str:
    if sense not in ("min", "max"):
        raise InputError(f"sense must be 'min' or 'max'; got {sense!r}")
    return sense


def _check_symmetric(M, name: str, p: int | None = None) -> np.ndarray:
    try:
        M = np.asarray(M, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be a numeric matrix: {exc}") from exc
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise InputError(f"{name} must be a square matrix; got shape {M.shape}")
    if p is not None and M.shape[0] != p:
        raise InputError(f"{name} must be {p} x {p} to match A; got {M.shape}")
    if not np.all(np.isfinite(M)):
        raise InputError(f"{name} contains NaN or infinite entries")
    scale = max(np.abs(M).max(), 1.0)
    if not np.allclose(M, M.T, rtol=0.0, atol=1e-8 * scale):
        raise InputError(f"{name} must be symmetric (max |{name} - {name}'| = "
                         f"{np.abs(M - M.T).max():.3g})")
    return 0.5 * (M + M.T)


def _check_d(d, p: int) -> int:
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
        raise InputError(f"d must be an integer; got {d!r}")
    d = int(d)
    if not 1 <= d <= p:
        raise InputError(f"d must lie in [1, {p}] for {p} x {p} matrices; got {d}")
    return d


def _check_pencil(A, B, d, regularization: float = 0.0, *, need_definite: bool = True):
    A = _check_symmetric(A, "A")
    p = A.shape[0]
    d = _check_d(d, p)
    B = _check_symmetric(B, "B", p)
    regularization = float(regularization)
    if not np.isfinite(regularization) or regularization < 0:
        raise InputError(f"regularization must be finite and >= 0; got {regularization}")
    if regularization:
        B = B + regularization * np.eye(p)
    ev = np.linalg.eigvalsh(B)
    top = max(abs(ev[-1]), np.finfo(float).tiny)
    if need_definite:
        if ev[0] <= SINGULAR_RCOND * top:
            raise SingularMatrixError(
                f"B is singular or not positive definite (lambda_min = {ev[0]:.3g}, "
                f"lambda_max = {ev[-1]:.3g}); pass regularization=r > 0 to use B + r I "
                "(e.g. r = 1e-6 * trace(B) / p), or restrict the pencil to its informative "
                "directions first with reduce_pencil / formulate_reduced (the estimators do)")
    elif ev[:d].sum() <= SINGULAR_RCOND * top * d or ev[0] < -SINGULAR_RCOND * top:
        raise SingularMatrixError(
            f"B must be positive semidefinite with tr(P'BP) > 0 for every orthonormal P "
            f"(sum of its {d} smallest eigenvalues is {ev[:d].sum():.3g}); pass "
            "regularization=r > 0 to use B + r I, or restrict the pencil first with "
            "reduce_pencil / formulate_reduced")
    return A, B, d


def check_sdp_size(p: int, solver: str) -> None:
    """Raise :class:`ProblemTooLargeError` when a ``p x p`` SDP is too big for ``solver``."""
    entry = CONIC_BACKENDS.get(str(solver).upper())
    if entry is not None and entry.interior_point and p > MAX_INTERIOR_POINT_DIM:
        raise ProblemTooLargeError(
            f"a {p} x {p} matrix variable is too large for the interior-point backend "
            f"{str(solver).upper()} (limit {MAX_INTERIOR_POINT_DIM}: its Newton system holds a "
            f"dense {p * (p + 1) // 2}^2 block per PSD cone). Reduce the features first, e.g. "
            "make_pipeline(PCA(n_components=50), estimator), or use solver='SCS'")


def absolute_regularization(B: ArrayLike, relative: float) -> float:
    r"""Ridge :math:`B + r I` with :math:`r = \text{relative} \cdot \operatorname{tr}(B) / m`.

    Estimators and method builders take ``regularization`` in this relative
    form, so the same value works whatever the units of the data; the
    relaxations themselves take the absolute :math:`r`.
    """
    if relative is None or isinstance(relative, bool):
        raise InputError(f"regularization must be a finite number >= 0; got {relative!r}")
    try:
        relative = float(relative)
    except (TypeError, ValueError) as exc:
        raise InputError(f"regularization must be a finite number >= 0; got {relative!r}") from exc
    if not np.isfinite(relative) or relative < 0:
        raise InputError(f"regularization must be a finite number >= 0; got {relative!r}")
    if relative == 0 or B is None:
        return 0.0
    B = np.asarray(B, dtype=float)
    return relative * float(np.trace(B)) / B.shape[0]


def _inner(C: np.ndarray, Y) -> cp.Expression:
    """:math:`\\langle C, Y\\rangle` without the :math:`p^3` operator of ``trace(C @ Y)``."""
    return cp.sum(cp.multiply(C, Y))


def _objective(sense: str, expr):
    return cp.Minimize(expr) if sense == "min" else cp.Maximize(expr)


# ------------------------------------------------------------ pencil helpers
def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise InputError(f"kind must be one of {KINDS}; got {kind!r}")
    return kind
