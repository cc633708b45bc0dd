"""LOWRANK grows the rank from a rank-deficient factor where its certificate has no bound at
all (no coercive dual point): differential seed 110,572 (MVU, quadratic distances, 17
points) stalled there at rank 4 for 200 outer iterations and was refused, although
CLARABEL and CSDP solve it (docs/tuning.md, "110,572: a rank-deficient factor with no
bound")."""

#: CLARABEL's objective on seed 110,572 (CSDP: -213.234343)
_CLARABEL = -213.234342


def test_a_deficient_factor_without_a_bound_grows_and_certifies(
        differential_formulation, quiet_solve):
    # the optimum has rank 2; the factor ends with two columns near 1e-9 and S(y) has
    # lambda_min -2.8e-9, and the quadratic penalty's coercive point has lambda_min
    # -8.3e-3: no shifted bound, and (before) no growth from a deficient factor
    f = differential_formulation(110572)
    optimum = quiet_solve(f, "CLARABEL").objective
    assert abs(optimum - _CLARABEL) <= 1e-5 * abs(_CLARABEL)
    rep = quiet_solve(f, "LOWRANK")
    assert rep.status == "optimal", rep.status
    assert rep.certified_gap is not None and rep.certified_gap <= 1e-4
    # a true bound, and an objective within the certified gap of the optimum
    assert rep.extra["lower_bound"] <= optimum + 1e-6 * abs(optimum)
    assert abs(rep.objective - optimum) <= 2e-4 * abs(optimum)
