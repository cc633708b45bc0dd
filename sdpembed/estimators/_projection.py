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

Conventions (scikit-learn's): ``components_`` has shape
``(n_components, n_features)`` and :meth:`transform` returns
``X @ components_.T`` (no centering unless a subclass says otherwise).
"""

from __future__ import annotations

import logging
import numbers

import numpy as np
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from .. import relaxations as rlx
from ..exceptions import InputError
from ..recovery import fix_signs
from ..relaxations import Pencil
from ..solvers import solve

__all__ = ["ProjectionEstimator", "METHODS"]

logger = logging.getLogger(__name__)

#: Accepted values of ``method``.
METHODS = ("eigen", "sdp")

_SDP_ATTRIBUTES = ("solve_report_", "formulation_", "rank_gap_")


class ProjectionEstimator(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Linear projection learned from one eigenproblem, in closed form or as an SDP.

    Subclasses define ``__init__`` with their own keyword-only parameters
    (plus the four below) and implement :meth:`_pencil`.

    Parameters
    ----------
    n_components : int or None
        Target dimension :math:`d`. ``None`` uses :meth:`_default_n_components`.
    method : {"eigen", "sdp"}, default "eigen"
        ``"eigen"``: closed form. ``"sdp"``: the exact convex relaxation of
        :mod:`sdpembed.relaxations` (Fantope, ratio-trace SDP in
        :math:`Z = P P^\\top`, or Charnes–Cooper trace-ratio SDP), solved by ``solver``.
    solver : str, default "CLARABEL"
        Backend name for ``method="sdp"`` (see :func:`sdpembed.available_solvers`).
    solver_options : dict or None
        Options for the backend (e.g. ``{"eps_abs": 1e-8}`` for SCS).

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
    pencil_kind_ : str
        ``"trace"``, ``"ratio_trace"`` or ``"trace_ratio"``.
    solve_report_ : SolveReport
        ``method="sdp"`` only. Its ``objective`` is that of the preconditioned
        problem; ``objective_`` is the original one
        (``solve_report_.objective * formulation_.meta["objective_scale"]``).
    formulation_ : Formulation
        ``method="sdp"`` only: the SDP that was solved, i.e. the relaxation of
        the preconditioned pencil (``meta["preconditioner"]`` is the congruence
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

    def __init__(self, *, n_components=None, method="eigen", solver="CLARABEL",
                 solver_options=None):
        self.n_components = n_components
        self.method = method
        self.solver = solver
        self.solver_options = solver_options

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
        invariant to the scale of the data.
        """
        return rlx.absolute_regularization(pencil.B, getattr(self, "regularization", 0.0))

    def _set_components(self, vectors: np.ndarray, values: np.ndarray) -> None:
        """Store the solution (columns of ``vectors``, best first) as fitted attributes."""
        self.components_ = np.ascontiguousarray(vectors.T)
        self.eigenvalues_ = np.asarray(values, dtype=float)

    def _formulation_meta(self) -> dict:
        """Extra ``meta`` for the SDP (method name, paper equations); override in subclasses."""
        return {"method": type(self).__name__}

    # ------------------------------------------------------------- validation
    def _validate_params_common(self) -> None:
        if self.method not in METHODS:
            raise InputError(f"method must be one of {METHODS}; got {self.method!r}")
        if self.n_components is not None and (
                isinstance(self.n_components, bool)
                or not isinstance(self.n_components, numbers.Integral)
                or self.n_components < 1):
            raise InputError(f"n_components must be a positive integer or None; "
                             f"got {self.n_components!r}")
        if self.solver_options is not None and not isinstance(self.solver_options, dict):
            raise InputError("solver_options must be a dict or None")

    def _validate_Xy(self, X, y):
        if self._requires_y:
            return validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2,
                                 multi_output=self._multi_output_y, y_numeric=False)
        X = validate_data(self, X, dtype=np.float64, ensure_min_samples=2)
        return X, y

    def _resolve_n_components(self, pencil: Pencil, X: np.ndarray) -> int:
        d = self._default_n_components(pencil, X) if self.n_components is None \
            else int(self.n_components)
        limit, why = self._max_n_components(pencil, X)
        if d > limit:
            raise InputError(f"n_components={d} is too large: at most {limit} ({why})")
        return d

    # -------------------------------------------------------------------- fit
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
        self._validate_params_common()
        X, y = self._validate_Xy(X, y)
        for attr in _SDP_ATTRIBUTES:
            self.__dict__.pop(attr, None)
        pencil = self._pencil(X, y)
        if pencil.kind not in rlx.KINDS:
            raise InputError(f"_pencil returned kind {pencil.kind!r}; expected one of {rlx.KINDS}")
        d = self._resolve_n_components(pencil, X)
        reg = self._absolute_regularization(pencil)
        if self.method == "eigen":
            values, vectors, objective = rlx.solve_closed_form(pencil, d, regularization=reg)
        else:
            values, vectors, objective = self._fit_sdp(pencil, d, reg)
        vectors = fix_signs(vectors)
        self.n_components_ = d
        self.pencil_kind_ = pencil.kind
        self.objective_ = float(objective)
        self._set_components(vectors, values)
        return self

    def _fit_sdp(self, pencil: Pencil, d: int, reg: float):
        """Solve the exact relaxation of ``pencil``; recover a basis ordered like the closed form.

        The pencil is first rescaled by :func:`~sdpembed.relaxations.precondition`
        (equivalent problem, recorded in ``formulation_.meta``); the basis
        recovered from the SDP solution is rotated onto the Ritz vectors of the
        original pencil (:func:`~sdpembed.relaxations.rayleigh_ritz`).
        """
        A, B, sense, kind = pencil[:4]
        rlx.check_sdp_size(A.shape[0], self.solver)
        scaled, T, scale = rlx.precondition(pencil, regularization=reg,
                                            method=self._sdp_preconditioner)
        meta = {**self._formulation_meta(), "preconditioner": T, "objective_scale": scale}
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
