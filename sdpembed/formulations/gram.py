"""Shared machinery of the Gram-matrix SDPs (DVU, MVU).

Both problems optimise over a centred Gram matrix :math:`G \\succeq 0`,
:math:`G\\mathbf 1 = 0`, of ``n`` embedded points with

* a linear objective :math:`\\langle C, G\\rangle` whose matrix is diagonal
  plus low rank (:class:`DiagPlusLowRank`),
* distance constraints on a sparse edge set: for edge :math:`e=(i,j)`,
  :math:`D_e(G) = G_{ii} + G_{jj} - 2G_{ij} = \\langle a_e a_e^T, G\\rangle`
  with :math:`a_e = e_i - e_j` (:func:`edge_operator`).

This module holds the numpy description of such a problem
(:class:`GramProblem`) and turns it into a cvxpy :class:`Formulation`
(:func:`build_gram_formulation`), optionally on a face or subspace
:math:`G = V Y V^T` (facial reduction of the centring constraint, or a
reduced basis for large n). The large-n solver reads the same
:class:`GramProblem` (:meth:`GramFormulation.current_problem`).

The description lives in :mod:`~sdpembed.formulations.gram_problem`, the memory
probe in :mod:`~sdpembed.formulations.memory`, the parameters in
:mod:`~sdpembed.formulations.gram_parameters` and the reduced bases in
:mod:`~sdpembed.formulations.reduced_basis`; this module holds the cvxpy
translation and re-exports their names (``from sdpembed.formulations.gram import
GramProblem`` works as before).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any

import cvxpy as cp
import numpy as np

from .._checks import as_int
from ..backends import conic_alternatives
from ..exceptions import InputError, UnsupportedProblemError
from ._base import Formulation, _frozen
from .describe import gram_summary
from .gram_parameters import PARAMETER_FIELDS, gram_parameters, with_parameter_values
from .gram_problem import DISTANCE_MODES, GramProblem, centering_basis, edge_operator
from .matrices import DenseSym, DiagPlusLowRank
from .memory import (
    _check_basis_memory,
    _check_memory,
    available_memory,
    dense_memory_estimate,
)
from .reduced_basis import gram_basis, laplacian_basis

__all__ = ["DiagPlusLowRank", "DenseSym", "GramProblem", "GramFormulation", "edge_operator",
           "centering_basis", "build_gram_formulation", "laplacian_basis", "gram_basis",
           "dense_memory_estimate", "available_memory", "DISTANCE_MODES", "PARAMETER_FIELDS",
           "gram_parameters", "with_parameter_values"]

logger = logging.getLogger(__name__)


class GramFormulation(Formulation):
    r"""A :class:`Formulation` of a Gram SDP: a structured description and a lazy cvxpy problem.

    The description is a :class:`GramProblem` (:attr:`gram_problem`; for the
    explicit-centroid DVU the lifted one, with the points' problem in
    :attr:`points_problem`) and the basis; backends that read it
    (``"LOWRANK"``) take it through :meth:`current_problem`, which applies the
    *current* values of :attr:`parameters` and the constraints added by
    :meth:`with_constraints`. The cvxpy ``problem`` is built the first time it is
    read, after a memory check that raises
    :class:`~sdpembed.exceptions.ProblemTooLargeError` (naming
    ``solver="LOWRANK"``) when the dense problem would not fit; ``variables`` and
    ``expressions`` (``"gram"``, the points' :math:`n\times n` Gram matrix) are
    built on first use without building the problem, so that constraints can be
    written on ``expressions["gram"]`` at any size. ``parameters`` exist from the
    start and are shared by the cvxpy problem and the description: changing
    ``f.parameters["slack_weight"].value`` changes what every backend solves.

    ``"LOWRANK"`` stores its solution as a factor :math:`G = FF^T`
    (:attr:`factor`); :meth:`value` answers ``"gram"`` from it when the variables
    were never built.
    """

    _LAZY = ("problem", "variables", "expressions")

    def __init__(self, meta: dict, size: int, n_edges: int,
                 basis: np.ndarray | Callable[[], np.ndarray] | None = None,
                 centered_basis: bool = False, *, parameters: dict | None = None,
                 user_constraints: tuple = (), parent: GramFormulation | None = None,
                 user_objective: tuple = ()):
        object.__setattr__(self, "_basis", basis)
        object.__setattr__(self, "_centered", bool(centered_basis))
        object.__setattr__(self, "_size", int(size))
        object.__setattr__(self, "_n_edges", int(n_edges))
        object.__setattr__(self, "_factor", None)
        object.__setattr__(self, "_user_constraints", tuple(user_constraints))
        object.__setattr__(self, "_user_objective", tuple(user_objective))
        object.__setattr__(self, "_parent", parent)
        object.__setattr__(self, "_base", None)
        object.__setattr__(self, "_signature", None)
        object.__setattr__(self, "meta", _frozen(meta))
        if parameters is None:
            parameters = gram_parameters(meta["gram_problem"])
        object.__setattr__(self, "parameters", _frozen(parameters))

    def __getattr__(self, name):
        if name in ("variables", "expressions"):
            self._build_variables()
            return object.__getattribute__(self, name)
        if name == "problem":
            self._build()
            return object.__getattribute__(self, name)
        raise AttributeError(name)

    # ------------------------------------------------------------------ typed description
    @property
    def gram_problem(self) -> GramProblem:
        """The :class:`GramProblem` the cvxpy problem is built from (for the explicit-centroid
        DVU the lifted one over points, centroids and their mean), at the builder's values."""
        return self.meta["gram_problem"]

    @property
    def points_problem(self) -> GramProblem:
        """The points' :class:`GramProblem` at the builder's values: the same as
        :attr:`gram_problem` except for the explicit-centroid DVU, where it is the
        centroid-eliminated problem (what ``"LOWRANK"`` solves; see
        :func:`~sdpembed.formulations.dvu.centroid_lifting`). :meth:`current_problem`
        applies the current parameter values and the added constraints to it."""
        return self.meta.get("eliminated_problem", self.meta["gram_problem"])

    @property
    def n_points(self) -> int:
        """Number of embedded points :math:`n` (the side of ``expressions["gram"]``)."""
        return self.points_problem.n

    @property
    def n_edges(self) -> int:
        """Number of edges of the graph (distance constraints or penalties)."""
        return self._n_edges

    @property
    def psd_size(self) -> int:
        """Side of the PSD matrix variable of the cvxpy problem (``G``, or ``Y`` on a basis)."""
        return self._size

    @property
    def distance_scale(self) -> float:
        r"""The factor the target distances were divided by (``normalize=True``: their
        mean), so that the Gram matrix in the data's units is ``distance_scale * G``."""
        return float(self.meta.get("distance_scale", 1.0))

    @property
    def classes(self) -> np.ndarray | None:
        """The class labels of DVU (in the order of the label indices), ``None`` for MVU."""
        return self.meta.get("classes")

    @property
    def centroids(self) -> str | None:
        """DVU's centroid form, ``"explicit"`` or ``"eliminated"``; ``None`` for MVU."""
        return self.meta.get("centroids")

    @property
    def basis_rank(self) -> int | None:
        """Rank of the reduced Laplacian basis, or ``None`` (the full Gram matrix)."""
        rank = self.meta.get("basis_rank")
        return None if rank is None else int(rank)

    @property
    def reduce_face(self) -> bool:
        """Whether the problem is posed on the face :math:`G = VYV^T`, :math:`V^T\\mathbf 1 = 0`."""
        return bool(self.meta.get("reduce_face", False))

    @property
    def centered_basis(self) -> bool:
        """Whether the basis satisfies the centring constraints (they are then left out)."""
        return self._centered

    @property
    def trace_sign(self) -> float:
        """+1 when a trace term is minimised (or absent), -1 when it is maximised."""
        return float(self.meta.get("trace_sign", 1.0))

    def summary(self) -> str:
        """The program in plain-text math with its sizes, read from the description.

        Method, variant, paper and equations; the data sizes (points, edges,
        classes, the distance scale); the SDP as posed (on the face or reduced
        basis when there is one); the current parameter values; the constraints
        added with :meth:`with_constraints`; and the cones a conic solver would
        receive (:func:`~sdpembed.formulations.describe.gram_cone_sizes`). Never
        builds the cvxpy problem (see :mod:`sdpembed.formulations.describe`).
        """
        return gram_summary(self)

    # ------------------------------------------------------------------ building
    def _build_variables(self) -> None:
        if "variables" in self.__dict__:
            return
        if self._parent is not None:
            variables, expressions = self._parent.variables, self._parent.expressions
        else:
            basis = self.basis()
            if basis is not None:
                _check_basis_memory(basis.shape, f"{self.method} ({self.variant})")
            variables, expressions = _make_variables(self.gram_problem, basis)
        object.__setattr__(self, "variables", _frozen(variables))
        object.__setattr__(self, "expressions", _frozen(expressions))

    def _build(self) -> None:
        if "problem" in self.__dict__:
            return
        self._build_variables()
        base = self._parent._base if self._parent is not None else None
        if base is None:
            _check_memory(self._size, self._n_edges,
                          f"{self.method} ({self.variant or ''})")
            base = _base_problem(self.gram_problem, self.basis(), self._centered,
                                 self.parameters, self.variables)
        from .compiled import compiled_constraints, compiled_objective

        lift = self._gram_lift()
        objective = base[0]
        if self._user_objective:
            objective = cp.Minimize(base[0].args[0]
                                    + compiled_objective(self._user_objective, lift))
        added = compiled_constraints(self._user_constraints, lift)
        self._set_problem(base, cp.Problem(objective, list(base[1]) + added))

    def _gram_lift(self):
        """The map from the internal variable to the points' Gram matrix, for
        :mod:`sdpembed.formulations.compiled`."""
        from .compiled import GramLift

        return GramLift(self.expressions["gram"], self.n_points, self.gram_problem.n,
                        self.basis(), self.variables["G" if "G" in self.variables else "Y"])

    def _set_problem(self, base, problem) -> None:
        object.__setattr__(self, "_base", base)
        object.__setattr__(self, "problem", problem)
        object.__setattr__(self, "_signature", _problem_signature(problem))
        Formulation.__post_init__(self)

    def basis(self) -> np.ndarray | None:
        """Basis ``V`` of :math:`G = VYV^T` (computed and cached if lazy), or ``None``."""
        if callable(self._basis):
            object.__setattr__(self, "_basis", np.asarray(self._basis(), dtype=float))
        return self._basis

    @property
    def reduced_basis(self) -> np.ndarray | None:
        r"""The reduced basis :math:`Q` of ``basis_rank`` (:math:`G = QYQ^T`), else ``None``."""
        return self.basis() if self.basis_rank is not None else None

    @property
    def is_built(self) -> bool:
        """Whether the cvxpy problem has been built."""
        return "problem" in self.__dict__

    @property
    def variables_built(self) -> bool:
        """Whether the cvxpy variables and expressions exist (they hold the last solution)."""
        return "variables" in self.__dict__

    @property
    def user_constraints(self) -> tuple:
        """The cvxpy constraints added by :meth:`with_constraints`, in order."""
        return self._user_constraints

    @property
    def user_objective(self) -> tuple:
        """The objective terms added by :meth:`with_objective`, in order."""
        return self._user_objective

    # ------------------------------------------------------------------ the description
    def _with_parameters(self, new: dict | None, used: Sequence) -> dict:
        """This formulation's parameters plus ``new`` (named cvxpy Parameters of ``used``)."""
        params = dict(self.parameters)
        if not new:
            return params
        appearing = {id(p) for e in used for p in e.parameters()}
        for name, par in dict(new).items():
            if not isinstance(name, str) or not isinstance(par, cp.Parameter):
                raise InputError("parameters must map names to cvxpy Parameters; got "
                                 f"{name!r}: {type(par).__name__}")
            if name in params and params[name] is not par:
                raise InputError(f"parameter {name!r} exists already in f.parameters; "
                                 "choose another name")
            if id(par) not in appearing:
                raise InputError(f"parameter {name!r} does not appear in the terms added")
            params[name] = par
        return params

    def with_objective(self, expr: cp.Expression, *,
                       parameters: dict | None = None) -> GramFormulation:
        r"""A new formulation whose objective adds ``expr``, written on ``expressions["gram"]``.

        The problem is a minimisation (a builder that maximises, like MVU's
        :math:`\max \mathrm{tr}\,G`, poses :math:`\min -\mathrm{tr}\,G`), so the new
        objective is this one's plus ``expr``, minimised: to maximise a term, add its
        negative. Same variables, parameters and constraints; this formulation is
        unchanged. Every conic backend solves it as written; ``"LOWRANK"`` reads a term
        linear in :math:`G`, :math:`\langle M, G\rangle` with :math:`M` diagonal,
        sparse, low-rank by factors (``cp.trace(A @ B @ G)`` with constants ``A``
        (n x k), ``B`` (k x n), or :func:`~sdpembed.formulations.objective.gram_inner`)
        or dense up to :data:`~sdpembed.formulations.objective.DENSE_OBJECTIVE_LIMIT`
        points, into its objective and its certificate, and refuses any other with
        :class:`~sdpembed.exceptions.UnsupportedProblemError`
        (:mod:`sdpembed.formulations.objective`).

        Parameters
        ----------
        expr : cvxpy Expression
            Scalar; the sum with the current objective must be convex (DCP).
        parameters : dict of cvxpy Parameters, optional
            Named Parameters that ``expr`` uses, added to :attr:`parameters`: a builder
            that writes a parameterised family this way exposes its weights as the
            builders do (``f.parameters[name].value = ...`` changes what every backend,
            ``"LOWRANK"`` included, solves next, without rebuilding).

        Raises
        ------
        InputError
            ``expr`` is not a scalar cvxpy expression, or the objective would not be
            convex.

        Examples
        --------
        Colored MVU's label alignment :math:`\max \langle YY^T, G\rangle` added to MVU:

        >>> G = f.expressions["gram"]                                   # doctest: +SKIP
        >>> g = f.with_objective(-cp.trace(cp.Constant(Y) @ cp.Constant(Y).T @ G))  # doctest: +SKIP
        """
        if not isinstance(expr, cp.Expression):
            raise InputError("with_objective takes a scalar cvxpy expression written on "
                             f"f.expressions['gram']; got {type(expr).__name__}")
        if expr.size != 1:
            raise InputError(f"with_objective takes a scalar expression; got shape {expr.shape}")
        if not expr.is_convex():
            raise InputError("with_objective: the term is not convex, so minimising it is not "
                             "a convex problem (to maximise a concave term, add its negative)")
        self._build_variables()
        child = GramFormulation(
            dict(self.meta), self._size, self._n_edges, basis=self._basis,
            centered_basis=self._centered, parameters=self._with_parameters(parameters, [expr]),
            user_constraints=self._user_constraints, parent=self,
            user_objective=self._user_objective + (cp.reshape(expr, (), order="F"),))
        child._build_variables()
        return child

    def with_constraints(self, constraints: cp.Constraint | Sequence[cp.Constraint], *,
                         parameters: dict | None = None) -> GramFormulation:
        r"""A new formulation with ``constraints`` added, written on ``expressions["gram"]``.

        The new formulation's cvxpy problem is this one's objective and constraints
        plus ``constraints`` (same variables and parameters), so every conic backend
        solves it as written; its description records them, and ``"LOWRANK"`` reads
        every constraint affine in the Gram matrix :math:`G`,
        :math:`\langle A_k, G\rangle \le b_k` or :math:`= b_k` with sparse
        :math:`A_k` (trace bounds, squared distances :math:`G_{ii} + G_{jj} - 2G_{ij}`
        for must-link / cannot-link bounds, class-mean separations, fixed entries;
        see :mod:`sdpembed.formulations.constraints`), and refuses the others with
        :class:`~sdpembed.exceptions.UnsupportedProblemError`. This formulation is
        unchanged. Refused at once with :class:`~sdpembed.exceptions.InputError`: a
        constraint cvxpy cannot solve (not DCP), one written on another formulation's
        variables, and (see
        :func:`~sdpembed.formulations.constraints.check_added_constraints`) non-finite
        numbers, rows that are zero on symmetric matrices and contradictory equalities.

        Parameters
        ----------
        constraints : cvxpy constraint or sequence of them
        parameters : dict of cvxpy Parameters, optional
            Named Parameters that the constraints use, added to :attr:`parameters` (as in
            :meth:`with_objective`): read at their current values by every backend.

        Examples
        --------
        >>> G = f.expressions["gram"]                                   # doctest: +SKIP
        >>> g = f.with_constraints([G[0, 0] + G[1, 1] - 2 * G[0, 1] <= 0.1,
        ...                         cp.trace(G) <= 50])                 # doctest: +SKIP
        """
        cons = _constraint_list(constraints)
        self._build_variables()
        child = GramFormulation(
            dict(self.meta), self._size, self._n_edges, basis=self._basis,
            centered_basis=self._centered, parameters=self._with_parameters(parameters, cons),
            user_constraints=self._user_constraints + tuple(cons), parent=self,
            user_objective=self._user_objective)
        child._build_variables()   # the constraints are written on these very variables
        for k, c in enumerate(cons):
            if not c.is_dcp():
                raise InputError(
                    f"with_constraints: constraint {k} ({str(c)[:80]}) is not DCP, so no "
                    "backend can solve it (cvxpy's rules: affine == affine, convex <= "
                    "concave); write it as an affine or convex constraint")
        from .constraints import check_added_constraints

        check_added_constraints(child)
        return child

    def current_problem(self) -> GramProblem:
        r"""The points' :class:`GramProblem` as it is to be solved now.

        The builder's description (eliminated centroids) with the current values of
        :attr:`parameters` (``slack_weight``, ``trace_weight``, ``snr``, ``ratio``,
        ``ratio_weight``) and the added constraints as
        :class:`~sdpembed.formulations.constraints.AffineGramConstraints`.

        Raises
        ------
        InputError
            A parameter without a value.
        UnsupportedProblemError
            An added constraint that is not affine in :math:`G`.
        """
        gp = with_parameter_values(self.points_problem, self.parameters, self.trace_sign)
        if self._user_constraints:
            self._build_variables()
            from .constraints import affine_gram_constraints

            gp = dataclasses.replace(gp, constraints=affine_gram_constraints(
                self._user_constraints, self.expressions["gram"], gp.n))
        if self._user_objective:
            self._build_variables()
            from .objective import gram_objective_matrix

            added = gram_objective_matrix(self._user_objective, self.expressions["gram"], gp.n)
            gp = dataclasses.replace(gp, objective=gp.objective + added)
        return gp

    def check_unchanged(self) -> None:
        """Raise :class:`~sdpembed.exceptions.UnsupportedProblemError` if the cvxpy problem's
        objective or constraints are no longer the ones this formulation built (edited
        behind the description's back)."""
        if self.is_built and _problem_signature(self.problem) != self._signature:
            raise UnsupportedProblemError(
                f"the cvxpy problem of this {self.method} formulation was changed after it "
                "was built, so its structured description no longer describes it; add "
                "constraints with f.with_constraints([...]) instead, or solve the edited "
                f"problem with a conic backend ({conic_alternatives()})")

    # ------------------------------------------------------------------ solution
    @property
    def factor(self) -> np.ndarray | None:
        """Low-rank solution :math:`F` with :math:`G = FF^T` (points only), set by ``LOWRANK``."""
        return self._factor

    def set_factor(self, F: np.ndarray | None) -> None:
        object.__setattr__(self, "_factor", None if F is None else np.asarray(F, dtype=float))

    def value(self, name: str) -> Any:
        if self._factor is not None and not self.variables_built and name == "gram":
            return self._factor @ self._factor.T
        return Formulation.value(self, name)

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__

    def __reduce__(self):
        """Pickle without building: the description, parameters and what was built travel."""
        built = None
        if self.variables_built:
            problem = None
            if self.is_built:
                problem = Formulation.__reduce__(self)[1][0]
            built = (dict(self.variables), dict(self.expressions), self._base, problem)
        state = (dict(self.meta), self._size, self._n_edges, self._basis, self._centered,
                 self._factor, dict(self.parameters), self._user_constraints, built,
                 self._user_objective)
        return (_restore_gram_formulation, state)

    def __repr__(self) -> str:  # pragma: no cover - cosmetic
        state = "built" if self.is_built else "not built"
        extra = f", {len(self._user_constraints)} added constraint(s)" \
            if self._user_constraints else ""
        return (f"GramFormulation(method={self.method!r}, variant={self.variant!r}, "
                f"n={self.n_points}{extra}, {state})")


def _restore_gram_formulation(meta, size, n_edges, basis, centered, factor, parameters,
                              user_constraints, built, user_objective=()):
    form = GramFormulation(meta, size, n_edges, basis=basis, centered_basis=centered,
                           parameters=parameters, user_constraints=user_constraints,
                           user_objective=user_objective)
    form.set_factor(factor)
    if built is not None:
        variables, expressions, base, problem = built
        object.__setattr__(form, "variables", _frozen(variables))
        object.__setattr__(form, "expressions", _frozen(expressions))
        if problem is not None:
            form._set_problem(base, problem)
    return form




def _problem_signature(problem: cp.Problem) -> tuple:
    return (id(problem.objective), tuple(id(c) for c in problem.constraints))


def _constraint_list(constraints) -> list:
    from cvxpy.constraints.constraint import Constraint

    if isinstance(constraints, Constraint):
        constraints = [constraints]
    try:
        cons = list(constraints)
    except TypeError:
        raise InputError("with_constraints takes a cvxpy constraint or a sequence of them; "
                         f"got {type(constraints).__name__}") from None
    for k, c in enumerate(cons):
        if not isinstance(c, Constraint):
            raise InputError(f"with_constraints: item {k} is a {type(c).__name__}, not a cvxpy "
                             "constraint (write e.g. G[i, i] + G[j, j] - 2 * G[i, j] <= u with "
                             "G = f.expressions['gram'])")
    return cons


def build_gram_formulation(gp: GramProblem, *, basis: np.ndarray | None = None,
                           centered_basis: bool = False, method: str, variant: str,
                           equations: str, extra_meta: dict | None = None,
                           basis_size: int | None = None,
                           parameters: dict | None = None) -> GramFormulation:
    """cvxpy problem of a :class:`GramProblem`, on :math:`G` or on :math:`G = VY V^T`.

    The cvxpy problem is built lazily (:class:`GramFormulation`): the
    large-n backend ``"LOWRANK"`` reads only the description (with the current
    parameter values, :meth:`GramFormulation.current_problem`) and the basis, so it
    works where the dense problem would not fit in memory.

    Parameters
    ----------
    basis : ndarray (n, r) or callable, optional
        A callable returning the basis (with ``basis_size = r``) is called only
        when the cvxpy problem is built. ``None`` optimises over the full ``G`` with the constraint
        :math:`\\mathbf 1^T G \\mathbf 1 = 0`. Otherwise ``G = V Y V^T`` with
        ``Y ⪰ 0`` of size r. ``Y ⪰ 0`` implies ``G ⪰ 0``; if ``V`` has full
        column rank the map is injective.
    centered_basis : bool
        ``True`` when :math:`V^T \\mathbf 1 = 0`, so the centring constraint holds
        by construction and is left out (facial reduction: the face
        :math:`\\{G \\succeq 0 : G\\mathbf 1 = 0\\} = \\{VYV^T : Y \\succeq 0\\}` for
        ``V`` spanning :math:`\\mathbf 1^\\perp`; the reduced problem has a
        strictly feasible point, which restores Slater's condition).
    parameters : dict of cvxpy Parameters, optional
        The weights as parameters (default :func:`gram_parameters` of ``gp``); a builder
        passes its own when something else (a hint) reads them too.
    """
    n, m = gp.n, gp.edges.shape[0]
    if callable(basis):
        if basis_size is None:
            raise InputError("a lazily computed basis needs basis_size")
        size = as_int(basis_size, "basis_size", 1)
    elif basis is not None:
        basis = np.asarray(basis, dtype=float)
        if basis.ndim != 2 or basis.shape[0] != n:
            raise InputError(f"basis must have shape ({n}, r); got {basis.shape}")
        size = basis.shape[1]
    else:
        size = n
    meta = {"method": method, "variant": variant, "equations": equations, "gram_problem": gp,
            "basis": None if callable(basis) else basis, "n": n, "n_edges": m,
            "trace_sign": float(np.sign(gp.trace_weight)) or 1.0, **(extra_meta or {})}
    return GramFormulation(meta, size, m, basis=basis, centered_basis=centered_basis,
                           parameters=parameters)


def _make_variables(gp: GramProblem, basis):
    """The cvxpy variables of a :class:`GramProblem` and its expressions ``"gram"`` (the
    points' Gram matrix) and, with explicit centroids, ``"gram_full"``.

    On a basis the Gram matrix is ``symmetric_wrap(V Y V^T)``: the wrap states a fact
    (the product is symmetric) and keeps cvxpy from rewriting expressions built on it
    (``trace(A @ B)`` becomes a sum of products otherwise), so that constraints written on
    it can be read back (:mod:`sdpembed.formulations.constraints`)."""
    from cvxpy.atoms.affine.wraps import symmetric_wrap

    n, m = gp.n, gp.edges.shape[0]
    if basis is None:
        Y = cp.Variable((n, n), PSD=True, name="G")
        full = Y
    else:
        r = basis.shape[1]
        Y = cp.Variable((r, r), PSD=True, name="Y")
        full = symmetric_wrap(basis @ Y @ basis.T)
    variables: dict[str, cp.Variable] = {Y.name(): Y}
    if gp.distances == "interval":
        variables["eps"] = cp.Variable(m, nonneg=True, name="eps")
    if gp.ratio is not None:
        variables["xi"] = cp.Variable(nonneg=True, name="xi")
    n_points = gp.meta.get("n_points", n)
    expressions = {"gram": full if n_points == n else full[:n_points, :n_points]}
    if n_points != n:
        expressions["gram_full"] = full
    return variables, expressions


def _base_problem(gp: GramProblem, basis, centered_basis: bool, parameters, variables):
    """``(objective, constraints)`` of a :class:`GramProblem` on the given variables."""
    n = gp.n
    if basis is None:
        Y = variables["G"]
        A = edge_operator(gp.edges, n)
        c_obj = gp.objective.dense().ravel(order="F")
        trace_vec = np.eye(n).ravel(order="F")
    else:
        V = np.asarray(basis, dtype=float)
        Y = variables["Y"]
        A = edge_operator(gp.edges, n, V)
        c_obj = gp.objective.congruence(V).ravel(order="F")
        trace_vec = (V.T @ V).ravel(order="F")
    vecY = cp.vec(Y, order="F")
    D = A @ vecY
    target = gp.target
    constraints = []
    objective = c_obj @ vecY
    if basis is None or not centered_basis:
        Cc = gp.centering_vectors() if basis is None else V.T @ gp.centering_vectors()
        center = np.stack([np.outer(c, c).ravel(order="F") for c in Cc.T])
        constraints.append(center @ vecY == 0)
    if "trace_weight" in parameters:
        sign = np.sign(gp.trace_weight)
        objective = objective + sign * parameters["trace_weight"] * (trace_vec @ vecY)
    if gp.distances == "equality":
        if gp.edges.shape[0]:
            constraints.append(D == target)
    elif gp.distances == "interval":
        eps, lam = variables["eps"], parameters["slack_weight"]
        constraints += [D >= target - cp.multiply(target, eps),
                        D <= target + cp.multiply(target, eps)]
        objective = objective + lam * cp.sum(eps)
    elif gp.distances == "shrink":
        if gp.edges.shape[0]:
            constraints.append(D <= target)
    elif gp.distances == "quadratic":
        penalty = cp.sum(D) + target.sum() - 2 * (np.sqrt(target) @ cp.sqrt(D))
        objective = objective + parameters["slack_weight"] * penalty
    else:  # pragma: no cover - validated by the builders
        raise InputError(f"distances must be one of {DISTANCE_MODES}")
    if gp.snr is not None or gp.ratio is not None:
        ci = (gp.icv.dense() if basis is None else gp.icv.congruence(V)).ravel(order="F")
        cb = (gp.bcv.dense() if basis is None else gp.bcv.congruence(V)).ravel(order="F")
        icv, bcv = ci @ vecY, cb @ vecY
        if gp.snr is not None:
            constraints.append(bcv >= parameters["snr"] * icv)
        if gp.ratio is not None:
            constraints.append(cp.quad_over_lin(icv, bcv) <= parameters["ratio"] * icv
                               + variables["xi"])
            objective = objective + parameters["ratio_weight"] * variables["xi"]
    return cp.Minimize(objective), tuple(constraints)
