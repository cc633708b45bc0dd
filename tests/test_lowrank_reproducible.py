"""The certificate's eigenvalues are the same in every run (docs/tuning.md, "Deadlines in
every factorisation; edge differences; a reproducible bound").

ARPACK asks its caller for a random vector at restarts; SciPy (>= 1.15) draws it from a
generator seeded by the operating system unless given one, so two Lanczos runs from the
same start used to end at different Ritz values and residuals, and with them the verified
:math:`\\lambda_{\\min}` at the coercive point, which the shifted certificate rests on.
"""

import numpy as np
import pytest
import tomllib

import sdpembed.lowrank as lowrank
from problems import bench_large
from sdpembed.lowrank.spectrum import _lambda_min
from sdpembed.lowrank.verify import _verified_lambda_min


@pytest.fixture(scope="module")
def usps200(usps_path):
    """The benchmark rows' instance (``lowrank_scale.toml``: USPS, 80 % labelled,
    Euclidean 2-NN + 1, slack weight 1) at 200 digits: ARPACK asks for random vectors
    here (about a dozen per Lanczos run at ``y0``), on the bundled scikit-learn digits it
    did not."""
    spec = tomllib.loads((bench_large.HERE / "benchmarks" / "lowrank_scale.toml").read_text())
    run = {"method": "dvu", "n": 200}
    X, _, y_obs, _, graph = bench_large._instance(spec, run)
    gp = bench_large._formulation(spec, run, X, y_obs, graph).current_problem()
    space = lowrank.FactorSpace(gp, None, limits=lowrank.DenseLimits(eig=10))
    return space, lowrank.DistancePenalty(gp)


def test_lambda_min_at_the_coercive_point_is_the_same_in_every_run(usps200):
    """The boundedness test's Lanczos at :math:`y_0 = w` (its value is the certificates'
    ``mu0``) run five times at the solve's tolerance, and its verification: bit for bit
    the same values. On main the Ritz value moved in its 8th digit, the residual (hence
    the estimate and the verified bound) in its 2nd."""
    space, pen = usps200
    y0, nu0 = pen.coercive_point(), np.zeros(space.q)
    runs = [_lambda_min(space, y0, nu0, tol=1e-6) for _ in range(5)]
    assert len({(e.ritz, e.residual, e.value) for e in runs}) == 1
    assert runs[0].value > 0                                 # bounded: a coercive point
    verified = {_verified_lambda_min(space, y0, nu0, runs[0].value)[0] for _ in range(3)}
    assert len(verified) == 1 and None not in verified
    assert verified.pop() <= runs[0].value

