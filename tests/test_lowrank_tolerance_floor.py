"""LOWRANK's subproblem tolerance floor (:mod:`sdpembed.lowrank.tolerance_floor`): after a
certificate attempt, a subproblem stopped at its cap sets the floor at half the gradient
norm it reached; a subproblem that takes no iteration drops it (docs/tuning.md, "Rank
growth on tiny negative eigenvalues; a floor on the subproblem tolerance (2026-11-30,
twentieth round)")."""

from types import SimpleNamespace

import pytest

from sdpembed.lowrank.tolerance_floor import _FLOOR_SHARE, ToleranceFloor


def _res(nit, gnorm):
    return SimpleNamespace(nit=nit, gnorm=gnorm)


def test_no_floor_before_a_certificate_attempt():
    floor = ToleranceFloor()
    floor.observe(_res(6000, 2e-5), 1e-9, capped=True, unit=0.1, attempted=False)
    assert floor.apply(1e-10) == 1e-10


def test_a_capped_subproblem_after_an_attempt_sets_the_floor():
    floor = ToleranceFloor()
    floor.observe(_res(6000, 2e-5), 1e-9, capped=True, unit=0.1, attempted=True)
    # in gtol's relative unit: half of 2e-5 / 0.1
    assert floor.apply(1e-10) == pytest.approx(_FLOOR_SHARE * 2e-4)
    # the floor never lowers a tolerance above it
    assert floor.apply(1e-2) == 1e-2


def test_a_subproblem_stopped_by_its_tolerance_sets_no_floor_and_keeps_the_last():
    floor = ToleranceFloor()
    floor.observe(_res(120, 5e-10), 1e-9, capped=False, unit=0.1, attempted=True)
    assert floor.apply(1e-12) == 1e-12
    floor.observe(_res(50, 4e-5), 1e-9, capped=True, unit=0.1, attempted=True)
    floor.observe(_res(30, 1e-4), 2e-5, capped=False, unit=0.1, attempted=True)
    assert floor.apply(1e-12) == pytest.approx(_FLOOR_SHARE * 4e-4)
    # capped but within its tolerance (the cap's last step met it): no new floor
    floor.observe(_res(50, 1e-6), 2e-5, capped=True, unit=0.1, attempted=True)
    assert floor.apply(1e-12) == pytest.approx(_FLOOR_SHARE * 4e-4)


def test_a_subproblem_without_iterations_drops_the_floor():
    floor = ToleranceFloor()
    floor.observe(_res(6000, 2e-5), 1e-9, capped=True, unit=0.1, attempted=True)
    floor.observe(_res(0, 1e-5), 1e-5, capped=False, unit=0.1, attempted=True)
    assert floor.apply(1e-12) == 1e-12
