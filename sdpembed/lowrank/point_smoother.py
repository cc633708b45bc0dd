r"""A point-wise block smoother for the augmented-Lagrangian subproblem (full space).

The subproblem is :math:`f(W) = \sum_e \psi_e(\|z_e\|^2) + \mathrm{tr}(V^T\tilde CV)
(+\ \text{SNR and added rows' terms})`, :math:`V = PW` the centred factor,
:math:`z_e = v_i - v_j`. Moving one point, :math:`v_i \to v_i + \delta`, changes only the
edges at :math:`i` and the non-edge terms; the *block objective* of point :math:`i` is

.. math::

    \phi_i(\delta) = \sum_{e \ni i}\big[\psi_e(\|z_e + s_e\delta\|^2) - \psi_e(\|z_e\|^2)\big]
    + a_i^T\delta + \tilde c_{ii}\|\delta\|^2,

:math:`s_e = \pm 1` the sign of :math:`i` in :math:`e`, :math:`a_i` the row :math:`i` of the
subproblem's gradient without its edge part (the objective's, SNR's and added rows' first
order terms) and :math:`\tilde c_{ii}` the objective's diagonal: exact in the edges, the
objective's own quadratic for a single point, the other terms to first order. In
:math:`r` variables (the rank) it is minimised by a few damped Newton steps, all chosen
points at once: the Hessian
:math:`2(\tilde c_{ii} + \sum_e g_e)I + 4\sum_e\psi_e''u_eu_e^T`
(:math:`u_e = z_e + s_e\delta`, :math:`g_e = \psi_e'`) with its isotropic part floored at
a thousandth of its mean (as the block-Jacobi preconditioner does; the Gauss–Newton part
is positive semidefinite, so the step is a descent direction of :math:`\phi_i`), and a
backtracking step per point on :math:`\phi_i` itself.

*Which points*: the weakly held ones, where the gradient's row is large against the
point's isotropic curvature :math:`\kappa_i = 2(\tilde c_{ii} + \sum_e g_e)`
(the predicted decrease :math:`\|G_i\|^2/\kappa_i`): those whose predicted decrease is
strictly the largest among their neighbours' (one round of Luby's rule, so no two chosen
points share an edge), the largest ``share`` of the points among them. The edge terms of
the chosen blocks are then disjoint and :math:`\sum_i\phi_i` is the exact change of the
edge part of :math:`f` for the joint move.

*When*: inside L-BFGS (``_lbfgs``'s ``hook``), at iteration ``start`` and every ``every``
iterations after; the L-BFGS pairs are kept (:meth:`~.inner._Pairs.moved`).

*Why it decreases f*: the joint move :math:`\Delta` (the chosen rows) is accepted only if
the subproblem's own value falls, :math:`f(W + \Delta) < f(W)`, evaluated by the
subproblem's function (which re-centres); otherwise :math:`\Delta/2` is tried once, then
nothing is changed. The terms the block objective takes to first order (the objective's
coupling between chosen points through its low-rank part, the SNR and added rows'
curvature, the re-centring) are therefore checked, not assumed.
"""

from __future__ import annotations

import numpy as np

from .penalty import DistancePenalty
from .space import FactorSpace

__all__ = ["PointSmoother"]


def _edge_terms(pen: DistancePenalty, idx: np.ndarray, D: np.ndarray, y: np.ndarray,
                sigma: float, kind: str):
    r"""Per-edge value, first and second derivative of the envelope
    :math:`\psi_{y,\sigma}` on the edges ``idx`` (``D``, ``y`` of those edges; the same
    formulas as :meth:`DistancePenalty.envelope`, edge by edge)."""
    sig = sigma * pen.edge_scale[idx]
    t = pen.t[idx]
    if kind == "equality":
        r = D - t
        return y * r + 0.5 * sig * r * r, y + sig * r, sig
    if kind == "interval":
        w = pen.w[idx]
        r = D + y / sig - t
        g = np.clip(sig * r, -w, w)
        return g * r - (g * g + y * y) / (2 * sig), g, np.where(np.abs(r) < w / sig, sig, 0.0)
    if kind == "shrink":
        g = np.maximum(y + sig * (D - t), 0.0)
        return (g * g - y * y) / (2 * sig), g, np.where(g > 0, sig, 0.0)
    d = np.sqrt(np.maximum(D, 1e-300))
    s = pen.s[idx]
    return pen.lam * (d - s) ** 2, pen.lam * (1.0 - s / d), pen.lam * s / (2.0 * d**3)


class PointSmoother:
    """The block smoother of one subproblem (full space): ``smooth(x, f, g, fun)``.

    ``share``: the fraction of the points chosen (before the independent set thins them),
    ``newton``: Newton steps per block."""

    def __init__(self, space: FactorSpace, pen: DistancePenalty, y: np.ndarray, sigma: float,
                 kind: str, share: float = 1.0, newton: int = 2, start: int = 1000,
                 every: int = 50):
        self.sp, self.pen, self.y, self.sigma, self.kind = space, pen, y, sigma, kind
        self.share, self.newton, self.start, self.every = share, newton, start, every
        n = space.gp.n
        C = space.C
        self.cii = C.diag + ((C.U * C.U) @ C.s if C.U.shape[1] else 0.0)
        i, j = space._ends
        self.i, self.j = i, j
        # each point's incident edges, padded: inc[p, :deg[p]]
        A = space.B_abs_T.tocsr()
        self.indptr, self.edges_of = A.indptr, A.indices
        self.deg = np.diff(A.indptr)
        self.n = n
        self.calls = self.accepted = 0

    def hook(self, fun):
        """``_lbfgs``'s ``hook``: a sweep at iteration ``start`` and every ``every`` after."""
        def hook(it, x, f, g):
            if it < self.start or (it - self.start) % self.every:
                return None
            return self.smooth(x, f, g, fun)
        return hook

    def _choose(self, G: np.ndarray, g_e: np.ndarray) -> np.ndarray:
        n = self.n
        deg_g = np.bincount(self.i, weights=g_e, minlength=n) + \
            np.bincount(self.j, weights=g_e, minlength=n)
        kappa = 2.0 * (self.cii + deg_g)
        floor = 1e-3 * max(float(np.mean(np.abs(kappa))), 1e-300)
        pred = np.einsum("ij,ij->i", G, G) / np.maximum(kappa, floor)
        # the points whose predicted decrease is the largest among their neighbours' (one
        # round of Luby's rule, strict: no two of them share an edge), then the largest
        # share of those
        key = pred
        nb = np.zeros(n)
        np.maximum.at(nb, self.i, key[self.j])
        np.maximum.at(nb, self.j, key[self.i])
        cand = np.flatnonzero((key > nb) & (pred > 0))
        want = max(1, int(self.share * n))
        if cand.size > want:
            cand = cand[np.argpartition(pred[cand], cand.size - want)[cand.size - want:]]
        return cand

    def smooth(self, x: np.ndarray, f: float, g: np.ndarray, fun):
        """One sweep from ``x`` (flat, f and gradient g there): ``(x, f, g)`` after an
        accepted move, or ``None``."""
        self.calls += 1
        sp_, pen = self.sp, self.pen
        n = self.n
        W = sp_.project(x.reshape(n, -1))
        k = W.shape[1]
        G = g.reshape(n, k)
        Z = sp_.diffs(W)
        D = np.einsum("ij,ij->i", Z, Z)
        _, g_e, _ = _edge_terms(pen, np.arange(D.size), D, self.y, self.sigma, self.kind)
        P = self._choose(G, g_e)
        if P.size == 0:
            return None
        deg = self.deg[P]
        dmax = int(deg.max())
        slot = np.arange(dmax)[None, :]
        mask = slot < deg[:, None]
        pos = np.minimum(self.indptr[P][:, None] + slot, self.indptr[P + 1][:, None] - 1)
        E = self.edges_of[pos]                        # (p, dmax), padded by repetition
        S = np.where(self.i[E] == P[:, None], 1.0, -1.0) * mask
        Zp = Z[E]                                     # (p, dmax, k)
        yE = self.y[E]
        # the block's own part of the gradient: the edge part removed
        a = G[P] - 2.0 * np.einsum("pd,pd,pdk->pk", S, g_e[E], Zp)
        c = self.cii[P]
        Ef = E.ravel()

        def phi(delta):
            U = Zp + S[:, :, None] * delta[:, None, :]
            Du = np.einsum("pdk,pdk->pd", U, U)
            v, ge, d2 = _edge_terms(pen, Ef, Du.ravel(), yE.ravel(), self.sigma, self.kind)
            v, ge, d2 = (q.reshape(E.shape) * mask for q in (v, ge, d2))
            val = v.sum(axis=1) + np.einsum("pk,pk->p", a, delta) \
                + c * np.einsum("pk,pk->p", delta, delta)
            return val, U, ge, d2

        delta = np.zeros((P.size, k))
        val, U, ge, d2 = phi(delta)
        for _ in range(self.newton):
            grad = a + 2.0 * c[:, None] * delta + 2.0 * np.einsum("pd,pd,pdk->pk", S, ge, U)
            iso = 2.0 * (c + ge.sum(axis=1))
            iso = np.maximum(iso, 1e-3 * max(float(np.mean(np.abs(iso))), 1e-300))
            H = 4.0 * np.einsum("pdk,pdl->pkl", d2[:, :, None] * U, U)
            H[:, np.arange(k), np.arange(k)] += iso[:, None]
            step = -np.linalg.solve(H, grad[:, :, None])[:, :, 0]
            slope = np.einsum("pk,pk->p", grad, step)
            t = np.ones(P.size)
            done = slope >= 0
            new_delta = delta.copy()
            for _h in range(12):
                trial = delta + t[:, None] * step
                tv = phi(trial)[0]
                ok = ~done & (tv <= val + 1e-4 * t * slope)
                new_delta[ok] = trial[ok]
                done |= ok
                if done.all():
                    break
                t = np.where(done, t, 0.5 * t)
            delta = new_delta
            val, U, ge, d2 = phi(delta)
        if not np.any(delta):
            return None
        for scale in (1.0, 0.5):
            Xn = W.copy()
            Xn[P] += scale * delta
            xn = Xn.ravel()
            fn, gn = fun(xn)
            if fn < f:
                self.accepted += 1
                return xn, fn, gn
        return None


#: the smoother's settings (``PointSmoother``'s keywords) and the size from which it runs
SMOOTHER = {"share": 1.0, "newton": 2, "start": 1000, "every": 50}
SMOOTHER_MIN_POINTS = 2000
SMOOTHER_FIRST_ONLY = True


def smoother_settings(space: FactorSpace, outer_it: int, inner) -> dict | None:
    """The smoother's keywords for the next subproblem, or ``None`` (not run): full space,
    plain L-BFGS, at least :data:`SMOOTHER_MIN_POINTS` points, the first subproblem."""
    if space.Q is not None or inner is not None or space.gp.n < SMOOTHER_MIN_POINTS:
        return None
    if SMOOTHER_FIRST_ONLY and outer_it != 1:
        return None
    return dict(SMOOTHER)
