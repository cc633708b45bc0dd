"""The out-of-sample benchmark's bookkeeping: the goal checks and the report.

The accuracies below are made up (the benchmark's numbers come from running it,
never from tests); what is tested is that each goal is judged by its stated
rule and that the report shows every population and verdict.
"""

import pytest

bench = pytest.importorskip("problems.bench_outofsample")


def _setup(test_3nn, heldout_3nn, transform_s):
    acc = lambda a, b: {"3-NN": a, "M-SVM": b}  # noqa: E731
    return dict(
        name="tangent graph, seed 0", metric="tangent", seed=0, n_train=2500, n_labeled=2000,
        n_heldout=4791, n_test=2007, out_of_sample_neighbors=2, fit_seconds=100.0,
        solve=dict(status="optimal", gap=1e-6), load_average_at_start=(1.0, 1.0, 1.0),
        load_average_at_end=(2.0, 2.0, 2.0),
        rows={
            "DVU, transductive": {"hidden": acc(0.978, 0.974), "test": acc(0.950, 0.946)},
            "DVU, out of sample (distances)": {"heldout": acc(heldout_3nn, 0.981),
                                               "test": acc(test_3nn, 0.9567)},
            "raw pixels, tangent 3-NN (exact), labelled digits": {
                "hidden": {"k-NN": 0.974}, "heldout": {"k-NN": 0.980},
                "test": {"k-NN": 0.9567}},
        },
        timing={"distances": {"transform_seconds": transform_s},
                "neighbour_search_seconds": 1.0, "distances_placement_seconds": 0.5,
                "distances_max_gap": 1e-6, "distances_newton_steps": 60,
                "distances_lifted_fraction": 1.0, "tangent_3nn_raw_seconds": 20.0},
        sweep=[dict(k=2, method="distances", loo_3nn=0.986, heldout=acc(0.979, 0.981),
                    test=acc(0.954, 0.9567))])


def test_goals_follow_their_rules():
    # 3-NN: test 96.9 is within 1 point of 97.8 (>= 96.8) and above the raw 95.67;
    # held-out 96.7 is not within 1 point; M-SVM: test 95.67 ties the raw tangent
    # 3-NN (not above) and is 1.73 below its transductive 97.4
    s = _setup(test_3nn=0.969, heldout_3nn=0.967, transform_s=10.5)
    g = {r["classifier"]: r for r in bench.goals(s)}
    assert set(g) == {"3-NN", "M-SVM"} and g["3-NN"]["method"] == "distances"
    assert g["3-NN"]["test_within_1_of_transductive"]
    assert not g["3-NN"]["heldout_within_1_of_transductive"]
    assert g["3-NN"]["test_above_raw_tangent_3nn"]
    assert not g["M-SVM"]["test_within_1_of_transductive"]
    assert g["M-SVM"]["heldout_within_1_of_transductive"]
    assert not g["M-SVM"]["test_above_raw_tangent_3nn"]
    assert not g["3-NN"]["transform_within_10_s"]
    s = _setup(test_3nn=0.95, heldout_3nn=0.979, transform_s=4.0)
    g = {r["classifier"]: r for r in bench.goals(s)}
    assert not g["3-NN"]["test_within_1_of_transductive"]
    assert g["3-NN"]["heldout_within_1_of_transductive"]
    assert g["3-NN"]["transform_within_10_s"]


def test_report_shows_populations_and_verdicts():
    s = _setup(test_3nn=0.95, heldout_3nn=0.979, transform_s=4.0)
    s["goals"] = bench.goals(s)
    md = bench.render("outofsample_usps", dict(
        info=dict(machine="x86_64", cpus=2, python="3.11", numpy="2"), setups=[s]))
    assert "| DVU, transductive | 97.80 | 97.40 |  |  | 95.00 | 94.60 |" in md
    assert "| DVU, out of sample (distances) |  |  | 97.90 | 98.10 | 95.00 | 95.67 |" in md
    assert ("| raw pixels, tangent 3-NN (exact), labelled digits | 97.40 |  | 98.00 |  | "
            "95.67 |  |") in md
    assert "| distances | 3-NN | no | yes | no | yes |" in md
    assert "| 2 | distances | 97.90 | 98.10 | 98.60 | 95.40 | 95.67 |" in md
