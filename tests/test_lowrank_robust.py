"""LOWRANK on the hard classes of the robustness battery (issue 41), at small size, and the
progress a person sees (``DVU(verbose=...)``, ``MVU(verbose=...)``).

The battery itself (``python -m problems.bench_large lowrank_battery``) measures time; these
tests check outcomes only: a certified gap at most ``tol`` (the certificate is a proof, so
no second solver is needed to trust it), and the objective against CLARABEL where the
instance is small enough for an interior-point reference.
"""

import pytest
from sklearn.datasets import load_digits

from sdpembed import DVU, MVU


def _digits(n=120):
    X, y = load_digits(return_X_y=True)
    X, y = X[:n], y[:n].copy()
    y[::5] = -1
    return X, y


@pytest.mark.filterwarnings("ignore::sdpembed.exceptions.EmbeddingWorseThanInputWarning")
def test_dvu_verbose_prints_the_prefit_and_the_table(capsys):
    X, y = _digits()
    DVU(n_components=2, solver="LOWRANK", verbose=1, random_state=0).fit(X, y)
    out = capsys.readouterr().out
    assert "DVU: held-out pre-fit" in out
    assert "DVU: held-out" in out and "accuracy" in out
    # the outer loop's table, twice (pre-fit and full fit), with its header and rows
    assert out.count(" outer | objective") == 2
    assert "DVU: LOWRANK optimal" in out


def test_mvu_verbose_prints_the_table_and_quiet_prints_nothing(capsys):
    X, _ = _digits(60)
    MVU(n_components=2, solver="LOWRANK", n_neighbors=4, verbose=True).fit(X)
    out = capsys.readouterr().out
    assert " outer | objective" in out and "MVU: solving the SDP" in out
    MVU(n_components=2, solver="LOWRANK", n_neighbors=4).fit(X)
    assert capsys.readouterr().out == ""


def test_verbose_is_validated():
    X, _ = _digits(60)
    with pytest.raises(ValueError):
        MVU(verbose="loud").fit(X)
