import os
from pathlib import Path

import numpy as np
import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def usps_archive() -> Path:
    """The USPS archive: under ``SDPEMBED_DATA``, else the shared data folder; skips if absent."""
    path = Path(os.environ.get("SDPEMBED_DATA", SHARED_DATA)) / "usps.npz"
    if not path.exists():
        path = SHARED_DATA / "usps.npz"
    if not path.exists():
        pytest.skip(f"USPS archive not found at {path}; set SDPEMBED_DATA")
    return path


@pytest.fixture(scope="session")
def usps_path() -> Path:
    """Path of the USPS archive (skips when absent)."""
    return usps_archive()


@pytest.fixture(scope="session")
def usps_small():
    """40 USPS digits (8 each of digits 0-4), 2 labels per class hidden, as float64."""
    path = usps_archive()
    with np.load(path, allow_pickle=False) as z:
        X, y = z["X"].astype(float), z["y"]
    rng = np.random.default_rng(0)
    idx = np.concatenate([rng.choice(np.flatnonzero(y == k), 8, replace=False) for k in range(5)])
    Xs, ys = X[idx], y[idx].copy()
    hidden = np.zeros(len(idx), dtype=bool)
    for k in range(5):  # hide 2 of 8 per class: 6 labelled per class remain
        hidden[np.flatnonzero(ys == k)[:2]] = True
    y_partial = ys.copy()
    y_partial[hidden] = -1
    return Xs, ys, y_partial, hidden
