"""Re-export of :class:`sdpembed.formulation.Formulation` (its home is a leaf module)."""

from ..formulation import Formulation, _frozen

__all__ = ["Formulation", "_frozen"]
