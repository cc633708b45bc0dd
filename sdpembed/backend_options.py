"""The settings each backend accepts, as tables, checked before anything is solved.

``solve(formulation, solver=NAME, **options)`` hands ``options`` to the
backend. cvxpy passes them on unchecked, so a misspelt or mistyped setting
used to surface deep inside a solver as a raw ``TypeError`` or
``OverflowError`` (CLARABEL ``max_iter=-1``), or was silently replaced by a
default (SDPA). :func:`check_backend_options` checks every option against
one declarative table per backend -- the settings documented by the solver
itself, with their types and ranges, held by the backend's entry of
:data:`sdpembed.backends.CONIC_BACKENDS` -- and raises an
:class:`~sdpembed.exceptions.InputError` naming the backend and the option,
as cvxpy does for unknown solver names.

Sources of the tables:

* SCS 3: https://www.cvxgrp.org/scs/api/settings.html (plus cvxpy's ``eps``
  and ``use_indirect`` spellings);
* Clarabel: https://clarabel.org/stable/api_settings/ (the fields of
  ``clarabel.DefaultSettings``);
* CVXOPT: https://cvxopt.org/userguide/coneprog.html#algorithm-parameters
  (and cvxpy's ``max_iters`` and ``kktsolver``);
* SDPA: ``sdpap.param`` of sdpa-python;
* MOSEK: the options cvxpy's MOSEK interface reads;
* CSDP: the ``param.csdp`` parameters of the CSDP user's guide, and
  ``time_limit`` (seconds, enforced by :mod:`sdpembed._csdp`);
* LOWRANK: :class:`sdpembed.lowrank.LowRankOptions`, the backend's own
  settings class (its one source of truth).

Settings that write files (SCS ``write_data_filename``, SDPA ``resultFile``,
MOSEK ``save_file``, ...) are marked, so that experiment specs, which may
write only under ``--out``, can refuse them (``allow_files=False``).
Backends registered by others (:func:`sdpembed.solvers.register_backend`)
check their own options.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping

from ._checks import describe_value
from .backends.settings import Setting, check_settings
from .backends.table import CONIC_BACKENDS, EntryView
from .exceptions import InputError

__all__ = ["Setting", "BACKEND_SETTINGS", "check_backend_options", "backend_settings"]

#: backend name -> option name -> :class:`Setting`: the ``settings`` of each entry of
#: :data:`sdpembed.backends.CONIC_BACKENDS` (a live view: registered backends appear).
BACKEND_SETTINGS: Mapping[str, Mapping[str, Setting]] = EntryView(lambda b: b.settings)


def backend_settings(name: str) -> Mapping[str, Setting] | None:
    """The settings table of a backend, or ``None`` where the backend checks its own."""
    entry = CONIC_BACKENDS.get(str(name).upper())
    return None if entry is None else entry.settings


def check_backend_options(name: str, options: Mapping, *, allow_files: bool = True) -> None:
    """Check ``options`` against the settings ``name`` accepts; ``InputError`` otherwise.

    Parameters
    ----------
    name : str
        Backend name (case-insensitive). Backends without a table here (those
        registered by other packages, ``"auto"``) are not checked.
    options : mapping
        Keyword options of ``solve()``.
    allow_files : bool, default=True
        If False, options that make the backend write a file are refused
        (experiment specs write only under ``--out``).

    Raises
    ------
    InputError
        The message names the backend and the option, what is accepted and
        what was given, e.g. ``CLARABEL option 'max_iter': expected an integer
        in [1, 4294967295]; got -1 (integer)``.
    """
    backend = str(name).upper()
    if backend == "LOWRANK":
        _check_lowrank(options)
        return
    entry = CONIC_BACKENDS.get(backend)
    if entry is None:
        return
    check_settings(backend, entry.settings, options, allow_files=allow_files)


def _check_lowrank(options: Mapping) -> None:
    """LOWRANK's options, checked by :class:`~sdpembed.lowrank.LowRankOptions` itself.

    Each option is first tried alone, so that an error (including a
    ``TypeError`` from a comparison with a string) names the option; then all
    together, for checks that involve several.
    """
    from .lowrank.options import LowRankOptions  # the backend's settings, one source

    fields = LowRankOptions.__dataclass_fields__
    for key, value in options.items():
        if key not in fields:
            close = difflib.get_close_matches(str(key), fields, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InputError(f"unknown LOWRANK option {key!r}{hint}; LOWRANK accepts: "
                             f"{', '.join(sorted(fields))}")
        try:
            LowRankOptions(**{key: value})
        except InputError as exc:
            raise InputError(f"LOWRANK option {key!r}: {exc}") from exc
        except (TypeError, ValueError) as exc:
            want = _annotation_text(fields[key].type)
            raise InputError(f"LOWRANK option {key!r}: expected {want}; got "
                             f"{describe_value(value)}") from exc
    try:
        LowRankOptions(**dict(options))
    except (InputError, TypeError, ValueError) as exc:
        raise InputError(f"LOWRANK options {sorted(options)}: {exc}") from exc


def _annotation_text(annotation) -> str:
    text = str(annotation).replace("typing.", "")
    words = {"float": "a number", "int": "an integer", "str": "a string", "bool": "true or false",
             "None": "None", "Any": "a value"}
    parts = [words.get(p.strip(), p.strip()) for p in text.split("|")]
    return " or ".join(parts)
