"""Former home of the reduced-basis interior-point method, now in :mod:`sdpembed.lowrank`.

Kept for one release: :mod:`sdpembed.lowrank.reduced_ipm` (the interval IPM),
:mod:`sdpembed.lowrank.lmi_lp` (the rank-one LMI LP of the lift) and
:mod:`sdpembed.lowrank.ipm_common` (svec algebra).
"""

from .lowrank.ipm_common import factor_from_gram, smat, svec, svec_outer_rows
from .lowrank.lmi_lp import LiftResult, rank_one_lmi_lp
from .lowrank.reduced_ipm import ReducedIPMResult, interval_ipm

__all__ = ["ReducedIPMResult", "interval_ipm", "LiftResult", "rank_one_lmi_lp", "svec", "smat",
           "svec_outer_rows", "factor_from_gram"]
