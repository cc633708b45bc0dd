r"""Equality rows told rigid from the data: the graph's own points checked against the rows.

A k-NN graph built from data (:func:`~sdpembed.graphs.knn_graph`, Euclidean) keeps its
points; :func:`~sdpembed.formulations.mvu_problem` and ``dvu_problem`` scale them as the
targets (``GramProblem.meta["points"]``). :func:`rigid_from_data` then says whether the
rows fix the data's configuration in its own dimension :math:`d`:

1. the data's centred Gram matrix :math:`PP^T` satisfies every row (relative residual
   at most :data:`FEASIBLE_RTOL`: the targets are the data's squared distances);
2. :math:`d = \mathrm{rank}\,P` is small enough that the framework can be rigid in
   :math:`\mathbb R^d` (:math:`m \ge dn - d(d+1)/2`, :math:`dn \le` :data:`MAX_COLUMNS`);
3. it is infinitesimally rigid in :math:`\mathbb R^d`: the rigidity matrix :math:`R`
   (:math:`m\times dn`, row :math:`e = (i, j)` holding :math:`p_i - p_j` at :math:`i`
   and :math:`p_j - p_i` at :math:`j`) has rank :math:`dn - d(d+1)/2` (its flexes are
   the rigid motions only);
4. it is globally rigid in :math:`\mathbb R^d` (Connelly; Gortler, Healy & Thurston): a
   random equilibrium stress :math:`\omega` (:math:`R^T\omega = 0`) has a stress matrix
   :math:`\Omega = \sum_e \omega_e a_ea_e^T` of rank :math:`n - d - 1`.

Then no other configuration in :math:`\mathbb R^d` has these distances. That the data is
the only feasible point in *every* dimension (universal rigidity) is not proved: its
certificate, a positive semidefinite stress of rank :math:`n - d - 1`, is not resolved in
doubles on these graphs (docs/tuning.md, sixteenth round); every measurement of such rows
found the data the only feasible point. Where all four hold, the stalled-equality rule
(:mod:`~sdpembed.lowrank.rigid`) fires as soon as the penalty is at its cap instead of
waiting out its window. Measurements: docs/tuning.md, "Rigid equality MVU told from the
data".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

__all__ = ["RigidData", "rigid_from_data", "FEASIBLE_RTOL", "FLEX_SHARE", "MAX_COLUMNS",
           "RANK_RTOL"]

#: the data's Gram matrix counts as feasible when every row holds to this relative residual
FEASIBLE_RTOL = 1e-9
#: the dense rigidity matrix is formed up to this many columns :math:`dn`
MAX_COLUMNS = 2400
#: a singular value below this share of the largest counts as zero
RANK_RTOL = 1e-9
#: nontrivial infinitesimal flexes allowed, per point (local hinges of a few points)
FLEX_SHARE = 0.02


@dataclass(frozen=True)
class RigidData:
    r"""What :func:`rigid_from_data` found: the data's dimension, its largest relative
    residual on the rows, the dimension of its nontrivial infinitesimal flexes in
    :math:`\mathbb R^d`, the data's trace."""

    dim: int
    residual: float
    flexes: int
    trace: float

    def describe(self) -> str:
        return (f"the graph's own points (dimension {self.dim}) satisfy every row (relative "
                f"residual {self.residual:.1g}) and the framework flexes in R^{self.dim} "
                f"only by its rigid motions and {self.flexes} further infinitesimal "
                f"flex(es): the data's Gram matrix (trace {self.trace:.10g}) is feasible "
                f"and numerically the only feasible point")


def rigid_from_data(gp) -> RigidData | None:
    """The four tests of the module docstring on ``gp`` (a
    :class:`~sdpembed.formulations.gram_problem.GramProblem`); ``None`` unless all hold
    (equality rows only, no added constraints)."""
    points = gp.meta.get("points")
    if (points is None or gp.distances != "equality" or gp.constraints is not None
            or gp.snr is not None or gp.ratio is not None or gp.centering is not None):
        return None
    X = np.asarray(points, dtype=float)
    n, m = gp.n, len(gp.edges)
    if X.ndim != 2 or X.shape[0] != n or m == 0:
        return None
    X = X - X.mean(axis=0)
    U, s, _ = np.linalg.svd(X, full_matrices=False)
    d = int(np.sum(s > RANK_RTOL * s[0])) if s.size and s[0] > 0 else 0
    if d == 0 or d >= n - 1 or d * n > MAX_COLUMNS or m < d * n - d * (d + 1) // 2:
        return None
    P = U[:, :d] * s[:d]
    i, j = gp.edges.T
    diff = P[i] - P[j]
    target = np.asarray(gp.target, dtype=float)
    residual = float(np.max(np.abs((diff * diff).sum(axis=1) - target)
                            / np.maximum(target, np.finfo(float).tiny)))
    if not residual <= FEASIBLE_RTOL:
        return None
    R = np.zeros((m, d * n))
    cols = np.arange(d)
    rows = np.arange(m)[:, None]
    R[rows, i[:, None] * d + cols] = diff
    R[rows, j[:, None] * d + cols] = -diff
    sr = sla.svdvals(R, check_finite=False)
    flexes = int(np.sum(sr < RANK_RTOL * sr[0])) + (d * n - sr.size) - d * (d + 1) // 2
    if flexes > FLEX_SHARE * n:
        return None
    return RigidData(d, residual, max(flexes, 0), float(np.sum(P * P)))
