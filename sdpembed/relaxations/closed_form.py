"""Closed-form solutions: generalized eigenvectors, the trace-ratio iteration, and
the comparisons of a recovered basis with them."""

from __future__ import annotations

import logging
import time

import numpy as np
import scipy.linalg

from .._checks import as_int
from .._typing import ArrayLike
from .pencil import (
    Pencil,
    TraceRatioResult,
    _check_d,
    _check_kind,
    _check_pencil,
    _check_sense,
    _check_symmetric,
)

logger = logging.getLogger(__name__)


def trace_ratio_iteration(A: ArrayLike, B: ArrayLike, d: int, *, sense: str = "max",
                          tol: float = 1e-12, max_iter: int = 100, regularization: float = 0.0,
                          lam0: float | None = None) -> TraceRatioResult:
    r"""Iterative trace-ratio algorithm (ITR) of Wang, Yan, Xu, Tang & Huang (CVPR 2007).

    Iterates :math:`P_k` = the :math:`d` leading (``sense="min"``: trailing)
    eigenvectors of :math:`A - \lambda_k B` and
    :math:`\lambda_{k+1} = \operatorname{tr}(P_k^\top A P_k) / \operatorname{tr}(P_k^\top B P_k)`;
    this is Dinkelbach's method with each subproblem solved exactly by
    ``eigh`` (Ky Fan), and :math:`\lambda_k` increases monotonically to the
    global optimum :math:`\lambda^*`.

    Parameters
    ----------
    A, B : array-like, shape (p, p)
    d : int
    sense : {"max", "min"}
    tol : float
        Stop when :math:`|\lambda_{k+1} - \lambda_k| \le tol \cdot \max(1, |\lambda_{k+1}|)`.
    max_iter : int
    regularization : float
        Use :math:`B + r I`.
    lam0 : float, optional
        Default ``tr A / tr B``.

    Returns
    -------
    TraceRatioResult
    """
    _check_sense(sense)
    A, B, d = _check_pencil(A, B, d, regularization, need_definite=False)
    t0 = time.perf_counter()
    lam = float(np.trace(A) / np.trace(B)) if lam0 is None else float(lam0)
    history, converged = [lam], False
    for _ in range(as_int(max_iter, "max_iter", 1)):
        _, P = _extreme_eigh(A - lam * B, None, d, sense)
        lam_new = float(np.vdot(P, A @ P) / np.vdot(P, B @ P))
        history.append(lam_new)
        done = abs(lam_new - lam) <= tol * max(1.0, abs(lam_new))
        lam = lam_new
        if done:
            converged = True
            break
    if not converged:
        logger.warning("trace_ratio_iteration did not converge in %d iterations", max_iter)
    _, P = _extreme_eigh(A - lam * B, None, d, sense)
    return TraceRatioResult(value=lam, vectors=P, Y=P @ P.T, history=history,
                            iterations=len(history) - 1, converged=converged,
                            seconds=time.perf_counter() - t0)


# ------------------------------------------------------------- closed forms
def _extreme_eigh(A, B, d, sense):
    """``d`` extreme (generalized) eigenpairs, best first, via ``scipy.linalg.eigh``."""
    p = A.shape[0]
    idx = (0, d - 1) if sense == "min" else (p - d, p - 1)
    w, V = scipy.linalg.eigh(A, B, subset_by_index=idx)
    if sense == "max":
        w, V = w[::-1], V[:, ::-1]
    return w, np.ascontiguousarray(V)


def generalized_eigh(A: ArrayLike, B: ArrayLike | None = None, d: int | None = None, *,
                     sense: str = "min",
                     regularization: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    r"""The ``d`` extreme solutions of :math:`A v = \lambda B v` (``scipy.linalg.eigh``).

    Parameters
    ----------
    A : array-like, shape (p, p)
        Symmetric.
    B : array-like, shape (p, p), optional
        Symmetric positive definite; ``None`` for the standard problem.
    d : int, optional
        Number of pairs; default all ``p``.
    sense : {"min", "max"}
        Smallest first, or largest first.
    regularization : float
        Use :math:`B + r I`.

    Returns
    -------
    values : ndarray, shape (d,)
        Ordered best first (ascending for ``"min"``, descending for ``"max"``).
    vectors : ndarray, shape (p, d)
        :math:`B`-orthonormal columns (:math:`V^\top B V = I`).

    Raises
    ------
    SingularMatrixError
        ``B`` is singular and ``regularization`` is 0.
    """
    _check_sense(sense)
    A = _check_symmetric(A, "A")
    p = A.shape[0]
    d = p if d is None else d
    if B is None:
        d = _check_d(d, p)
    else:
        A, B, d = _check_pencil(A, B, d, regularization)
    return _extreme_eigh(A, B, d, sense)


def recover_basis(M: ArrayLike, d: int, *, B: ArrayLike | None = None) -> np.ndarray:
    r"""Basis of the top-:math:`d` eigenspace of an SDP solution.

    * ``B=None``: ``M`` is a Fantope point :math:`Y`; returns the :math:`d`
      leading eigenvectors (orthonormal, :math:`P^\top P = I`). When the
      relaxation is tight, :math:`Y = P P^\top` exactly.
    * ``B`` given: ``M`` is :math:`Z` of :func:`ratio_trace`; returns the
      leading solutions of :math:`B Z B v = \mu B v`, i.e.
      :math:`P = B^{-1/2} U` with :math:`U` the leading eigenvectors of
      :math:`B^{1/2} Z B^{1/2}`, so that :math:`P^\top B P = I` and
      :math:`Z = P P^\top` when tight.

    Columns are ordered by decreasing eigenvalue of ``M`` (all close to 1
    when the relaxation is tight, so the order inside the subspace is
    arbitrary; use :func:`rayleigh_ritz` for a canonical basis).
    """
    M = _check_symmetric(M, "M")
    p = M.shape[0]
    d = _check_d(d, p)
    if B is None:
        return _extreme_eigh(M, None, d, "max")[1]
    B = _check_symmetric(B, "B", p)
    BMB = B @ M @ B
    return _extreme_eigh(0.5 * (BMB + BMB.T), B, d, "max")[1]


def rayleigh_ritz(A: ArrayLike, B: ArrayLike | None, P: ArrayLike, *,
                  sense: str = "min") -> tuple[np.ndarray, np.ndarray]:
    r"""Rotate a basis of a subspace onto the (generalized) Ritz vectors of ``(A, B)``.

    Solves the :math:`d \times d` pencil :math:`(P^\top A P, P^\top B P)` and
    returns Ritz values and vectors :math:`P Q`, best first. When the span of
    ``P`` is an exact invariant subspace these are the eigenpairs of
    :math:`(A, B)` themselves, so an SDP solution and the closed form can be
    compared vector by vector. ``B=None`` means the identity.
    """
    _check_sense(sense)
    P = np.asarray(P, dtype=float)
    Ad = P.T @ A @ P
    Bd = None if B is None else P.T @ B @ P
    Ad = 0.5 * (Ad + Ad.T)
    if Bd is not None:
        Bd = 0.5 * (Bd + Bd.T)
    w, Q = _extreme_eigh(Ad, Bd, P.shape[1], sense)
    return w, P @ Q


def rank_gap(M: ArrayLike, d: int, *, B: ArrayLike | None = None) -> float:
    r"""Tightness diagnostic: eigenvalue mass of ``M`` beyond the top :math:`d`, as a fraction.

    .. math:: \mathrm{gap}(M) = \frac{\sum_{i > d} \lambda_i^+}{\sum_i \lambda_i^+}

    with eigenvalues in decreasing order and :math:`\lambda^+ = \max(\lambda, 0)`.
    Zero iff ``M`` has rank at most :math:`d`, i.e. the SDP solution is a
    (scaled) projector of the wanted rank. With ``B``, the eigenvalues of
    :math:`B^{1/2} M B^{1/2}` are used (the Fantope coordinates of :func:`ratio_trace`).
    """
    M = _check_symmetric(M, "M")
    d = _check_d(d, M.shape[0])
    if B is None:
        ev = np.linalg.eigvalsh(M)
    else:
        B = _check_symmetric(B, "B", M.shape[0])
        BMB = B @ M @ B
        ev = scipy.linalg.eigh(0.5 * (BMB + BMB.T), B, eigvals_only=True)
    ev = np.clip(ev[::-1], 0.0, None)
    total = ev.sum()
    return float(ev[d:].sum() / total) if total > 0 else 0.0


def principal_angles(U: ArrayLike, V: ArrayLike) -> np.ndarray:
    """Principal angles (radians, ascending) between the column spans of ``U`` and ``V``."""
    return scipy.linalg.subspace_angles(np.asarray(U, float), np.asarray(V, float))[::-1]


def solve_closed_form(pencil: Pencil, d: int, *,
                      regularization: float = 0.0) -> tuple[np.ndarray, np.ndarray, float]:
    """Solve a :class:`Pencil` in closed form.

    Returns
    -------
    values : ndarray, shape (d,)
        Extreme (generalized) eigenvalues, best first; for ``"trace_ratio"``
        the eigenvalues of :math:`P^\\top (A - \\lambda^* B) P`.
    vectors : ndarray, shape (m, d)
        Orthonormal (``"trace"``, ``"trace_ratio"``) or :math:`B`-orthonormal
        (``"ratio_trace"``) columns.
    objective : float
        Sum of ``values`` for ``"trace"``/``"ratio_trace"``; :math:`\\lambda^*` for
        ``"trace_ratio"``.
    """
    A, B, sense, kind = pencil[:4]
    _check_kind(kind)
    if kind == "trace":
        w, V = generalized_eigh(A, None, d, sense=sense)
        return w, V, float(w.sum())
    if kind == "ratio_trace":
        w, V = generalized_eigh(A, B, d, sense=sense, regularization=regularization)
        return w, V, float(w.sum())
    res = trace_ratio_iteration(A, B, d, sense=sense, regularization=regularization)
    Bm = _check_symmetric(B, "B") + float(regularization) * np.eye(A.shape[0])
    w, V = rayleigh_ritz(_check_symmetric(A, "A") - res.value * Bm, None, res.vectors,
                         sense=sense)
    return w, V, res.value
