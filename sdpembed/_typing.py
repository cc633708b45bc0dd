"""Type aliases of the public signatures (a leaf module: numpy and scipy only).

``ArrayLike`` is NumPy's (anything ``np.asarray`` accepts); ``MatrixLike`` adds
SciPy's sparse matrices and arrays; ``RandomStateLike`` is what
:func:`sklearn.utils.check_random_state` accepts.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

__all__ = ["ArrayLike", "MatrixLike", "RandomStateLike"]

#: a dense array-like or a SciPy sparse matrix / array
MatrixLike = ArrayLike | sp.spmatrix | sp.sparray

#: a seed, a NumPy RandomState, or None (fresh entropy)
RandomStateLike = int | np.random.RandomState | None
