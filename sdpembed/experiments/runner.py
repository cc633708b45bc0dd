"""Running a grid: serially, with joblib workers or on a Dask cluster, durably.

With an output folder, every finished task is on disk (:mod:`.store`) before
the next result is awaited, so an interrupted run -- ``SIGINT``,
``SIGTERM``, ``SIGKILL``, a crash -- keeps every finished row, and
``run_spec(..., resume=True)`` (``sdpembed run --resume``) runs only the
tasks that are missing and ends with the same tables as an uninterrupted run.
"""

from __future__ import annotations

import contextlib
import json
import logging
import numbers
import os
import platform
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .. import datasets as _datasets
from ..exceptions import InputError, OutputError
from .figures import make_figures
from .grid import Task, expand_grid
from .results import ExperimentResult
from .schema import Spec, thaw
from .spec import find_spec, load_spec, parse_spec
from .store import RunStore, fingerprint
from .tasks import Data, load_data, run_task

__all__ = ["run_spec", "load_result", "RunInterrupted"]

logger = logging.getLogger(__name__)


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by ``SIGINT`` or ``SIGTERM``; its finished tasks are on disk.

    Attributes
    ----------
    signum : int
    finished, total : int
        Tasks on disk, tasks in the grid.
    folder : str or None
        The run's folder (``None`` for a run without one: nothing was kept).
    """

    def __init__(self, signum: int, finished: int, total: int, folder: str | None) -> None:
        self.signum, self.finished, self.total, self.folder = signum, finished, total, folder
        name = signal.Signals(signum).name
        where = (f"; the {finished} finished runs are in {folder}: finish with --resume"
                 if folder else "")
        super().__init__(f"interrupted by {name} after {finished} of {total} runs{where}")


class _Interrupted(BaseException):
    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class _Interrupts:
    """SIGINT and SIGTERM raise :class:`_Interrupted` in the main thread, except inside
    :meth:`critical` (writing a finished task), where they wait until it is done.

    So an interrupted run has written each task completely or not at all, and
    knows how many; the default SIGTERM would end the process at once, without
    closing the run's files or saying what was kept.
    """

    def __init__(self):
        self.pending: int | None = None
        self.in_critical = False
        self.previous: dict = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    self.previous[sig] = signal.signal(sig, self._handler)
                except ValueError:  # pragma: no cover - not the main interpreter
                    pass
        return self

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        return False

    def _handler(self, signum, frame):
        if self.previous.get(signum) is signal.SIG_IGN:
            return
        if self.in_critical:
            self.pending = signum
            return
        raise _Interrupted(signum)

    @contextlib.contextmanager
    def critical(self) -> Iterator[None]:
        self.in_critical = True
        try:
            yield
        finally:
            self.in_critical = False
        if self.pending is not None:
            raise _Interrupted(self.pending)


def run_spec(spec: Spec | str, *, solvers: Iterable[str] | None = None,
             seeds: Iterable[int] | None = None, n_jobs: int = 1,
             scheduler: str | Any | None = None, out_dir: str | os.PathLike | None = None,
             progress: bool = True, resume: bool = False,
             overwrite: bool = False) -> ExperimentResult:
    """Run every cell of a spec's grid and collect the results.

    Parameters
    ----------
    spec : Spec or path or name
        A validated spec, a TOML path, or the name of a shipped spec.
    solvers : iterable of str, optional
        Replace the solver axis of the SDP methods.
    seeds : iterable of int, optional
        Replace the spec's seeds.
    n_jobs : int, default=1
        joblib workers (``-1``: all cores); 1 runs serially in this process.
    scheduler : str or dask.distributed.Client, optional
        Address of a Dask scheduler (``"tcp://host:8786"``) or a client: each
        run is a future on the cluster. The data are loaded here and sent to
        every worker once, and ``SDPEMBED_DATA``, if set, is set on the workers
        too; the summary says so.
    out_dir : path, optional
        The run's folder: each finished task is written there at once
        (:mod:`sdpembed.experiments.store`), then ``results.csv``,
        ``results.json``, ``summary.md`` and the figures. Without it nothing
        is written and an interruption loses the finished tasks.
    progress : bool, default=True
        tqdm progress bar over runs (on stderr).
    resume : bool, default=False
        ``out_dir`` holds an interrupted run of the same spec and grid: run
        only the missing tasks.
    overwrite : bool, default=False
        Replace the results ``out_dir`` holds.

    Returns
    -------
    ExperimentResult

    Raises
    ------
    SpecError, OutputError
        Before any task runs.
    RunInterrupted
        ``SIGINT`` or ``SIGTERM``; the finished tasks are in ``out_dir``.
    """
    if not isinstance(spec, Spec):
        spec = load_spec(find_spec(spec))
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise InputError(f"n_jobs must be a non-zero integer; got {n_jobs!r}")
    solvers = None if solvers is None else list(solvers)
    tasks = expand_grid(spec, solvers=solvers, seeds=seeds)
    seed_list = sorted({t.seed for t in tasks}) if seeds is not None else list(spec.seeds)
    store = None
    done: dict[str, dict] = {}
    if out_dir is not None:
        manifest = {"spec": spec.name, "path": spec.path, "runs": len(tasks),
                    "solvers": solvers, "seeds": seed_list,
                    "fingerprint": fingerprint(thaw(spec.raw), solvers, seed_list)}
        store = RunStore(out_dir, manifest, resume=resume, overwrite=overwrite)
        done = store.open()
    try:
        records = {}
        for t in tasks:
            rec = done.get(t.key)
            if rec is not None:
                records[t.key] = (rec["row"], store.load_artefacts(rec))
        todo = [t for t in tasks if t.key not in records]
        if records:
            logger.info("%s: %d of %d runs already on disk; running the other %d", spec.name,
                        len(records), len(tasks), len(todo))
        logger.info("%s: %d runs", spec.name, len(todo))
        started = time.strftime("%Y-%m-%dT%H:%M:%S")
        t0 = time.perf_counter()
        executed = {"mode": "none"}
        with _Interrupts() as interrupts:
            try:
                for task, (row, artefacts) in _execute(spec, todo, n_jobs=n_jobs,
                                                       scheduler=scheduler, progress=progress,
                                                       done=len(records), total=len(tasks),
                                                       how=executed):
                    # the grid's index (a resumed grid is the same grid)
                    row["index"] = task.index
                    with interrupts.critical():
                        if store is not None:
                            store.append(task.key, row, artefacts)
                        records[task.key] = (row, artefacts)
            except (KeyboardInterrupt, _Interrupted) as exc:
                signum = getattr(exc, "signum", signal.SIGINT)
                finished = len(store.done) if store is not None else 0
                raise RunInterrupted(signum, finished, len(tasks),
                                     None if store is None else str(store.folder)) from None
        wall = time.perf_counter() - t0
        pairs = [records[t.key] for t in tasks]
        rows = [p[0] for p in pairs]
        for t, row in zip(tasks, rows, strict=True):
            row["index"] = t.index
        artefacts = {t.index: p[1] for t, p in zip(tasks, pairs, strict=True) if p[1]}
        meta = _meta(spec, tasks, rows, started, wall, n_jobs, scheduler, executed,
                     resumed=len(tasks) - len(todo))
        result = ExperimentResult(spec, rows, artefacts, meta)
        result.figures = make_figures(result)
        if store is not None:
            result.write(store.folder)
            store.finish({"finished": time.strftime("%Y-%m-%dT%H:%M:%S"), "ran": len(todo),
                          "wall_s": wall})
        return result
    finally:
        if store is not None:
            store.close()


def load_result(folder: str | os.PathLike) -> ExperimentResult:
    """The result a finished run wrote to ``folder`` (its ``results.json``), without running.

    The spec is re-read from the copy stored with the results (the shipped
    spec may have changed since); ``figure_files`` maps each figure's name to
    its PNG file in ``folder/figures`` (the arrays are not reloaded, so
    ``figures`` is empty). Its backends must be known here, as for any spec.

    Raises
    ------
    OutputError
        No readable ``results.json`` in ``folder``.
    SpecError
        The stored spec is not valid here.
    """
    path = Path(folder) / "results.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise OutputError(f"no finished run in {folder}: cannot read {path.name} ({exc}); "
                          "run the spec with --out first") from exc
    meta = doc.get("meta", {})
    spec = parse_spec(doc["spec"], name=meta.get("spec"), path=meta.get("path"))
    files = {p.stem: p for p in sorted((Path(folder) / "figures").glob("*.png"))}
    return ExperimentResult(spec, doc["rows"], {}, meta, figure_files=files)


def _execute(spec: Spec, tasks: list[Task], *, n_jobs: int, scheduler, progress: bool,
             done: int, total: int, how: dict):
    """Yield ``(task, (row, artefacts))`` as tasks finish: in this process (``n_jobs=1``,
    the data and graph caches serve the whole grid), in joblib worker processes, or on a
    Dask cluster (one future per task, the data scattered to every worker once)."""
    from tqdm.auto import tqdm

    if not tasks:
        how.update(mode="none", text="nothing left to run")
        return
    bar = tqdm(total=total, initial=done, desc=spec.name, unit="run", disable=not progress)
    source = None
    try:
        if scheduler is not None:
            source = _on_dask(spec, tasks, scheduler, how)
        elif n_jobs == 1:
            how.update(mode="serial", text="serially in this process")
            source = ((t, run_task(spec, t)) for t in tasks)  # each written before the next
        else:
            source = _on_joblib(spec, tasks, n_jobs, how)
        for task, pair in source:
            yield task, pair
            bar.update()
    finally:
        if source is not None:
            source.close()  # stops joblib's workers or cancels the cluster's futures
        bar.close()


def _on_joblib(spec: Spec, tasks: list[Task], n_jobs: int, how: dict):
    from joblib import Parallel, delayed

    workers = os.cpu_count() if n_jobs == -1 else n_jobs
    how.update(mode="joblib", workers=workers,
               text=f"{workers} joblib worker processes (each loads the data from "
                    f"{_datasets.data_home()})")
    by_index = {t.index: t for t in tasks}
    runner = Parallel(n_jobs=n_jobs, return_as="generator_unordered")
    for index, pair in runner(delayed(_indexed)(spec, t, None) for t in tasks):
        yield by_index[index], pair


def _on_dask(spec: Spec, tasks: list[Task], scheduler, how: dict):
    """One future per task on the cluster (never run here, whatever the cluster's size)."""
    from dask.distributed import Client, as_completed

    client, own = (scheduler, False) if isinstance(scheduler, Client) \
        else (Client(scheduler), True)
    futures = []
    try:
        data = _send_to_workers(client, spec, tasks, how)
        scattered = {name: client.scatter(d, broadcast=True, hash=False)
                     for name, d in data.items()}
        by_index = {t.index: t for t in tasks}
        futures = [client.submit(_indexed, spec, t, scattered.get(t.dataset), pure=False)
                   for t in tasks]
        for future in as_completed(futures):
            index, pair = future.result()
            yield by_index[index], pair
    finally:
        if futures:
            client.cancel(futures)
        if own:
            client.close()


def _indexed(spec: Spec, task: Task, data: Data | None):
    return task.index, run_task(spec, task, data)


def _set_environment(values: dict) -> None:
    """Run on each Dask worker: set environment variables (the data folder)."""
    os.environ.update(values)


def _send_to_workers(client, spec: Spec, tasks: list[Task], how: dict) -> dict:
    """Data for a Dask cluster: loaded here and sent; ``SDPEMBED_DATA`` set on the workers.

    Workers on other machines need neither the data folder nor a download;
    a dataset that cannot be loaded here is left to the workers (whose rows
    then carry the error).
    """
    env = {k: os.environ[k] for k in (_datasets.ENV_VAR,) if os.environ.get(k)}
    if env:
        client.run(_set_environment, env)
    data, failed, per_seed = {}, [], []
    for name in sorted({t.dataset for t in tasks}):
        if spec.dataset(name).sample_seed == "seed":
            per_seed.append(name)   # each seed its own subsample: the workers load it
            continue
        try:
            data[name] = load_data(spec.dataset(name))
        except Exception as exc:  # noqa: BLE001 - the workers' rows will say why
            failed.append(f"{name} ({type(exc).__name__})")
    n = len(client.scheduler_info().get("workers", {}))
    text = f"Dask cluster {client.scheduler.address} ({n} workers); data loaded here and sent " \
           f"to the workers ({', '.join(sorted(data)) or 'none'})"
    if failed:
        text += f"; not loadable here, left to the workers: {', '.join(failed)}"
    if per_seed:
        text += f"; loaded by the workers, one subsample per seed: {', '.join(per_seed)}"
    text += f"; {_datasets.ENV_VAR}={env[_datasets.ENV_VAR]} set on the workers" if env else \
        f"; {_datasets.ENV_VAR} not set here, so not set on the workers"
    how.update(mode="dask", scheduler=str(client.scheduler.address), workers=n,
               data_sent=sorted(data), environment=env, text=text)
    return data


def _meta(spec, tasks, rows, started, wall, n_jobs, scheduler, executed, resumed) -> dict:
    import cvxpy
    import scipy
    import sklearn

    from .._version import __version__

    used = sorted({r["solver"] for r in rows if r.get("solver")})
    versions = {s: next((r["solver_version"] for r in rows
                         if r.get("solver") == s and r.get("solver_version")), None)
                for s in used}
    status = {"ok": 0, "inaccurate": 0, "error": 0}
    for r in rows:
        status[r["status"]] = status.get(r["status"], 0) + 1
    text = executed.get("text", "nothing left to run")
    if resumed:
        text += f"; {resumed} of {len(tasks)} runs were already on disk (resumed)"
    return {
        "spec": spec.name, "path": spec.path, "started": started, "wall_s": wall,
        "runs": len(tasks), "ok": status["ok"], "inaccurate": status["inaccurate"],
        "errors": status["error"], "resumed": resumed,
        "n_jobs": n_jobs, "scheduler": None if scheduler is None else str(scheduler),
        "execution": text, "execution_detail": {k: v for k, v in executed.items()
                                                if k != "text"},
        "seeds": sorted({t.seed for t in tasks}), "solvers": versions,
        "versions": {"sdpembed": __version__, "python": platform.python_version(),
                     "numpy": np.__version__, "scipy": scipy.__version__,
                     "scikit-learn": sklearn.__version__, "cvxpy": cvxpy.__version__},
        "machine": {"platform": platform.platform(), "processor": platform.machine()},
    }
