r"""
Eigen methods in closed form and as their SDPs
==============================================

Every eigen-based method of the toolkit optimises a trace over a
:math:`d`-dimensional subspace, and each has two paths in one estimator:
``method="eigen"`` (the closed form, a generalized eigenproblem) and
``method="sdp"`` (the convex relaxation, solved by a conic backend). For a
*ratio trace*,

.. math::

    \min_{P^\top B P = I_d} \operatorname{tr}(P^\top A P)
    \;=\; \min_{Z}\ \langle A, Z\rangle \quad\text{s.t.}\quad
    0 \preceq B^{1/2} Z B^{1/2} \preceq I,\ \ \langle B, Z\rangle = d,

the relaxation is *exact*: the congruence :math:`W = B^{1/2}ZB^{1/2}` maps
the feasible set onto the Fantope :math:`\{0\preceq W\preceq I,\
\operatorname{tr}W = d\}`, whose extreme points are the rank-:math:`d`
projectors, and a linear function attains its minimum at one (Ky Fan).
Trace ratios (LDA's ``criterion="trace_ratio"``) are quasi-linear over the
Fantope and exact too (Charnes–Cooper). The *rank gap*

.. math::

    \mathrm{gap}(Z) = \frac{\sum_{i>d}\lambda_i^+(W)}{\sum_i \lambda_i^+(W)}

measures how far the SDP solution is from a rank-:math:`d` projector: it is
zero (to the solver's accuracy) when the relaxation is tight, and then the
two paths give the same optimal value and the same subspace (principal
angles near zero).
"""

# %%
from __future__ import annotations

import time

import matplotlib.pyplot as plt
import numpy as np
from scipy.linalg import subspace_angles
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

from sdpembed import DNE, LDA, LPP, PCA, SDA, TCA, DiscriminativeProjections
from sdpembed.datasets import partial_labels


def estimators(solver):
    """The eigen-based estimators compared here, with the SDP backend ``solver``."""
    kw = {"solver": solver}
    return {
        "PCA": lambda m: PCA(n_components=2, method=m, **kw),
        "LPP": lambda m: LPP(n_components=2, n_neighbors=5, method=m, **kw),
        "LDA": lambda m: LDA(n_components=2, method=m, **kw),
        "LDA (trace ratio)": lambda m: LDA(n_components=2, criterion="trace_ratio", method=m,
                                           **kw),
        "SDA": lambda m: SDA(n_components=2, method=m, **kw),
        "DiscriminativeProjections": lambda m: DiscriminativeProjections(
            n_components=2, method=m, **kw),
        "DNE": lambda m: DNE(n_components=2, method=m, **kw),
        "TCA": lambda m: TCA(n_components=2, method=m, **kw),
    }


def run(solver="CLARABEL", n_samples=None, quiet=True):
    """Fit every estimator both ways on the standardised wine data (half the labels hidden).

    Returns ``{name: {"eigen": obj, "sdp": obj, "rank_gap": g, "angle": max principal
    angle (radians), "seconds": (t_eigen, t_sdp)}}``.
    """
    X, y = load_wine(return_X_y=True)
    if n_samples is not None:
        X, y = X[:n_samples], y[:n_samples]
    X = StandardScaler().fit_transform(X)
    y_partial = partial_labels(y, 0.5, random_state=0)
    out = {}
    for name, make in estimators(solver).items():
        fits, seconds = {}, []
        for method in ("eigen", "sdp"):
            start = time.perf_counter()
            fits[method] = make(method).fit(X, y_partial)
            seconds.append(time.perf_counter() - start)
        e, s = fits["eigen"], fits["sdp"]
        angle = float(np.max(subspace_angles(e.components_.T, s.components_.T)))
        out[name] = {"eigen": e.objective_, "sdp": s.objective_, "rank_gap": s.rank_gap_,
                     "angle": angle, "seconds": tuple(seconds)}
        if not quiet:
            print(f"{name:26s} eigen {e.objective_: .6g}  sdp {s.objective_: .6g}  "
                  f"rank gap {s.rank_gap_:.1e}  max angle {angle:.1e} rad  "
                  f"({seconds[0]:.2f} s / {seconds[1]:.2f} s)")
    return out


# %%
# Closed form against the SDP, method by method (wine, 178 samples, 13
# standardised features, half of the labels hidden as ``y == -1``).
if __name__ == "__main__":
    result = run(quiet=False)

# %%
# Relative difference of the optimal values and the rank gap of each SDP
# solution: both at the level of the solver's tolerance.
if __name__ == "__main__":
    names = list(result)
    rel = [abs(r["sdp"] - r["eigen"]) / max(abs(r["eigen"]), 1e-12) for r in result.values()]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    x = np.arange(len(names))
    ax.bar(x - 0.2, np.maximum(rel, 1e-16), width=0.4, label="|sdp - eigen| / |eigen|")
    ax.bar(x + 0.2, [max(r["rank_gap"], 1e-16) for r in result.values()], width=0.4,
           label="rank gap")
    ax.set_yscale("log")
    ax.set_xticks(x, names, rotation=30, ha="right")
    ax.legend()
    fig.tight_layout()
