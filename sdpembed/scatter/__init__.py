"""Numpy-only operators of the eigen-based methods (scatter matrices, Laplacians, label maps).

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

__all__ = ["between_class_scatter", "class_means", "continuous_label_matrices",
           "discriminative_projection_matrices", "graph_laplacian", "knn_affinity",
           "laplacian_scatter", "total_scatter", "within_class_scatter"]
