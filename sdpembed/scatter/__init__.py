"""Numpy-only operators: scatter matrices, Laplacians, label maps, LGC/GFHF closed forms.

One submodule per family; this package re-exports the public names.
"""

from .discriminant import (
    between_class_scatter,
    class_means,
    continuous_label_matrices,
    discriminative_projection_matrices,
    graph_laplacian,
    knn_affinity,
    laplacian_scatter,
    total_scatter,
    within_class_scatter,
)
from .dne import discriminant_adjacency, dne_matrix, energy_dimension
from .propagation import (
    check_affinity,
    check_components,
    class_mass_normalization,
    harmonic_scores,
    lgc_scores,
    normalized_affinity,
)
from .tca import (
    TCAOperators,
    average_margin,
    class_indicator,
    margin_matrices,
    margin_weights,
    otca_basis,
    smoothness_matrix,
    smoothness_regularizer,
    tca_graph,
    tca_operators,
)

__all__ = ["between_class_scatter", "class_means", "continuous_label_matrices",
           "discriminative_projection_matrices", "graph_laplacian", "knn_affinity",
           "laplacian_scatter", "total_scatter", "within_class_scatter",
           "discriminant_adjacency", "dne_matrix", "energy_dimension", "TCAOperators",
           "average_margin", "class_indicator", "margin_matrices", "margin_weights", "otca_basis",
           "smoothness_matrix", "smoothness_regularizer", "tca_graph", "tca_operators",
           "check_affinity", "check_components", "class_mass_normalization", "harmonic_scores",
           "lgc_scores", "normalized_affinity"]
