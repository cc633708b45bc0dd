"""A whole-graph Gauss–Newton preconditioner for Newton–CG on the full space.

The subproblem's Hessian at a factor :math:`W` (n x k) is

.. math::

    H = 2\\big[(C + L_g)\\otimes I_k + 2\\textstyle\\sum_e \\psi''_e\\,
        (b_eb_e^T)\\otimes(z_ez_e^T)\\big],

:math:`g = \\nabla\\psi(D)` the edges' multipliers, :math:`L_g = B^T\\mathrm{diag}(g)B` their
weighted Laplacian, :math:`b_e` an edge's incidence row and :math:`z_e = w_i - w_j` its
difference vector. Block-Jacobi keeps each point's k x k diagonal block; this keeps the
whole matrix (a sparse (n k) x (n k) matrix with the graph's pattern in k x k blocks),
shifted on the diagonal, and factorises it by SuperLU (once per Newton step). With
:math:`C` a multiple of the identity (MVU) the constant direction is decoupled from the
centred space (every term maps a constant to a constant), so its sign does not matter: the
residuals and the result are centred.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp
import scipy.sparse.csgraph as csgraph
import scipy.sparse.linalg as spla

#: the first diagonal shift, relative to the mean of |C|'s diagonal, and how often it is
#: quadrupled while the factor shows the centred matrix indefinite
_SHIFT0, _SHIFT_TRIES = 0.05, 4

#: largest factor size n k, and largest estimated number of non-zeros of its LU factors
#: (the graph Laplacian's own LU fill times k^2): beyond either, block-Jacobi (an expander
#: graph, e.g. a k-NN graph with random partners, fills its factor almost densely)
_GN_MAX_DIM, _GN_MAX_FILL = 60_000, 5_000_000


def _laplacian(n: int, ends: tuple[np.ndarray, np.ndarray], w: np.ndarray) -> sp.coo_matrix:
    """:math:`B^T\\mathrm{diag}(w)B` (n x n), B the incidence rows of the edges
    ``ends = (i, j)``: the graph Laplacian with edge weights ``w``."""
    i, j = ends
    return sp.coo_matrix((np.r_[w, w, -w, -w], (np.r_[i, j, i, j], np.r_[i, j, j, i])),
                         shape=(n, n))


def _envelope_bound(lap: sp.csr_matrix) -> int:
    """Upper bound on the non-zeros of an LU factorisation without pivoting of the
    symmetric pattern ``lap``: twice its envelope in the reverse Cuthill-McKee ordering plus
    its order (such a factorisation fills only inside the envelope)."""
    n = lap.shape[0]
    order = csgraph.reverse_cuthill_mckee(lap, symmetric_mode=True)
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    coo = lap.tocoo()
    first = np.arange(n)
    np.minimum.at(first, pos[coo.row], pos[coo.col])
    return int(2 * np.sum(np.arange(n) - first) + n)


def scalar_fill(n: int, ends: tuple[np.ndarray, np.ndarray]) -> int:
    """Non-zeros of the LU factors of the graph's Laplacian plus the identity (n x n), in
    the ordering :func:`gn_preconditioner` uses: the pattern of one k x k block each.
    Measured by factorising where the envelope bound (:func:`_envelope_bound`) is at most
    twice ``_GN_MAX_FILL``; otherwise that bound, which no rank fits (an expander graph of
    20,000 points, e.g. k-NN with random partners, would take a minute and a gigabyte to
    factorise only to find that it does not fit)."""
    lap = _laplacian(n, ends, np.ones(ends[0].shape[0])) + sp.identity(n)
    bound = _envelope_bound(lap.tocsr())
    if bound > 2 * _GN_MAX_FILL:
        return bound
    lu = spla.splu(lap.tocsc(), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                   options={"SymmetricMode": True})
    return int(lu.L.nnz + lu.U.nnz)


def gn_fits(n: int, k: int, fill: int) -> bool:
    """Whether the (n k) x (n k) Gauss-Newton matrix is factorised (see ``_GN_MAX_DIM``)."""
    return n * k <= _GN_MAX_DIM and fill * k * k <= _GN_MAX_FILL


def gn_matrix(n: int, k: int, ends: tuple[np.ndarray, np.ndarray], Z: np.ndarray,
              g: np.ndarray, d2: np.ndarray, diag: np.ndarray) -> sp.csc_matrix:
    r""":math:`(\mathrm{diag}(d) + L_g)\otimes I_k + 2\sum_e\psi''_e(b_eb_e^T)\otimes
    (z_ez_e^T)` in the ordering of ``W.ravel()`` (row-major: point i's coordinates at
    ``i*k ... i*k+k-1``)."""
    i, j = ends
    lap = _laplacian(n, ends, g) + sp.diags(diag)
    M = sp.kron(lap.tocsr(), sp.identity(k, format="csr"), format="coo")
    act = d2 > 0
    if np.any(act):
        ia, ja, za = i[act], j[act], Z[act]
        blk = (2.0 * d2[act])[:, None, None] * za[:, :, None] * za[:, None, :]
        a = np.arange(k)
        rows, cols, vals = [], [], []
        for p, q, s in ((ia, ia, 1.0), (ja, ja, 1.0), (ia, ja, -1.0), (ja, ia, -1.0)):
            rows.append(((p * k)[:, None, None] + a[None, :, None]) + 0 * a[None, None, :])
            cols.append(((q * k)[:, None, None] + a[None, None, :]) + 0 * a[None, :, None])
            vals.append(s * blk)
        M = M + sp.coo_matrix((np.concatenate([v.ravel() for v in vals]),
                               (np.concatenate([r.ravel() for r in rows]),
                                np.concatenate([c.ravel() for c in cols]))),
                              shape=(n * k, n * k))
    return M.tocsc()


def gn_preconditioner(n: int, k: int, ends: tuple[np.ndarray, np.ndarray], Z: np.ndarray,
                      g: np.ndarray, d2: np.ndarray, c_diag: np.ndarray,
                      project: Callable[[np.ndarray], np.ndarray]
                      ) -> Callable[[np.ndarray], np.ndarray] | None:
    """:math:`M^{-1}` for :func:`gn_matrix` with ``diag = c_diag + shift``, the smallest
    shift of ``_SHIFT0 * mean|c|`` times 1, 4, 16, ... for which the factor's pivots show the
    centred matrix positive definite (Sylvester's law of inertia on a symmetric LU without
    pivoting; the constant direction's k pivots have the sign of ``mean(c_diag) + shift``);
    ``None`` when none does or the factorisation fails. ``project`` centres an (n, k) array."""
    scale = max(float(np.mean(np.abs(c_diag))), 1e-300)
    shift = _SHIFT0 * scale
    for _ in range(_SHIFT_TRIES):
        M = gn_matrix(n, k, ends, Z, g, d2, c_diag + shift)
        try:
            lu = spla.splu(M, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                           options={"SymmetricMode": True})
        except RuntimeError:
            return None
        piv = lu.U.diagonal()
        expected = k if float(np.mean(c_diag)) + shift < 0 else 0
        if int(np.sum(piv < 0)) <= expected and np.all(np.isfinite(piv)):
            def apply(r: np.ndarray, lu=lu) -> np.ndarray:
                out = lu.solve(np.asarray(r, dtype=float))
                return project(out.reshape(n, k)).ravel()
            return apply
        shift *= 4.0
    return None
