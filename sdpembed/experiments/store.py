"""Durable results: each finished task is on disk before the next starts.

A run's folder (``--out/<spec name>/``) holds

``run.json``
    The manifest: which spec and grid (a fingerprint of the parsed spec,
    solvers and seeds), when each session started, the sdpembed version.
``rows.jsonl``
    One JSON line per finished task, appended with a single ``write`` on a
    file opened ``O_APPEND`` and ``fsync``'d before the runner goes on, as a
    database commits each unit of work before reporting it. A crash
    (``SIGKILL``, power loss) can only cut the line being written, which the
    reader drops; every line before it is a finished task.
``artefacts/task-<index>.npz``
    Arrays kept for figures, written (temporary file, ``fsync``, rename)
    before the task's line.
``.lock``
    Held (``flock``) while a run writes the folder, and naming the holder
    (process id, host, start, command): a second run into the same folder is
    refused with that name. The operating system releases the lock when the
    holder dies, however it dies.
``results.csv``, ``results.json``, ``summary.md``, ``figures/``
    The final tables, written (atomically) from all the rows when the grid
    is complete.

A folder that holds another run's results is refused unless the run is
resumed (same spec and grid: the finished tasks are skipped) or overwritten
(the previous run's files are removed first). Output problems -- a file in
the way, a read-only folder -- are found when the folder is opened, before
the first task runs.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import logging
import math
import os
import socket
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..exceptions import OutputError

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

__all__ = ["RunStore", "fingerprint", "ROWS", "MANIFEST", "LOCK", "OUTPUTS"]

logger = logging.getLogger(__name__)

ROWS = "rows.jsonl"
MANIFEST = "run.json"
LOCK = ".lock"
ARTEFACTS = "artefacts"
#: Files of a finished run, written from the rows.
OUTPUTS = ("results.csv", "results.json", "summary.md")
FIGURES = "figures"


def fingerprint(spec_raw: Any, solvers: Sequence[str] | None, seeds: Iterable[int]) -> str:
    """sha256 of the parsed spec and the grid options: what a resumed run must match."""
    doc = json.dumps({"spec": spec_raw, "solvers": solvers, "seeds": list(seeds)},
                     sort_keys=True, default=str)
    return hashlib.sha256(doc.encode()).hexdigest()


def _json_default(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system syncs folders
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_MODE = _file_mode()  # what open() would give a new file (mkstemp makes it private)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file, ``fsync`` and rename."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    try:
        with contextlib.suppress(OSError):
            os.fchmod(fd, _MODE)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


class RunStore:
    """The on-disk record of one run (see the module docstring).

    Parameters
    ----------
    folder : path
        The run's folder (``--out/<spec name>``), created if needed.
    manifest : dict
        What identifies the run: ``spec`` (name), ``fingerprint``, ``runs``.
    resume, overwrite : bool
        What to do when the folder already holds a run's results.
    command : str, optional
        The command line, recorded in the lock for a second run's message.
    """

    def __init__(self, folder: str | os.PathLike, manifest: dict, *, resume: bool = False,
                 overwrite: bool = False, command: str | None = None) -> None:
        if resume and overwrite:
            raise OutputError("choose one of resume and overwrite")
        self.folder = Path(folder)
        self.manifest = dict(manifest)
        self.resume, self.overwrite = resume, overwrite
        self.command = command or " ".join(sys.argv)
        self._lock_fd: int | None = None
        self._rows_fd: int | None = None
        self.done: dict[str, dict] = {}  # task key -> record

    # ---------------------------------------------------------------- opening
    def open(self) -> dict[str, dict]:
        """Lock the folder, check what it holds, and return the finished tasks by key.

        Raises
        ------
        OutputError
            The folder cannot be written, is locked by another run, or holds
            another run's results (without ``resume``/``overwrite``), or a
            resumed run's spec or grid differ.
        """
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock()
            self._check_existing()
            self._start_session()
            self._rows_fd = os.open(self.folder / ROWS, os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                                    0o644)
            (self.folder / ARTEFACTS).mkdir(exist_ok=True)
        except OutputError:
            self.close()
            raise
        except OSError as exc:
            self.close()
            raise OutputError(f"cannot write the results to {self.folder}: {exc}") from exc
        return self.done

    def _lock(self) -> None:
        path = self.folder / LOCK
        holder = {"pid": os.getpid(), "host": socket.gethostname(),
                  "started": datetime.datetime.now().isoformat(timespec="seconds"),
                  "command": self.command}
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            if fcntl is None:  # pragma: no cover - not POSIX: no lock, only the holder's name
                logger.warning("no file locking here: nothing stops a second run into %s",
                               self.folder)
                break
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                other = _read_holder(fd)
                os.close(fd)
                raise OutputError(
                    f"{self.folder} is being written by another run ({other}); wait for it "
                    "to finish or choose another --out") from None
            # the file may have been removed by a holder finishing just now: lock the one
            # that is at the path
            try:
                same = os.fstat(fd).st_ino == os.stat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(fd)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        os.fsync(fd)
        self._lock_fd = fd

    def _check_existing(self) -> None:
        present = [n for n in (MANIFEST, ROWS, *OUTPUTS) if (self.folder / n).exists()]
        if not present:
            return
        if self.overwrite:
            self._remove_previous()
            return
        old = self._read_manifest()
        rows = self._read_rows() if (self.folder / ROWS).exists() else {}
        what = (f"{len(rows)} finished runs of spec {old.get('spec')!r}" if old
                else f"results ({', '.join(present)})")
        if not self.resume:
            raise OutputError(
                f"{self.folder} already holds {what}; pass --resume to finish that run, "
                "--overwrite to replace it, or choose another --out")
        if not old:
            raise OutputError(
                f"{self.folder} holds results without a run manifest ({', '.join(present)}), "
                "which cannot be resumed; pass --overwrite to replace them")
        if old.get("fingerprint") != self.manifest["fingerprint"]:
            diff = [k for k in ("spec", "solvers", "seeds")
                    if old.get(k) != self.manifest.get(k)] or ["the spec's contents"]
            raise OutputError(
                f"{self.folder} holds a run of a different spec or grid (differs in: "
                f"{', '.join(diff)}); resume with the same spec and options, or pass "
                "--overwrite to replace it")
        self.done = rows
        self.manifest["sessions"] = old.get("sessions", [])

    def _remove_previous(self) -> None:
        for name in (MANIFEST, ROWS, *OUTPUTS):
            (self.folder / name).unlink(missing_ok=True)
        for sub, pattern in ((ARTEFACTS, "task-*.npz"), (FIGURES, "*.png")):
            for p in (self.folder / sub).glob(pattern):
                p.unlink()
        logger.info("removed the previous run's results from %s", self.folder)

    def _start_session(self) -> None:
        sessions = list(self.manifest.get("sessions", []))
        sessions.append({"started": datetime.datetime.now().isoformat(timespec="seconds"),
                         "pid": os.getpid(), "host": socket.gethostname(),
                         "already_done": len(self.done)})
        self.manifest["sessions"] = sessions
        from .._version import __version__

        self.manifest["sdpembed"] = __version__
        write_atomic(self.folder / MANIFEST,
                     json.dumps(self.manifest, indent=1, default=_json_default).encode())

    def _read_manifest(self) -> dict:
        try:
            return json.loads((self.folder / MANIFEST).read_text())
        except (OSError, ValueError):
            return {}

    def _read_rows(self) -> dict[str, dict]:
        """Finished records by task key; a cut last line (a crash mid-write) is dropped."""
        path = self.folder / ROWS
        data = path.read_bytes()
        out: dict[str, dict] = {}
        good = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                rec = json.loads(line)
                out[rec["key"]] = rec
            except (ValueError, KeyError, TypeError):
                logger.warning("%s: dropped an unreadable line at byte %d", path, good)
                break
            good += len(line)
        if good < len(data):
            if self.resume:
                with open(path, "r+b") as fh:  # the next line starts on a fresh line
                    fh.truncate(good)
                    fh.flush()
                    os.fsync(fh.fileno())
            logger.warning("%s: the last %d bytes were an unfinished line (a run stopped while "
                           "writing); dropped", path, len(data) - good)
        return out

    # ---------------------------------------------------------------- writing
    def append(self, key: str, row: dict, artefacts: dict) -> None:
        """Put one finished task on disk (its arrays, then its line), ``fsync``'d."""
        rec: dict[str, Any] = {"key": key, "row": row, "artefacts": None}
        if artefacts:
            name = f"{ARTEFACTS}/task-{int(row['index']):06d}.npz"
            buf = _npz_bytes(artefacts)
            write_atomic(self.folder / name, buf)
            rec["artefacts"] = name
        line = json.dumps(rec, default=_json_default, allow_nan=True) + "\n"
        data = line.encode()
        written = os.write(self._rows_fd, data)
        while written < len(data):  # a short write (rare): finish the line
            written += os.write(self._rows_fd, data[written:])
        os.fsync(self._rows_fd)
        self.done[key] = rec

    def load_artefacts(self, rec: dict) -> dict:
        if not rec.get("artefacts"):
            return {}
        try:
            with np.load(self.folder / rec["artefacts"], allow_pickle=False) as z:
                return {k: (str(z[k]) if z[k].dtype.kind == "U" else z[k]) for k in z.files}
        except (OSError, ValueError) as exc:
            logger.warning("arrays of %s unreadable (%s); its figures are skipped",
                           rec["artefacts"], exc)
            return {}

    def write_output(self, name: str, data: bytes) -> Path:
        path = self.folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
        return path

    def finish(self, summary: dict) -> None:
        """Record the end of this session in the manifest."""
        self.manifest["sessions"][-1].update(summary)
        write_atomic(self.folder / MANIFEST,
                     json.dumps(self.manifest, indent=1, default=_json_default).encode())

    def close(self) -> None:
        if self._rows_fd is not None:
            os.close(self._rows_fd)
            self._rows_fd = None
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                (self.folder / LOCK).unlink()
            os.close(self._lock_fd)  # releases the flock
            self._lock_fd = None

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _read_holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        info = {}
    if not info:
        return "holder unknown"
    return (f"process {info.get('pid')} on {info.get('host')}, started {info.get('started')}: "
            f"{info.get('command')}")


def _npz_bytes(arrays: dict) -> bytes:
    import io

    buf = io.BytesIO()
    np.savez(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def clean_float(v: Any) -> Any:
    """NaN and infinities as ``None`` (JSON); numpy scalars as Python ones."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v
