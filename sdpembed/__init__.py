"""sdpembed: semi-supervised discriminative embeddings as convex programs."""

from .formulations import Formulation
from .graphs import NeighborhoodGraph, heat_kernel_weights, knn_graph
from .solvers import SolveReport, available_solvers, solve

__version__ = "0.1.0"

__all__ = ["Formulation", "NeighborhoodGraph", "knn_graph", "heat_kernel_weights",
           "SolveReport", "solve", "available_solvers", "__version__"]
