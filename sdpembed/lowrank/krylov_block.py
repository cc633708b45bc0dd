r"""The largest eigenpairs of a shift-invert operator by one Lanczos run without restarts.

:func:`~sdpembed.lowrank.sparse_slack.sparse_bottom` wants the ``k`` largest eigenpairs of
:math:`O = P(S-\sigma I)^{-1}P` (the bottom of :math:`S`). ARPACK's implicitly restarted
Lanczos (``eigsh``, ``ncv = 2k + 1`` vectors) keeps ``2k + 1`` vectors and restarts until
every one of the ``k`` pairs meets its test; where the bottom of :math:`S` is a crowd of
tiny eigenvalues (near the optimum at large n) a block of 200 pairs restarts four to five
times, each restart one more sweep of solves and orthogonalisation over ``2k + 1``
vectors. :func:`top_pairs` keeps the whole Krylov basis instead (Lanczos with full
reorthogonalisation against the constant vector and the basis: rounding in the subtraction
would otherwise feed a component along :math:`\mathbf 1`, which ``O`` annihilates, into
the basis, growing by the ratio of :math:`\theta` to the recurrence's :math:`\beta` at
each step, so every pass projects against :math:`\mathbf 1` too). Each step subtracts the
three-term recurrence :math:`\alpha_jq_j + \beta_{j-1}q_{j-1}` first, then makes one
classical Gram-Schmidt pass against :math:`\mathbf 1` and the basis, and a second one only
where the pass cancelled, i.e. left a norm below :math:`1/\sqrt 2` of the norm before it
(the criterion of Daniel, Gragg, Kaufman and Stewart, Math. Comp. 30 (1976), 772-795, as
ARPACK's ``dsaitr`` applies it with 0.717; "twice is enough", Giraud, Langou and Rozloznik,
Comput. Math. Appl. 50 (2005)). Past the recurrence the pass only removes rounding, so
the second pass is rare. The run stops at the first step
where the same test holds for the ``k`` largest Ritz values of the tridiagonal
:math:`T_m = Q_m^TOQ_m`: the residual of Ritz pair :math:`(\theta_i, Q_ms_i)` is
:math:`\beta_m|e_m^Ts_i|`, and ARPACK's (``dsaupd``) test is
:math:`\beta_m|e_m^Ts_i| \le \mathrm{tol}\cdot\max(\epsilon^{2/3}, |\theta_i|)`.
The Krylov space of an unrestarted run holds at least what a restarted one of as many
solves does, so it meets the test in fewer solves where ARPACK restarts, and in as many
(one pass) where it does not. Its price is memory: ``m`` vectors of length n instead
of ``2k + 1``; past ``max_steps`` it gives up (``None``) and the caller runs ARPACK.

Only the span matters to the caller (the values it returns are Rayleigh quotients of
:math:`S` on the returned vectors), and nothing here is a bound: the certificate verifies
:math:`\lambda_{\min}` by a factorisation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.linalg as sla
from scipy.sparse.linalg import LinearOperator

#: steps between two convergence tests (one eigendecomposition of the m x m tridiagonal)
_TEST_EVERY = 10
#: a Gram-Schmidt pass is repeated where it leaves less than this fraction of the norm
#: (Daniel-Gragg-Kaufman-Stewart; ARPACK's dsaitr uses 0.717)
_DGKS = 1.0 / np.sqrt(2.0)


def _orthogonalise(w: np.ndarray, basis: np.ndarray) -> tuple[np.ndarray, float, int]:
    """``w`` projected against 1 and the orthonormal ``basis`` (in 1-perp) by classical
    Gram-Schmidt, a second pass only where the first left less than ``_DGKS`` of the norm
    before it; returns the vector, its norm and the passes made (1 or 2)."""
    before, passes = np.linalg.norm(w), 0
    while True:
        w = w - w.mean() - basis @ (basis.T @ w)
        after, passes = np.linalg.norm(w), passes + 1
        if after >= _DGKS * before or passes == 2:
            return w, float(after), passes
        before = after


def top_pairs(O: LinearOperator, n: int, k: int, *, v0: np.ndarray, tol: float,
              max_steps: int, early: Callable[[float], bool] | None = None
              ) -> tuple[np.ndarray, np.ndarray] | None:
    r"""The ``k`` largest eigenpairs ``(theta, X)`` (ascending, ``X`` n x k orthonormal, in
    :math:`\mathbf 1^\perp`) of the symmetric operator ``O`` on :math:`\mathbf 1^\perp`
    (``O.matvec``) by
    unrestarted Lanczos from ``v0`` with full reorthogonalisation (the three-term
    recurrence, then classical Gram-Schmidt once, twice where the DGKS test asks), tested every
    ``_TEST_EVERY`` steps (and at ``max_steps``) by ARPACK's convergence test with ``tol``
    (see the module docstring). ``None`` if the test fails at ``max_steps`` (capped at
    ``n - 1``). An invariant subspace found early (:math:`\beta = 0`) ends the run with
    every Ritz pair exact, or with ``None`` where it holds fewer than ``k`` (repeated
    eigenvalues: ARPACK restarts from random vectors there).

    ``early``: given the largest Ritz value once its pair meets the test (asked at every
    test, from the first step on), whether that pair alone is enough; if so the run ends
    there and returns it alone (``theta`` and ``X`` of one pair). The steps before are
    those of the full run, so a run that ``early`` never ends is the full run, step for
    step."""
    max_steps = int(min(max_steps, n - 1))
    # column-major: the basis of the first m steps, Q[:, :m], is one contiguous block, so
    # each Gram-Schmidt pass reads those m columns and nothing of the columns not yet used
    Q = np.empty((n, max_steps), order="F")
    alpha, beta = np.zeros(max_steps), np.zeros(max_steps)
    q = np.asarray(v0, dtype=float).ravel()
    q = q - q.mean()
    q = q / np.linalg.norm(q)
    eps23 = np.finfo(float).eps ** (2.0 / 3.0)
    for j in range(max_steps):
        Q[:, j] = q
        w = np.asarray(O.matvec(q), dtype=float).ravel()
        alpha[j] = q @ w
        w = w - alpha[j] * q
        if j > 0:
            w = w - beta[j - 1] * Q[:, j - 1]
        w, beta[j], _ = _orthogonalise(w, Q[:, :j + 1])
        m = j + 1
        exhausted = not beta[j] > 1e-14 * max(abs(alpha[:m]).max(), 1e-300)
        test = exhausted or m % _TEST_EVERY == 0 or m == max_steps
        if test and (m >= k or early is not None):
            theta, S = sla.eigh_tridiagonal(alpha[:m], beta[:m - 1])
            theta, S = theta[-k:], S[:, -k:]
            limit = tol * np.maximum(eps23, np.abs(theta))
            done = exhausted or beta[j] * np.abs(S[-1]) <= limit
            if m >= k and np.all(done):
                return theta, Q[:, :m] @ S
            if early is not None and done[-1] and early(float(theta[-1])):
                return theta[-1:], Q[:, :m] @ S[:, -1:]
        if exhausted:
            return None
        q = w / beta[j]
    return None
