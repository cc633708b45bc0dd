"""A conic backend is one entry of ``sdpembed.backends.CONIC_BACKENDS``.

The tests register new entries (cvxpy's SCS and CLARABEL under other names, and a
backend that is not installed) and solve through them with no other edit: the solve
layer, the option checks, the result rule, the size guard of the relaxations and the
reference tolerances all read the entry. Each registered solve is compared with the
recorded optimum of a reference instance (``problems/reference``) to the entry's own
``test_tolerance``, and with the built-in backend it wraps.
"""

from __future__ import annotations

import warnings

import pytest

from problems.reference import build, load
from sdpembed import exceptions
from sdpembed.backend_options import BACKEND_SETTINGS, check_backend_options
from sdpembed.backends import (
    CONIC_BACKENDS,
    ConicBackend,
    backend_options_for,
    register_conic_backend,
    unregister_conic_backend,
)
from sdpembed.backends.interfaces import scs_stats
from sdpembed.relaxations import MAX_INTERIOR_POINT_DIM, check_sdp_size
from sdpembed.solve_status import NEAR_OPTIMAL
from sdpembed.solvers import INSTALL_HINTS, available_solvers, choose_backend, solve

INSTANCE = load("dvu_interval")

#: SCS under another name: first order, absolute residuals, held to 1e-4 when inaccurate
SCS_AGAIN = ConicBackend(
    "SCS_AGAIN", "SCS", CONIC_BACKENDS["SCS"].settings, 1e-4, "pip install scs",
    defaults={"eps_abs": 1e-6, "eps_rel": 1e-6, "max_iters": 50_000}, stats=scs_stats,
    interior_point=False, absolute_residuals=True, near_optimal=1e-4,
    time_limit_option="time_limit_secs", tolerance_options=("eps_abs", "eps_rel"))

#: cvxpy's own CLARABEL interface (no statistics kept): an interior-point entry
PLAIN_CLARABEL = ConicBackend(
    "PLAIN_CLARABEL", "CLARABEL", CONIC_BACKENDS["CLARABEL"].settings, 1e-6,
    "pip install clarabel")

#: a backend this machine does not have
ABSENT = ConicBackend("ABSENT", "NO_SUCH_CVXPY_SOLVER", {}, 1e-5, "pip install absent")


@pytest.fixture
def registered():
    entries = (SCS_AGAIN, PLAIN_CLARABEL, ABSENT)
    for e in entries:
        register_conic_backend(e)
    try:
        yield entries
    finally:
        for e in entries:
            unregister_conic_backend(e.name)
    assert not {e.name for e in entries} & set(CONIC_BACKENDS)


def _solve(name, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", exceptions.InaccurateSolutionWarning)
        return solve(build(INSTANCE), solver=name, **options)


def _close(value, entry):
    opt = INSTANCE["optimum"]
    return abs(value - opt) <= (entry.test_tolerance + INSTANCE["tolerance"]) * abs(opt)


@pytest.mark.parametrize("entry", [SCS_AGAIN, PLAIN_CLARABEL], ids=lambda e: e.name)
def test_a_registered_entry_solves_with_no_other_edit(registered, entry):
    assert entry.name in available_solvers()
    rep = _solve(entry.name.lower())
    assert rep.solver == entry.name
    assert rep.status == "optimal"
    assert _close(rep.objective, entry), (rep.objective, INSTANCE["optimum"])
    # the built-in backend it wraps reaches the same point, to the looser of the two
    base = _solve(entry.cvxpy_name)
    tol = max(entry.test_tolerance, CONIC_BACKENDS[entry.cvxpy_name].test_tolerance)
    assert abs(rep.objective - base.objective) <= 2 * tol * abs(INSTANCE["optimum"])
    assert rep.options == {**entry.defaults}
    assert rep.primal_residual is not None   # from its stats, or computed by sdpembed


def test_a_registered_entry_is_read_by_every_layer(registered):
    # options: its settings table, with the backend named in the error
    assert BACKEND_SETTINGS["SCS_AGAIN"] is SCS_AGAIN.settings
    with pytest.raises(exceptions.InputError, match=r"unknown SCS_AGAIN option 'eps_ab'.*"
                                                    r"did you mean 'eps_abs'"):
        check_backend_options("SCS_AGAIN", {"eps_ab": 1e-3})
    with pytest.raises(exceptions.InputError, match="SCS_AGAIN option 'max_iters'"):
        _solve("SCS_AGAIN", max_iters=-1)
    # the result rule: its near-optimal limit and absolute residuals
    assert NEAR_OPTIMAL["SCS_AGAIN"] == 1e-4 and "PLAIN_CLARABEL" not in NEAR_OPTIMAL
    # the size guard of the relaxations: interior point or not
    p = MAX_INTERIOR_POINT_DIM + 1
    check_sdp_size(p, "SCS_AGAIN")
    with pytest.raises(exceptions.ProblemTooLargeError, match="PLAIN_CLARABEL"):
        check_sdp_size(p, "plain_clarabel")
    # install hints, fallbacks and option translation
    assert INSTALL_HINTS["ABSENT"] == "pip install absent"
    assert backend_options_for("SCS_AGAIN", time_limit=5, tol=1e-5) == {
        "time_limit_secs": 5, "eps_abs": 1e-5, "eps_rel": 1e-5}
    rep = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", exceptions.InaccurateSolutionWarning)
        warnings.simplefilter("ignore", UserWarning)   # cvxpy's, on SCS's one iteration
        rep = solve(build(INSTANCE), solver="SCS", max_iters=1, fallback=["SCS_AGAIN"])
    assert [a["solver"] for a in rep.attempts] == ["SCS", "SCS_AGAIN"]
    assert rep.solver == "SCS_AGAIN" and _close(rep.objective, SCS_AGAIN)
    # the error hints that send a user to a conic backend name the registered ones
    from sdpembed.formulations import gram_sdp
    with pytest.raises(exceptions.UnsupportedProblemError, match="SCS_AGAIN, PLAIN_CLARABEL "
                                                                 "or ABSENT instead"):
        solve(gram_sdp(5), solver="LOWRANK")


def test_an_entry_without_auto_priority_is_never_chosen(registered):
    name, _ = choose_backend(build(INSTANCE))
    assert name not in {"SCS_AGAIN", "PLAIN_CLARABEL", "ABSENT"}


def test_an_absent_backend_is_a_typed_error_with_its_hint(registered, capsys):
    from sdpembed.cli import _cmd_solvers
    from sdpembed.experiments.spec import known_solvers

    assert "ABSENT" not in available_solvers()
    assert {"SCS_AGAIN", "PLAIN_CLARABEL", "ABSENT"} <= known_solvers()   # specs accept them
    _cmd_solvers(None)
    out = capsys.readouterr().out
    assert "| SCS_AGAIN |" in out and "- ABSENT: not installed; pip install absent" in out
    with pytest.raises(exceptions.SolverMissingError,
                       match=r"ABSENT is not usable \(not installed\); pip install absent"):
        _solve("ABSENT")


def test_built_in_option_translation():
    assert backend_options_for("CLARABEL", time_limit=10.0, tol=1e-7) == {
        "time_limit": 10.0, "tol_gap_abs": 1e-7, "tol_gap_rel": 1e-7, "tol_feas": 1e-7}
    assert backend_options_for("csdp", time_limit=3) == {"time_limit": 3}
    for name, entry in CONIC_BACKENDS.items():
        opts = backend_options_for(name, tol=1e-6)
        check_backend_options(name, opts)          # each translation is a valid option set
        assert set(opts) == set(entry.tolerance_options)
    with pytest.raises(exceptions.InputError, match="CVXOPT has no time-limit option"):
        backend_options_for("CVXOPT", time_limit=1)
    with pytest.raises(exceptions.InputError, match="not a conic backend"):
        backend_options_for("LOWRANK", time_limit=1)


def test_entries_are_checked_when_made_and_registered():
    with pytest.raises(exceptions.InputError, match="upper-case"):
        ConicBackend("scs2", "SCS", {}, 1e-4, "")
    with pytest.raises(exceptions.InputError, match="test_tolerance"):
        ConicBackend("SCS2", "SCS", {}, 0.0, "")
    with pytest.raises(exceptions.InputError, match="not one of its settings"):
        ConicBackend("SCS2", "SCS", {}, 1e-4, "", time_limit_option="time_limit_secs")
    with pytest.raises(exceptions.InputError, match="registered already"):
        register_conic_backend(CONIC_BACKENDS["SCS"])
