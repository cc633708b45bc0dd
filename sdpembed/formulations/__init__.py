"""Problem builders: one function per method, each returning a :class:`Formulation`.

``sdpembed.formulations.dvu(graph, y, ...)``, ``.mvu(graph, ...)`` build the Gram
SDPs (a :class:`~sdpembed.formulations.gram.GramFormulation`) and ``.gram_sdp(n)``
the blank one a user completes; ``.lda``, ``.lpp``, ``.sda``, ``.dne``,
``.discriminative_projections``, ``.tca`` and ``.otca_step`` the Fantope /
trace-ratio relaxations of the eigen-based methods. The modules of the same
names hold each method's math and helpers (``from sdpembed.formulations.dvu import
dvu_problem``); the package attribute is the builder function.
"""

from ._base import Formulation
from .blank import gram_sdp
from .discriminative import discriminative_projections_formulation as discriminative_projections
from .dne import dne_formulation as dne
from .dvu import dvu
from .gram import GramFormulation
from .lda import lda_formulation as lda
from .lpp import lpp_formulation as lpp
from .mvu import mvu
from .sda import sda_formulation as sda
from .tca import otca_step_formulation as otca_step
from .tca import tca_formulation as tca

__all__ = ["Formulation", "GramFormulation", "gram_sdp", "dvu", "mvu", "lda", "lpp", "sda", "dne",
           "discriminative_projections", "tca", "otca_step"]
