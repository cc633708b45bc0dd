"""The grid of a spec: dataset x label fraction x method x parameter sweep x solver x seed."""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Iterable
from dataclasses import dataclass

from .._checks import Integer
from .figures import FIGURE_KINDS, figure_selects
from .methods import METHODS, uses_solver
from .schema import MAX_SEED, FrozenMap, Spec, fail, thaw
from .spec import _parse_solvers, check_method_solvers

__all__ = ["Task", "expand_grid"]


@dataclass(frozen=True)
class Task:
    """One cell of the grid: what :func:`~sdpembed.experiments.run_task` fits and evaluates.

    ``index`` is its place in the grid; :attr:`key` identifies the run itself
    (the same run has the same key in any grid), which is how an interrupted
    run finds its finished tasks on disk.
    """

    index: int
    dataset: str
    fraction: float
    seed: int
    method: str  # label
    params: FrozenMap
    solver: str | None
    keep: frozenset = frozenset()

    @property
    def key(self) -> str:
        return json.dumps({"dataset": self.dataset, "fraction": self.fraction,
                           "seed": self.seed, "method": self.method,
                           "params": thaw(self.params), "solver": self.solver},
                          sort_keys=True, default=str)


def expand_grid(spec: Spec, *, solvers: Iterable[str] | None = None,
                seeds: Iterable[int] | None = None) -> list[Task]:
    """Every run of a spec, in a fixed order (dataset, fraction, method, params, solver, seed).

    Parameters
    ----------
    spec : Spec
    solvers : iterable of str, optional
        Replace the solver axis of every SDP method (e.g. the CLI's ``--solver``).
    seeds : iterable of int, optional
        Replace the spec's seeds.
    """
    if solvers is not None:
        solvers = _parse_solvers(list(solvers), "--solver")
        for m in spec.methods:
            check_method_solvers(dataclasses.replace(m, solvers=solvers), solvers)
    if seeds is None:
        seeds = spec.seeds
    else:
        seeds = tuple(seeds)
        bad = [s for s in seeds if not Integer(0, MAX_SEED)(s)]
        if bad or not seeds or len(set(seeds)) != len(seeds):
            fail("seeds", f"expected distinct integers in [0, {MAX_SEED}]; got {list(seeds)}")
    tasks = []
    for ds, fraction, method in itertools.product(spec.datasets, spec.labels.fractions,
                                                  spec.methods):
        info = METHODS[method.method]
        for params in method.combinations():
            axis = (solvers or method.solvers or spec.solvers) \
                if uses_solver(info, params) else (None,)
            for solver, seed in itertools.product(axis, seeds):
                tasks.append(Task(len(tasks), ds.name, fraction, int(seed), method.label,
                                  params, solver))
    return _mark_artefacts(spec, tasks)


def _mark_artefacts(spec: Spec, tasks: list[Task]) -> list[Task]:
    """Ask the first matching run of each embedding/spectrum/prototype figure to keep arrays."""
    keep: dict[int, set] = {}
    for fig in spec.figures:
        what = FIGURE_KINDS[fig.kind].keeps
        if what is None:
            continue
        for t in tasks:
            if figure_selects(spec, fig, t.dataset, t.fraction, t.method, t.params,
                              fig.options["method"], fig.options.get("params")):
                keep.setdefault(t.index, set()).add(what)
                break
    return [dataclasses.replace(t, keep=frozenset(keep.get(t.index, ()))) for t in tasks]
