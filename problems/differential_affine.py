"""A judge for equality rows: the optimum bracketed by an exactly feasible point and a
dual bound, both independent of the subject (LOWRANK).

:func:`problems.differential_repair.repaired_objective` cannot repair a point where an
equality row must hold (equality distances, an added ``==`` row): no shrink or mixture
satisfies a violated equality exactly. Where no reference gives an optimum there
(109252: CLARABEL and CSDP refuse), a LOWRANK result went unjudged. This module works on
the points problem ``gp`` (eliminated centroids) written on the centred space,
:math:`G = QYQ^T` with :math:`Q` an orthonormal basis of the complement of the centring
vectors, so that :math:`G\\mathbf 1 = 0` holds by construction and :math:`G \\succeq 0`
iff :math:`Y \\succeq 0`; every row is :math:`\\langle A, Y\\rangle = b` or :math:`\\le b`
(distance rows :math:`A = Q^Ta_ea_e^TQ`, the added rows, the SNR row).

**Upper side** (:func:`upper`): a point :math:`Y_0` (any backend's, refused or not) is
projected onto the affine set of the equality rows (the least-norm correction, a
least-squares solve on the rows); its smallest eigenvalue :math:`-\\epsilon` and its
inequality rows' violations are then removed by mixing with a *centre* :math:`Y_c`, a
point of the same affine set with :math:`\\lambda_{\\min}(Y_c) = \\delta > 0` and every
inequality row strict (:func:`centre`: the largest :math:`\\delta` over the rows, solved
by CLARABEL, then projected onto the affine set as well): :math:`Y_t = (1-t)Y_0 + tY_c`
with the smallest :math:`t` that makes it PSD and satisfies every inequality row, taken
1 % larger. Affine rows hold for any mixture of two points that satisfy them, so
:math:`Y_t` is feasible up to the rounding of the projection, which is measured and
returned (``equality_residual``, relative to the rows' sizes; ``min_eig`` relative to
:math:`\\lambda_{\\max}`). Its objective ``U`` is an upper bound on the optimum.

**Lower side** (:func:`lower`): for multipliers :math:`\\nu` (equality rows, free) and
:math:`\\mu \\ge 0` (inequality rows), every feasible :math:`Y` has
:math:`\\langle C, Y\\rangle \\ge \\langle S, Y\\rangle - \\nu^Tb_= - \\mu^Tb_\\le` with
:math:`S = C + \\sum \\nu_iA_i + \\sum \\mu_kA_k`, and
:math:`\\langle S, Y\\rangle \\ge \\min(0, \\lambda_{\\min}(S))\\,T` where :math:`T` bounds
:math:`\\mathrm{tr}\\,Y` over the feasible set. With equality distances on a connected
graph, :math:`\\mathrm{tr}\\,G = \\frac1n\\sum_{i<j} D_{ij}` (:math:`G\\mathbf 1 = 0`;
not used under other centring vectors) and
:math:`\\sqrt{D_{ij}}` is at most the shortest path between :math:`i` and :math:`j` in
edge lengths :math:`\\sqrt{\\bar D_e}` (the triangle inequality), so
:math:`T = \\frac1n\\sum_{i<j}\\mathrm{path}_{ij}^2`. Any multipliers give a valid bound
``L``; they are taken from CLARABEL's solve of this reduced problem
(:func:`solve_reduced`). Built for a linear objective (``distances="equality"`` or
``"shrink"``) and for ``"interval"`` by its L1 form (:func:`lower`; no trace bound is
known there, so :math:`S` must come out PSD); the quadratic penalty has no lower side
here.

What a verdict then means: ``L <= optimum <= U`` holds up to the rounding of evaluating
them (both are computed, not trusted: the point's eigenvalues and rows are evaluated,
and the bound's eigenvalue is of the matrix it uses), whatever LOWRANK or the references
report. The judge (:func:`problems.differential._judge`) holds LOWRANK's result to
``[L, U]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from sdpembed.lowrank.penalty import DistancePenalty

__all__ = ["Reduced", "reduced", "centre", "upper", "solve_reduced", "lower", "lower_at"]

#: the mixing weight is taken this much larger than the smallest that makes the point feasible
MIX_MARGIN = 1.01
#: where no strictly feasible centre exists, a projected point whose smallest eigenvalue
#: is at least -EPS_TOL times its largest gives an approximate upper side (``exact`` False)
EPS_TOL = 1e-6
#: a projected point whose equality rows are off by more than this (relative to the
#: rows' sizes) is not used: the rows are inconsistent or the solve lost accuracy
RESIDUAL_TOL = 1e-10


@dataclass
class Reduced:
    """The points problem on the centred space (see the module docstring)."""

    gp: Any
    Q: np.ndarray                 # n x r, orthonormal, orthogonal to the centring vectors
    C: np.ndarray                 # r x r, the objective with its trace term
    M_eq: np.ndarray              # rows of svec(A) for the equality rows
    b_eq: np.ndarray
    M_in: np.ndarray              # rows of svec(A) for the inequality rows (<= b)
    b_in: np.ndarray
    labels_in: list[str] = field(default_factory=list)
    linear: bool = True           # the objective is <C, Y> (no distance penalty)
    trace_bound: float = np.inf   # T: tr Y <= T on the feasible set (inf: not known)
    #: the distance rows' edges (i, j) and point count where ``trace_bound`` is theirs
    #: (the first rows of ``M_eq``): :func:`_trace_bound` of moved targets (:func:`lower_at`)
    trace_edges: tuple[np.ndarray, np.ndarray, int] | None = None
    #: ``"interval"``: the penalty sum_e w_e |<A_e, Y> - t_e|, rows svec(A_e) in M_pen
    M_pen: np.ndarray | None = None
    t_pen: np.ndarray | None = None
    w_pen: np.ndarray | None = None

    @property
    def r(self) -> int:
        return self.Q.shape[1]

    def svec(self, A: np.ndarray) -> np.ndarray:
        """The entries of symmetric ``A`` on and above the diagonal, off-diagonal ones
        times sqrt 2, so that ``svec(A) @ svec(Y) = <A, Y>``."""
        iu = np.triu_indices(A.shape[0])
        return A[iu] * np.where(iu[0] == iu[1], 1.0, np.sqrt(2.0))

    def smat(self, v: np.ndarray) -> np.ndarray:
        r = self.r
        iu = np.triu_indices(r)
        Y = np.zeros((r, r))
        Y[iu] = v / np.where(iu[0] == iu[1], 1.0, np.sqrt(2.0))
        return Y + np.triu(Y, 1).T

    def of_gram(self, G: np.ndarray) -> np.ndarray:
        """:math:`Q^TGQ` of the symmetric part of ``G`` (its centred part)."""
        G = 0.5 * (G + G.T)
        return self.Q.T @ G @ self.Q

    def objective(self, Y: np.ndarray) -> float:
        """The points problem's objective at :math:`G = QYQ^T`."""
        value = float(np.sum(self.C * Y))
        if not self.linear:
            lam, U = np.linalg.eigh(0.5 * (Y + Y.T))
            V = self.Q @ (U * np.sqrt(np.maximum(lam, 0.0)))
            value += DistancePenalty(self.gp).objective(self.gp.distances_of_factor(V))
        return value

    def scale_eq(self) -> np.ndarray:
        """A size of each equality row: max(|b|, ||A||_F * mean |b|), against which its
        residual is relative."""
        ref = float(np.mean(np.abs(self.b_eq))) if self.b_eq.size else 1.0
        return np.maximum(np.abs(self.b_eq), np.linalg.norm(self.M_eq, axis=1) * ref)


def _dense(op, n: int) -> np.ndarray:
    return np.asarray(op.matvec(np.eye(n)), dtype=float)


def reduced(gp) -> Reduced | None:
    """``gp`` on the centred space; ``None`` where it has a term this judge does not
    write (a ratio constraint)."""
    if getattr(gp, "ratio", None) is not None:
        return None
    n = gp.n
    c = np.asarray(gp.centering_vectors(), dtype=float)
    U, s, _ = np.linalg.svd(c, full_matrices=True)
    k = int(np.sum(s > 1e-12 * max(s.max(), 1.0)))
    Q = U[:, k:]
    C = _dense(gp.full_objective(), n)
    C = Q.T @ (0.5 * (C + C.T)) @ Q
    eq, b_eq, ineq, b_in, labels = [], [], [], [], []
    i, j = np.asarray(gp.edges).T
    W = Q[i] - Q[j]       # w_e = Q^T a_e
    if gp.distances in ("equality", "shrink"):
        rows = [np.outer(w, w) for w in W]
        if gp.distances == "equality":
            eq += rows
            b_eq += list(np.asarray(gp.target, dtype=float))
        else:
            ineq += rows
            b_in += list(np.asarray(gp.target, dtype=float))
            labels += [f"edge {e}" for e in range(len(rows))]
    if gp.snr is not None:
        H = gp.snr * _dense(gp.icv, n) - _dense(gp.bcv, n)
        ineq.append(Q.T @ (0.5 * (H + H.T)) @ Q)
        b_in.append(0.0)
        labels.append("snr")
    K = gp.constraints
    if K is not None and K.p > 0:
        for kk in range(K.p):
            A = np.zeros((n, n))
            sel = K.row == kk
            np.add.at(A, (K.i[sel], K.j[sel]), K.value[sel])
            A = Q.T @ (0.5 * (A + A.T)) @ Q
            if K.equality[kk]:
                eq.append(A)
                b_eq.append(float(K.rhs[kk]))
            else:
                ineq.append(A)
                b_in.append(float(K.rhs[kk]))
                labels.append(K.labels[kk] if kk < len(K.labels) else f"row {kk}")
    red = Reduced(gp, Q, C, np.zeros((0, 0)), np.asarray(b_eq), np.zeros((0, 0)),
                  np.asarray(b_in), labels, linear=gp.distances in ("equality", "shrink"))
    N = red.r * (red.r + 1) // 2
    if gp.distances == "interval":
        red.M_pen = np.array([red.svec(np.outer(w, w)) for w in W]).reshape(-1, N)
        red.t_pen = np.asarray(gp.target, dtype=float)
        red.w_pen = float(gp.slack_weight) / red.t_pen
    red.M_eq = np.array([red.svec(A) for A in eq]) if eq else np.zeros((0, N))
    red.M_in = np.array([red.svec(A) for A in ineq]) if ineq else np.zeros((0, N))
    if gp.distances == "equality" and gp.centering is None:   # G1 = 0: tr G by distances
        red.trace_edges = (np.asarray(i), np.asarray(j), n)
        red.trace_bound = _trace_bound(red.trace_edges, np.asarray(gp.target, dtype=float))
    return red


def _trace_bound(edges: tuple[np.ndarray, np.ndarray, int], targets: np.ndarray) -> float:
    r"""A bound on :math:`\mathrm{tr}\,G` over centred Gram matrices (:math:`G1 = 0`) whose
    squared distances on the edges ``(i, j)`` equal ``targets``: :math:`\mathrm{tr}\,G =
    \frac1n\sum_{a<b}\|x_a - x_b\|^2` and each distance is at most the graph's shortest
    path with edge lengths :math:`\sqrt{t_e}` (the triangle inequality); ``inf`` without
    edges."""
    i, j, n = edges
    if not len(targets):
        return np.inf
    graph = sp.csr_matrix((np.sqrt(np.maximum(targets, 0.0)), (i, j)), shape=(n, n))
    paths = shortest_path(graph, directed=False)
    return float(np.sum(np.triu(paths, 1) ** 2)) / n


def _project(red: Reduced, Y: np.ndarray) -> tuple[np.ndarray, float]:
    """``Y`` moved onto the equality rows' affine set by the least-norm correction, and
    the largest relative residual of the rows after it."""
    if red.M_eq.shape[0] == 0:
        return Y, 0.0
    y = red.svec(Y)
    r = red.M_eq @ y - red.b_eq
    delta = np.linalg.lstsq(red.M_eq, r, rcond=None)[0]
    y = y - delta
    res = np.abs(red.M_eq @ y - red.b_eq) / red.scale_eq()
    return red.smat(y), float(np.max(res, initial=0.0))


def centre(red: Reduced, size: float) -> dict[str, Any] | None:
    """A strictly feasible point of ``red`` (the most interior by its smallest eigenvalue,
    inequality rows held ``delta * ||A||_F`` inside; ``tr Y <= size`` where no trace bound
    is known), projected onto the affine set: ``{"Y", "delta", "slack", "residual"}``;
    ``None`` where none is found (no strictly feasible point, or the solve failed)."""
    r = red.r
    Y = cp.Variable((r, r), symmetric=True)
    d = cp.Variable()
    iu = np.triu_indices(r)
    w = np.where(iu[0] == iu[1], 1.0, np.sqrt(2.0))
    N = iu[0].size     # svec(Y) as a linear map of vec(Y) (column-major)
    P = sp.csr_matrix((w, (np.arange(N), iu[0] + r * iu[1])), shape=(N, r * r))
    yvec = P @ cp.vec(Y, order="F")
    cons = [Y - d * np.eye(r) >> 0]
    if red.M_eq.shape[0]:
        cons.append(red.M_eq @ yvec == red.b_eq)
    if red.M_in.shape[0]:
        norms = np.linalg.norm(red.M_in, axis=1)
        cons.append(red.M_in @ yvec + d * norms <= red.b_in)
    cap = red.trace_bound if np.isfinite(red.trace_bound) else size
    cons.append(cp.trace(Y) <= cap)
    prob = cp.Problem(cp.Maximize(d), cons)
    try:
        prob.solve(solver="CLARABEL")
    except cp.error.SolverError:
        return None
    if Y.value is None or prob.status not in ("optimal", "optimal_inaccurate"):
        return None
    Yc, residual = _project(red, np.asarray(Y.value))
    delta = float(np.linalg.eigvalsh(Yc)[0])
    slack = red.M_in @ red.svec(Yc) - red.b_in if red.M_in.shape[0] else np.zeros(0)
    if delta <= 0 or np.any(slack >= 0) or residual > RESIDUAL_TOL:
        return None
    return {"Y": Yc, "delta": delta, "slack": slack, "residual": residual}


def upper(red: Reduced, G: np.ndarray, centre_: dict[str, Any] | None) -> dict[str, Any]:
    """The objective ``U`` at the points' Gram matrix ``G`` made exactly feasible (the
    module docstring): ``{"objective", "exact", "t", "eps", "residual", "min_eig",
    "violation", "G"}`` (``G``: the feasible point, n x n); ``objective`` ``None`` (with
    ``why``) where it cannot be made feasible; ``exact`` False where no centre was given
    and the projected point is PSD only to ``eps`` (at most ``EPS_TOL`` of its largest
    eigenvalue; no ``G`` then)."""
    Y, residual = _project(red, red.of_gram(np.asarray(G, dtype=float)))
    out: dict[str, Any] = {"objective": None, "residual": residual}
    if residual > RESIDUAL_TOL:
        out["why"] = f"equality rows off by {residual:.1e} after the projection"
        return out
    lam = np.linalg.eigvalsh(Y)
    c = red.M_in @ red.svec(Y) - red.b_in if red.M_in.shape[0] else np.zeros(0)
    eps = max(0.0, -float(lam[0]))
    t = 0.0
    if eps > 0 or np.any(c > 0):
        if centre_ is None:
            # no strictly feasible point to mix with: the projected point, PSD only to
            # eps, is kept as an approximate upper side where its inequality rows hold
            rel = eps / max(float(lam[-1]), 1e-300)
            out.update(t=0.0, eps=eps, min_eig=-rel, exact=False,
                       violation=float(np.max(c, initial=-np.inf)))
            if np.any(c > 0) or rel > EPS_TOL:
                out["why"] = "no strictly feasible centre"
                return out
            out["objective"] = red.objective(Y)
            return out
        delta, cs = centre_["delta"], centre_["slack"]
        need = [eps / (eps + delta)] if eps > 0 else []
        bad = c > 0
        if np.any(bad):
            need.append(float(np.max(c[bad] / (c[bad] - cs[bad]))))
        t = min(1.0, MIX_MARGIN * max(need))
        Y = (1.0 - t) * Y + t * centre_["Y"]
    lam = np.linalg.eigvalsh(Y)
    viol = red.M_in @ red.svec(Y) - red.b_in if red.M_in.shape[0] else np.zeros(0)
    res = (np.abs(red.M_eq @ red.svec(Y) - red.b_eq) / red.scale_eq()
           if red.M_eq.shape[0] else np.zeros(0))
    out.update(t=t, eps=eps, min_eig=float(lam[0] / max(lam[-1], 1e-300)), exact=True,
               residual=float(np.max(res, initial=0.0)),
               violation=float(np.max(viol, initial=-np.inf)))
    if lam[0] < 0 or np.any(viol > 0) or out["residual"] > RESIDUAL_TOL:
        out["why"] = "the mixture is not feasible"
        return out
    out["objective"] = red.objective(Y)
    out["G"] = red.Q @ Y @ red.Q.T
    return out


def solve_reduced(red: Reduced) -> dict[str, Any] | None:
    """CLARABEL on ``red`` (linear objective only): its point ``G`` (n x n), multipliers
    ``nu`` (equality rows) and ``mu`` (inequality rows), status; ``None`` where the
    objective is not linear or the solve raised."""
    if not red.linear and red.M_pen is None:
        return None
    r = red.r
    Y = cp.Variable((r, r), PSD=True)
    iu = np.triu_indices(r)
    w = np.where(iu[0] == iu[1], 1.0, np.sqrt(2.0))
    N = iu[0].size
    P = sp.csr_matrix((w, (np.arange(N), iu[0] + r * iu[1])), shape=(N, r * r))
    yvec = P @ cp.vec(Y, order="F")
    eq = red.M_eq @ yvec == red.b_eq if red.M_eq.shape[0] else None
    ineq = red.M_in @ yvec <= red.b_in if red.M_in.shape[0] else None
    cons = [c for c in (eq, ineq) if c is not None]
    objective = cp.sum(cp.multiply(red.C, Y))
    up = down = None
    if red.M_pen is not None:     # the interval penalty by its slacks
        slack = cp.Variable(red.M_pen.shape[0])
        up = red.M_pen @ yvec - red.t_pen <= slack
        down = red.t_pen - red.M_pen @ yvec <= slack
        cons += [up, down]
        objective = objective + red.w_pen @ slack
    prob = cp.Problem(cp.Minimize(objective), cons)
    try:
        prob.solve(solver="CLARABEL")
    except cp.error.SolverError as exc:
        return {"status": "error", "message": str(exc)[:200]}
    out: dict[str, Any] = {"status": prob.status, "objective": prob.value}
    if Y.value is not None:
        out["G"] = red.Q @ np.asarray(Y.value) @ red.Q.T
    out["nu"] = None if eq is None or eq.dual_value is None else np.asarray(eq.dual_value)
    out["mu"] = None if ineq is None or ineq.dual_value is None else np.asarray(ineq.dual_value)
    if up is not None and up.dual_value is not None and down.dual_value is not None:
        out["y"] = np.asarray(up.dual_value) - np.asarray(down.dual_value)
    return out


def lower(red: Reduced, nu: np.ndarray | None, mu: np.ndarray | None,
          y: np.ndarray | None = None) -> dict[str, Any]:
    r"""The bound ``L`` of multipliers ``nu`` and ``mu`` (module docstring; ``mu`` clipped
    at 0, each sign of ``nu`` tried and the larger bound kept: both are bounds), and for
    the interval penalty ``y`` (clipped to ``|y_e| <= w_e``, so that
    :math:`w_e|x| \ge y_ex`: the penalty is at least :math:`\sum_e y_e(\langle A_e,
    Y\rangle - t_e)`, each sign tried as well): ``{"bound", "min_eig",
    "trace_bound"}``; ``bound`` ``None`` where the penalty is another, or ``S`` is not
    PSD and no trace bound is known."""
    out: dict[str, Any] = {"bound": None, "trace_bound": red.trace_bound}
    best = None
    for bound, lam in _signed_bounds(red, nu, mu, y) or ():
        if lam < 0 and not np.isfinite(red.trace_bound):
            continue
        if lam < 0:
            bound += lam * red.trace_bound
        if best is None or bound > best[0]:
            best = (bound, lam)
    if best is not None:
        out.update(bound=best[0], min_eig=best[1])
    return out


def _signed_bounds(red: Reduced, nu: np.ndarray | None, mu: np.ndarray | None,
                   y: np.ndarray | None, G: np.ndarray | None = None
                   ) -> list[tuple[float, float]] | None:
    r"""``(bound, lambda_min(S))`` of the multipliers for each sign of ``nu`` (and of
    the interval penalty's ``y``), the rows' right-hand sides moved to their values at
    ``G`` where given (equality rows :math:`b + r`, inequality rows
    :math:`b_\le + \max(r, 0)`); ``None`` where the penalty is another or a
    multiplier's length does not match (:func:`lower`, :func:`lower_at`)."""
    if not red.linear and red.M_pen is None:
        return None
    nu = np.zeros(red.M_eq.shape[0]) if nu is None else np.asarray(nu, dtype=float).ravel()
    mu = np.zeros(red.M_in.shape[0]) if mu is None else np.maximum(
        np.asarray(mu, dtype=float).ravel(), 0.0)
    if nu.shape[0] != red.M_eq.shape[0] or mu.shape[0] != red.M_in.shape[0]:
        return None
    b_eq, b_in = red.b_eq, red.b_in
    if G is not None:
        v = red.svec(red.of_gram(np.asarray(G, dtype=float)))
        if red.M_eq.shape[0]:
            b_eq = b_eq + (red.M_eq @ v - red.b_eq)
        if red.M_in.shape[0]:
            b_in = b_in + np.maximum(red.M_in @ v - red.b_in, 0.0)
    pen_signs: tuple[float, ...] = (0.0,)
    if red.M_pen is not None:
        if y is None or np.asarray(y).size != red.M_pen.shape[0]:
            return None
        y = np.clip(np.asarray(y, dtype=float).ravel(), -red.w_pen, red.w_pen)
        pen_signs = (1.0, -1.0)
    out = []
    for sign in (1.0, -1.0):
        for ps in pen_signs:
            s = red.svec(red.C) + sign * (nu @ red.M_eq) + mu @ red.M_in
            bound = -sign * float(nu @ b_eq) - float(mu @ b_in)
            if ps:
                s = s + ps * (y @ red.M_pen)
                bound -= ps * float(y @ red.t_pen)
            out.append((bound, float(np.linalg.eigvalsh(red.smat(s))[0])))
    return out


def lower_at(red: Reduced, G: np.ndarray, nu: np.ndarray | None, mu: np.ndarray | None,
             y: np.ndarray | None = None) -> float | None:
    r"""A proven lower bound on the optimum of ``red`` with its rows moved to the values
    they take at the points' Gram matrix ``G`` (equality rows :math:`b + r`, inequality
    rows :math:`b_\le + \max(r, 0)`): ``None`` where the multipliers give no bound
    without a trace bound. For multipliers with :math:`S \succeq 0` (:func:`lower`),
    every :math:`Y \succeq 0` meeting the moved rows has
    :math:`\langle C, Y\rangle \ge L - \mathrm{sign}\,\nu^Tr - \mu^T\max(r, 0)`
    (:math:`\mu \ge 0`), ``L`` that multipliers' bound; the largest over each sign of
    ``nu`` (and of the interval penalty's ``y``) with :math:`S` PSD is returned, or, where
    the moved distance rows bound the trace (:func:`_trace_bound` of their moved targets,
    :math:`\mathrm{tr}\,Y \le T`), with :math:`\lambda_{\min}(S)\,T` added where ``S``
    is not PSD (112249: CLARABEL's reduced solve ends with :math:`\lambda_{\min}(S) =
    -3\cdot10^{-9}`). What a point's violations can lower the optimum by is at most the
    optimum less this (:func:`problems.differential._validated_worth`): a price at
    multipliers that are checked dual feasible, where a reference's (not checked) can be far
    larger on a problem without a strictly feasible point (110566: CSDP's up to 1,574)."""
    T = np.inf   # tr Y on the moved rows: the distance rows' moved targets (112249)
    if red.trace_edges is not None:
        m = len(red.trace_edges[0])
        T = _trace_bound(red.trace_edges, red.M_eq[:m] @ red.svec(red.of_gram(
            np.asarray(G, dtype=float))))
    bounds = [b if lam >= 0 else b + lam * T
              for b, lam in _signed_bounds(red, nu, mu, y, G) or ()
              if lam >= 0 or np.isfinite(T)]
    return max(bounds) if bounds else None
