"""The distance term :math:`\\varphi` of the Gram SDPs, its conjugate and its envelopes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..formulations.gram import GramProblem
from ..solve_status import BOUND_TOLERANCE, bound_gap

if TYPE_CHECKING:
    from .space import FactorSpace

__all__ = ["DistancePenalty", "objective_scale", "below_bound"]


class DistancePenalty:
    r"""The distance term :math:`\varphi(D)` of a Gram SDP, its conjugate and its envelopes.

    With squared edge lengths :math:`D` and targets :math:`\bar D` (``t``):

    * ``"equality"``: :math:`\varphi = \iota_{\{\bar D\}}`,
      :math:`\varphi^*(y) = y^T\bar D`;
    * ``"interval"``: :math:`\varphi(D) = \sum_e w_e|D_e - \bar D_e|`,
      :math:`w_e = \lambda/\bar D_e` (``w``), :math:`\varphi^*(y) = y^T\bar D` on the box
      :math:`|y_e|\le w_e` and :math:`+\infty` outside;
    * ``"quadratic"``: :math:`\varphi(D) = \lambda\sum_e(\sqrt{D_e} - \sqrt{\bar D_e})^2`,
      :math:`\varphi^*(y) = \sum_e \lambda\bar D_ey_e/(\lambda - y_e)` for
      :math:`y_e < \lambda`;
    * ``"shrink"``: :math:`\varphi = \iota_{\{D \le \bar D\}}`,
      :math:`\varphi^*(y) = y^T\bar D` for :math:`y \ge 0` and :math:`+\infty` otherwise.
      :math:`G = 0` is strictly feasible (Slater), so the dual optimum is attained and
      bounded; every :math:`y \ge 0` is also a dual point of ``"equality"`` with the same
      :math:`\varphi^*`, so its bound holds there too.

    The augmented Lagrangian of the split :math:`z = D` minimises out :math:`z` in
    closed form, leaving the envelope
    :math:`\psi_{y,\sigma}(D) = \min_z\ \varphi(z) + y^T(D - z)
    + \tfrac12\sum_e\sigma_e(D_e - z_e)^2`
    (a quadratic for the indicator, a Huber function for the absolute value, for
    ``"shrink"`` the one-sided
    :math:`\psi = \sum_e (\max(0, y_e + \sigma_e r_e)^2 - y_e^2)/(2\sigma_e)`,
    :math:`r = D - \bar D`, of Rockafellar's inequality augmented Lagrangian, whose
    gradient :math:`\max(0, y + \sigma r) \ge 0` keeps the multipliers in
    :math:`\mathrm{dom}\,\varphi^*`), with one
    penalty per edge, :math:`\sigma_e = \sigma\,\mathrm{mean}(\bar D)/\bar D_e` for the
    scalar ``sigma`` the outer loop schedules: an edge's Gauss–Newton curvature
    :math:`4\sigma_e z_ez_e^T`, :math:`|z_e|^2\approx\bar D_e`, is then the same on every
    edge, however widely the target lengths spread (raw features, random partners);
    :math:`\nabla\psi(D)` is the multiplier update. The quadratic penalty is smooth and
    is not split (:meth:`envelope` returns :math:`\varphi` itself).

    Parameters
    ----------
    gp : GramProblem
        Supplies ``distances``, ``target`` and ``slack_weight``.
    """

    def __init__(self, gp: GramProblem):
        self.mode = gp.distances
        self.t = np.asarray(gp.target, dtype=float)
        self.lam = float(gp.slack_weight)
        self.w = self.lam / self.t if self.mode == "interval" else None
        self.s = np.sqrt(self.t)
        self.splitting = self.mode in ("equality", "interval", "shrink")
        # per-edge penalties sigma_e = sigma * mean(t) / t_e (docs/tuning.md, "LOWRANK
        # robustness"): the Gauss-Newton curvature 4 sigma_e z_e z_e^T of an edge, with
        # |z_e|^2 ~ t_e, is then the same on every edge
        self.edge_scale = float(np.mean(self.t)) / self.t
        #: ``"quadratic"``: the coercive point is :math:`(1 - \epsilon)\lambda` with this
        #: :math:`\epsilon` (:meth:`coercive_point`); a certificate moves it nearer to
        #: :math:`\lambda` where :math:`S` is not positive definite there
        #: (:func:`~.certificate.coercive_lambda_min`)
        self.coercive_share = 0.1

    def _sig(self, sigma: float) -> np.ndarray:
        """The per-edge penalties
        :math:`\\sigma_e = \\sigma\\,\\mathrm{mean}(\\bar D)/\\bar D_e`."""
        return sigma * self.edge_scale

    def objective(self, D: np.ndarray) -> float:
        """:math:`\\varphi(D)` (equality: 0; the residual is reported separately)."""
        if self.mode == "interval":
            return float(self.w @ np.abs(D - self.t))
        if self.mode == "quadratic":
            return float(self.lam * np.sum((np.sqrt(np.maximum(D, 0.0)) - self.s) ** 2))
        return 0.0

    def envelope(self, D: np.ndarray, y: np.ndarray, sigma: float,
                 kind: str | None = None) -> tuple[float, np.ndarray]:
        """Value and gradient (w.r.t. D) of the AL envelope :math:`\\psi_{y,\\sigma}(D)`.

        ``kind``: the penalty whose envelope is taken, ``self.mode`` by default;
        ``"equality"`` for ``"interval"`` is the envelope of its kink (the augmented
        Lagrangian that owns the choice says which).
        """
        kind = self.mode if kind is None else kind
        sigma = self._sig(sigma)
        if kind == "equality":
            r = D - self.t
            return float(y @ r + 0.5 * np.sum(sigma * r * r)), y + sigma * r
        if kind == "interval":
            # Huber in r = D + y/sigma - t with g = clip(sigma r, -w, w): sigma r^2/2
            # where |g| < w, w|r| - w^2/(2 sigma) elsewhere; both equal g r - g^2/(2 sigma),
            # so the value is three dot products
            r = D + y / sigma - self.t
            g = np.clip(sigma * r, -self.w, self.w)
            return float(g @ r - np.sum((g * g + y * y) / (2 * sigma))), g
        if kind == "shrink":
            g = np.maximum(y + sigma * (D - self.t), 0.0)
            return float(np.sum((g * g - y * y) / (2 * sigma))), g
        d = np.sqrt(np.maximum(D, 1e-300))
        val = self.lam * np.sum((d - self.s) ** 2)
        return float(val), self.lam * (1.0 - self.s / d)

    def second_derivative(self, D: np.ndarray, y: np.ndarray, sigma: float,
                          kind: str | None = None) -> np.ndarray:
        """:math:`\\psi''(D)` of the envelope (generalized, for semismooth Newton)."""
        kind = self.mode if kind is None else kind
        sigma = self._sig(sigma)
        if kind == "equality":
            return np.full_like(D, sigma)
        if kind == "interval":
            r = D + y / sigma - self.t
            return np.where(np.abs(r) < self.w / sigma, sigma, 0.0)
        if kind == "shrink":
            return np.where(y + sigma * (D - self.t) > 0, sigma, 0.0)
        d = np.sqrt(np.maximum(D, 1e-300))
        return self.lam * self.s / (2.0 * d**3)

    def curvature_weights(self, sigma: float) -> np.ndarray:
        """Preconditioner edge weights :math:`\\omega_e \\approx 2\\psi_e''(\\bar D_e)\\bar D_e`."""
        if self.mode == "quadratic":
            return np.full_like(self.t, self.lam)
        return 2.0 * self._sig(sigma) * self.t

    def residual(self, D: np.ndarray, y_new: np.ndarray, y_old: np.ndarray, sigma: float,
                 kind: str | None = None) -> np.ndarray:
        """Split residual :math:`D - z`; for ``equality`` that is :math:`D - \\bar D`, for
        ``shrink`` :math:`\\max(D - \\bar D, -y/\\sigma)` (violation and complementarity)."""
        kind = self.mode if kind is None else kind
        if kind == "equality":
            return D - self.t
        return (y_new - y_old) / self._sig(sigma)

    def conjugate(self, y: np.ndarray) -> float:
        """:math:`\\varphi^*(y)` (``inf`` outside its domain)."""
        if self.mode == "equality":
            return float(y @ self.t)
        if self.mode == "shrink":
            return float(y @ self.t) if not np.any(y < 0) else np.inf
        if self.mode == "interval":
            if not self.in_box(y):
                return np.inf
            return float(y @ self.t)
        if np.any(y >= self.lam):
            return np.inf
        return float(np.sum(self.lam * self.t * y / (self.lam - y)))

    def certifiable(self, y: np.ndarray) -> np.ndarray:
        r"""The multipliers a certificate takes for ``y``: ``"quadratic"`` raises them to at
        least :math:`-Y`, :math:`Y = \lambda(1/\sqrt{\epsilon m} - 1)`; other modes return
        ``y``.

        :math:`-\varphi_e^*(y_e) = \lambda\bar D_e|y_e|/(\lambda + |y_e|)` for
        :math:`y_e < 0` rises to :math:`\lambda\bar D_e` only as :math:`y_e \to -\infty`:
        an edge (nearly) orthogonal to a reduced basis, :math:`b_e \approx 0`, whose
        :math:`D_e` the factor cannot move off 0, has the unbounded gradient
        :math:`\lambda(1 - \sqrt{\bar D_e/D_e})` (8e16 seen) and no attained dual
        optimum. Raising :math:`y_e` adds :math:`(y'_e - y_e)b_eb_e^T \succeq 0` to
        :math:`S`, so :math:`\lambda_{\min}(S)` does not fall; the dual value loses at most
        :math:`\lambda^2\bar D_e/(\lambda + Y)` on the edge and the rounding of its sum
        (:func:`~.rounding.sum_allowance`, :math:`\epsilon m|y|^T\bar D`) falls by
        :math:`\epsilon m(|y_e| - Y)\bar D_e`; this :math:`Y` minimises the sum of the
        two, about :math:`2\lambda\bar D_e\sqrt{\epsilon m}` an edge (docs/tuning.md,
        "Quadratic MVU on a basis: multipliers of 8e16")."""
        if self.mode != "quadratic" or y.size == 0:
            return y
        root = np.sqrt(np.finfo(float).eps * y.size)
        return np.maximum(y, -self.lam * (1.0 / root - 1.0))

    def in_box(self, y: np.ndarray) -> bool:
        """Whether ``y`` lies in the box :math:`|y_e| \\le w_e` (``"interval"``: the domain of
        :math:`\\varphi^*`), up to a relative rounding allowance of 1e-12."""
        return not np.any(np.abs(y) > self.w * (1 + 1e-12))

    def violation(self, D: np.ndarray) -> float:
        """Relative infeasibility of distances ``D``: :math:`\\|D - \\bar D\\|/\\|\\bar D\\|`
        (``"equality"``), :math:`\\|(D - \\bar D)_+\\|/\\|\\bar D\\|` (``"shrink"``), else 0."""
        if self.mode == "equality":
            r = D - self.t
        elif self.mode == "shrink":
            r = np.maximum(D - self.t, 0.0)
        else:
            return 0.0
        return float(np.linalg.norm(r) / max(np.linalg.norm(self.t), 1e-300))

    def shrink_scale(self, D: np.ndarray) -> float:
        """``"shrink"``: the largest :math:`\\alpha \\le 1` with :math:`\\alpha^2 D \\le \\bar D`,
        so that the factor :math:`\\alpha V` is feasible (its distances are
        :math:`\\alpha^2 D`; centring is kept)."""
        over = D > self.t
        if not np.any(over):
            return 1.0
        return float(np.sqrt(np.min(self.t[over] / D[over])))

    def coercive_point(self) -> np.ndarray | None:
        """A dual point :math:`y_0 \\in \\mathrm{dom}\\,\\varphi^*` with the largest slack."""
        if self.mode == "interval":
            return self.w.copy()
        if self.mode == "quadratic":
            return np.full_like(self.t, (1.0 - self.coercive_share) * self.lam)
        return None


def objective_scale(gp: GramProblem, F: np.ndarray) -> float:
    r"""The size of the objective's terms at the point :math:`G = FF^T` (``F``: n x r):
    :math:`\langle |C|, G\rangle + \varphi(D)`, where :math:`C = \mathrm{diag}(d) + S +
    U\mathrm{diag}(s)U^T` is the objective matrix with its trace term
    (:meth:`~sdpembed.formulations.gram.GramProblem.full_objective`) and :math:`|C|` takes
    every part's coefficients in absolute value:

    .. math:: \sum_i |d_i|\,\|f_i\|^2 + \sum_k |s_k|\,\|F^Tu_k\|^2
              + \sum_{i \ne j} |S_{ij}|\,|f_i^Tf_j| + \varphi(D).

    At least :math:`|p|`, and far above it where the terms cancel: the objective's unit,
    which :func:`sdpembed.solve_status.bound_gap` uses as the floor of its relative measure
    (``SolveReport.extra["objective_scale"]``)."""
    F = np.asarray(F, dtype=float)
    C = gp.full_objective()
    size = float(np.abs(C.diag) @ np.einsum("ij,ij->i", F, F))
    if C.U.shape[1]:
        P = C.U.T @ F
        size += float(np.abs(C.s) @ np.einsum("ij,ij->i", P, P))
    if C.sparse is not None:
        S = C.sparse.tocoo()
        size += float(np.abs(S.data) @ np.abs(np.einsum("ij,ij->i", F[S.row], F[S.col])))
    return size + abs(DistancePenalty(gp).objective(gp.distances_of_factor(F)))


def below_bound(space: FactorSpace, p: float, W: np.ndarray, bound: float | None) -> bool:
    """Whether the objective ``p`` of the factor ``W`` of ``space`` (a
    :class:`~sdpembed.lowrank.space.FactorSpace`) lies below a proven lower ``bound`` by
    more than :data:`~sdpembed.solve_status.BOUND_TOLERANCE`, measured as the rule measures
    it (:func:`~sdpembed.solve_status.bound_gap` in the unit of :func:`objective_scale`): a
    point too infeasible for its objective, which no bound can certify. ``False`` without a
    bound."""
    if bound is None:
        return False
    gap = bound_gap(p, bound, objective_scale(space.gp, space.points(W)))
    return gap is not None and gap < -BOUND_TOLERANCE
