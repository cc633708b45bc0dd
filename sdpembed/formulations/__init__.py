"""Problem builders: one module per method, each returning a :class:`Formulation`."""

from ._base import Formulation

__all__ = ["Formulation"]
