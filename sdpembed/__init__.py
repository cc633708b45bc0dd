"""sdpembed: semi-supervised discriminative embeddings as convex programs."""

from . import datasets, evaluation, experiments, relaxations, tangent
from ._version import __version__
from .datasets import list_datasets, load_dataset, partial_labels
from .estimators.classic import LDA, LPP, PCA, SDA
from .estimators.discriminative import DiscriminativeProjections
from .estimators.dne import DNE
from .estimators.gram import DVU, MVU
from .estimators.tca import OTCA, TCA
from .evaluation import transductive_knn_accuracy, transductive_svm_accuracy
from .formulations import Formulation
from .graphs import NeighborhoodGraph, heat_kernel_weights, knn_graph
from .recovery import embedding_from_gram, spectrum
from .solvers import SolveReport, available_solvers, solve
from .tangent import deslant, tangent_distance, tangent_distances, tangent_knn_graph

__all__ = [
    "DVU", "MVU", "LDA", "LPP", "PCA", "SDA", "DiscriminativeProjections", "DNE", "TCA", "OTCA",
    "Formulation", "NeighborhoodGraph", "knn_graph", "heat_kernel_weights",
    "SolveReport", "solve", "available_solvers", "embedding_from_gram", "spectrum",
    "datasets", "evaluation", "experiments", "relaxations", "list_datasets", "load_dataset",
    "partial_labels",
    "transductive_knn_accuracy", "transductive_svm_accuracy", "__version__",
    "tangent", "deslant", "tangent_distance", "tangent_distances", "tangent_knn_graph",
]
