"""The outcome of a LOWRANK solve."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class LowRankResult:
    """Outcome of :func:`lowrank_solve`."""

    factor: np.ndarray                      # (n, k) point coordinates, G = F F^T
    objective: float
    bound: float | None
    certified_gap: float | None
    infeasibility: float
    y: np.ndarray
    nu: float
    status: str
    iterations: int
    seconds: float
    history: list[dict] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
