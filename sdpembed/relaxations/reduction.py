"""Preconditioning and the rank-revealing step of a pencil (:func:`reduce_pencil`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from .._typing import ArrayLike
from ..exceptions import InputError, SingularMatrixError
from .pencil import RANK_TOL, Pencil, _check_kind, _check_sense, _check_symmetric

logger = logging.getLogger(__name__)

#: Preconditioners accepted by :func:`precondition` for ``"ratio_trace"`` pencils.
PRECONDITIONERS = ("cholesky", "jacobi", "none")


def precondition(pencil: Pencil, *, regularization: float = 0.0,
                 method: str = "cholesky") -> tuple[Pencil, np.ndarray, float]:
    r"""Rescale a pencil for the SDP backends without changing its solutions.

    SDP solvers are sensitive to the scale and conditioning of the data
    (e.g. unstandardised features spanning five orders of magnitude make
    :math:`B^{-1}` in the ratio-trace SDP badly conditioned). Every
    transformation below maps optima and optimal subspaces exactly:

    * ``"trace"``: :math:`A' = A / a`, :math:`a = \max_{ij} |A_{ij}|`.
    * ``"ratio_trace"``: a congruence :math:`P = T P'`, :math:`A' = T^\top A T / a`,
      :math:`B' = T^\top B T`. Since :math:`P'^\top B' P' = P^\top B P` and
      :math:`\operatorname{tr}(P'^\top A' P') = \operatorname{tr}(P^\top A P) / a`,
      the problems are equivalent for any invertible :math:`T`:

      - ``method="cholesky"`` (default): :math:`T = L^{-\top}`, :math:`B = L L^\top`,
        so :math:`B' = I` and the SDP in :math:`Z'` is the Fantope problem of
        :math:`L^{-1} A L^{-\top}` — the congruence of the tightness proof of
        :func:`ratio_trace`, and the reduction ``scipy.linalg.eigh(A, B)``
        performs too; it makes the conic solvers' subspaces far more accurate
        (``docs/tuning.md``);
      - ``"jacobi"``: :math:`T = \operatorname{diag}(B_{ii})^{-1/2}` (unit diagonal);
      - ``"none"``: :math:`T = I` (scalar scaling of ``A`` only).
    * ``"trace_ratio"``: :math:`A' = A / a`, :math:`B' = B / b` with
      :math:`b = \max_{ij} |B_{ij}|` (scalars only: the orthonormality
      constraint forbids a congruence). The trace-ratio problem itself is not
      invariant to the units of the features, so standardise them first.

    ``regularization`` (absolute) is applied to ``B`` first.

    Returns
    -------
    scaled : Pencil
    T : ndarray, shape (m, m)
        The congruence; map a basis of the scaled problem back with ``T @ P'``.
    objective_scale : float
        The original optimum is ``objective_scale`` times the scaled one.
    """
    A, B, sense, kind = pencil[:4]
    _check_kind(kind)
    if method not in PRECONDITIONERS:
        raise InputError(f"method must be one of {PRECONDITIONERS}; got {method!r}")
    A = _check_symmetric(A, "A")
    m = A.shape[0]
    T = np.eye(m)
    if kind == "trace":
        a = float(np.abs(A).max()) or 1.0
        return Pencil(A / a, None, sense, kind, pencil.meta), T, a
    B = _check_symmetric(B, "B", m) + float(regularization) * np.eye(m)
    if kind == "trace_ratio":
        a, b = float(np.abs(A).max()) or 1.0, float(np.abs(B).max()) or 1.0
        return Pencil(A / a, B / b, sense, kind, pencil.meta), T, a / b
    if method == "cholesky":
        try:
            Lc = np.linalg.cholesky(B)
        except np.linalg.LinAlgError as exc:
            raise SingularMatrixError(
                "B is not positive definite (Cholesky failed); pass regularization or reduce "
                "the data with PCA first") from exc
        T = scipy.linalg.solve_triangular(Lc, np.eye(m), lower=True).T
    elif method == "jacobi":
        diag = np.diag(B)
        if np.any(diag <= 0):
            raise SingularMatrixError("B has a non-positive diagonal entry; pass regularization "
                                      "or reduce the data with PCA first")
        T = np.diag(1.0 / np.sqrt(diag))
    At, Bt = T.T @ A @ T, T.T @ B @ T
    a = float(np.abs(At).max()) or 1.0
    return Pencil(0.5 * (At + At.T) / a, 0.5 * (Bt + Bt.T), sense, kind, pencil.meta), T, a



# ------------------------------------------------------- rank-revealing step
@dataclass(frozen=True)
class NumericalRange:
    r"""Numerical range and null space of a symmetric PSD :math:`M \in \mathbb{S}^m`.

    With :math:`\Delta = \operatorname{diag}(M)` restricted to the coordinates
    ``coords`` whose diagonal is not negligible, the unit-diagonal matrix
    :math:`\tilde M = \Delta^{-1/2} M \Delta^{-1/2}` has eigenpairs
    :math:`(\mu_i, u_i)`; ``U`` holds those with :math:`\mu_i > \text{rank\_tol}`
    (``U_null`` the others), so that
    :math:`M \approx \Delta^{1/2} U \operatorname{diag}(\mu) U^\top \Delta^{1/2}`
    and the numerical null space is spanned by :math:`\Delta^{-1/2} U_{\rm null}`
    and the coordinates outside ``coords``.

    Attributes
    ----------
    size : int
        :math:`m`.
    coords : ndarray of int
        Coordinates with :math:`M_{ii} > m\,\varepsilon \max_j M_{jj}` (the
        others are exactly null coordinates, e.g. constant features).
    sqrt_diag : ndarray, shape (len(coords),)
        :math:`\Delta^{1/2}`.
    U : ndarray, shape (len(coords), rank)
        Kept eigenvectors, largest eigenvalue first.
    mu : ndarray, shape (rank,)
    U_null : ndarray, shape (len(coords), len(coords) - rank)
    """

    size: int
    coords: np.ndarray
    sqrt_diag: np.ndarray
    U: np.ndarray
    mu: np.ndarray
    U_null: np.ndarray

    @property
    def rank(self) -> int:
        """Numerical rank of :math:`M`."""
        return int(self.mu.size)

    def _embed(self, V: np.ndarray) -> np.ndarray:
        out = np.zeros((self.size, V.shape[1]))
        out[self.coords] = V
        return out

    def orthonormal_basis(self) -> np.ndarray:
        r"""Orthonormal basis of the range, :math:`\operatorname{orth}(\Delta^{1/2} U)`.

        Its span is the Euclidean orthogonal complement of the numerical null
        space (:math:`U^\top U_{\rm null} = 0`); shape ``(m, rank)``.
        """
        if self.rank == 0:
            return np.zeros((self.size, 0))
        return self._embed(np.linalg.qr(self.sqrt_diag[:, None] * self.U)[0])

    def whitening_basis(self) -> np.ndarray:
        r""":math:`W = \Delta^{-1/2} U \operatorname{diag}(\mu)^{-1/2}`: :math:`W^\top M W = I`.

        Its span is the complement of the null space that is orthogonal in the
        standardised coordinates :math:`\Delta^{1/2} x`, the minimum-norm
        choice of scikit-learn's LDA (``scalings_`` of its ``svd`` solver);
        shape ``(m, rank)``.
        """
        return self._embed(self.U / (self.sqrt_diag[:, None] * np.sqrt(self.mu)[None, :]))

    def null_basis(self) -> np.ndarray:
        r"""Orthonormal basis of the numerical null space, shape ``(m, m - rank)``."""
        N = self._embed(self.U_null / self.sqrt_diag[:, None])
        zero = np.setdiff1d(np.arange(self.size), self.coords)
        E = np.zeros((self.size, zero.size))
        E[zero, np.arange(zero.size)] = 1.0
        N = np.hstack([N, E])
        return np.linalg.qr(N)[0] if N.shape[1] else N


def numerical_range(M: ArrayLike, *, rank_tol: float = RANK_TOL) -> NumericalRange:
    r"""Rank-revealing eigendecomposition of a PSD matrix, invariant to the units of the features.

    The rank is decided on the unit-diagonal (Jacobi-scaled) matrix
    :math:`\tilde M = \Delta^{-1/2} M \Delta^{-1/2}`, :math:`\Delta = \operatorname{diag}(M)`,
    whose eigenvalues lie in :math:`[0, m]`: an eigenvalue
    :math:`\mu \le \text{rank\_tol}` counts as zero. Scaling first makes the
    decision independent of the units of the data (a feature measured in
    thousands and one in thousandths are treated alike, as scikit-learn's LDA
    does by standardising), while exact zeros (constant features) are removed
    through their zero diagonal.

    Parameters
    ----------
    M : array-like, shape (m, m)
        Symmetric positive semidefinite (round-off negatives are tolerated).
    rank_tol : float, default :data:`RANK_TOL`
        Threshold on the eigenvalues of :math:`\tilde M`, in ``[0, 1)``.

    Returns
    -------
    NumericalRange
    """
    M = _check_symmetric(M, "M")
    rank_tol = _check_rank_tol(rank_tol)
    m = M.shape[0]
    diag = np.clip(np.diag(M), 0.0, None)
    top = float(diag.max()) if m else 0.0
    coords = np.flatnonzero(diag > m * np.finfo(float).eps * top) if top > 0 else \
        np.zeros(0, dtype=int)
    s = np.sqrt(diag[coords])
    Ms = M[np.ix_(coords, coords)] / np.outer(s, s)
    mu, U = np.linalg.eigh(0.5 * (Ms + Ms.T))
    keep = mu > rank_tol
    return NumericalRange(m, coords, s, np.ascontiguousarray(U[:, keep][:, ::-1]),
                          mu[keep][::-1].copy(), np.ascontiguousarray(U[:, ~keep]))


def _check_rank_tol(rank_tol) -> float:
    if isinstance(rank_tol, bool):
        raise InputError(f"rank_tol must be a number in [0, 1); got {rank_tol!r}")
    try:
        rank_tol = float(rank_tol)
    except (TypeError, ValueError) as exc:
        raise InputError(f"rank_tol must be a number in [0, 1); got {rank_tol!r}") from exc
    if not 0 <= rank_tol < 1:
        raise InputError(f"rank_tol must be a number in [0, 1); got {rank_tol!r}")
    return rank_tol


def _psd_part(A: np.ndarray) -> np.ndarray:
    r""":math:`A` itself when it is positive semidefinite, else :math:`|A| = V|\Lambda|V^\top`.

    Either way the null space is that of :math:`A`; the absolute value keeps
    indefinite matrices (DNE's :math:`X(S - F)X^\top`) from cancelling.
    """
    w, V = np.linalg.eigh(A)
    scale = float(np.abs(w).max()) if w.size else 0.0
    if w.size == 0 or w[0] >= -A.shape[0] * np.finfo(float).eps * scale:
        return A
    return (V * np.abs(w)) @ V.T


@dataclass(frozen=True)
class PencilReduction:
    r"""A pencil restricted to a subspace by :func:`reduce_pencil`.

    Attributes
    ----------
    pencil : Pencil
        :math:`(T^\top A T, T^\top B T)`, same ``sense``, ``kind`` and ``meta``.
    basis : ndarray, shape (m, r)
        :math:`T`; a solution :math:`Q` of the reduced pencil is
        :math:`P = T Q` in the original coordinates.
    size : int
        :math:`m`.
    n_null : int
        Directions removed because every matrix of the pencil vanishes on
        them (they carry no information).
    n_infinite : int
        Further directions removed because :math:`B` vanishes on them while
        :math:`A` does not (generalized eigenvalue :math:`\pm\infty`); only
        without regularization.
    """

    pencil: Pencil
    basis: np.ndarray
    size: int
    n_null: int
    n_infinite: int

    @property
    def rank(self) -> int:
        """:math:`r`, the size of the reduced pencil."""
        return int(self.basis.shape[1])

    @property
    def is_identity(self) -> bool:
        """Whether nothing was removed (the pencil is returned unchanged)."""
        return self.rank == self.size


def reduce_pencil(pencil: Pencil, *, rank_tol: float = RANK_TOL,
                  regularized: bool = False) -> PencilReduction:
    r"""Rank-revealing step: reduce a singular pencil to an equivalent nonsingular one.

    Every reduction is a congruence :math:`(A, B) \to (T^\top A T, T^\top B T)`,
    a solution :math:`Q` of the reduced pencil giving :math:`P = TQ`. Ranks
    are decided by :func:`numerical_range` (unit-diagonal scaling, eigenvalues
    :math:`\le` ``rank_tol`` count as zero).

    **1. Null directions.** :math:`\mathcal N = \ker A \cap \ker B`
    (``"trace"``: :math:`\ker A`), the range of
    :math:`|A|/\lVert A\rVert_2 + B/\lVert B\rVert_2` (:math:`|A| = A` when
    :math:`A \succeq 0`). For data-derived pencils these are the directions
    :math:`v` with :math:`Xv` constant (constant or collinear features,
    :math:`p \ge n`), along which every term of the method vanishes.
    Since :math:`Av = Bv = 0` for :math:`v \in \mathcal N`, the pencil does
    not couple :math:`\mathcal N` to any complement, so restricting to a
    complement keeps every solution that is not itself null: the
    eigenvectors of nonzero eigenvalue (``"trace"``, which lie in
    :math:`\mathcal N^\perp`), the finite generalized eigenpairs
    (``"ratio_trace"``), the trace-ratio optimum (``"trace_ratio"``, whose
    optimal basis diagonalises :math:`A - \lambda^* B` and so lies in
    :math:`\mathcal N^\perp`). The complement is :math:`\mathcal N^\perp` with
    an orthonormal basis for ``"trace"``, ``"trace_ratio"`` and a regularized
    ``"ratio_trace"`` (their constraint :math:`P^\top P = I` and the ridge
    :math:`T^\top (B + rI) T = T^\top B T + rI` need the Euclidean metric); an
    unregularized ``"ratio_trace"``, invariant under any congruence, uses the
    complement orthogonal in standardised coordinates
    (:meth:`NumericalRange.whitening_basis`: minimum-norm weights on the
    standardised features, like scikit-learn's LDA). With
    ``regularized=True`` this is the only step.

    **2. Directions of infinite ratio** (no regularization, ``B`` present).
    Let :math:`K` (orthonormal basis :math:`N_2`) be the numerical null space
    of :math:`B` on the complement of step 1 and :math:`W` the whitening basis
    of its range (:math:`W^\top B W = I`).

    * ``"ratio_trace"``, ``sense="min"``: every finite eigenvector satisfies
      :math:`N_2^\top A v = \lambda N_2^\top B v = 0`, i.e. lies in the
      :math:`A`-orthogonal complement of :math:`K`. With
      :math:`A_{22} = N_2^\top A N_2 \succ 0` (true for :math:`A \succeq 0`
      once :math:`\mathcal N` is removed),

      .. math::

          T = W - N_2 A_{22}^{-1} N_2^\top A W,\qquad
          T^\top A T = W^\top A W - W^\top A N_2 A_{22}^{-1} N_2^\top A W,\qquad
          T^\top B T = I,

      the Schur complement that eliminates :math:`K` exactly: the minimum of
      :math:`\operatorname{tr}(P^\top A P)` over :math:`P^\top B P = I` (where
      components in :math:`K` are free) and every finite eigenpair are those
      of the reduced pencil; the :math:`\dim K` eigenvalues removed are
      :math:`+\infty`. (Merely restricting to :math:`\operatorname{range}(B)`
      would not be exact when :math:`A` couples it to :math:`K`, as TCA's
      pencil does.)
    * ``"ratio_trace"`` and ``"trace_ratio"`` with ``sense="max"``: a
      direction with :math:`Bv = 0 \ne Av` makes the problem unbounded
      (for LDA with fewer labelled points than features, it separates the
      labelled classes perfectly). The pencil is restricted to the range of
      :math:`B`, decided on :math:`B` in the original coordinates
      (:math:`T` its whitening basis, or an orthonormal basis for
      ``"trace_ratio"``; this also removes :math:`\mathcal N \subseteq \ker B`),
      the convention of scikit-learn's ``LinearDiscriminantAnalysis``
      (``svd`` solver); ``n_infinite`` counts the directions excluded so the
      caller can warn.
    * ``"trace_ratio"`` with ``sense="min"`` keeps :math:`K` (step 1 only):
      the problem is well posed whenever the sum of the :math:`d` smallest
      eigenvalues of :math:`B` is positive, which its builders check.

    When nothing is removed the pencil is returned unchanged with
    :math:`T = I`, so full-rank problems are solved exactly as before.

    Parameters
    ----------
    pencil : Pencil
    rank_tol : float, default :data:`RANK_TOL`
    regularized : bool, default False
        Whether the caller will add :math:`rI` to :math:`B` (then only
        :math:`\mathcal N` is removed).

    Returns
    -------
    PencilReduction

    Raises
    ------
    SingularMatrixError
        Every direction is null (e.g. constant data), or ``sense="min"`` and
        :math:`A` is not positive definite on :math:`\ker B` (the minimum is
        then unbounded or undetermined; pass a regularization).
    """
    A, B, sense, kind = pencil[:4]
    _check_kind(kind)
    _check_sense(sense)
    A = _check_symmetric(A, "A")
    m = A.shape[0]
    Apsd = _psd_part(A)
    if kind == "trace":
        info = numerical_range(Apsd, rank_tol=rank_tol)
    else:
        B = _check_symmetric(B, "B", m)
        a = float(np.linalg.norm(Apsd, 2)) or 1.0
        b = float(np.linalg.norm(B, 2)) or 1.0
        info = numerical_range(Apsd / a + B / b, rank_tol=rank_tol)
    if info.rank == 0:
        raise SingularMatrixError(
            "the pencil has no informative direction: its matrices vanish numerically "
            f"(rank_tol={rank_tol:g}); the data are constant or the labels carry no "
            "information")
    n_null = m - info.rank
    step2 = kind != "trace" and not regularized and not (kind == "trace_ratio" and sense == "min")
    if step2 and sense == "max":
        # restriction to range(B), decided in the original coordinates (scikit-learn's LDA)
        split = numerical_range(B, rank_tol=rank_tol)
        _check_some_range(split, rank_tol)
        T = split.whitening_basis() if kind == "ratio_trace" else split.orthonormal_basis()
        if split.rank == m:
            T = np.eye(m)
    elif step2:  # ratio_trace, min: remove N, then eliminate ker B by the Schur complement
        V = np.eye(m) if info.rank == m else info.whitening_basis()
        split = numerical_range(V.T @ B @ V, rank_tol=rank_tol)
        _check_some_range(split, rank_tol)
        W = split.whitening_basis()
        if split.rank < V.shape[1]:
            W = _eliminate_kernel(V.T @ A @ V, W, split.null_basis(), rank_tol)
        T = np.eye(m) if split.rank == m else V @ W
    else:
        T = np.eye(m) if info.rank == m else info.orthonormal_basis()
    if T.shape[1] == m:
        return PencilReduction(Pencil(A, B, sense, kind, pencil.meta), np.eye(m), m, 0, 0)
    Ar = T.T @ A @ T
    Br = None if B is None else T.T @ B @ T
    reduced = Pencil(0.5 * (Ar + Ar.T), None if Br is None else 0.5 * (Br + Br.T), sense, kind,
                     pencil.meta)
    n_inf = max(m - n_null - T.shape[1], 0)
    logger.info("reduce_pencil: %d -> %d dimensions (%d null, %d of infinite ratio)",
                m, T.shape[1], n_null, n_inf)
    return PencilReduction(reduced, T, m, n_null, n_inf)


def _check_some_range(split: NumericalRange, rank_tol: float) -> None:
    if split.rank == 0:
        raise SingularMatrixError(
            f"B vanishes numerically on every informative direction (rank_tol={rank_tol:g}); "
            "pass regularization=r > 0 to use B + r I")


def _eliminate_kernel(A: np.ndarray, W: np.ndarray, N2: np.ndarray,
                      rank_tol: float) -> np.ndarray:
    r""":math:`W - N_2 A_{22}^{-1} N_2^\top A W` (see :func:`reduce_pencil`, step 2).

    :math:`A_{22} = N_2^\top A N_2` must be numerically positive definite,
    decided like the ranks: unit-diagonal scaling, smallest eigenvalue above
    ``rank_tol``.
    """
    A22 = N2.T @ A @ N2
    A22 = 0.5 * (A22 + A22.T)
    diag = np.diag(A22)
    ok = bool(np.all(diag > 0))
    if ok:
        s = np.sqrt(diag)
        ok = float(np.linalg.eigvalsh(A22 / np.outer(s, s))[0]) > rank_tol
    if not ok:
        raise SingularMatrixError(
            f"B is singular on {N2.shape[1]} direction(s) on which A is not positive definite: "
            "the minimum of tr(P'AP) subject to P'BP = I is unbounded or undetermined; pass "
            "regularization=r > 0 to use B + r I")
    return W - N2 @ scipy.linalg.solve(A22, N2.T @ A @ W, assume_a="pos")
