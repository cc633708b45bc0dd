"""Record the reference instances of :mod:`problems.reference` (writes ``<name>.json`` here).

Usage, from the repository root::

    python -m problems.reference.record            # every instance
    python -m problems.reference.record dvu_snr    # some

How an optimum is recorded:

1. The instance's data are made from scikit-learn's bundled datasets (no download):
   30 digits of classes 0-2 (seed 0, about 80 % labelled, 2-NN + 1 random long edge
   graph) for DVU and MVU; for the pencils, LDA on 60 wine samples (standardised) and
   TCA on 40 digits of classes 0-2 projected on their first 10 principal components.
2. CLARABEL solves the formulation's conic form (``problem.get_problem_data``) with
   ``tol_gap_abs = tol_gap_rel = tol_feas = 1e-8`` (tighter settings end at
   ``AlmostSolved`` on these facially reduced SDPs); its primal objective is
   ``optimum`` and its dual objective ``dual_bound`` (both plus the conic form's
   constant offset, sign-flipped for a maximisation).
3. A second interior-point solver (the first of ``CROSS_CHECKS`` that ends ``optimal``,
   through :func:`sdpembed.solve`) must agree within ``AGREE`` relative, and for the pencils the
   closed form (sum of the extreme generalized eigenvalues, which the relaxation
   attains exactly) too; otherwise nothing is written.
4. ``tolerance`` is the largest relative disagreement among these numbers and
   CLARABEL's own primal-dual gap, rounded up to one significant digit.
"""

from __future__ import annotations

import json
import math
import sys
import warnings

import cvxpy as cp
import numpy as np

from problems.reference import HERE, build

#: relative agreement the cross-check must reach before an optimum is written
AGREE = 1e-6

CLARABEL_OPTIONS = {"tol_gap_abs": 1e-8, "tol_gap_rel": 1e-8, "tol_feas": 1e-8,
                    "max_iter": 500}

GRAM = {
    "dvu_interval": ("dvu", {"centroids": "eliminated"}),
    "dvu_equality": ("dvu", {"centroids": "eliminated", "distances": "equality"}),
    "dvu_quadratic": ("dvu", {"centroids": "eliminated", "distances": "quadratic"}),
    "dvu_snr": ("dvu", {"centroids": "eliminated", "snr": 4.0}),
    "dvu_trace_min": ("dvu", {"centroids": "eliminated", "trace": "min", "trace_weight": 1e-2}),
    "dvu_ratio": ("dvu", {"centroids": "eliminated", "ratio": 0.5}),
    "mvu": ("mvu", {}),
}
PENCILS = ("lda_wine", "tca_digits")

#: the second solvers tried, in order (tight settings first; the first that ends optimal counts)
CROSS_CHECKS = (("CVXOPT", {"abstol": 1e-9, "reltol": 1e-9, "feastol": 1e-9}),
                ("SDPA", {"epsilonStar": 1e-9, "epsilonDash": 1e-9}),
                ("CVXOPT", {}), ("SDPA", {}))


def _digits(n: int, classes: int, seed: int = 0):
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    idx = np.sort(rng.permutation(np.flatnonzero(y < classes))[:n])
    X, y = X[idx].astype(float), y[idx]
    y_obs = y.copy()
    y_obs[rng.random(n) > 0.8] = -1
    return X, y_obs


def gram_instance(name: str) -> dict:
    from sdpembed.graphs import knn_graph

    builder, kwargs = GRAM[name]
    X, y_obs = _digits(30, 3)
    graph = knn_graph(X, n_neighbors=2, n_random=1, random_state=0)
    return {"name": name, "kind": "gram", "builder": builder, "kwargs": kwargs,
            "n_nodes": int(graph.n_nodes), "edges": graph.edges.tolist(),
            "sqdist": graph.sqdist.tolist(), "labels": y_obs.tolist(),
            "provenance": "scikit-learn load_digits: 30 digits of classes 0-2 (seed 0), "
                          "labels hidden with probability 0.2, knn_graph(X, n_neighbors=2, "
                          "n_random=1, random_state=0)"}


def pencil_instance(name: str) -> dict:
    from sdpembed.formulations.lda import lda_pencil
    from sdpembed.formulations.tca import tca_pencil
    from sdpembed.scatter.tca import tca_operators

    if name == "lda_wine":
        from sklearn.datasets import load_wine

        X, y = load_wine(return_X_y=True)
        idx = np.sort(np.random.default_rng(0).permutation(y.size)[:60])
        X = X[idx]
        X = (X - X.mean(0)) / X.std(0)
        pencil = lda_pencil(X, y[idx], 3)
        d, how = 2, ("scikit-learn load_wine: 60 samples (seed 0), standardised; "
                     "lda_pencil(X, y, 3) (between- and within-class scatter)")
    else:
        X, y_obs = _digits(40, 3)
        X = X - X.mean(0)
        U, s, _ = np.linalg.svd(X, full_matrices=False)
        X = U[:, :10] * s[:10]
        pencil = tca_pencil(tca_operators(X, y_obs, alpha=1.0, n_neighbors=5), beta=1.0)
        d, how = 2, ("scikit-learn load_digits: 40 digits of classes 0-2 (seed 0), labels "
                     "hidden with probability 0.2, centred, first 10 principal components; "
                     "tca_pencil(tca_operators(X, y, alpha=1, n_neighbors=5), beta=1)")
    A, B, sense, kind = pencil[:4]
    return {"name": name, "kind": "pencil", "A": np.asarray(A).tolist(),
            "B": np.asarray(B).tolist(), "d": d, "sense": sense, "pencil_kind": kind,
            "provenance": how}


def _clarabel(problem: cp.Problem) -> tuple[float, float, str]:
    """(primal objective, dual objective, status) of CLARABEL on the conic form."""
    data, chain, _ = problem.get_problem_data(cp.CLARABEL)
    offset = float(data["param_prob"].apply_parameters()[1])
    raw = chain.reductions[-1].solve_via_data(data, False, False, dict(CLARABEL_OPTIONS))
    sign = -1.0 if isinstance(problem.objective, cp.Maximize) else 1.0
    return sign * (raw.obj_val + offset), sign * (raw.obj_val_dual + offset), str(raw.status)


def _cross_check(inst: dict) -> tuple[str, float, dict, str]:
    from sdpembed.exceptions import SolverFailedError
    from sdpembed.solvers import solve, solver_version

    for name, options in CROSS_CHECKS:
        try:
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                rep = solve(build(inst), solver=name, **options)
        except SolverFailedError as exc:
            print(f"  {name} {options} failed: {exc}", file=sys.stderr)
            continue
        if rep.status != "optimal":
            print(f"  {name} {options}: {rep.status}, not used", file=sys.stderr)
            continue
        return name, float(rep.objective), options, f"{rep.status}, {solver_version(name)}"
    raise RuntimeError(f"{inst['name']}: no second solver could cross-check")


def _round_up(x: float) -> float:
    """``x`` rounded up to one significant digit."""
    unit = 10.0 ** math.floor(math.log10(x))
    return float(f"{math.ceil(x / unit * (1 - 1e-12)) * unit:.0e}")


def record(name: str) -> dict:
    from sdpembed.relaxations import Pencil, solve_closed_form
    from sdpembed.solvers import solver_version

    inst = gram_instance(name) if name in GRAM else pencil_instance(name)
    loaded = {**inst, **{k: np.asarray(inst[k]) for k in ("edges", "sqdist", "labels", "A", "B")
                         if k in inst}}
    primal, dual, status = _clarabel(build(loaded).problem)
    if status != "Solved":
        raise RuntimeError(f"{name}: CLARABEL ended {status}")
    other, value, other_options, other_status = _cross_check(loaded)
    scale = max(abs(primal), 1e-12)
    numbers = [value]
    solvers = {"CLARABEL": {"objective": primal, "dual_objective": dual, "status": status,
                            "options": CLARABEL_OPTIONS, "version": solver_version("CLARABEL")},
               other: {"objective": value, "status": other_status, "options": other_options}}
    if inst["kind"] == "pencil":
        closed = solve_closed_form(Pencil(loaded["A"], loaded["B"], inst["sense"],
                                          inst["pencil_kind"]), inst["d"])[2]
        numbers.append(closed)
        solvers["closed form"] = {"objective": closed}
    disagreement = max([abs(v - primal) / scale for v in numbers] + [abs(primal - dual) / scale])
    if disagreement > AGREE:
        raise RuntimeError(f"{name}: solvers disagree by {disagreement:.2g} relative: "
                           f"{solvers}")
    out = {**inst, "optimum": primal, "dual_bound": dual,
           "tolerance": _round_up(max(disagreement, 1e-9)),
           "sense": inst.get("sense", "max" if isinstance(build(loaded).problem.objective,
                                                          cp.Maximize) else "min"),
           "solvers": solvers}
    (HERE / f"{name}.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"{name}: optimum {primal!r}, dual {dual!r}, {other} {value!r}, tolerance "
          f"{out['tolerance']:.1g}", file=sys.stderr)
    return out


def main(argv=None) -> int:
    wanted = (argv if argv is not None else sys.argv[1:]) or [*GRAM, *PENCILS]
    for name in wanted:
        record(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
