"""ARPACK's ``eigsh`` with a seeded generator: the same eigenpairs in every run (LOWRANK's
Lanczos and shift-invert runs, the reduced basis of :mod:`sdpembed.formulations`)."""

from __future__ import annotations

import inspect

import numpy as np
import scipy.sparse.linalg as spla

#: the seed of the random vectors ARPACK asks for during its iterations
ARPACK_SEED = 0

#: whether this SciPy's ``eigsh`` takes ``rng`` (SciPy >= 1.15, where ARPACK asks the
#: caller for its random vectors; older ones draw them inside the Fortran code, from a seed
#: fixed at load time)
_TAKES_RNG = "rng" in inspect.signature(spla.eigsh).parameters


def eigsh(A: object, **kwargs: object) -> tuple[np.ndarray, np.ndarray]:
    """:func:`scipy.sparse.linalg.eigsh` with ``rng`` a fresh generator seeded with
    ``ARPACK_SEED``. ARPACK asks for a random vector at every restart whose residual it
    cannot use (several per run of a loose Lanczos); SciPy draws them from a generator seeded
    by the operating system's entropy unless given one, so two runs from the same ``v0``
    end with different Ritz values and residuals (docs/tuning.md, "Deadlines in every
    factorisation; edge differences; a reproducible bound")."""
    if _TAKES_RNG:
        kwargs.setdefault("rng", np.random.default_rng(ARPACK_SEED))
    return spla.eigsh(A, **kwargs)
