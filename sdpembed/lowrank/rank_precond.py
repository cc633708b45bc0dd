r"""A rank-side preconditioner for L-BFGS on the factor: :math:`H_0 = \gamma\,(\cdot)(W^TW +
\eta I)^{-1}`.

The subproblem minimises :math:`f(W)`, :math:`W \in \mathbb{R}^{n\times r}`, a function of
:math:`WW^T` (plus the linear objective's :math:`\langle C, WW^T\rangle`). Its Hessian along
a direction :math:`U` is :math:`2\langle S, UU^T\rangle` (:math:`S` the objective plus the
edges' first derivatives, a graph Laplacian) plus the Gauss–Newton part
:math:`4\sum_e\psi_e''(z_e^Tu_e)^2`, where :math:`z_e = w_i - w_j` is the edge's
difference in the factor and :math:`u_e` in :math:`U`. Along column :math:`j` alone
(:math:`U = ue_j^T`) the Gauss–Newton part is :math:`4\sum_e\psi_e''z_{ej}^2(u_i - u_j)^2`:
it scales with the column's own size :math:`\|w_j\|^2`. A column that a rank growth added
at :math:`10^{-3}` of the largest has :math:`10^{-6}` of the largest column's curvature,
and plain L-BFGS, whose initial inverse Hessian :math:`\gamma I` is one number for all
columns, moves it :math:`10^{6}` times too slowly (docs/tuning.md, "The 2,500 density
rows: why the subproblems cap").

ScaledGD (Tong, Ma & Chi 2021) and PrecGD (Zhang, Fattahi & Sojoudi 2021) scale the
gradient on the right, :math:`G \mapsto G\,P^{-1}` with :math:`P = W_0^TW_0 + \eta I`:
the metric :math:`\langle U, U\rangle_P = \mathrm{tr}(UPU^T)` in which every column's
Gauss–Newton curvature is about the same. Here :math:`P^{-1}` is L-BFGS's initial inverse
Hessian :math:`H_0 = \gamma M^{-1}`, :math:`M^{-1} = I_n \otimes P^{-1}` acting on
:math:`\mathrm{vec}(G)`, fixed between refreshes:

* the direction is :math:`-H_kg`, :math:`H_k` the BFGS update of :math:`H_0` by the stored
  pairs, each with :math:`s^Ty > 0`. :math:`M^{-1}` is symmetric positive definite
  (:math:`P \succeq \eta I`, :math:`\eta > 0`), so :math:`H_k \succ 0` and
  :math:`g^TH_kg > 0` whenever :math:`g \ne 0`: a descent direction (with no pair,
  :math:`-\gamma M^{-1}g` has slope :math:`-\gamma\,\mathrm{tr}(GP^{-1}G^T) < 0`);
* the pairs stay valid only for the :math:`H_0` they were built on, so when :math:`P` is
  refreshed the memory is emptied (a refresh comes after at least :data:`_CHECK`
  iterations, only where :math:`W^TW + \eta I` at the current point differs from
  :math:`P` by more than a factor :data:`_DRIFT` in some direction:
  :math:`\lambda(P^{-1}P_{\text{new}}) \notin [1/\text{_DRIFT}, \text{_DRIFT}]`);
* right multiplication commutes with the centring :math:`W \mapsto W - \mathbf{1}\bar w^T`
  of the full space, so preconditioned steps stay centred.

:math:`\eta`'s rule (PrecGD ties it to the residual, :math:`\eta \asymp \|WW^T - G^\star\|`,
so that it dominates where the curvature is not the factor's): :math:`\eta = \beta\,
\mathrm{tr}(W^TW)`, :math:`\beta` = :func:`balance`, the size (as a share of the trace) at
which a column's Gauss–Newton curvature :math:`4\psi_e''z_{ej}^2` equals the first-order
one :math:`2|\psi_e'|`, summed over the edges, taking a column's share of the edges'
squared lengths :math:`D` as its share of the trace. Below that size the curvature along
a column is the multipliers', whatever its size, and boosting it further would
overshoot. (``_ETA_RULE = "residual"``: :math:`\beta = \max(\min(\rho, 1),
\eta_{\min})`, :math:`\rho` the last relative residual: tried first, module constants.)
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg as sla

#: floor of the relative :math:`\eta` (see the module docstring)
_ETA_MIN = 1e-6

#: iterations between two tests of whether the preconditioner is stale
_CHECK = 50

#: a refresh where :math:`P^{-1}P_{\text{new}}` has an eigenvalue outside
#: :math:`[1/\_DRIFT, \_DRIFT]`
_DRIFT = 2.0


class RankPreconditioner:
    r""":math:`G \mapsto G(W^TW + \eta I)^{-1}` on flat ``(n, r)`` factors (module docstring).

    ``rho`` is the relative residual that sets :math:`\eta`'s share of :math:`\lambda_{\max}`."""

    def __init__(self, shape: tuple[int, int], rho: float):
        self.shape = shape
        self.eta_rel = max(min(float(rho), 1.0), _ETA_MIN) if np.isfinite(rho) else 1.0
        self.P: np.ndarray | None = None
        self.refreshes = 0
        self.check = _CHECK

    def _gram(self, x: np.ndarray) -> np.ndarray:
        W = x.reshape(self.shape)
        P = W.T @ W
        eta = self.eta_rel * max(float(np.trace(P)), 1e-300)
        P[np.diag_indices_from(P)] += eta
        return P

    def _apply(self, P: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        Pinv = sla.inv(P)
        Pinv = 0.5 * (Pinv + Pinv.T)
        shape = self.shape

        def apply(v: np.ndarray) -> np.ndarray:
            return (v.reshape(shape) @ Pinv).ravel()
        return apply

    def at(self, x: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """:math:`M^{-1}` at the flat factor ``x``."""
        self.P = self._gram(x)
        return self._apply(self.P)

    def refresh(self, x: np.ndarray) -> Callable[[np.ndarray], np.ndarray] | None:
        """A new :math:`M^{-1}` at ``x`` where the current one is stale, else ``None``."""
        Pn = self._gram(x)
        lam = sla.eigh(Pn, self.P, eigvals_only=True)
        if lam[0] >= 1.0 / _DRIFT and lam[-1] <= _DRIFT:
            return None
        self.P = Pn
        self.refreshes += 1
        return self._apply(Pn)


#: which plain-L-BFGS subproblems get the preconditioner: ``"off"``, ``"all"``,
#: ``"spread"`` (those whose starting factor has a singular value below :data:`_SPREAD`
#: times its largest), or ``"grown"`` (those of ``"spread"`` that start right after a rank
#: growth). ``"grown"``: a growth adds columns along the certificate's negative-curvature
#: directions, which the optimum wants and the identity metric cannot grow from below
#: :data:`_SPREAD`; a column that the iterations themselves drove to zero (shrink-only MVU
#: on the Swiss roll: 1e-9 of the largest from its first subproblem on, back to 0.15 only
#: at the end) is held there by the current multipliers, and the metric's boost there
#: lengthened every subproblem (docs/tuning.md, "The rank-side preconditioner behind a
#: stated switch").
_WHEN = "grown"

#: the switch-on threshold: a starting singular value below this share of the largest.
#: Along a column of relative size :math:`s` the Gauss–Newton curvature is :math:`s^2`
#: of the largest column's, and L-BFGS's one-number :math:`H_0 = \gamma I` moves it
#: accordingly: of twelve columns a growth started at :math:`3\cdot10^{-4}`, a capped
#: subproblem (6,000 iterations) left nine below :math:`10^{-2}` and three at
#: :math:`4`–:math:`7\cdot10^{-4}`, barely moved; of thirteen started at
#: :math:`5.6\cdot10^{-3}` to :math:`10^{-2}`, one subproblem took eleven above
#: :math:`10^{-2}` (docs/tuning.md, "The rank-side preconditioner behind a stated switch").
#: :math:`10^{-3}` lies between: the metric only where the identity stalls.
_SPREAD = 1e-3


#: :math:`\eta`'s rule: ``"balance"`` (:func:`balance`) or ``"residual"``
_ETA_RULE = "balance"


def balance(alm, W: np.ndarray, y: np.ndarray, sigma: float) -> float:
    r"""The column size, as a share of :math:`\mathrm{tr}(W^TW)`, below which the
    subproblem's curvature along a column is its first-order term's, not its size's:
    :math:`\sum_e|\psi_e'| / (2\sum_e\psi_e''D_e)` at ``W`` (``inf`` without
    Gauss-Newton curvature)."""
    Z = alm.space.diffs(W)
    D = np.einsum("ij,ij->i", Z, Z)
    _, g = alm.pen.envelope(D, y, sigma, alm.kind)
    gn = 2.0 * float(np.sum(alm.pen.second_derivative(D, y, sigma, alm.kind) * D))
    return float(np.sum(np.abs(g))) / gn if gn > 0 else np.inf


def rank_preconditioner(W: np.ndarray, rho: float, alm=None, y=None, sigma: float = 1.0,
                        fresh: bool = False) -> RankPreconditioner | None:
    """The preconditioner of a plain-L-BFGS subproblem from the factor ``W``, or ``None``
    where :data:`_WHEN` says plain L-BFGS; ``fresh``: the rank grew at the last outer
    iteration."""
    if _WHEN == "off" or W.shape[1] < 2 or (_WHEN == "grown" and not fresh):
        return None
    if _WHEN in ("spread", "grown"):
        s = np.linalg.svd(W, compute_uv=False)
        if not s[-1] < _SPREAD * s[0]:
            return None
    if _ETA_RULE == "balance":
        rho = balance(alm, W, y, sigma)
        if not np.isfinite(rho):
            return None
    return RankPreconditioner(W.shape, rho)
