"""Methods a spec may name (``estimator = NAME``) and how the runner fits each kind."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._typing import ArrayLike
from ..exceptions import InputError

__all__ = ["HeatKNNKernel", "MethodInfo", "METHODS", "EMBEDDING_KINDS"]

#: Method kinds whose result is an embedding (every kind but "classifier").
EMBEDDING_KINDS = ("raw", "gram", "projection", "supervised")


class HeatKNNKernel:
    """k-NN graph with heat-kernel weights as a scikit-learn kernel callable.

    ``kernel(X, X)`` is the weight matrix of the TCA paper's graph, eq. (4)
    (:func:`sdpembed.scatter.tca.tca_graph`): :math:`W_{ij} =
    \\exp(-\\lVert x_i - x_j\\rVert^2 / \\sigma^2)` when :math:`j` is among
    the ``n_neighbors`` nearest neighbours of :math:`i` or vice versa, else 0;
    :math:`\\sigma` defaults to the mean edge length. Passing it to
    scikit-learn's iterative :class:`~sklearn.semi_supervised.LabelPropagation`
    (GFHF, Zhu et al.) and :class:`~sklearn.semi_supervised.LabelSpreading`
    (LGC, Zhou et al.) runs them "on the same 5-NN graph" as TCA (Liu, Tao &
    Liu, section 5.2). The exact closed forms, :class:`sdpembed.estimators.LGC`
    and :class:`sdpembed.estimators.GFHF` (spec names ``"LGC"`` and ``"GFHF"``),
    build that graph themselves (``kernel = "heat_knn"``).
    ``kernel(X, Y)`` for other ``Y`` (prediction of new points) joins each row
    of ``X`` to its ``n_neighbors`` nearest rows of ``Y``.
    """

    def __init__(self, n_neighbors: int = 5, sigma: float | None = None):
        self.n_neighbors = n_neighbors
        self.sigma = sigma

    def __call__(self, X: ArrayLike, Y: ArrayLike) -> np.ndarray:
        from sklearn.neighbors import NearestNeighbors

        from ..scatter.tca import tca_graph

        X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
        if X is Y or (X.shape == Y.shape and np.array_equal(X, Y)):
            graph = tca_graph(X, n_neighbors=self.n_neighbors, sigma=self.sigma)
            return graph.adjacency().toarray()
        dist, ind = NearestNeighbors(n_neighbors=self.n_neighbors).fit(Y).kneighbors(X)
        sigma = self.sigma or (float(dist.mean()) if dist.mean() > 0 else 1.0)
        W = np.zeros((X.shape[0], Y.shape[0]))
        np.put_along_axis(W, ind, np.exp(-dist**2 / sigma**2), axis=1)
        return W

    def __repr__(self) -> str:
        return f"HeatKNNKernel(n_neighbors={self.n_neighbors}, sigma={self.sigma})"


@dataclass(frozen=True)
class MethodInfo:
    """How the runner fits one kind of method.

    Attributes
    ----------
    factory : callable or None
        Estimator class (``None`` for ``"raw"``); a spec names it with
        ``estimator = NAME`` and sets its ``__init__`` arguments.
    kind : {"raw", "gram", "projection", "supervised", "classifier"}
        ``"raw"``: the embedding is the (preprocessed) input. ``"gram"``:
        transductive SDP embedding, ``fit(X, y_partial).embedding_`` (takes
        the spec's graph). ``"projection"``: ``fit`` then ``transform`` all
        rows (fitted on all rows with ``y = -1`` for unlabeled ones, or on the
        labeled rows only with the inductive protocol). ``"supervised"``:
        fitted on the labeled rows only, whatever the protocol (NCA).
        ``"classifier"``: semi-supervised classifier, ``fit(X,
        y_partial).transduction_`` (no embedding).
    description : str
    extra_params : tuple of str
        Spec parameters that are not ``__init__`` arguments of ``factory``
        (consumed by ``translate``).
    translate : callable, optional
        ``params -> params`` applied before construction.
    """

    factory: type | None
    kind: str
    description: str
    extra_params: tuple[str, ...] = ()
    translate: Callable[[dict], dict] | None = None

    def param_names(self) -> set[str]:
        """Parameters a spec may set."""
        if self.factory is None:
            return set(self.extra_params)
        names = set(inspect.signature(self.factory.__init__).parameters) - {"self"}
        return names | set(self.extra_params)

    def build(self, params: Mapping[str, Any]) -> Any:
        params = dict(params)
        if self.translate is not None:
            params = self.translate(params)
        return self.factory(**params)


def _label_propagation_params(params: dict) -> dict:
    """``kernel = "heat_knn"`` -> :class:`HeatKNNKernel` (``n_neighbors``, ``sigma``)."""
    sigma = params.pop("sigma", None)
    if params.get("kernel") == "heat_knn":
        params["kernel"] = HeatKNNKernel(params.get("n_neighbors", 7), sigma)
    elif sigma is not None:
        raise InputError("sigma is used only with kernel = 'heat_knn'")
    return params


def _method_registry() -> dict[str, MethodInfo]:
    from sklearn.neighbors import NeighborhoodComponentsAnalysis
    from sklearn.semi_supervised import LabelPropagation, LabelSpreading

    from ..estimators.classic import LDA, LPP, PCA, SDA
    from ..estimators.discriminative import DiscriminativeProjections
    from ..estimators.dne import DNE
    from ..estimators.gram import DVU, MVU
    from ..estimators.label_propagation import GFHF, LGC
    from ..estimators.tca import OTCA, TCA

    lp = dict(extra_params=("sigma",), translate=_label_propagation_params)
    return {
        "raw": MethodInfo(None, "raw", "the input features themselves (baseline)"),
        "DVU": MethodInfo(DVU, "gram", "discriminative variance unfolding (Vernaza et al.)"),
        "MVU": MethodInfo(MVU, "gram", "maximum variance unfolding (Weinberger & Saul)"),
        "PCA": MethodInfo(PCA, "projection", "principal component analysis"),
        "LDA": MethodInfo(LDA, "projection", "linear discriminant analysis"),
        "LPP": MethodInfo(LPP, "projection", "locality preserving projections"),
        "SDA": MethodInfo(SDA, "projection", "semi-supervised discriminant analysis"),
        "DiscriminativeProjections": MethodInfo(
            DiscriminativeProjections, "projection",
            "discriminative projections with label maps (Wang & Mahadevan)"),
        "DNE": MethodInfo(DNE, "projection", "discriminant neighborhood embedding (Zhang et al.)"),
        "TCA": MethodInfo(TCA, "projection", "transductive component analysis (Liu et al.)"),
        "OTCA": MethodInfo(OTCA, "projection", "orthogonal TCA (Liu et al.)"),
        "NCA": MethodInfo(NeighborhoodComponentsAnalysis, "supervised",
                          "scikit-learn's neighbourhood components analysis"),
        "GFHF": MethodInfo(GFHF, "classifier",
                           "harmonic functions (Zhu et al.), exact closed form"),
        "LGC": MethodInfo(LGC, "classifier",
                          "local and global consistency (Zhou et al.), exact closed form"),
        # scikit-learn's iterations stop at max_iter (30 for LabelSpreading), far from the
        # fixed point at Zhou et al.'s alpha = 0.99: kept for comparison, not for tables
        "LabelPropagation": MethodInfo(LabelPropagation, "classifier",
                                       "scikit-learn's label propagation (iterative GFHF)",
                                       **lp),
        "LabelSpreading": MethodInfo(LabelSpreading, "classifier",
                                     "scikit-learn's label spreading (iterative LGC)", **lp),
    }


class _Registry(Mapping):
    """Lazy name -> :class:`MethodInfo` mapping (imports the estimators on first use)."""

    def __init__(self):
        self._data: dict[str, MethodInfo] | None = None

    def _load(self) -> dict[str, MethodInfo]:
        if self._data is None:
            self._data = _method_registry()
        return self._data

    def __getitem__(self, key: str) -> MethodInfo:
        return self._load()[key]

    def __iter__(self):
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())


#: Method names a spec may use (``estimator = NAME``) and how each is fitted.
METHODS: Mapping[str, MethodInfo] = _Registry()



def uses_solver(info: MethodInfo, params: Mapping) -> bool:
    """Whether a method with these parameters solves an SDP (gets the solver axis)."""
    if "solver" not in info.param_names():
        return False
    sig = inspect.signature(info.factory.__init__).parameters
    if "method" not in sig:
        return True
    return params.get("method", sig["method"].default) == "sdp"
