"""scikit-learn estimators gluing graphs, formulations, solvers and recovery together."""

from ._projection import ProjectionEstimator
from .classic import LDA, LPP, PCA, SDA
from .discriminative import DiscriminativeProjections
from .gram import DVU, MVU

__all__ = ["DVU", "MVU", "LDA", "LPP", "PCA", "SDA", "DiscriminativeProjections",
           "ProjectionEstimator"]
