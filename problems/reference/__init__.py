"""Reference instances with recorded optima (in the style of cvxpy's ``solver_test_helpers``).

Each instance is one JSON file in this folder holding the problem's data and what is
known about its optimum:

* Gram SDPs (``"kind": "gram"``, DVU and MVU): the graph (``n_nodes``, ``edges``,
  ``sqdist``: the squared target distances before the builder's normalisation), the
  partial labels (``-1`` unlabelled) and the builder's keywords;
* eigenproblem relaxations (``"kind": "pencil"``, LDA and TCA): the pencil ``A``,
  ``B``, ``d``, ``sense`` and ``kind`` of :func:`sdpembed.relaxations.formulate`, and
  the closed-form optimum (the sum of the extreme generalized eigenvalues: the
  relaxations are exact);

and for every instance ``optimum`` (the value of the formulation's objective),
``dual_bound`` (the recording solver's dual objective: a lower bound for a
minimisation, an upper bound for a maximisation, up to the solver's feasibility
tolerance), ``tolerance`` (relative: the recorded optimum is known to this accuracy,
the largest disagreement between the recording solvers), ``solvers`` (each recording
solver's objective, options and version) and ``provenance`` (how the data were made).
:mod:`problems.reference.record` writes them; ``tests/test_reference.py`` solves them
with every installed backend.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent

__all__ = ["names", "load", "build"]


def names() -> list[str]:
    """The recorded instances, sorted."""
    return sorted(p.stem for p in HERE.glob("*.json"))


def load(name: str) -> dict:
    """One instance as recorded (lists turned back into arrays)."""
    inst = json.loads((HERE / f"{name}.json").read_text())
    for key in ("edges", "sqdist", "labels", "A", "B"):
        if key in inst:
            inst[key] = np.asarray(inst[key])
    return inst


def build(inst: dict):
    """The instance's :class:`~sdpembed.formulations.Formulation` (a fresh one per call)."""
    if inst["kind"] == "pencil":
        from sdpembed.relaxations import Pencil, formulate

        return formulate(Pencil(inst["A"], inst["B"], inst["sense"], inst["pencil_kind"]),
                         inst["d"])
    from sdpembed.formulations.dvu import dvu
    from sdpembed.formulations.mvu import mvu
    from sdpembed.graphs import NeighborhoodGraph

    graph = NeighborhoodGraph(int(inst["n_nodes"]), inst["edges"], inst["sqdist"])
    if inst["builder"] == "mvu":
        return mvu(graph, **inst["kwargs"])
    return dvu(graph, inst["labels"], **inst["kwargs"])
