r"""Initial inverse Hessians of L-BFGS on the subproblems (``LowRankOptions.lbfgs_precond``).

The Hessian of the augmented Lagrangian in the factor :math:`W` (n x k, full space) is
:math:`2(\tilde C + E^T\mathrm{diag}(g)E)\otimes I_k + 4\sum_e\psi''_e\,(a_ea_e^T)\otimes
(z_ez_e^T)`. :class:`KroneckerPreconditioner` approximates its inverse by a Kronecker
product of a graph side and a rank side,

.. math::

    H_0 = (L_\omega + \delta I)^{-1} \otimes (W^TW/\lambda_{\max}(W^TW) + \eta I)^{-1},

with :math:`L_\omega = E^T\mathrm{diag}(\omega)E` the Laplacian of the distance rows in
the isotropic Gauss–Newton weights :math:`\omega_e = 2\sigma_e\bar D_e` (one sparse LU per
subproblem) and the rank side the scaling of preconditioned gradient descent for
Burer–Monteiro factors (PrecGD: Zhang, Fattahi & Zhang 2021), refreshed from the iterate
every ``refresh`` accepted steps. ``kind`` picks the sides: ``"graph"``, ``"rank"`` or
``"kron"`` (both). L-BFGS scales :math:`H_0` by :math:`s^Ty/y^TH_0y` at every step, so
only its shape matters. Measured in docs/tuning.md, "A whole-graph preconditioner for the
subproblems (2026-11-29, thirteenth round)".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

if TYPE_CHECKING:
    from .space import FactorSpace

__all__ = ["KroneckerPreconditioner"]

#: the rank side's shift, relative to :math:`\lambda_{\max}(W^TW)`
_ETA = 0.3
#: the graph side's shift, relative to the mean diagonal of :math:`L_\omega`
_DELTA = 1e-2
#: accepted L-BFGS steps between refreshes of the rank side
_REFRESH = 10


class KroneckerPreconditioner:
    r""":math:`H_0` above for a subproblem started at ``W0`` (n x k) on ``space``; called on a
    flat gradient, it returns the flat :math:`H_0g`. :meth:`update` takes every accepted
    iterate. The graph side needs the full space (on a reduced basis it is left out)."""

    def __init__(self, space: FactorSpace, W0: np.ndarray, kind: str,
                 omega: np.ndarray | None = None, *, eta: float = _ETA, delta: float = _DELTA,
                 refresh: int = _REFRESH):
        self.space, self.shape = space, W0.shape
        self.eta, self.refresh, self.steps = eta, refresh, 0
        self.graph = None
        if kind in ("graph", "kron") and space.Q is None:
            L = (space.ET @ sp.diags(omega) @ space.E).tocsc()
            shift = delta * float(L.diagonal().mean())
            self.graph = spla.splu((L + shift * sp.eye(space.dim)).tocsc(),
                                   permc_spec="MMD_AT_PLUS_A").solve
        self.R = self._rank_side(W0) if kind in ("rank", "kron") else None

    def _rank_side(self, W: np.ndarray) -> np.ndarray:
        G = W.T @ W
        top = max(float(np.linalg.eigvalsh(G)[-1]), 1e-300)
        return np.linalg.inv(G / top + self.eta * np.eye(G.shape[0]))

    def update(self, x: np.ndarray) -> None:
        """The iterate after an accepted step: the rank side is rebuilt every ``refresh``."""
        self.steps += 1
        if self.R is not None and self.steps % self.refresh == 0:
            self.R = self._rank_side(self.space.project(x.reshape(self.shape)))

    def __call__(self, v: np.ndarray) -> np.ndarray:
        V = v.reshape(self.shape)
        if self.graph is not None:
            V = self.graph(V)
        if self.R is not None:
            V = V @ self.R
        return self.space.project(V).ravel()
