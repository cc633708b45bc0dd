"""problems/bench_dvu_defaults.py: settings parsed as written, rows and hidden labels drawn as
the spec runner draws them, and one fit scored against scikit-learn's 3-NN on the same rows."""

import numpy as np
import pytest

bench = pytest.importorskip("problems.bench_dvu_defaults")


def test_a_setting_is_a_label_and_typed_parameters():
    assert bench.parse_setting("default") == ("default", {})
    assert bench.parse_setting("mm:scale=minmax,n_neighbors=3,slack_weight=0.3") == (
        "mm", {"scale": "minmax", "n_neighbors": 3, "slack_weight": 0.3})


def test_the_draw_is_the_spec_runners():
    from sdpembed.experiments.schema import DatasetSpec, LabelSpec
    from sdpembed.experiments.tasks import load_data, split

    X, y, mask = bench._data("wine", 200, 3, "standard")
    ds = DatasetSpec(name="wine", n_samples=178, sample_seed=3, scale="standard")
    s = split(ds, LabelSpec((0.8,), True, 2), 0.8, 3)
    np.testing.assert_array_equal(X, s.X)
    np.testing.assert_array_equal(mask, s.mask)
    np.testing.assert_array_equal(y, load_data(ds).y)
    # 80 % of each class kept, at least 2
    for c in np.unique(y):
        assert mask[y == c].sum() == pytest.approx(0.8 * (y == c).sum(), abs=1)


def test_one_fit_scores_the_hidden_labels_as_scikit_learn_does():
    from sklearn.neighbors import KNeighborsClassifier

    row = bench.run_one(("wine", 200, 0, "default", {}, [2, 10, "all"]))
    X, y, mask = bench._data("wine", 200, 0, "standard")
    knn = KNeighborsClassifier(n_neighbors=3).fit(X[mask], y[mask])
    assert row["raw"] == pytest.approx(100 * np.mean(knn.predict(X[~mask]) == y[~mask]))
    assert row["status"] == "optimal" and row["gap"] <= 1e-4
    # the factor's top 10 coordinates are the estimator's own 10-dimensional embedding
    assert row["knn"]["10"] == row["knn"]["fit"]
    assert 0 <= row["knn"]["2"] <= 100 and row["cpu_s"] > 0
