"""Numpy-only operators of the eigen-based methods (scatter matrices, Laplacians, label maps).

One submodule per family; this package re-exports the public names.
"""
