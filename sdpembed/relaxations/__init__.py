r"""Convex relaxations that turn eigenproblems into semidefinite programs.

Every eigen-based method of the toolkit (discriminative projections, LDA, LPP,
SDA, DNE, TCA, OTCA) optimises a quadratic trace over a subspace. This module
states those problems as SDPs and solves them in closed form too, so the two
paths can be compared.

Three problem families, for symmetric :math:`A, B \in \mathbb{S}^p` and a
target dimension :math:`1 \le d \le p`:

*trace*
    :math:`\min_{P^\top P = I_d} \operatorname{tr}(P^\top A P)`. With
    :math:`Y = P P^\top` this is :math:`\min \langle A, Y\rangle` over the
    Fantope :math:`\mathcal{F}_d = \{0 \preceq Y \preceq I,\ \operatorname{tr} Y = d\}`,
    the convex hull of the rank-:math:`d` orthogonal projectors. The
    relaxation is exact (Ky Fan, 1949): a linear function attains its minimum
    over :math:`\mathcal{F}_d` at an extreme point, and the minimum is the sum
    of the :math:`d` smallest eigenvalues of :math:`A`
    (:func:`fantope_trace`).

*ratio trace* (generalized eigenproblem)
    :math:`\min_{P^\top B P = I_d} \operatorname{tr}(P^\top A P)` with
    :math:`B \succ 0`. With :math:`Z = P P^\top` and the congruence
    :math:`W = B^{1/2} Z B^{1/2}` the feasible set becomes the Fantope in
    :math:`W`, so the relaxation is exact and its value is the sum of the
    :math:`d` extreme generalized eigenvalues of :math:`(A, B)`
    (:func:`ratio_trace`).

*trace ratio*
    :math:`\max_{P^\top P = I_d} \operatorname{tr}(P^\top A P) / \operatorname{tr}(P^\top B P)`.
    Over the Fantope the objective :math:`\langle A, Y\rangle / \langle B, Y\rangle`
    is linear-fractional, hence quasi-linear, and its maximum is attained at
    an extreme point (a rank-:math:`d` projector), so the Fantope relaxation is
    exact as well. It is solved either as one SDP through the Charnes–Cooper
    transformation (:func:`trace_ratio`) or as a Dinkelbach iteration over
    Fantope subproblems (:func:`sdpembed.sequential.dinkelbach`, which calls
    the solver repeatedly and so lives above :mod:`sdpembed.solvers`); its
    classical closed-form solver is the iterative trace-ratio algorithm of
    Wang et al. (2007) (:func:`trace_ratio_iteration`).

*Rank-deficient pencils.* Scatter matrices of real data are often singular
(constant or collinear features, more features than samples). The builders
above never regularise silently: they raise :class:`SingularMatrixError`.
:func:`reduce_pencil` is the explicit rank-revealing step the estimators take
first: it restricts the pencil to the numerical range of its matrices (an
eigendecomposition with a stated tolerance, :data:`RANK_TOL`), which removes
the directions that carry no information and leaves the solutions along the
others unchanged; ``regularization=r`` (:math:`B + r I`) remains available.

References
----------
Ky Fan, "On a theorem of Weyl concerning eigenvalues of linear
transformations", PNAS 35 (1949).
Overton & Womersley, "On the sum of the largest eigenvalues of a symmetric
matrix", SIAM J. Matrix Anal. Appl. 13 (1992).
H. Wang, S. Yan, D. Xu, X. Tang, T. Huang, "Trace ratio vs. ratio trace for
dimensionality reduction", CVPR 2007.
A. Charnes, W. W. Cooper, "Programming with linear fractional functionals",
Naval Res. Logist. Q. 9 (1962).
W. Dinkelbach, "On nonlinear fractional programming", Management Sci. 13 (1967).

The package's modules, one concept each (every name is importable from
``sdpembed.relaxations``):

* :mod:`~sdpembed.relaxations.pencil`: :class:`Pencil`, its checks, the size guard;
* :mod:`~sdpembed.relaxations.fantope`: the SDP builders;
* :mod:`~sdpembed.relaxations.closed_form`: eigenvectors and the trace-ratio iteration;
* :mod:`~sdpembed.relaxations.reduction`: preconditioning and the rank-revealing step;
* :mod:`~sdpembed.relaxations.formulate`: a pencil to its SDP.
"""

from __future__ import annotations

from ..exceptions import (  # noqa: F401 - re-exported, as before the split
    InputError,
    ProblemTooLargeError,
    SingularMatrixError,
)
from .closed_form import (  # noqa: F401 - the public names of the package
    generalized_eigh,
    principal_angles,
    rank_gap,
    rayleigh_ritz,
    recover_basis,
    solve_closed_form,
    trace_ratio_iteration,
)
from .fantope import (  # noqa: F401 - the public names of the package
    fantope_constraints,
    fantope_subproblem,
    fantope_trace,
    ratio_trace,
    trace_ratio,
)
from .formulate import (  # noqa: F401 - the public names of the package
    formulate,
    formulate_reduced,
)
from .pencil import (  # noqa: F401 - the public names of the package
    KINDS,
    MAX_INTERIOR_POINT_DIM,
    RANK_TOL,
    SINGULAR_RCOND,
    Pencil,
    TraceRatioResult,
    absolute_regularization,
    check_sdp_size,
)
from .reduction import (  # noqa: F401 - the public names of the package
    PRECONDITIONERS,
    NumericalRange,
    PencilReduction,
    numerical_range,
    precondition,
    reduce_pencil,
)

__all__ = [
    "SingularMatrixError",
    "Pencil",
    "TraceRatioResult",
    "KINDS",
    "fantope_constraints",
    "fantope_trace",
    "ratio_trace",
    "trace_ratio",
    "fantope_subproblem",
    "trace_ratio_iteration",
    "formulate",
    "solve_closed_form",
    "generalized_eigh",
    "recover_basis",
    "rayleigh_ritz",
    "rank_gap",
    "principal_angles",
    "check_sdp_size",
    "absolute_regularization",
    "precondition",
    "PRECONDITIONERS",
    "RANK_TOL",
    "NumericalRange",
    "numerical_range",
    "PencilReduction",
    "reduce_pencil",
    "formulate_reduced",
]
