"""Former home of the large-n solver, now :mod:`sdpembed.lowrank`; kept for one release.

Re-exports the public names of :mod:`sdpembed.lowrank` under their old module.
"""

from .formulations.gram import laplacian_basis
from .lowrank import (
    BACKEND_NAME,
    CHECK_DENSE,
    CHECK_LANCZOS,
    CHECK_SHIFT_INVERT,
    CHECK_SPARSE,
    INNER_SOLVERS,
    INTERVAL_ENVELOPES,
    REDUCED_SOLVERS,
    Certificate,
    LowRankOptions,
    LowRankResult,
    certify,
    lift_multipliers,
    lowrank_solve,
    refine_multipliers,
    restore_feasibility,
    verify_certificate,
)
from .recovery import embedding_from_factor, spectrum_from_factor

__all__ = ["LowRankOptions", "LowRankResult", "lowrank_solve", "Certificate", "certify",
           "verify_certificate", "refine_multipliers", "lift_multipliers", "restore_feasibility",
           "laplacian_basis", "embedding_from_factor", "spectrum_from_factor", "BACKEND_NAME",
           "INNER_SOLVERS", "REDUCED_SOLVERS", "INTERVAL_ENVELOPES", "CHECK_DENSE",
           "CHECK_SPARSE", "CHECK_LANCZOS", "CHECK_SHIFT_INVERT"]
