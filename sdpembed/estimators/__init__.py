"""scikit-learn estimators gluing graphs, formulations, solvers and recovery together."""

from ._projection import ProjectionEstimator
from .classic import LDA, LPP, PCA, SDA
from .discriminative import DiscriminativeProjections
from .dne import DNE
from .gram import DVU, MVU
from .label_propagation import GFHF, LGC
from .tca import OTCA, TCA

__all__ = ["DVU", "MVU", "LDA", "LPP", "PCA", "SDA", "DiscriminativeProjections",
           "DNE", "TCA", "OTCA", "LGC", "GFHF", "ProjectionEstimator"]
