"""Neighbourhood graphs with target distances: the topological prior of DVU and MVU.

:mod:`~sdpembed.graphs.core` holds the graph type and what every builder shares,
:mod:`~sdpembed.graphs.knn` the DVU graph builder :func:`knn_graph` (which hands
``metric="tangent"`` to :mod:`sdpembed.tangent`, itself built on the core).
"""

from .core import (
    NeighborhoodGraph,
    check_data_matrix,
    check_edge_counts,
    heat_kernel_weights,
    random_partners,
)
from .knn import knn_graph

__all__ = ["NeighborhoodGraph", "knn_graph", "heat_kernel_weights", "check_data_matrix",
           "check_edge_counts", "random_partners"]
