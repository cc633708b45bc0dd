"""Tests of sdpembed.experiments: spec validation, the grid runner and its outputs.

The runner is checked end to end on the shipped ``smoke`` spec (serially, with
two joblib workers and on a Dask ``LocalCluster``); its numbers are checked
against the same pipeline written out directly with scikit-learn, and the
three execution paths must give identical rows.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier

from sdpembed import experiments as ex
from sdpembed.datasets import load_sklearn, partial_labels
from sdpembed.exceptions import InputError
from sdpembed.experiments import (
    HeatKNNKernel,
    SpecError,
    expand_grid,
    load_spec,
    parse_spec,
    run_spec,
    tomllib,  # the standard library one (or tomli on Python 3.10)
)
from sdpembed.experiments.metrics import linear_regression_accuracy
from sdpembed.experiments.schema import thaw
from sdpembed.scatter.tca import tca_graph
from sdpembed.solve_status import FAR_FROM_OPTIMAL
from sdpembed.solvers import solver_version

SMOKE = Path(__file__).resolve().parents[1] / "sdpembed" / "experiments" / "specs" / "smoke.toml"
METRIC_COLUMNS = ["knn1", "svm", "transduction", "loo@1", "loo@2", "loo@3"]


def _smoke_dict() -> dict:
    return tomllib.loads(SMOKE.read_text())


def _smoke_data():
    """The smoke spec's data and labels, written out with scikit-learn (seed -> y_partial)."""
    X, y = load_sklearn("iris", return_X_y=True)
    idx, _ = train_test_split(np.arange(150), train_size=30, stratify=y, random_state=0)
    idx = np.sort(idx)
    X, y = X[idx], y[idx]
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X, y


def _metrics(rows, seed=None):
    """(method, params, solver, seed) -> metric values, for comparing runs."""
    out = {}
    for r in rows:
        if seed is None or r["seed"] == seed:
            key = (r["method"], r["params"], r["solver"], r["seed"])
            out[key] = {c: r.get(c) for c in METRIC_COLUMNS}
    return out


@pytest.fixture(scope="module")
def smoke(tmp_path_factory):
    out = tmp_path_factory.mktemp("smoke")
    return run_spec(SMOKE, out_dir=out, progress=False), out


# --------------------------------------------------------------------------- end to end


def test_smoke_grid_and_files(smoke):
    result, out = smoke
    spec = result.spec
    # raw, lda, lgc: 2 seeds each; dvu: 2 slack weights x 2 seeds (one solver)
    assert len(result.rows) == 10 == result.meta["runs"]
    assert [r["index"] for r in result.rows] == list(range(10))
    # a row is "ok" when its solve was optimal and "inaccurate" when the backend stopped
    # close to the optimum at a limit (see the DVU rows below); never an error
    assert all(r["status"] == ("inaccurate" if r.get("solve_status") == "optimal_inaccurate"
                               else "ok") for r in result.rows), \
        [(r["status"], r.get("solve_status"), r["error"]) for r in result.rows]
    dvu = [r for r in result.rows if r["method"] == "dvu"]
    assert sorted(json.loads(r["params"])["slack_weight"] for r in dvu) == [1.0, 1.0, 10.0, 10.0]
    for r in dvu:
        assert r["solver"] == "CLARABEL"
        # CLARABEL may stop a solve at optimal_inaccurate: the row keeps the status and the
        # InaccurateSolutionWarning (an optimal row can carry one from a held-out pre-fit)
        assert r["solve_status"] in ("optimal", "optimal_inaccurate")
        if r["solve_status"] == "optimal_inaccurate":
            assert "InaccurateSolutionWarning" in r["warnings"]
        assert r["solver_version"] == solver_version("CLARABEL")
        assert r["compile_s"] >= 0 and r["solve_s"] > 0 and r["n_components"] == 2
    assert all(r["solver"] is None for r in result.rows if r["method"] != "dvu")
    # classifier methods get only 'accuracy'; embedding methods everything else
    lgc = [r for r in result.rows if r["method"] == "lgc"]
    assert all("transduction" in r and "knn1" not in r for r in lgc)
    assert all("knn1" in r and "transduction" not in r for r in result.rows if r not in lgc)

    with (out / "results.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 10
    assert table[0]["solver_version"] == "" and table[4]["solver"] == "CLARABEL"
    assert float(table[0]["knn1"]) == pytest.approx(result.rows[0]["knn1"], abs=1e-12)
    doc = json.loads((out / "results.json").read_text())
    assert doc["spec"]["name"] == "smoke" and len(doc["rows"]) == 10
    assert doc["meta"]["solvers"] == {"CLARABEL": solver_version("CLARABEL")}
    assert set(doc["rows"][0]) == set(result.columns())
    summary = (out / "summary.md").read_text()
    assert "| iris | 0.3 | dvu | slack_weight=10.0 | CLARABEL | 2 | 2/2 |" in summary
    for name in ("dvu_embedding", "knn1_vs_slack", "loo"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 1000
    assert spec.seeds == (0, 1)


def test_a_finished_run_reads_back_from_its_folder(smoke, tmp_path):
    result, out = smoke
    back = ex.load_result(out)
    assert back.summary() == result.summary()
    assert back.spec == result.spec and back.meta == json.loads(json.dumps(result.meta))
    assert sorted(back.figure_files) == sorted(result.figures)
    assert all(p.is_file() for p in back.figure_files.values())
    with pytest.raises(ex.OutputError, match="no finished run"):
        ex.load_result(tmp_path)


def test_smoke_numbers_match_direct_computation(smoke):
    result, _ = smoke
    X, y = _smoke_data()
    for seed in (0, 1):
        y_partial = partial_labels(y, 0.3, min_per_class=2, random_state=seed)
        lab = y_partial != -1
        knn = KNeighborsClassifier(1).fit(X[lab], y[lab]).score(X[~lab], y[~lab])
        # LGC written out: F = (1 - a)(I - a S)^-1 Y on the heat-kernel 5-NN graph, a = 0.99
        W = tca_graph(X, n_neighbors=5).adjacency().toarray()
        d = W.sum(axis=1)
        S = W / np.sqrt(np.outer(d, d))
        Y = np.zeros((y.size, 3))
        Y[lab, y[lab]] = 1.0
        F = 0.01 * np.linalg.solve(np.eye(y.size) - 0.99 * S, Y)
        rows = {r["method"]: r for r in result.rows if r["seed"] == seed}
        # same data, same split, same deterministic algorithms: equal up to round-off
        assert rows["raw"]["knn1"] == pytest.approx(knn, abs=1e-12)
        assert rows["lgc"]["transduction"] == pytest.approx(
            np.mean(F.argmax(axis=1)[~lab] == y[~lab]), abs=1e-12)
        assert rows["lgc"]["estimator"] == "LGC"
        assert rows["raw"]["n_labeled"] == lab.sum() == 9
        loo = [rows["raw"][f"loo@{k}"] for k in (1, 2, 3)]
        assert loo == sorted(loo)  # the curve is non-decreasing in K


def test_smoke_joblib_workers_give_the_same_rows(smoke):
    serial, _ = smoke
    parallel = run_spec(SMOKE, seeds=[0], n_jobs=2, progress=False)
    assert len(parallel.rows) == 5
    # identical arithmetic in another process; DVU solves may differ by solver round-off
    a, b = _metrics(serial.rows, seed=0), _metrics(parallel.rows)
    assert a.keys() == b.keys()
    for key in a:
        for c in METRIC_COLUMNS:
            assert a[key][c] == pytest.approx(b[key][c], abs=1e-9), (key, c)


def test_smoke_on_dask_local_cluster(smoke):
    distributed = pytest.importorskip("dask.distributed")
    serial, _ = smoke
    with distributed.LocalCluster(n_workers=1, processes=False, threads_per_worker=2,
                                  dashboard_address=None) as cluster:
        result = run_spec(SMOKE, seeds=[1], scheduler=cluster.scheduler_address,
                          progress=False)
    assert result.meta["scheduler"] == cluster.scheduler_address
    a, b = _metrics(serial.rows, seed=1), _metrics(result.rows)
    assert a.keys() == b.keys()
    for key in a:
        for c in METRIC_COLUMNS:
            assert a[key][c] == pytest.approx(b[key][c], abs=1e-9), (key, c)


# --------------------------------------------------------------------------- grid


def test_expand_grid_solver_override_and_seeds():
    spec = load_spec(SMOKE)
    tasks = expand_grid(spec, solvers=["SCS", "clarabel"], seeds=[3])
    dvu = [t for t in tasks if t.method == "dvu"]
    assert sorted((t.params["slack_weight"], t.solver) for t in dvu) == [
        (1.0, "CLARABEL"), (1.0, "SCS"), (10.0, "CLARABEL"), (10.0, "SCS")]
    assert {t.solver for t in tasks if t.method != "dvu"} == {None}
    assert {t.seed for t in tasks} == {3}
    # the embedding figure asks the first DVU run to keep its arrays
    assert [t.keep for t in tasks if t.keep] == [frozenset({"embedding"})]
    with pytest.raises(SpecError, match=r"^--solver: unknown solver 'NOPE'"):
        expand_grid(spec, solvers=["NOPE"])


def test_only_the_sdp_path_of_projection_methods_gets_the_solver_axis():
    d = _smoke_dict()
    d["methods"] = {"pca": {"estimator": "PCA", "n_components": 2, "method": ["eigen", "sdp"],
                            "solvers": ["SCS", "CLARABEL"]}}
    del d["figures"]
    tasks = expand_grid(parse_spec(d), seeds=[0])
    assert sorted((t.params["method"], str(t.solver)) for t in tasks) == [
        ("eigen", "None"), ("sdp", "CLARABEL"), ("sdp", "SCS")]
    d["methods"]["pca"]["method"] = "eigen"
    with pytest.raises(SpecError, match=r"^methods.pca.solvers: PCA uses no solver"):
        parse_spec(d)


def test_failed_runs_are_recorded_with_the_typed_error():
    d = _smoke_dict()
    d["methods"] = {"dvu": {"estimator": "DVU", "n_components": 2, "slack_weight": [0.0, 1.0]}}
    d["metrics"] = {"knn1": {"kind": "knn"}}
    del d["figures"]
    result = run_spec(parse_spec(d), seeds=[0], progress=False)
    failed, ok = result.rows
    # slack_weight = 0 makes the interval DVU unbounded (lambda* > 0 on any data)
    assert failed["status"] == "error" and failed["error"].startswith("UnboundedError")
    assert failed["error_stage"] == "fit" and "knn1" not in failed
    assert ok["status"] == "ok" and 0 < ok["knn1"] <= 1
    assert result.meta["errors"] == 1 and result.meta["ok"] == 1
    summary = result.summary()
    assert "| 0/1 |" in summary and "## Errors (1 run)" in summary and "slack_weight" in summary
    assert "2 runs: 1 ok, 1 error" in summary


def test_inductive_protocol_fits_on_labeled_rows_only():
    from sdpembed.estimators.classic import PCA

    d = {"name": "inductive", "seeds": [4],
         "dataset": {"name": "wine", "scale": "standard"},
         "labels": {"fraction": 0.3, "protocol": "inductive"},
         "methods": {"pca": {"estimator": "PCA", "n_components": 3},
                     "nca": {"estimator": "NCA", "n_components": 2, "max_iter": 20}},
         "metrics": {"err3": {"kind": "knn", "k": 3, "error": True},
                     "train_loo": {"kind": "loo_knn", "k": 1}}}
    result = run_spec(parse_spec(d), progress=False)
    X, y = load_sklearn("wine", return_X_y=True)
    lab = partial_labels(y, 0.3, random_state=4) != -1
    mu, sd = X[lab].mean(axis=0), X[lab].std(axis=0)  # scaled with training statistics
    Xs = (X - mu) / sd
    Z = PCA(n_components=3).fit(Xs[lab]).transform(Xs)
    err = 1 - KNeighborsClassifier(3).fit(Z[lab], y[lab]).score(Z[~lab], y[~lab])
    loo = np.mean([KNeighborsClassifier(1).fit(np.delete(Z[lab], i, 0), np.delete(y[lab], i))
                   .predict(Z[lab][i:i + 1])[0] == y[lab][i] for i in range(lab.sum())])
    pca = result.rows[0]
    assert pca["err3"] == pytest.approx(err, abs=1e-12)
    assert pca["train_loo"] == pytest.approx(loo, abs=1e-12)
    assert result.rows[1]["status"] == "ok" and result.rows[1]["n_components"] == 2


def test_linear_regression_metric_matches_scikit_learn():
    from sklearn.linear_model import LinearRegression

    X, y = load_sklearn("wine", return_X_y=True)
    mask = partial_labels(y, 0.4, random_state=0) != -1
    T = np.eye(3)[y[mask]]
    pred = LinearRegression().fit(X[mask], T).predict(X[~mask]).argmax(axis=1)
    # least squares through lstsq vs scikit-learn's solver: same predictions
    assert linear_regression_accuracy(X, y, mask) == pytest.approx(
        np.mean(pred == y[~mask]), abs=1e-12)


def test_linear_regression_naive_normal_equations_predict_one_class():
    # one-hot features whose last column is zero on the labeled rows: A'A is singular
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    X = np.eye(3)[np.where(y == 1, 1, rng.integers(0, 3, 200) % 2 * 2)]
    mask = np.zeros(200, bool)
    mask[rng.permutation(np.flatnonzero(X[:, 2] == 0))[:30]] = True
    correct = linear_regression_accuracy(X, y, mask)
    naive = linear_regression_accuracy(X, y, mask, "normal_equations")
    # the singular solve gives NaN scores: every row gets the first class
    assert naive == pytest.approx(np.mean(y[~mask] == 0), abs=1e-12)
    assert correct > naive + 0.2
    # full-rank data: both solves are the same least-squares classifier
    Xw, yw = load_sklearn("wine", return_X_y=True)
    mw = partial_labels(yw, 0.4, random_state=0) != -1
    assert linear_regression_accuracy(Xw, yw, mw, "normal_equations") == pytest.approx(
        linear_regression_accuracy(Xw, yw, mw), abs=1e-12)


def test_oracle_and_naive_metrics_in_a_spec_match_the_functions():
    from sdpembed.evaluation import oracle_linear_knn

    data = {"name": "oracle", "seeds": 1, "dataset": {"name": "iris", "scale": "minmax"},
            "labels": {"fraction": 0.1, "min_per_class": 2},
            "methods": {"raw": {"estimator": "raw"}, "lda": {"estimator": "LDA"}},
            "metrics": {"oracle": {"kind": "oracle_knn", "error": True},
                        "lda_all": {"kind": "oracle_knn", "search": False, "error": True},
                        "naive": {"kind": "linear_regression", "solve": "normal_equations"}}}
    result = run_spec(parse_spec(data), progress=False)
    raw, lda = result.rows
    X, y = load_sklearn("iris", return_X_y=True)
    X = (X - X.min(axis=0)) / np.ptp(X, axis=0)
    mask = partial_labels(y, 0.1, min_per_class=2, random_state=0) != -1
    assert raw["oracle"] == pytest.approx(oracle_linear_knn(X, y, mask).error, abs=1e-12)
    assert raw["lda_all"] == pytest.approx(
        oracle_linear_knn(X, y, mask, search=False).error, abs=1e-12)
    assert raw["naive"] == pytest.approx(
        linear_regression_accuracy(X, y, mask, "normal_equations"), abs=1e-12)
    assert "oracle" not in lda and "naive" in lda  # the oracle is a property of the input
    assert "best linear map found with every label" in result.summary()


def test_label_propagation_names_are_the_exact_closed_forms():
    from sklearn.semi_supervised import LabelSpreading

    from sdpembed.estimators import GFHF, LGC

    assert ex.METHODS["LGC"].factory is LGC and ex.METHODS["GFHF"].factory is GFHF
    assert ex.METHODS["LabelSpreading"].factory is LabelSpreading
    # every shipped spec's graph-transduction baselines are the exact ones
    for path in sorted(SMOKE.parent.glob("*.toml")):
        for label, method in tomllib.loads(path.read_text())["methods"].items():
            assert method["estimator"] not in ("LabelSpreading", "LabelPropagation"), \
                (path.stem, label)


def test_heat_knn_kernel_is_the_tca_graph():
    X, _ = load_sklearn("iris", return_X_y=True)
    X = X + np.random.default_rng(0).normal(scale=1e-6, size=X.shape)  # no ties
    W = HeatKNNKernel(5)(X, X)
    g = tca_graph(X, n_neighbors=5)
    np.testing.assert_allclose(W, g.adjacency().toarray(), rtol=0, atol=0)
    assert np.allclose(W, W.T) and np.all(np.diag(W) == 0)
    V = HeatKNNKernel(4, sigma=0.5)(X[:7] + 0.01, X)
    assert V.shape == (7, 150) and np.all((V > 0).sum(axis=1) == 4)
    assert np.all(V <= 1.0)


# --------------------------------------------------------------------------- bad specs


def _mutate(path: str, value):
    def apply(d):
        keys = path.split(".")
        node = d
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        if value is _DELETE:
            node.pop(keys[-1])
        else:
            node[keys[-1]] = value
        return d
    return apply


_DELETE = object()


@pytest.mark.parametrize("path, value, field, message", [
    ("methods.dvu.estimator", "DVX", "methods.dvu.estimator", "unknown method 'DVX'"),
    ("dataset.name", "irises", "dataset.name", "unknown dataset 'irises'"),
    ("solvers", ["CLARABEL", "GUROBI9"], "solvers", "unknown solver 'GUROBI9'"),
    ("methods.dvu.solvers", "NOPE", "methods.dvu.solvers", "unknown solver 'NOPE'"),
    ("seeds", "three", "seeds", "got 'three' \\(string\\)"),
    ("seeds", 0, "seeds", "an integer in \\[1, 10000\\]"),
    ("seeds", 10**12, "seeds", "an integer in \\[1, 10000\\]"),
    ("seeds", [0, 2**40], "seeds", "integer in \\[0, 4294967295\\]"),
    ("seeds", [1, 1], "seeds", "distinct"),
    ("labels.fraction", "half", "labels.fraction", "got 'half' \\(string\\)"),
    ("labels.fraction", 1.5, "labels.fraction", "a number in \\(0, 1\\]"),
    ("labels.protocol", "online", "labels.protocol", "one of 'transductive', 'inductive'"),
    ("dataset.n_samples", 30.5, "dataset.n_samples", "an integer >= 4"),
    ("dataset.deslant", True, "dataset.deslant", "not an image dataset"),
    ("dataset.options", {"subset": "train"}, "dataset.options", "bad loader arguments"),
    ("methods.dvu.slack_weight", "big", "methods.dvu.slack_weight", "expected a number"),
    ("methods.dvu.slack_weight", -1.0, "methods.dvu.slack_weight", "range"),
    ("methods.dvu.distances", ["interval", "cubic"], "methods.dvu.distances", "cubic"),
    ("methods.dvu.sigma", 1.0, "methods.dvu.sigma", "unknown parameter of DVU"),
    ("methods.dvu.graph", "knn", "methods.dvu.graph", "set it in the \\[graph\\] table"),
    ("methods.lgc.alpha", 2.0, "methods.lgc.alpha", "'alpha' parameter of LGC"),
    ("methods.lda.solvers", ["CLARABEL"], "methods.lda.solvers", "LDA uses no solver"),
    ("methods.lgc.solvers", ["CLARABEL"], "methods.lgc.solvers", "takes no solver"),
    ("metrics.knn1.k", 1.5, "metrics.knn1.k", "an integer >= 1"),
    ("metrics.knn1.kind", "auc", "metrics.knn1.kind", "unknown metric kind 'auc'"),
    ("metrics.knn1.distance", "tangent", "metrics.knn1.distance", "needs image datasets"),
    ("metrics.knn1.methods", ["lgc"], "metrics.knn1.methods", "does not apply to 'lgc'"),
    ("metrics.svm.C", "one", "metrics.svm.C", "a number > 0"),
    ("graph.metric", "tangent", "graph.metric", "needs image datasets"),
    ("graph.metric", "manhatan", "graph.metric", "unknown metric 'manhatan'"),
    ("graph.candidates", 10, "graph.candidates", "unknown field"),
    ("figures.loo.metric", "knn1", "figures.loo.metric", "needs a curve metric"),
    ("figures.knn1_vs_slack.param", "n_components", "figures.knn1_vs_slack.param",
     "not swept"),
    ("figures.dvu_embedding.method", "lgc", "figures.dvu_embedding.method", "no embedding"),
    ("methods", _DELETE, "methods", "missing; expected a table"),
    ("extra", 1, "extra", "unknown field"),
    ("paper.values", [{"method": "dvu", "metric": "loo", "value": 90.0}],
     "paper.values\\[0\\].metric", "scalar metrics"),
    ("paper.values", [{"method": "dvuu", "metric": "knn1", "value": 90.0}],
     "paper.values\\[0\\].method", "method labels"),
    ("solver_options.LOWRANK", {"time_limt": 60}, "solver_options.LOWRANK.time_limt",
     "unknown LOWRANK option 'time_limt' \\(did you mean 'time_limit'\\?\\)"),
    ("solver_options.LOWRANK", {"tol": 2.0}, "solver_options.LOWRANK.tol", "lie in \\(0, 1\\)"),
    ("solver_options.LOWRANK", {"time_limit": "1h"}, "solver_options.LOWRANK.time_limit",
     "expected a number; got '1h'"),
    ("solver_options.LOWRANK", {"inner": "bfgs"}, "solver_options.LOWRANK.inner",
     "inner must be one of \\('auto'"),
    ("solver_options.LOWRANK", {"reduced_solver": "cvx"}, "solver_options.LOWRANK.reduced_solver",
     "one of \\('auto', 'ipm', 'alm'\\)"),
    ("solver_options.LOWRANK", {"max_outer": 2.5}, "solver_options.LOWRANK.max_outer",
     "max_outer must be a positive integer"),
    ("solver_options.LOWRANK", 60, "solver_options.LOWRANK", "expected a table"),
    ("solver_options.LOWRNK", {"tol": 1e-3}, "solver_options.LOWRNK", "unknown solver 'LOWRNK'"),
    ("solver_options.CSDP", {"axtoll": 1e-8}, "solver_options.CSDP.axtoll",
     "unknown CSDP option 'axtoll'"),
    ("solver_options.SCS", {"eps_abs": "abc"}, "solver_options.SCS.eps_abs",
     "SCS option 'eps_abs': expected a number >= 0; got 'abc'"),
    ("solver_options.CLARABEL", {"foo": 1}, "solver_options.CLARABEL.foo",
     "unknown CLARABEL option 'foo'"),
    ("solver_options.CLARABEL", {"max_iter": -1}, "solver_options.CLARABEL.max_iter",
     "expected an integer in \\[1, 4294967295\\]; got -1"),
    ("solver_options.SCS", {"write_data_filename": "/tmp/dump"},
     "solver_options.SCS.write_data_filename", "writes the file '/tmp/dump'"),
    ("solver_options.SDPA", {"resultFile": "../result.txt"}, "solver_options.SDPA.resultFile",
     "writes the file"),
    ("name", "../../escaped", "name", "a plain file name"),
    ("name", "/tmp/absolute", "name", "a plain file name"),
    ("name", ".hidden", "name", "a plain file name"),
    ("name", "", "name", "a plain file name"),
    ("figures", {"../../../x": {"kind": "embedding", "method": "dvu"}},
     "figures.../../../x", "figures/<name>.png: expected a plain file name"),
    ("figures", {"a/b": {"kind": "curve", "metric": "loo"}}, "figures.a/b", "plain file name"),
    ("dataset.options", {"data_home": "/somewhere/else"}, "dataset.options.data_home",
     "outside the data folder"),
    ("dataset.options", {"data_home": "../.."}, "dataset.options.data_home",
     "outside the data folder"),
    ("metrics.status", {"kind": "knn"}, "metrics.status", "a column of every result row"),
    ("methods.dvu.solver_options", {"eps_abs": 1e-3}, "methods.dvu.solver_options",
     "\\[solver_options.<BACKEND>\\]"),
])
def test_bad_specs_name_the_field(path, value, field, message):
    d = _mutate(path, value)(_smoke_dict())
    with pytest.raises(SpecError, match=f"^{field}: .*{message}"):
        parse_spec(d)


@pytest.mark.parametrize("path, value, field, suggestion", [
    ("methods.dvu.estimator", "DUV", "methods.dvu.estimator", "DVU"),
    ("dataset.name", "irs", "dataset.name", "iris"),
    ("solvers", ["CLARABLE"], "solvers", "CLARABEL"),
    ("solver_options.LOWRNK", {"tol": 1e-3}, "solver_options.LOWRNK", "LOWRANK"),
    ("methods.dvu.slack_wieght", 1.0, "methods.dvu.slack_wieght", "slack_weight"),
    ("metrics.knn1.kind", "kn", "metrics.knn1.kind", "knn"),
    ("graph.metric", "manhatan", "graph.metric", "manhattan"),
    ("graph.n_neighbours", 3, "graph.n_neighbours", "n_neighbors"),
    ("labels.fracton", 0.5, "labels.fracton", "fraction"),
    ("paper.values", [{"method": "dvuu", "metric": "knn1", "value": 90.0}],
     "paper.values\\[0\\].method", "dvu"),
    ("figures.loo.metric", "lo", "figures.loo.metric", "loo"),
    # a value among fixed choices: of a schema field, of an estimator, of a sweep
    ("dataset.scale", "standrd", "dataset.scale", "standard"),
    ("methods.dvu.distances", "intervl", "methods.dvu.distances", "interval"),
    ("methods.lgc.kernel", "heat_kn", "methods.lgc.kernel", "heat_knn"),
    ("figures.knn1_vs_slack.param", "slack_weigth", "figures.knn1_vs_slack.param",
     "slack_weight"),
])
def test_bad_names_in_a_spec_get_a_did_you_mean(path, value, field, suggestion):
    # as the solver-option errors do (backend_options): the closest valid name
    d = _mutate(path, value)(_smoke_dict())
    with pytest.raises(SpecError, match=f"^{field}: .*\\(did you mean '{suggestion}'\\?\\)"):
        parse_spec(d)


def test_a_misspelt_shipped_spec_name_gets_a_did_you_mean():
    from sdpembed.experiments.spec import find_spec

    with pytest.raises(SpecError, match="no spec 'smoek' \\(did you mean 'smoke'\\?\\)"):
        find_spec("smoek")
    with pytest.raises(SpecError) as info:
        find_spec("zzzzzz")
    assert "did you mean" not in str(info.value)   # nothing close: no guess


def test_bad_solver_options_stop_the_cli_before_anything_runs(tmp_path, capsys):
    from sdpembed.cli import main

    path = tmp_path / "typo.toml"
    path.write_text(SMOKE.read_text() + "\n[solver_options.LOWRANK]\ntime_limt = 60\n")
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    assert "sdpembed run: solver_options.LOWRANK.time_limt: unknown LOWRANK option" in \
        capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_spec_error_is_an_input_error_and_toml_errors_name_the_file(tmp_path):
    assert issubclass(SpecError, InputError) and issubclass(SpecError, ValueError)
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\n[dataset\n")
    with pytest.raises(SpecError, match="bad.toml is not valid TOML"):
        load_spec(bad)
    with pytest.raises(SpecError, match="no spec 'nowhere'"):
        ex.find_spec("nowhere")
    assert Path(str(ex.find_spec("smoke"))) == SMOKE


def test_none_string_and_sweeps_of_strings():
    d = _smoke_dict()
    d["methods"]["dvu"].update(snr=["none", 0.5], distances="interval")
    spec = parse_spec(d)
    combos = spec.method("dvu").combinations()
    assert {(c["slack_weight"], c["snr"]) for c in combos} == {
        (1.0, None), (1.0, 0.5), (10.0, None), (10.0, 0.5)}
    assert spec.method("dvu").swept == ["slack_weight", "snr"]


# --------------------------------------------------------------------------- solver options


def _dvu_only(d: dict, **dvu) -> dict:
    d["methods"] = {"dvu": {"estimator": "DVU", "n_components": 2, **dvu}}
    d["metrics"] = {"knn1": {"kind": "knn"}}
    del d["figures"]
    return d


@pytest.fixture
def inaccurate_backend(monkeypatch):
    """Backend "INACCURATE": CLARABEL's solution, reported as a LOWRANK solve stopped by its
    time limit is (``optimal_inaccurate`` with a certified gap); records the options it got."""
    from sdpembed import solvers
    from sdpembed.report import Backend

    seen = []

    def backend(formulation, verbose=False, **options):
        seen.append(options)
        report = solvers.solve(formulation, solver="CLARABEL")
        return dataclasses.replace(report, status="optimal_inaccurate", solver="INACCURATE",
                                   options=options, gap=0.00123, certified_gap=0.00123)

    monkeypatch.setitem(solvers.TOOLKIT_BACKENDS, "INACCURATE",
                        Backend("INACCURATE", backend, version=lambda: "test"))
    return seen


def test_solver_options_reach_their_backend_and_inaccurate_solves_are_kept(
        inaccurate_backend, tmp_path):
    d = _dvu_only(_smoke_dict(), slack_weight=10.0, solvers=["INACCURATE", "CLARABEL"])
    d["solver_options"] = {"inaccurate": {"max_iter": 7}, "CLARABEL": {"max_iter": 200}}
    spec = parse_spec(d)
    assert spec.solver_options == {"INACCURATE": {"max_iter": 7}, "CLARABEL": {"max_iter": 200}}
    result = run_spec(spec, seeds=[0], out_dir=tmp_path, progress=False)
    inaccurate, clarabel = result.rows
    # each backend gets its own table, and only its own (DVU's held-out check solves on
    # the same backend: one call per held-out fold, then the fit)
    assert len(inaccurate_backend) >= 1
    assert all(options == {"max_iter": 7} for options in inaccurate_backend)
    assert json.loads(clarabel["solver_options"])["max_iter"] == 200
    # the inaccurate solve is a result: kept with its status and certified gap, not a failure,
    # and not "ok" either
    assert inaccurate["status"] == "inaccurate" and clarabel["status"] == "ok"
    assert result.meta["errors"] == 0 and result.meta["inaccurate"] == 1
    assert inaccurate["solve_status"] == "optimal_inaccurate"
    assert inaccurate["certified_gap"] == inaccurate["gap"] == 0.00123
    assert clarabel["solve_status"] == "optimal" and clarabel["certified_gap"] is None
    # same solution (CLARABEL's) underneath: same embedding, same accuracy
    assert inaccurate["knn1"] == pytest.approx(clarabel["knn1"], abs=1e-12)
    lines = result.summary().splitlines()
    assert lines[next(i for i, line in enumerate(lines) if line.startswith("| dataset"))] \
        .endswith("| knn1 | fit s | solve | certified gap |")
    assert any(line.startswith("| iris | 0.3 | dvu | – | INACCURATE |")
               and line.endswith("| optimal_inaccurate | 1.2e-03 |") for line in lines)
    assert any(line.startswith("| iris | 0.3 | dvu | – | CLARABEL |")
               and line.endswith("| optimal | – |") for line in lines)
    assert "2 runs: 1 ok, 1 inaccurate (kept, see 'solve'), 0 errors" in result.summary()
    with (tmp_path / "results.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert [r["certified_gap"] for r in table] == ["0.00123", ""]


def test_lowrank_time_limit_comes_from_the_spec():
    d = _dvu_only(_smoke_dict(), slack_weight=10.0, solvers=["LOWRANK"])
    d["solver_options"] = {"LOWRANK": {"time_limit": 1.0, "warm_start": "none", "tol": 1e-11}}
    result = run_spec(parse_spec(d), seeds=[0], progress=False)
    row, = result.rows
    # tol 1e-11 is not reached within 1 s (1e-6 is now, from the start rank that follows
    # the graph's density), so the limit stops the solve (optimal_inaccurate).
    # Stopped far from optimal it is no result: an error row, no metric, nothing averaged;
    # stopped within FAR_FROM_OPTIMAL it is kept as "inaccurate" with its certified gap
    if row["status"] == "error":
        assert row["error"].startswith("SolverFailedError: LOWRANK")
        assert "stopped (optimal_inaccurate)" in row["error"]
        assert row.get("knn1") is None and result.meta["errors"] == 1
    else:
        assert (row["status"], row["solve_status"]) == ("inaccurate", "optimal_inaccurate")
        options = json.loads(row["solver_options"])  # the effective LowRankOptions
        assert (options["time_limit"], options["tol"]) == (1.0, 1e-11)
        assert 1e-11 < row["certified_gap"] <= FAR_FROM_OPTIMAL
        assert 0.5 < row["knn1"] <= 1.0 and result.meta["inaccurate"] == 1


# --------------------------------------------------------------------------- summary


def test_summary_puts_paper_numbers_beside_ours(smoke):
    result, _ = smoke
    d = thaw(result.spec.raw)  # the parsed TOML, as plain dicts and lists
    d["paper"] = {"source": "a made-up reference for this test",
                  "values": [{"method": "dvu", "metric": "knn1", "value": 97.7,
                              "params": {"slack_weight": 10.0}},
                             {"method": "raw", "metric": "svm", "value": 88.8, "std": 1.5}]}
    spec = parse_spec(d)
    res = ex.ExperimentResult(spec, result.rows, result.artefacts, result.meta)
    lines = res.summary().splitlines()
    header = next(line for line in lines if line.startswith("| dataset"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    assert cols[5:] == ["dims", "runs used", "knn1", "knn1 (paper)", "svm", "svm (paper)",
                        "transduction", "fit s", "solve"]  # CLARABEL certifies no gap

    def row(method, params):
        line = next(line for line in lines if line.startswith(f"| iris | 0.3 | {method} | "
                                                             f"{params} |"))
        return [c.strip() for c in line.strip("|").split("|")]

    dvu10, dvu1, raw = row("dvu", "slack_weight=10.0"), row("dvu", "slack_weight=1.0"), \
        row("raw", "–")
    assert dvu10[8] == "97.70" and dvu1[8] == "" and raw[10] == "88.80 ± 1.50"
    assert raw[5] == "4" and dvu1[5] == "2"  # embedding dimensions
    knn = [r["knn1"] for r in result.rows if r["method"] == "raw"]
    assert raw[7] == f"{100 * np.mean(knn):.2f} ± {100 * np.std(knn, ddof=1):.2f}"
    assert "- paper: a made-up reference for this test" in lines


# --------------------------------------------------------------------------- shipped specs


@pytest.mark.parametrize("path", sorted(SMOKE.parent.glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_spec_is_valid(path, monkeypatch):
    from sdpembed import solvers

    # the spec's validity does not depend on which optional backends are installed here
    monkeypatch.setattr(solvers, "available_solvers", lambda: sorted(ex.spec.known_solvers()))
    spec = load_spec(path)
    assert spec.name == path.stem and path.stem in ex.list_specs()
    tasks = expand_grid(spec)
    assert len(tasks) >= len(spec.methods) * len(spec.seeds)
    # every paper number is shown next to at least one cell of the grid
    for pv in spec.paper:
        assert any(pv.matches(t.dataset, t.fraction, t.method, t.params) for t in tasks), pv


def test_preparation_errors_are_rows_of_the_grid():
    d = _smoke_dict()
    d["labels"]["fraction"] = 20  # 20 labels per class, but the classes have 10 points
    result = run_spec(parse_spec(d), seeds=[0], progress=False)
    assert len(result.rows) == 5 and {r["status"] for r in result.rows} == {"error"}
    assert all(r["error_stage"] == "prepare" and r["error"].startswith("LabelError")
               and "cannot keep 20 labels" in r["error"] for r in result.rows)
    assert result.meta["errors"] == 5 and "## Errors (5 runs)" in result.summary()


def test_summary_shows_an_error_message_whole_with_its_advice():
    # a refusal's advice comes at the end of its message, past 300 characters
    d = _smoke_dict()
    d["labels"]["fraction"] = 20
    result = run_spec(parse_spec(d), seeds=[0], progress=False)
    long = ("SolverFailedError: LOWRANK stopped without a certificate: "
            + "objective 1.0, bound -1.0; " * 20 + "\n  raise time_limit, or use CLARABEL.")
    assert len(long) > 500
    for r in result.rows:
        r["error"] = long
    summary = result.summary()
    assert "## Errors (5 runs)" in summary
    line = next(x for x in summary.splitlines() if "SolverFailedError" in x)
    assert line.startswith("- ") and line.endswith("raise time_limit, or use CLARABEL.")
    assert line.count("objective 1.0, bound -1.0;") == 20

def test_spectrum_and_prototype_figures(tmp_path):
    from sdpembed.estimators.discriminative import DiscriminativeProjections
    from sdpembed.estimators.dne import DNE

    d = {"name": "figs", "seeds": 1, "dataset": {"name": "wine", "scale": "standard"},
         "labels": {"fraction": 0.5},
         "methods": {"dne": {"estimator": "DNE"},
                     "dp": {"estimator": "DiscriminativeProjections", "n_components": [2, 3]}},
         "metrics": {"knn1": {"kind": "knn"}},
         "figures": {"spec": {"kind": "spectrum", "method": "dne", "mark": "negative"},
                     "proto": {"kind": "label_prototypes", "method": "dp",
                               "params": {"n_components": 3}}}}
    result = run_spec(parse_spec(d), out_dir=tmp_path, progress=False)
    assert set(result.figures) == {"spec", "proto"}
    assert (tmp_path / "figures" / "spec.png").is_file()
    X, y = load_sklearn("wine", return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y_partial = partial_labels(y, 0.5, random_state=0)
    # the kept arrays are those of the first matching run, refitted here directly
    dne = DNE().fit(X, y_partial)
    kept = result.artefacts[result.rows[0]["index"]]
    np.testing.assert_allclose(kept["spectrum"], dne.eigenvalues_, rtol=1e-10, atol=1e-12)
    dp = DiscriminativeProjections(n_components=3).fit(X, y_partial)
    proto = next(a for a in result.artefacts.values() if "prototypes" in a)["prototypes"]
    np.testing.assert_allclose(proto, dp.label_prototypes(), rtol=1e-8, atol=1e-10)
    assert result.rows[0]["n_components"] == dne.n_components_


def test_sample_seed_seed_draws_each_seeds_own_subsample(tmp_path):
    """sample_seed = "seed": the run's seed draws the subsample too (each seed its own
    rows, the same rows for the same seed), and the summary says so; another string is a
    SpecError naming the field."""
    from sdpembed.experiments.tasks import dataset_for_seed, load_data

    d = _smoke_dict()
    d["dataset"]["sample_seed"] = "seed"
    spec = parse_spec(d)
    ds = spec.datasets[0]
    assert ds.sample_seed == "seed"
    a, b, a2 = (load_data(dataset_for_seed(ds, s)).X for s in (0, 1, 0))
    assert a.shape == b.shape and not np.array_equal(a, b)
    np.testing.assert_array_equal(a, a2)
    fixed = parse_spec(_smoke_dict())
    assert dataset_for_seed(fixed.datasets[0], 5).sample_seed == 0
    result = run_spec(spec, out_dir=tmp_path / "out", progress=False)
    assert "drawn by each seed" in result.summary()
    assert "error" not in {r["status"] for r in result.rows}
    d["dataset"]["sample_seed"] = "each"
    with pytest.raises(SpecError, match="sample_seed"):
        parse_spec(d)


def test_deduplicate_keeps_first_of_identical_rows():
    """dataset.deduplicate: repeated rows go before subsampling (first kept, order kept);
    repeated rows whose labels differ are a SpecError, since dropping cannot resolve them."""
    from sdpembed.experiments.tasks import _first_of_duplicates, load_data

    X = np.array([[0.0, 1.0], [2.0, 3.0], [0.0, 1.0], [4.0, 5.0], [2.0, 3.0]])
    y = np.array([0, 1, 0, 1, 1])
    Xu, yu = _first_of_duplicates(X, y, "toy")
    np.testing.assert_array_equal(Xu, X[[0, 1, 3]])
    np.testing.assert_array_equal(yu, y[[0, 1, 3]])
    with pytest.raises(SpecError, match=r"different labels \(rows \[2\]"):
        _first_of_duplicates(X, np.array([0, 1, 1, 1, 1]), "toy")
    d = _smoke_dict()
    d["dataset"] = {"name": "iris", "deduplicate": True}
    ds = parse_spec(d).datasets[0]
    assert ds.deduplicate
    # iris repeats row 101 as row 142 (both class 2): 149 distinct rows remain
    assert load_data(ds).X.shape == (149, 4)
    d["dataset"]["deduplicate"] = "yes"
    with pytest.raises(SpecError, match="deduplicate"):
        parse_spec(d)


def test_a_table_valued_estimator_parameter_passes_validation():
    """A TOML table (``metric_params = {shape = [8, 8]}``) reaches the estimator's own
    checks as the dict the runner gives it, not as the spec's frozen map."""
    d = _smoke_dict()
    d["methods"]["dvu"]["metric"] = "tangent"
    d["methods"]["dvu"]["metric_params"] = {"shape": [2, 2]}
    spec = parse_spec(d)
    (method,) = [m for m in spec.methods if m.label == "dvu"]
    assert thaw(method.params["metric_params"]) == {"shape": [2, 2]}
    d["methods"]["dvu"]["metric_params"] = [2, 2]  # not a table: the estimator's check
    with pytest.raises(SpecError, match="^methods.dvu.metric_params: .*dict"):
        parse_spec(d)
