"""The backends' home: one declarative entry per conic backend.

:mod:`sdpembed.backends.table` holds :data:`CONIC_BACKENDS`, read by the solve
layer, the option checks, the rule that judges a result and the tests;
:mod:`~sdpembed.backends.settings` the option tables each entry names, and
:mod:`~sdpembed.backends.interfaces` the cvxpy plug-ins and statistics readers.
"""

from __future__ import annotations

from .settings import Setting, check_settings
from .table import (
    CONIC_BACKENDS,
    ConicBackend,
    backend_options_for,
    conic_alternatives,
    conic_backend,
    conic_backend_names,
    register_conic_backend,
    unregister_conic_backend,
)

__all__ = ["CONIC_BACKENDS", "ConicBackend", "Setting", "backend_options_for",
           "check_settings", "conic_alternatives", "conic_backend", "conic_backend_names",
           "register_conic_backend", "unregister_conic_backend"]
