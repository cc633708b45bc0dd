r"""Base class of the eigen-based projection estimators.

Every linear projection method of the toolkit (discriminative projections,
LDA, LPP, SDA, PCA, DNE, TCA, OTCA) reduces to one eigenproblem described by a
:class:`~sdpembed.relaxations.Pencil` ``(A, B, sense, kind)``:

* ``kind="trace"``: :math:`\min / \max_{P^\top P = I} \operatorname{tr}(P^\top A P)`;
* ``kind="ratio_trace"``: :math:`\min / \max_{P^\top B P = I} \operatorname{tr}(P^\top A P)`
  (the :math:`d` extreme solutions of :math:`A p = \lambda B p`);
* ``kind="trace_ratio"``: :math:`\max / \min_{P^\top P = I}
  \operatorname{tr}(P^\top A P) / \operatorname{tr}(P^\top B P)`.

A subclass implements :meth:`ProjectionEstimator._pencil` (validated
``X, y`` -> pencil). :class:`ProjectionEstimator` solves the pencil either in
closed form (``method="eigen"``: ``scipy.linalg.eigh`` or the iterative
trace-ratio algorithm) or through its exact SDP relaxation
(``method="sdp"``: :func:`~sdpembed.relaxations.formulate`, solved by any
backend of :func:`sdpembed.solve`), and stores the same fitted attributes for
both, so the two paths can be compared.

Real data (constant or collinear features, more features than samples) make
the pencil singular. Before either path, :meth:`ProjectionEstimator.fit`
takes a rank-revealing step, :func:`sdpembed.relaxations.reduce_pencil`: with
:math:`\mathcal N = \ker A \cap \ker B` (the directions along which the
data carry no information) and, without ``regularization``, also
:math:`\ker B` (directions of infinite generalized eigenvalue), the pencil is
restricted to a complement spanned by :math:`T \in \mathbb{R}^{m \times r}`,

.. math::

    (A, B) \;\to\; (T^\top A T,\ T^\top B T), \qquad P = T Q,

where the ranks are decided on the unit-diagonal scaling of the matrices with
threshold ``rank_tol`` (default :data:`sdpembed.relaxations.RANK_TOL` =
:math:`10^{-8}` on eigenvalues, i.e. :math:`10^{-4}` on singular values of the
standardised data, scikit-learn's LDA threshold). The closed form and the SDP
solve the same reduced pencil, so they agree wherever the relaxation is tight;
when nothing is removed, :math:`T = I` and the pencil is solved unchanged.
After the solve, a direction that maps the training data to one point
(:func:`check_collapse`: standardised spread at most ``COLLAPSE_TOL``) raises
:class:`~sdpembed.exceptions.DegenerateEmbeddingError` when every direction
collapses, or warns with :class:`~sdpembed.exceptions.DegenerateEmbeddingWarning`
when some do, instead of returning embeddings of size ~1e-16.

Conventions (scikit-learn's): ``components_`` has shape
``(n_components, n_features)`` and :meth:`transform` returns
``X @ components_.T`` (no centering unless a subclass says otherwise).
"""

from __future__ import annotations

import logging
import re
import textwrap

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import relaxations as rlx
from .._params import POSITIVE_INT, RANK_TOL_RANGE
from .._sklearn import StrOptions, _fit_context
from ..exceptions import (
    DegenerateEmbeddingError,
    DegenerateEmbeddingWarning,
    InputError,
    RankDeficiencyWarning,
    warn,
)
from ..recovery import fix_signs
from ..relaxations import Pencil
from ..solvers import solve
from ._validation import TypedParameterValidation

__all__ = ["ProjectionEstimator", "METHODS", "COLLAPSE_TOL", "component_spread",
           "check_collapse", "with_projection_parameters"]

logger = logging.getLogger(__name__)

#: Accepted values of ``method``.
METHODS = ("eigen", "sdp")

#: A direction whose :func:`component_spread` is at or below this value maps the training
#: data to one point up to round-off (exact null directions give ~1e-16; a direction the
#: rank-revealing step keeps spreads by at least about ``sqrt(rank_tol)`` = 1e-4).
COLLAPSE_TOL = 1e-8

_SDP_ATTRIBUTES = ("solve_report_", "formulation_", "rank_gap_")


#: The parameters every projection estimator shares (numpydoc, unindented): each
#: estimator's docstring holds them in full, at its line ``{projection_parameters}``.
PROJECTION_PARAMETERS = """\
method : {"eigen", "sdp"}, default "eigen"
    ``"eigen"``: closed form. ``"sdp"``: the exact convex relaxation of
    :mod:`sdpembed.relaxations` (Fantope, ratio-trace SDP in
    :math:`Z = P P^\\top`, or Charnes–Cooper trace-ratio SDP), solved by ``solver``.
solver : str, default "auto"
    Backend name for ``method="sdp"`` (see :func:`sdpembed.available_solvers`).
    ``"auto"`` lets :func:`sdpembed.solvers.choose_backend` pick: an
    interior-point backend (CLARABEL) for these small relaxations, SCS when a
    PSD cone is too large for one; ``solve_report_.selection`` says which and
    why. Naming a backend is needed to pass ``solver_options``.
solver_options : dict or None
    Options for the backend (e.g. ``{"eps_abs": 1e-8}`` for SCS).
rank_tol : float, default 1e-8
    Threshold of the rank-revealing step
    (:func:`sdpembed.relaxations.reduce_pencil`): eigenvalues of the
    unit-diagonal scaled matrices at or below it count as zero."""

_PROJECTION_PARAMETERS_LINE = re.compile(r"^([ \t]*)\{projection_parameters\}$", re.MULTILINE)


def with_projection_parameters(cls: type) -> type:
    """Write :data:`PROJECTION_PARAMETERS` into ``cls``'s docstring at its
    ``{projection_parameters}`` line (indented as that line), so that each estimator's page
    documents ``method``, ``solver``, ``solver_options`` and ``rank_tol`` itself."""
    doc = cls.__doc__ or ""
    match = _PROJECTION_PARAMETERS_LINE.search(doc)
    if match is None:
        raise TypeError(f"{cls.__name__}'s docstring has no {{projection_parameters}} line")
    text = textwrap.indent(PROJECTION_PARAMETERS, match.group(1))
    cls.__doc__ = doc[:match.start()] + text + doc[match.end():]
    return cls


def component_spread(X: np.ndarray, components: np.ndarray) -> np.ndarray:
    r"""Spread of the training data along each direction, in standardised units.

    For a direction :math:`c` (a row of ``components``), centred data
    :math:`X_c` and feature standard deviations :math:`s`,

    .. math::

        \operatorname{spread}(c) = \frac{\lVert X_c c\rVert}{\sqrt n\,\lVert s \circ c\rVert},

    the standard deviation of the projections divided by what it would be if
    the features were uncorrelated. It is invariant to the scale of ``c`` and
    to the units of each feature, is 1 along a single non-constant feature,
    and is 0 exactly when :math:`X c` is constant (the direction maps every
    point to the same value); :math:`0/0` (a direction on constant features
    only) counts as 0.

    Returns
    -------
    ndarray, shape (n_components,)
    """
    X = np.asarray(X, dtype=float)
    C = np.atleast_2d(np.asarray(components, dtype=float))
    Xc = X - X.mean(axis=0)
    num = np.linalg.norm(Xc @ C.T, axis=0)
    den = np.sqrt(X.shape[0]) * np.linalg.norm(C * Xc.std(axis=0)[None, :], axis=1)
    return np.divide(num, den, out=np.zeros_like(num), where=den > 0)


def check_collapse(X: np.ndarray, components: np.ndarray, owner: str,
                   share: np.ndarray | None = None) -> np.ndarray:
    r"""Raise or warn when directions collapse the training data; return the spreads.

    Direction :math:`k` collapses when :math:`X c_k` is numerically constant:
    :func:`component_spread` at most :data:`COLLAPSE_TOL` (a direction along
    which the data do not vary), or, for methods whose solution vectors hold
    more than the instance map (discriminative projections:
    :math:`\gamma = (f; g)`), when the instance map carries at most
    :math:`\text{COLLAPSE\_TOL}^2` of the vector's constraint mass ``share``
    (e.g. the trivial label direction :math:`\gamma = (0; \mathbf 1)`, whose
    :math:`f` is round-off). Both measures are invariant to the units of
    the features. Raises :class:`~sdpembed.exceptions.DegenerateEmbeddingError`
    when every direction collapses; warns with
    :class:`~sdpembed.exceptions.DegenerateEmbeddingWarning` when some do.
    """
    spread = component_spread(X, components)
    collapsed = spread <= COLLAPSE_TOL
    if share is not None:
        collapsed |= np.sqrt(np.clip(share, 0.0, None)) <= COLLAPSE_TOL
    bad = np.flatnonzero(collapsed)
    what = (f"standardised spread {np.array2string(spread[bad], precision=2)}" +
            ("" if share is None else
             f", share of the instance map {np.array2string(share[bad], precision=2)}"))
    if bad.size == spread.size:
        raise DegenerateEmbeddingError(
            f"{owner}: every learned direction maps the training data to a single point "
            f"({what}; threshold {COLLAPSE_TOL:g}); the data give this method nothing to "
            "separate. Check the labels and the graph parameters, or lower regularization")
    if bad.size:
        warn(
            f"{owner}: direction(s) {bad.tolist()} map the training data to a single point "
            f"({what}; threshold {COLLAPSE_TOL:g}); their coordinates carry no information. "
            "Use fewer components (see eigenvalues_)", DegenerateEmbeddingWarning)
    return spread


@with_projection_parameters
class ProjectionEstimator(TypedParameterValidation, ClassNamePrefixFeaturesOutMixin,
                          TransformerMixin, BaseEstimator):
    """Linear projection learned from one eigenproblem, in closed form or as an SDP.

    Subclasses define ``__init__`` with their own keyword-only parameters
    (plus the five below), extend ``_parameter_constraints`` (scikit-learn's
    declarative checks, run by ``fit``; a violation raises
    :class:`~sdpembed.exceptions.ParameterError`, which is also scikit-learn's
    ``InvalidParameterError``) and implement :meth:`_pencil`.

    Parameters
    ----------
    n_components : int or None
        Target dimension :math:`d`. ``None`` uses :meth:`_default_n_components`.
    {projection_parameters}

    Attributes
    ----------
    components_ : ndarray, shape (n_components, n_features)
        Projection directions as rows; ``transform(X) = X @ components_.T``.
        Rows are ordered best first, signs fixed so that the largest-magnitude
        entry of each row is positive.
    eigenvalues_ : ndarray, shape (n_components,)
        Generalized eigenvalues (``"trace"``/``"ratio_trace"``), or for
        ``"trace_ratio"`` the eigenvalues of :math:`P^\\top (A - \\lambda^* B) P`;
        on the SDP path the Ritz values of the recovered subspace.
    objective_ : float
        Optimal value: the sum of ``eigenvalues_`` (trace, ratio trace) or the
        trace-ratio optimum :math:`\\lambda^*`.
    n_components_ : int
        At most ``pencil_rank_``.
    pencil_rank_ : int
        Size :math:`r` of the pencil after the rank-revealing step.
    pencil_basis_ : ndarray, shape (m, r)
        :math:`T`: the reduced pencil is :math:`(T^\\top A T, T^\\top B T)`
        (the identity when nothing was removed).
    pencil_kind_ : str
        ``"trace"``, ``"ratio_trace"`` or ``"trace_ratio"``.
    solve_report_ : SolveReport
        ``method="sdp"`` only. Its ``objective`` is that of the reduced,
        preconditioned problem; ``objective_`` is the original one
        (``solve_report_.objective * formulation_.meta["objective_scale"]``).
    formulation_ : Formulation
        ``method="sdp"`` only: the SDP that was solved, i.e. the relaxation of
        the reduced, preconditioned pencil (``meta["reduction_basis"]`` is
        :math:`T`, ``meta["preconditioner"]`` the congruence
        :math:`T`, ``meta["objective_scale"]`` the factor back to the original
        objective; see :func:`sdpembed.relaxations.precondition`). Not pickled.
    rank_gap_ : float
        ``method="sdp"`` only: eigenvalue mass of the SDP solution beyond the
        top ``n_components`` (:func:`sdpembed.relaxations.rank_gap`); near 0
        when the relaxation is tight.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` has string feature names.
    """

    #: Whether ``fit`` needs ``y`` (scikit-learn's ``target_tags.required``).
    _requires_y = True
    #: Whether ``y`` may be 2-D (e.g. continuous label vectors).
    _multi_output_y = False
    #: Congruence applied to ``"ratio_trace"`` pencils before the SDP
    #: (:func:`sdpembed.relaxations.precondition`).
    _sdp_preconditioner = "cholesky"

    _parameter_constraints: dict = {
        "n_components": [POSITIVE_INT, None],
        "method": [StrOptions(set(METHODS))],
        "solver": [str],
        "solver_options": [dict, None],
        "rank_tol": [RANK_TOL_RANGE],
    }

    def __init__(self, *, n_components=None, method="eigen", solver="auto",
                 solver_options=None, rank_tol=rlx.RANK_TOL):
        self.n_components = n_components
        self.method = method
        self.solver = solver
        self.solver_options = solver_options
        self.rank_tol = rank_tol

    # ------------------------------------------------------------------ hooks
    def _pencil(self, X: np.ndarray, y) -> Pencil:  # pragma: no cover - abstract
        """Return the method's eigenproblem for validated ``X`` (and ``y``).

        May set fitted attributes (e.g. ``classes_``) and raise typed errors
        (``LabelError``, ``InputError``) for bad labels or parameters.
        """
        raise NotImplementedError

    def _default_n_components(self, pencil: Pencil, X: np.ndarray) -> int:
        """Target dimension used when ``n_components=None`` (default: the pencil's size)."""
        return pencil.A.shape[0]

    def _max_n_components(self, pencil: Pencil, X: np.ndarray) -> tuple[int, str]:
        """Largest admissible ``n_components`` and why (default: the pencil's size)."""
        return pencil.A.shape[0], "the size of the eigenproblem"

    def _absolute_regularization(self, pencil: Pencil) -> float:
        """:math:`r` in :math:`B + r I`, from a relative ``regularization`` parameter if any.

        Subclasses with a ``regularization`` parameter get
        :math:`r = \\text{regularization} \\cdot \\operatorname{tr}(B) / m`, which is
        invariant to the scale of the data; ``pencil`` is the reduced pencil, so
        :math:`m` is its size :math:`r` and :math:`\\operatorname{tr}(B)/m` the mean
        eigenvalue of :math:`B` on the informative directions.
        """
        return rlx.absolute_regularization(pencil.B, getattr(self, "regularization", 0.0))

    def _set_components(self, vectors: np.ndarray, values: np.ndarray) -> None:
        """Store the solution (columns of ``vectors``, best first) as fitted attributes."""
        self.components_ = np.ascontiguousarray(vectors.T)
        self.eigenvalues_ = np.asarray(values, dtype=float)

    def _instance_share(self, pencil: Pencil, vectors: np.ndarray) -> np.ndarray | None:
        """Fraction of each solution's constraint mass held by the instance map, or ``None``.

        ``None`` (default): the solution vectors are the instance map itself.
        See :func:`check_collapse`.
        """
        return None

    def _formulation_meta(self) -> dict:
        """Extra ``meta`` for the SDP (method name, paper equations); override in subclasses."""
        return {"method": type(self).__name__}

    # ------------------------------------------------------------- validation
    def _validate_Xy(self, X, y):
        if self._requires_y:
            return validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2,
                                 multi_output=self._multi_output_y, y_numeric=False)
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        return X, y

    def _resolve_n_components(self, pencil: Pencil, X: np.ndarray, rank: int) -> int:
        """``n_components`` (or its default), checked against the method and the rank."""
        limit, why = self._max_n_components(pencil, X)
        if self.n_components is None:
            return max(1, min(self._default_n_components(pencil, X), limit, rank))
        d = int(self.n_components)
        if d > limit:
            raise InputError(f"n_components={d} is too large: at most {limit} ({why})")
        if d > rank:
            raise InputError(
                f"n_components={d} is too large: the data leave {rank} informative "
                f"direction(s) after the rank-revealing step (rank_tol={self.rank_tol:g}; "
                "constant or collinear features, or fewer samples than features)")
        return d

    def _reduce(self, pencil: Pencil) -> rlx.PencilReduction:
        """The rank-revealing step (module docstring); warns when it drops information."""
        regularized = float(getattr(self, "regularization", 0.0) or 0.0) > 0
        red = rlx.reduce_pencil(pencil, rank_tol=self.rank_tol, regularized=regularized)
        if red.n_infinite and pencil.sense == "max":
            warn(
                f"{type(self).__name__}: B vanishes on {red.n_infinite} direction(s) where A "
                "does not (infinite ratio: with fewer labelled points than features they "
                "separate the labelled classes perfectly); they are excluded, as scikit-learn's "
                "LinearDiscriminantAnalysis excludes them. Pass regularization > 0 to keep them",
                RankDeficiencyWarning)
        if not red.is_identity:
            logger.info("%s: rank-revealing step keeps %d of %d directions (%d null, %d of "
                        "infinite ratio)", type(self).__name__, red.rank, red.size, red.n_null,
                        red.n_infinite)
        return red

    # -------------------------------------------------------------------- fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the projection.

        Parameters
        ----------
        X : array-like, shape (n_samples, n_features)
        y : array-like, shape (n_samples,), optional
            Class labels, ``-1`` for unlabeled points (methods that use labels).

        Returns
        -------
        self
        """
        X, y = self._validate_Xy(X, y)
        for attr in _SDP_ATTRIBUTES:
            self.__dict__.pop(attr, None)
        pencil = self._pencil(X, y)
        if pencil.kind not in rlx.KINDS:
            raise InputError(f"_pencil returned kind {pencil.kind!r}; expected one of {rlx.KINDS}")
        red = self._reduce(pencil)
        reduced = red.pencil
        d = self._resolve_n_components(reduced, X, red.rank)
        reg = self._absolute_regularization(reduced)
        if self.method == "eigen":
            values, vectors, objective = rlx.solve_closed_form(reduced, d, regularization=reg)
        else:
            values, vectors, objective = self._fit_sdp(reduced, d, reg, red.basis)
        vectors = fix_signs(red.basis @ vectors)
        self.n_components_ = d
        self.pencil_kind_ = pencil.kind
        self.pencil_rank_ = red.rank
        self.pencil_basis_ = red.basis
        self.objective_ = float(objective)
        self._set_components(vectors, values)
        check_collapse(X, self.components_, type(self).__name__,
                       self._instance_share(pencil, vectors))
        return self

    def _fit_sdp(self, pencil: Pencil, d: int, reg: float, basis: np.ndarray):
        """Solve the relaxation of the reduced ``pencil``; recover a basis like the closed form.

        The pencil is first rescaled by :func:`~sdpembed.relaxations.precondition`
        (equivalent problem, recorded in ``formulation_.meta``); the basis
        recovered from the SDP solution is rotated onto the Ritz vectors of the
        reduced pencil (:func:`~sdpembed.relaxations.rayleigh_ritz`); ``fit``
        maps it back with ``basis`` (:math:`T`).
        """
        A, B, sense, kind = pencil[:4]
        rlx.check_sdp_size(A.shape[0], self.solver)
        scaled, T, scale = rlx.precondition(pencil, regularization=reg,
                                            method=self._sdp_preconditioner)
        meta = {**self._formulation_meta(), "reduction_basis": basis, "preconditioner": T,
                "objective_scale": scale}
        form = rlx.formulate(scaled, d, meta=meta)
        report = solve(form, solver=self.solver, **(self.solver_options or {}))
        objective = scale * report.objective
        Breg = None if B is None else B + reg * np.eye(B.shape[0])
        if kind == "trace":
            M, Bm = form.value("Y"), None
            values, vectors = rlx.rayleigh_ritz(A, None, rlx.recover_basis(M, d), sense=sense)
        elif kind == "ratio_trace":
            M, Bm = form.value("Z"), form.meta["B"]
            P = T @ rlx.recover_basis(M, d, B=Bm)
            values, vectors = rlx.rayleigh_ritz(A, Breg, P, sense=sense)
        else:
            M, Bm = form.value("Y_fantope"), None
            values, vectors = rlx.rayleigh_ritz(A - objective * Breg, None,
                                                rlx.recover_basis(M, d), sense=sense)
        self.solve_report_ = report
        self.formulation_ = form
        self.rank_gap_ = rlx.rank_gap(M, d, B=Bm)
        logger.info("%s: %s, rank gap %.2e", type(self).__name__, report, self.rank_gap_)
        return values, vectors, objective

    # -------------------------------------------------------------- transform
    def transform(self, X):
        """Project ``X``: returns ``X @ components_.T``, shape (n_samples, n_components)."""
        check_is_fitted(self, "components_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.components_.T

    def __getstate__(self):
        """Pickle without ``formulation_`` (its cvxpy problem caches unpicklable solver objects).

        ``solve_report_`` and ``rank_gap_`` are kept; refit to rebuild the formulation.
        """
        state = super().__getstate__()
        state.pop("formulation_", None)
        return state

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = self._requires_y
        return tags
