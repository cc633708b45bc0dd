"""Benchmark datasets of the papers the toolkit implements.

Three kinds of data:

* **downloaded** -- USPS digits, the UCI sets sonar, ionosphere, car and
  mushroom, and a 32x32 UMIST faces set. Each is stored as one compressed
  ``.npz`` archive in :func:`data_home`. When the archive is missing, its
  public source file is downloaded by `pooch <https://www.fatiando.org/pooch/>`_
  (which checks it against a recorded sha256), converted to the documented
  ``.npz`` layout and saved; offline, the error names the file to put where.
* **bundled** -- scikit-learn's iris, wine, breast cancer and digits.
* **synthetic** -- the 3-D two moons of Liu, Tao & Liu (TCA, section 5.1).

Every archive holds plain numeric and fixed-width unicode arrays only and is
read with ``allow_pickle=False``; shapes, dtypes and label ranges are checked
on every load. Conventions (shared with ``shared/data/README.md``): ``X`` has
one row per sample (float32 for images, float64 otherwise), ``y`` is int64
starting at 0, ``classes[y[i]]`` is the original label, and rows keep the
order of the source file.

Semi-supervised experiments hide labels with :func:`partial_labels`, which
marks unlabeled points with ``-1`` (scikit-learn's convention).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import io
import logging
import numbers
import os
import re
import tempfile
import textwrap
import zipfile
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.utils import Bunch, check_random_state

from ._typing import ArrayLike, RandomStateLike
from .exceptions import (  # the dataset errors are re-exported here (see __all__)
    ChecksumError,
    DatasetError,
    DatasetFormatError,
    DatasetNotFoundError,
    InputError,
    LabelError,
)

__all__ = [
    "DatasetError",
    "DatasetNotFoundError",
    "ChecksumError",
    "DatasetFormatError",
    "DatasetInfo",
    "Source",
    "ENV_VAR",
    "data_home",
    "list_datasets",
    "dataset_info",
    "fetch_source",
    "convert_source",
    "arrays_sha256",
    "load_dataset",
    "load_usps",
    "load_uci",
    "load_umist32",
    "load_sklearn",
    "make_two_moons_3d",
    "partial_labels",
]

logger = logging.getLogger(__name__)

#: Environment variable naming the folder that holds the ``.npz`` archives.
ENV_VAR = "SDPEMBED_DATA"

_DOWNLOAD_TIMEOUT_S = 60.0


# --------------------------------------------------------------------------- location


def data_home(data_home: str | os.PathLike | None = None) -> Path:
    """Folder holding the dataset archives.

    Parameters
    ----------
    data_home : path-like, optional
        Explicit folder; wins over everything else.

    Returns
    -------
    pathlib.Path
        ``data_home`` if given, else ``$SDPEMBED_DATA`` if set and non-empty,
        else the per-user cache folder ``platformdirs.user_cache_dir("sdpembed")/data``.
        The folder is not created here; it is created when an archive is written.
    """
    if data_home is not None:
        return Path(data_home).expanduser()
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("sdpembed")) / "data"


_home = data_home  # loaders take a ``data_home`` argument that shadows the function


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class Source:
    """A public source file: a path at a fixed commit of a GitHub repository.

    Attributes
    ----------
    repo : str
        ``owner/name`` of the repository.
    commit : str
        40-hex commit that last changed the file.
    path : str
        Path of the file inside the repository.
    sha256 : str
        sha256 of the file's bytes.
    size : int
        Size of the file in bytes.
    """

    repo: str
    commit: str
    path: str
    sha256: str
    size: int

    @property
    def url(self) -> str:
        """``raw.githubusercontent.com`` address of the file at ``commit``."""
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{self.path}"

    @property
    def filename(self) -> str:
        """Name under which the source file is looked for in :func:`data_home`."""
        return self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class DatasetInfo:
    """What :func:`list_datasets` knows about a dataset without loading it.

    Attributes
    ----------
    name : str
        Name accepted by :func:`load_dataset`.
    kind : {"download", "bundled", "synthetic"}
        Where the data comes from.
    n_samples, n_features, n_classes : int
        Size of ``data`` and number of classes.
    description : str
        One line.
    filename : str or None
        Archive name in :func:`data_home` (downloaded sets only).
    source : Source or None
        Public source file (downloaded sets only).
    """

    name: str
    kind: str
    n_samples: int
    n_features: int
    n_classes: int
    description: str
    filename: str | None = None
    source: Source | None = None


_USPS_SOURCE = Source(
    "niuers/Learning-From-Data-A-Short-Course", "35684e893b63bf4039bafcc6d34fe935851baf9a",
    "data/usps.h5", "734f88c541104a956d88be2c95d03b4a463ffd74ccc2ba9c80841fb98e3fcb36", 2913522)
_SONAR_SOURCE = Source(
    "rfigueror1/tareas_teoria_cerebro", "7e3e4bfa8b250dd36d0be11907c3b5a5529d5759",
    "sonar.all-data.csv", "e90434cdbf00fcf93ffa911fe447ae25606979658e60f1d32e155c3b5240234d",
    87776)
_IONOSPHERE_SOURCE = Source(
    "akul-goyal/Adaboost-Semisupervised-Learning", "d5090ba62bcce69a31edba45381ec1889f18528d",
    "ionosphere.data", "c14ba03a64db4a5edaed1d06140d515caf26706af36996e20167cd594282ed1e",
    76549)
_CAR_SOURCE = Source(
    "pekacprowicz/PSZT-Projekt-2", "1334e6b445ebf2918fd07b7597e3a8cc80e7b68c",
    "car.data", "97f9e7c952dfeb8d9b9e82ae25bd87d197064491a65d257347dc8076de284c28", 51915)
_MUSHROOM_SOURCE = Source(
    "cyklop123/MOW", "a1a3df352d64263f775fe03fae990c795c601671",
    "datasets/agaricus-lepiota.data",
    "2f6f8c4f1bc4ce1e3d3f69abd9313a6444b5df41c4ac5698b2a1098e7f42d917", 374005)
_UMIST_SOURCE = Source(
    "greatQntgz/MPRBC", "a25a39278718cd99bc2545a3f8dd2de06b453bd6",
    "data/UMIST.mat", "0f1904a78f9067ee5057a22f4327faabc1a856c781c43684eb16a3d6bb27ebff",
    524700)

_INFO: dict[str, DatasetInfo] = {
    info.name: info
    for info in [
        DatasetInfo("usps", "download", 9298, 256, 10,
                    "USPS handwritten digits, 16x16 in [0, 1], ESL 7291/2007 train/test split",
                    "usps.npz", _USPS_SOURCE),
        DatasetInfo("sonar", "download", 208, 60, 2,
                    "UCI sonar, mines vs. rocks", "sonar.npz", _SONAR_SOURCE),
        DatasetInfo("ionosphere", "download", 351, 34, 2,
                    "UCI ionosphere radar returns, good vs. bad", "ionosphere.npz",
                    _IONOSPHERE_SOURCE),
        DatasetInfo("car", "download", 1728, 21, 4,
                    "UCI car evaluation, 6 categorical attributes one-hot encoded", "car.npz",
                    _CAR_SOURCE),
        DatasetInfo("mushroom", "download", 8124, 117, 2,
                    "UCI mushroom (agaricus-lepiota), 22 categorical attributes one-hot encoded",
                    "mushroom.npz", _MUSHROOM_SOURCE),
        DatasetInfo("umist32", "download", 575, 1024, 20,
                    "UMIST faces of 20 people, 32x32 grey levels", "umist32.npz",
                    _UMIST_SOURCE),
        DatasetInfo("iris", "bundled", 150, 4, 3, "scikit-learn's iris"),
        DatasetInfo("wine", "bundled", 178, 13, 3, "scikit-learn's wine"),
        DatasetInfo("breast_cancer", "bundled", 569, 30, 2,
                    "scikit-learn's Wisconsin diagnostic breast cancer"),
        DatasetInfo("digits", "bundled", 1797, 64, 10, "scikit-learn's 8x8 digits"),
        DatasetInfo("two_moons_3d", "synthetic", 600, 3, 2,
                    "TCA's 3-D two moons, z = sin(pi y) (y^2 + 1)^-2 + 0.3 y"),
    ]
}

_UCI_NAMES = ("sonar", "ionosphere", "car", "mushroom")
_SKLEARN_NAMES = ("iris", "wine", "breast_cancer", "digits")


def list_datasets() -> list[str]:
    """Names accepted by :func:`load_dataset`, sorted."""
    return sorted(_INFO)


def dataset_info(name: str) -> DatasetInfo:
    """:class:`DatasetInfo` of dataset ``name`` (no loading, no download)."""
    try:
        return _INFO[name]
    except (KeyError, TypeError):
        raise InputError(
            f"unknown dataset {name!r}; choose one of {list_datasets()}") from None


def _remote_info(name: str) -> DatasetInfo:
    info = dataset_info(name)
    if info.kind != "download":
        raise InputError(f"dataset {name!r} is {info.kind}, it has no source file to fetch")
    return info


# --------------------------------------------------------------------------- download


def _downloader():
    """pooch's HTTP downloader (the one place that touches the network): a callable
    ``(url, output_file, pooch)`` that writes the bytes at ``url`` to ``output_file``."""
    import pooch

    return pooch.HTTPDownloader(progressbar=False, timeout=_DOWNLOAD_TIMEOUT_S)


def _expected(source: Source) -> str:
    return (f"{source.repo}:{source.path} at commit {source.commit[:12]} has sha256 "
            f"{source.sha256} ({source.size} bytes)")


def _download(source: Source) -> bytes:
    """Bytes of ``source``, downloaded and sha256-checked by :func:`pooch.retrieve`.

    The file goes to a temporary folder (only the converted archive is kept in the
    data home); pooch deletes a download whose sha256 differs, and never retries.
    """
    import pooch

    with tempfile.TemporaryDirectory(prefix="sdpembed-download-") as tmp:
        try:
            path = pooch.retrieve(source.url, known_hash=f"sha256:{source.sha256}",
                                  fname=source.filename, path=tmp, downloader=_downloader())
        except ValueError as exc:
            if "does not match the known hash" not in str(exc):
                raise
            raise ChecksumError(
                f"{source.url}: {exc} ({_expected(source)}); the download is corrupt or the "
                "file changed: nothing was saved") from exc
        return Path(path).read_bytes()


def _check_local_source(path: Path, source: Source) -> bytes:
    """Bytes of a source file placed by hand, if its sha256 is the recorded one."""
    import pooch

    digest = pooch.file_hash(str(path), alg="sha256")
    if digest != source.sha256:
        raise ChecksumError(
            f"{path} has sha256 {digest} ({path.stat().st_size} bytes) but {_expected(source)}; "
            "the file is corrupt or a different version: delete it and retry")
    return path.read_bytes()


def fetch_source(name: str, *, data_home: str | os.PathLike | None = None,
                 download_if_missing: bool = True) -> bytes:
    """Bytes of the verified public source file of a downloadable dataset.

    A copy placed by hand at ``data_home/<source filename>`` is used when present;
    otherwise the file is downloaded from its ``raw.githubusercontent.com``
    address. Either way its sha256 must equal the recorded one.

    Parameters
    ----------
    name : str
        One of the ``"download"`` datasets of :func:`list_datasets`.
    data_home : path-like, optional
        See :func:`data_home`.
    download_if_missing : bool, default=True
        If False, never touch the network.

    Returns
    -------
    bytes

    Raises
    ------
    DatasetNotFoundError
        No local copy and the download failed or was not allowed.
    ChecksumError
        The bytes are not the recorded source file.
    """
    info = _remote_info(name)
    source = info.source
    home = _home(data_home)
    local = home / source.filename
    if local.is_file():
        data = _check_local_source(local, source)
        logger.info("using source file %s for %s", local, name)
        return data
    if not download_if_missing:
        raise DatasetNotFoundError(_missing_message(info, home, "downloads are disabled"))
    logger.info("downloading %s (%d bytes) for dataset %s", source.url, source.size, name)
    try:
        return _download(source)
    except ChecksumError:   # an OSError too, but not a missing file
        raise
    except OSError as exc:  # requests' errors (connection, timeout, HTTP status) are OSErrors
        raise DatasetNotFoundError(
            _missing_message(info, home, f"downloading {source.url} failed: {exc}")) from exc


def _missing_message(info: DatasetInfo, home: Path, reason: str) -> str:
    source = info.source
    return (
        f"dataset {info.name!r}: {home / info.filename} does not exist and {reason}. "
        f"Either copy the archive {info.filename} (e.g. from the project's shared data folder) "
        f"to {home / info.filename}, or download {source.url} (sha256 {source.sha256}) and "
        f"save it as {home / source.filename}, where it is checked and converted on the next "
        f"load. Set {ENV_VAR} to use another folder.")


def _save_npz(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` to ``path`` atomically (temporary file, then rename)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".npz")
    except OSError as exc:
        raise DatasetError(
            f"cannot write {path} ({exc}); set {ENV_VAR} to a writable folder") from exc
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _archive_path(name: str, home: Path, download_if_missing: bool) -> Path:
    """Path of the archive of ``name``, creating it from the source file if needed."""
    info = _remote_info(name)
    path = home / info.filename
    if path.is_file():
        return path
    data = fetch_source(name, data_home=home, download_if_missing=download_if_missing)
    arrays = convert_source(name, data)
    _validate_arrays(name, arrays, origin=f"converted {info.source.filename}")
    if arrays_sha256(arrays) != _ARRAYS_SHA256[name]:  # the source's sha256 was verified
        raise DatasetFormatError(
            f"converting {info.source.filename} gave arrays that differ from the published "
            f"{name} data; nothing was saved (please report this as a bug)")
    _save_npz(path, arrays)
    logger.info("wrote %s", path)
    return path


# --------------------------------------------------------------------------- converters


def convert_source(name: str, source: bytes | str | os.PathLike) -> dict[str, np.ndarray]:
    """Convert a source file in its original format to the ``.npz`` arrays.

    Parameters
    ----------
    name : str
        Dataset name: ``"usps"`` (HDF5 with groups ``train``/``test``, each holding
        ``data`` and ``target``), ``"sonar"``, ``"ionosphere"``, ``"car"``,
        ``"mushroom"`` (UCI comma-separated text, with or without one header
        line) or ``"umist32"`` (MATLAB v5 ``.mat`` with ``fea`` and ``gnd``).
    source : bytes or path-like
        The file's bytes or its path.

    Returns
    -------
    dict of str to ndarray
        The arrays documented in ``shared/data/README.md``. The sizes are
        whatever the file holds; :func:`load_dataset` checks them against the
        published dataset.

    Raises
    ------
    DatasetFormatError
        The file does not have the expected layout (the message names the line
        or the missing entry).
    """
    converter = _CONVERTERS.get(name)
    if converter is None:
        raise InputError(f"no converter for {name!r}; choose one of {sorted(_CONVERTERS)}")
    data = source if isinstance(source, bytes | bytearray) else Path(source).read_bytes()
    return converter(bytes(data))


def _text_rows(data: bytes, n_fields: int, *, is_header: Callable[[list[str]], bool],
               name: str) -> list[list[str]]:
    """Split comma-separated text into rows of ``n_fields`` stripped fields.

    Blank lines are skipped; the first non-blank line is dropped when
    ``is_header`` says it is a header (the GitHub copies prepend one).
    """
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as exc:
        raise DatasetFormatError(f"{name}: source is not ASCII text ({exc})") from exc
    numbered = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip()]
    rows = [(i, [f.strip() for f in line.split(",")]) for i, line in numbered]
    if rows and is_header(rows[0][1]):
        rows = rows[1:]
    if not rows:
        raise DatasetFormatError(f"{name}: source holds no data lines")
    bad = [i for i, r in rows if len(r) != n_fields]
    if bad:
        raise DatasetFormatError(
            f"{name}: lines {bad[:5]} do not have {n_fields} comma-separated fields")
    return [r for _, r in rows]


def _encode_labels(labels: np.ndarray, classes: tuple[str, ...], name: str) -> np.ndarray:
    lookup = {c: k for k, c in enumerate(classes)}
    unknown = sorted(set(labels.tolist()) - set(lookup))
    if unknown:
        raise DatasetFormatError(f"{name}: unknown class labels {unknown}; expected {classes}")
    return np.array([lookup[c] for c in labels.tolist()], dtype=np.int64)


def _not_float(field: str) -> bool:
    try:
        float(field)
    except ValueError:
        return True
    return False


def _convert_numeric_csv(data: bytes, *, name: str, n_features: int,
                         classes: tuple[str, ...]) -> dict[str, np.ndarray]:
    rows = _text_rows(data, n_features + 1, is_header=lambda r: _not_float(r[0]), name=name)
    table = np.array(rows)
    try:
        X = table[:, :n_features].astype(np.float64)
    except ValueError as exc:
        raise DatasetFormatError(f"{name}: non-numeric attribute value ({exc})") from exc
    y = _encode_labels(table[:, n_features], classes, name)
    return {"X": X, "y": y, "classes": np.array(classes)}


def _one_hot(X_raw: np.ndarray, attribute_names: tuple[str, ...],
             categories: list[list[str]]) -> dict[str, np.ndarray]:
    """One-hot encode string attributes with the given per-attribute category order."""
    blocks, names = [], []
    for j, (attr, cats) in enumerate(zip(attribute_names, categories, strict=True)):
        blocks.append(X_raw[:, j:j + 1] == np.array(cats)[None, :])
        names.extend(f"{attr}={c}" for c in cats)
    X = np.concatenate(blocks, axis=1).astype(np.float64)
    offsets = np.concatenate([[0], np.cumsum([len(c) for c in categories])]).astype(np.int64)
    return {"X": X, "X_raw": X_raw, "attribute_names": np.array(attribute_names),
            "feature_names": np.array(names), "attribute_offsets": offsets}


def _convert_sonar(data: bytes) -> dict[str, np.ndarray]:
    return _convert_numeric_csv(data, name="sonar", n_features=60, classes=("R", "M"))


def _convert_ionosphere(data: bytes) -> dict[str, np.ndarray]:
    return _convert_numeric_csv(data, name="ionosphere", n_features=34, classes=("b", "g"))


_CAR_ATTRIBUTES = ("buying", "maint", "doors", "persons", "lug_boot", "safety")
# Value order of the UCI car.names documentation (ordinal order).
_CAR_CATEGORIES = [["vhigh", "high", "med", "low"], ["vhigh", "high", "med", "low"],
                   ["2", "3", "4", "5more"], ["2", "4", "more"], ["small", "med", "big"],
                   ["low", "med", "high"]]
_CAR_CLASSES = ("unacc", "acc", "good", "vgood")


def _convert_car(data: bytes) -> dict[str, np.ndarray]:
    rows = _text_rows(data, 7, is_header=lambda r: r[0] not in _CAR_CATEGORIES[0], name="car")
    table = np.array(rows)
    X_raw = table[:, :6]
    for j, cats in enumerate(_CAR_CATEGORIES):
        unknown = sorted(set(X_raw[:, j].tolist()) - set(cats))
        if unknown:
            raise DatasetFormatError(
                f"car: attribute {_CAR_ATTRIBUTES[j]} has unknown values {unknown}; "
                f"expected {cats}")
    out = _one_hot(X_raw, _CAR_ATTRIBUTES, _CAR_CATEGORIES)
    out["y"] = _encode_labels(table[:, 6], _CAR_CLASSES, "car")
    out["classes"] = np.array(_CAR_CLASSES)
    return out


_MUSHROOM_ATTRIBUTES = (
    "cap-shape", "cap-surface", "cap-color", "bruises", "odor", "gill-attachment",
    "gill-spacing", "gill-size", "gill-color", "stalk-shape", "stalk-root",
    "stalk-surface-above-ring", "stalk-surface-below-ring", "stalk-color-above-ring",
    "stalk-color-below-ring", "veil-type", "veil-color", "ring-number", "ring-type",
    "spore-print-color", "population", "habitat")
_MUSHROOM_CLASSES = ("e", "p")


def _convert_mushroom(data: bytes) -> dict[str, np.ndarray]:
    """Class in column 0; one column per *observed* value, in sorted order ('?' kept)."""
    rows = _text_rows(data, 23, is_header=lambda r: r[0] not in _MUSHROOM_CLASSES,
                      name="mushroom")
    table = np.array(rows)
    X_raw = table[:, 1:]
    if any(len(v) != 1 for v in np.unique(X_raw).tolist()):
        raise DatasetFormatError("mushroom: attribute values must be single-letter codes")
    categories = [np.unique(X_raw[:, j]).tolist() for j in range(X_raw.shape[1])]
    out = _one_hot(X_raw, _MUSHROOM_ATTRIBUTES, categories)
    out["y"] = _encode_labels(table[:, 0], _MUSHROOM_CLASSES, "mushroom")
    out["classes"] = np.array(_MUSHROOM_CLASSES)
    return out


def _convert_usps(data: bytes) -> dict[str, np.ndarray]:
    """Concatenate the HDF5 groups ``train`` then ``test``; pixels unchanged."""
    parts = _read_hdf5(data, ["train/data", "train/target", "test/data", "test/target"])
    Xs, ys, splits = [], [], []
    for split in ("train", "test"):
        X, y = parts[f"{split}/data"], parts[f"{split}/target"]
        if X.ndim != 2 or X.shape[1] != 256 or y.shape != (X.shape[0],):
            raise DatasetFormatError(
                f"usps: {split}/data must be (n, 256) and {split}/target (n,); got "
                f"{X.shape} and {y.shape}")
        Xs.append(X.astype(np.float32))
        ys.append(y.astype(np.int64))
        splits.append(np.full(X.shape[0], split, dtype="<U5"))
    return {"X": np.concatenate(Xs), "y": np.concatenate(ys), "split": np.concatenate(splits),
            "image_shape": np.array([16, 16], dtype=np.int64)}


def _convert_umist(data: bytes) -> dict[str, np.ndarray]:
    """``fea`` rows are column-major images; store them row-major, labels from 0."""
    import scipy.io

    try:
        mat = scipy.io.loadmat(io.BytesIO(data))
    except Exception as exc:  # scipy raises several unrelated types for bad files
        raise DatasetFormatError(f"umist32: not a readable MATLAB file ({exc})") from exc
    if "fea" not in mat or "gnd" not in mat:
        raise DatasetFormatError(
            f"umist32: expected variables 'fea' and 'gnd'; found "
            f"{sorted(k for k in mat if not k.startswith('__'))}")
    fea, gnd = np.asarray(mat["fea"]), np.asarray(mat["gnd"]).ravel()
    side = int(round(np.sqrt(fea.shape[1]))) if fea.ndim == 2 else 0
    if fea.ndim != 2 or side * side != fea.shape[1] or gnd.shape != (fea.shape[0],):
        raise DatasetFormatError(
            f"umist32: fea must be (n, side**2) and gnd (n, 1); got {fea.shape}, "
            f"{np.shape(mat['gnd'])}")
    n = fea.shape[0]
    X = fea.reshape(n, side, side, order="F").reshape(n, side * side).astype(np.float32)
    return {"X": X, "y": gnd.astype(np.int64) - 1,
            "image_shape": np.array([side, side], dtype=np.int64)}


_CONVERTERS: dict[str, Callable[[bytes], dict[str, np.ndarray]]] = {
    "usps": _convert_usps,
    "sonar": _convert_sonar,
    "ionosphere": _convert_ionosphere,
    "car": _convert_car,
    "mushroom": _convert_mushroom,
    "umist32": _convert_umist,
}


# --------------------------------------------------------------------------- validation

# name -> {array: (dtype kind or exact dtype, shape with "n" for n_samples)}
_SCHEMAS: dict[str, dict[str, tuple[str, tuple]]] = {
    "usps": {"X": ("float32", ("n", 256)), "y": ("int64", ("n",)), "split": ("U", ("n",)),
             "image_shape": ("int64", (2,))},
    "sonar": {"X": ("float64", ("n", 60)), "y": ("int64", ("n",)), "classes": ("U", (2,))},
    "ionosphere": {"X": ("float64", ("n", 34)), "y": ("int64", ("n",)),
                   "classes": ("U", (2,))},
    "car": {"X": ("float64", ("n", 21)), "y": ("int64", ("n",)), "classes": ("U", (4,)),
            "X_raw": ("U", ("n", 6)), "attribute_names": ("U", (6,)),
            "feature_names": ("U", (21,)), "attribute_offsets": ("int64", (7,))},
    "mushroom": {"X": ("float64", ("n", 117)), "y": ("int64", ("n",)), "classes": ("U", (2,)),
                 "X_raw": ("U", ("n", 22)), "attribute_names": ("U", (22,)),
                 "feature_names": ("U", (117,)), "attribute_offsets": ("int64", (23,))},
    "umist32": {"X": ("float32", ("n", 1024)), "y": ("int64", ("n",)),
                "image_shape": ("int64", (2,))},
}


def _validate_arrays(name: str, arrays: Mapping[str, np.ndarray], *, origin: str) -> None:
    """Check names, dtypes, shapes, finiteness and label range against the schema.

    Raises :class:`DatasetFormatError` naming ``origin`` and the offending array.
    """
    info = _INFO[name]
    schema = _SCHEMAS[name]
    missing = sorted(set(schema) - set(arrays))
    if missing:
        raise DatasetFormatError(f"{origin}: missing arrays {missing}")
    n = info.n_samples
    for key, (dtype, shape) in schema.items():
        a = arrays[key]
        ok_dtype = a.dtype.kind == "U" if dtype == "U" else a.dtype == np.dtype(dtype)
        want = tuple(n if s == "n" else s for s in shape)
        if not ok_dtype or a.shape != want:
            raise DatasetFormatError(
                f"{origin}: array {key!r} must be {dtype} of shape {want}; got {a.dtype} "
                f"of shape {a.shape}. Delete the file to have it rebuilt from its source")
    X, y = arrays["X"], arrays["y"]
    if not np.all(np.isfinite(X)):
        raise DatasetFormatError(f"{origin}: X holds NaN or infinite values")
    if y.min() < 0 or y.max() >= info.n_classes or np.unique(y).size != info.n_classes:
        raise DatasetFormatError(
            f"{origin}: y must take every value 0..{info.n_classes - 1}; "
            f"got values {np.unique(y)[:20].tolist()}")
    if "split" in schema and not set(np.unique(arrays["split"]).tolist()) <= {"train", "test"}:
        raise DatasetFormatError(f"{origin}: split must hold only 'train' and 'test'")
    if "image_shape" in schema and int(np.prod(arrays["image_shape"])) != X.shape[1]:
        raise DatasetFormatError(
            f"{origin}: image_shape {arrays['image_shape'].tolist()} does not match "
            f"{X.shape[1]} features")


#: sha256 of each published archive's arrays (:func:`arrays_sha256`), recorded from the
#: converted public sources (identical to the project's shared data folder). An archive
#: whose arrays differ -- edited, or damaged in a way the zip checksums miss -- is refused.
_ARRAYS_SHA256 = {
    "usps": "a2523ca90f943840a217a559c100bb873b18b4f75793cfd8af2117e05a49508c",
    "sonar": "35d9e747ff5c0797b6bb87a1847cc8d47d708fcd0783b8caf2a03169dcd631e2",
    "ionosphere": "86f2dff0f357c9c392c3f4f917848a6b644b4ce90a1bec0c57ded54e71ad27bb",
    "car": "438964e58cd2959097a9d1cafc44f0746a162eb924f79bde4a8ef3e527c632f4",
    "mushroom": "407f64d9026a764c86b983a724c34eba6154c74b6f505f827ebf6afb41ce761d",
    "umist32": "1048d151f9ba82520580f8df7152faaa1649473b06a1c409c20be6972cba5115",
}


def arrays_sha256(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 of a set of arrays: names, dtypes, shapes and little-endian bytes, sorted by name.

    Unlike the sha256 of an ``.npz`` file, it does not depend on the zip
    container (which records when it was written), so an archive rebuilt from
    the same source has the same value.
    """
    h = hashlib.sha256()
    for key in sorted(arrays):
        a = np.asarray(arrays[key])
        a = np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))
        h.update(f"{key}\0{a.dtype.str}\0{a.shape}\0".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _delete_hint(path: Path) -> str:
    return (f"delete {path} to have it rebuilt from its verified source (or copy a good "
            "archive there)")


def _load_archive(name: str, data_home: str | os.PathLike | None,
                  download_if_missing: bool) -> dict[str, np.ndarray]:
    home = _home(data_home)
    path = _archive_path(name, home, download_if_missing)
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, zlib.error, zipfile.BadZipFile, KeyError,
            NotImplementedError) as exc:
        # empty, truncated or bit-flipped files fail here (zip and zlib checksums)
        raise DatasetFormatError(
            f"{path} is not a readable .npz archive of plain arrays "
            f"({type(exc).__name__}: {exc}); it is corrupt or truncated: "
            f"{_delete_hint(path)}") from exc
    _validate_arrays(name, arrays, origin=str(path))
    digest = arrays_sha256(arrays)
    if digest != _ARRAYS_SHA256[name]:
        raise DatasetFormatError(
            f"{path}: its arrays differ from the published {name} data (sha256 of the arrays "
            f"{digest[:16]}..., expected {_ARRAYS_SHA256[name][:16]}...): the file was modified "
            f"or damaged; {_delete_hint(path)}")
    return arrays


# --------------------------------------------------------------------------- loaders


def _descr(name: str) -> str:
    info = _INFO[name]
    text = (f"{info.description}. {info.n_samples} samples, {info.n_features} features, "
            f"{info.n_classes} classes.")
    if info.source is not None:
        text += f" Source: {info.source.url} (sha256 {info.source.sha256})."
    return text


def _finish(bunch: Bunch, return_X_y: bool):
    return (bunch.data, bunch.target) if return_X_y else bunch


#: Parameters shared by the loaders of downloadable archives (numpydoc, unindented).
_LOADER_PARAMETERS = """\
return_X_y : bool, default=False
    Return ``(data, target)`` instead of a Bunch.
data_home : path-like, optional
    See :func:`data_home`.
download_if_missing : bool, default=True
    Download and convert the source file when the archive is missing."""

_LOADER_PARAMETERS_LINE = re.compile(r"^([ \t]*)\{loader_parameters\}$", re.MULTILINE)


def _with_loader_parameters(loader: Callable) -> Callable:
    """Decorator: write :data:`_LOADER_PARAMETERS` into ``loader``'s docstring.

    The line ``{loader_parameters}`` of the docstring is replaced by the shared
    parameter descriptions at that line's indentation, so :func:`load_usps`,
    :func:`load_uci` and :func:`load_umist32` document ``return_X_y``,
    ``data_home`` and ``download_if_missing`` from one text.
    """
    if loader.__doc__:  # None under ``python -OO``
        loader.__doc__ = _LOADER_PARAMETERS_LINE.sub(
            lambda m: textwrap.indent(_LOADER_PARAMETERS, m.group(1)), loader.__doc__)
    return loader


@_with_loader_parameters
def load_usps(*, subset: str = "all", augment: Sequence[str] | None = None,
              return_X_y: bool = False, data_home: str | os.PathLike | None = None,
              download_if_missing: bool = True) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """USPS handwritten digits (Hastie, Tibshirani & Friedman's ``zip.train``/``zip.test``).

    9,298 grey-level 16x16 digits with pixel values in [0, 1] (the ESL values
    ``v`` in [-1, 1] rescaled as ``(v + 1) / 2``), 7,291 in the original
    training split followed by 2,007 in the test split. The DVU paper (Vernaza,
    Lee & Taskar, Table 1) uses 2,500 of them; Wang & Mahadevan use the
    training split.

    Parameters
    ----------
    subset : {"all", "train", "test"}, default="all"
        Which rows to return, in source order.
    augment : sequence of {"shift", "rotate", "scale"}, optional
        Virtual examples (Schölkopf, Burges & Vapnik 1996; DeCoste & Schölkopf 2002): each
        digit also transformed by the transformations the tangent distance is invariant
        to, with its label. ``"shift"``: one pixel left, right, up and down (4 copies);
        ``"rotate"``: by -5 and +5 degrees (2); ``"scale"``: by 0.95 and 1.05 about the
        centre (2). Copies follow the originals, one block per transformation, in the order
        given; ``original`` (n,) holds each row's source row. Bilinear interpolation,
        values clipped to [0, 1].
    {loader_parameters}

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float32 (n, 256), ``target`` int64 (n,), ``split`` (n,) of
        ``"train"``/``"test"``, ``images`` float32 (n, 16, 16) (a view of
        ``data``; ``images[i]`` shows the digit upright), ``image_shape``,
        ``target_names``, ``DESCR``, and with ``augment`` ``original`` and
        ``transform`` (n,) (``"none"`` for the source rows). Or ``(data, target)``.
    """
    if subset not in ("all", "train", "test"):
        raise InputError(f"subset must be 'all', 'train' or 'test'; got {subset!r}")
    augment = _check_augment(augment)
    z = _load_archive("usps", data_home, download_if_missing)
    rows = slice(None) if subset == "all" else z["split"] == subset
    X, y, split = z["X"][rows], z["y"][rows], z["split"][rows]
    shape = tuple(int(s) for s in z["image_shape"])
    bunch = Bunch(data=X, target=y, split=split, images=X.reshape(-1, *shape),
                  image_shape=shape, target_names=np.array([str(d) for d in range(10)]),
                  feature_names=np.array([f"pixel_{r}_{c}" for r in range(shape[0])
                                          for c in range(shape[1])]),
                  DESCR=_descr("usps"), name="usps")
    if augment:
        bunch = _augmented(bunch, augment)
    return _finish(bunch, return_X_y)


#: virtual-example transformations of :func:`load_usps` (``augment``): name -> parameters
AUGMENTATIONS = {"shift": [(0, -1), (0, 1), (-1, 0), (1, 0)], "rotate": [-5.0, 5.0],
                 "scale": [0.95, 1.05]}


def _check_augment(augment) -> tuple[str, ...]:
    if augment is None:
        return ()
    if isinstance(augment, str):
        augment = (augment,)
    augment = tuple(augment)
    bad = [a for a in augment if a not in AUGMENTATIONS]
    if bad or len(set(augment)) != len(augment):
        raise InputError(f"augment must name distinct transformations among "
                         f"{sorted(AUGMENTATIONS)}; got {list(augment)}")
    return augment


def _augmented(bunch: Bunch, augment: tuple[str, ...]) -> Bunch:
    """``bunch`` with the virtual examples of ``augment`` appended (see :func:`load_usps`)."""
    from scipy import ndimage

    images = np.asarray(bunch.images, dtype=np.float64)
    n, h, w = images.shape
    centre = np.array([(h - 1) / 2.0, (w - 1) / 2.0])
    blocks, names = [images], [np.full(n, "none")]
    for name in augment:
        for param in AUGMENTATIONS[name]:
            if name == "shift":
                out = ndimage.shift(images, (0, *param), order=1, mode="constant")
            elif name == "rotate":
                out = ndimage.rotate(images, param, axes=(2, 1), reshape=False, order=1,
                                     mode="constant")
            else:
                # zoom about the centre: output pixel p samples input centre + (p - centre)/s
                M = np.eye(2) / param
                offset = centre - M @ centre
                out = np.stack([ndimage.affine_transform(im, M, offset=offset, order=1,
                                                         mode="constant") for im in images])
            blocks.append(np.clip(out, 0.0, 1.0))
            names.append(np.full(n, f"{name} {param}"))
    k = len(blocks)
    imgs = np.concatenate(blocks).astype(np.float32)
    data = imgs.reshape(k * n, h * w)
    out = Bunch(**bunch)
    out.update(data=data, images=data.reshape(-1, h, w), target=np.tile(bunch.target, k),
               split=np.tile(bunch.split, k), original=np.tile(np.arange(n), k),
               transform=np.concatenate(names))
    return out


@_with_loader_parameters
def load_uci(name: str, *, return_X_y: bool = False, data_home: str | os.PathLike | None = None,
             download_if_missing: bool = True) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """One of the UCI sets sonar, ionosphere, car, mushroom.

    sonar and ionosphere have continuous attributes (used by the DNE paper);
    car (TCA, Table 4) and mushroom (Wang & Mahadevan) have categorical
    attributes, one-hot encoded: ``data[:, attribute_offsets[j]:attribute_offsets[j+1]]``
    are the columns of attribute ``j``, so every row has one 1 per attribute.

    Parameters
    ----------
    name : {"sonar", "ionosphere", "car", "mushroom"}
    {loader_parameters}

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64, ``target`` int64, ``target_names`` (original class
        strings, ``target_names[target[i]]``), ``feature_names``, ``DESCR`` and,
        for car and mushroom, ``data_raw`` (the attribute strings),
        ``attribute_names`` and ``attribute_offsets``. Or ``(data, target)``.
    """
    if name not in _UCI_NAMES:
        raise InputError(f"unknown UCI dataset {name!r}; choose one of {list(_UCI_NAMES)}")
    z = _load_archive(name, data_home, download_if_missing)
    X = z["X"]
    feature_names = z.get("feature_names", np.array([f"a{j}" for j in range(X.shape[1])]))
    bunch = Bunch(data=X, target=z["y"], target_names=z["classes"],
                  feature_names=feature_names, DESCR=_descr(name), name=name)
    if "X_raw" in z:
        bunch.update(data_raw=z["X_raw"], attribute_names=z["attribute_names"],
                     attribute_offsets=z["attribute_offsets"])
    return _finish(bunch, return_X_y)


@_with_loader_parameters
def load_umist32(*, return_X_y: bool = False, data_home: str | os.PathLike | None = None,
                 download_if_missing: bool = True) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """UMIST (Sheffield) faces, 575 images of 20 people, downsampled to 32x32.

    Grey levels are the integers of the source, stored as float32; pixels are
    row-major (``images[i]`` shows the face upright). The full-resolution
    112x92 set used by the TCA paper has no public copy; see the data README.

    Parameters
    ----------
    {loader_parameters}

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float32 (575, 1024), ``target`` int64 (subject 0..19),
        ``images`` (575, 32, 32), ``image_shape``, ``target_names``, ``DESCR``.
        Or ``(data, target)``.
    """
    z = _load_archive("umist32", data_home, download_if_missing)
    shape = tuple(int(s) for s in z["image_shape"])
    X = z["X"]
    bunch = Bunch(data=X, target=z["y"], images=X.reshape(-1, *shape), image_shape=shape,
                  target_names=np.array([f"subject_{k}" for k in range(20)]),
                  DESCR=_descr("umist32"), name="umist32")
    return _finish(bunch, return_X_y)


def load_sklearn(name: str, *, return_X_y: bool = False) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled iris, wine, breast_cancer or digits, with int64 targets.

    Parameters
    ----------
    name : {"iris", "wine", "breast_cancer", "digits"}
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    sklearn.utils.Bunch
        ``data`` float64, ``target`` int64, ``target_names``, ``feature_names``,
        ``DESCR`` (scikit-learn's) and, for digits, ``images`` (n, 8, 8).
        Or ``(data, target)``.
    """
    import sklearn.datasets as skd

    loaders = {"iris": skd.load_iris, "wine": skd.load_wine,
               "breast_cancer": skd.load_breast_cancer, "digits": skd.load_digits}
    if name not in loaders:
        raise InputError(f"unknown bundled dataset {name!r}; choose one of {list(loaders)}")
    raw = loaders[name]()
    bunch = Bunch(data=np.asarray(raw.data, dtype=np.float64),
                  target=np.asarray(raw.target, dtype=np.int64),
                  target_names=np.asarray(raw.target_names).astype(str),
                  feature_names=np.asarray(raw.feature_names).astype(str),
                  DESCR=raw.DESCR, name=name)
    if "images" in raw:
        bunch.images = bunch.data.reshape(raw.images.shape)
    return _finish(bunch, return_X_y)


def make_two_moons_3d(n: int = 600, *, noise: float = 0.05,
                      random_state: RandomStateLike = None) -> tuple[np.ndarray, np.ndarray]:
    """Two moons lifted to 3-D, the toy problem of TCA (Liu, Tao & Liu, section 5.1).

    The 2-D moons :math:`(x, y)` are scikit-learn's ``make_moons`` (upper moon
    class 0, :math:`y \\in [0, 1]`; lower moon class 1, :math:`y \\in [-1/2, 1/2]`),
    with Gaussian noise of standard deviation ``noise`` added to both coordinates.
    The third coordinate is the paper's lifting function

    .. math:: z = \\frac{\\sin(\\pi y)}{(y^2 + 1)^2} + 0.3\\, y .

    The paper does not state the noise level; Table 3 uses 600 points, 2 of
    them labeled per class.

    Parameters
    ----------
    n : int, default=600
        Number of points (``n // 2`` in class 0, the rest in class 1).
    noise : float, default=0.05
        Standard deviation of the noise on :math:`(x, y)`, before lifting.
    random_state : int, RandomState instance or None
        Seed of the noise and of the shuffling of the points.

    Returns
    -------
    X : ndarray of shape (n, 3)
        Columns :math:`x, y, z`.
    y : ndarray of int64, shape (n,)
    """
    from sklearn.datasets import make_moons

    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 2:
        raise InputError(f"n must be an integer >= 2; got {n!r}")
    if not isinstance(noise, numbers.Real) or not np.isfinite(noise) or noise < 0:
        raise InputError(f"noise must be a finite number >= 0; got {noise!r}")
    X2, y = make_moons(n_samples=int(n), noise=float(noise) or None,
                       random_state=check_random_state(random_state))
    v = X2[:, 1]
    z = np.sin(np.pi * v) / (v ** 2 + 1.0) ** 2 + 0.3 * v
    return np.column_stack([X2, z]), y.astype(np.int64)


def _load_two_moons_3d(n: int = 600, *, noise: float = 0.05, random_state=None,
                       return_X_y: bool = False):
    X, y = make_two_moons_3d(n, noise=noise, random_state=random_state)
    bunch = Bunch(data=X, target=y, target_names=np.array(["upper", "lower"]),
                  feature_names=np.array(["x", "y", "z"]),
                  DESCR=_descr("two_moons_3d"), name="two_moons_3d")
    return _finish(bunch, return_X_y)


_LOADERS: dict[str, Callable[..., object]] = {
    "usps": load_usps,
    "umist32": load_umist32,
    "two_moons_3d": _load_two_moons_3d,
    **{name: functools.partial(load_uci, name) for name in _UCI_NAMES},
    **{name: functools.partial(load_sklearn, name) for name in _SKLEARN_NAMES},
}


def load_dataset(name: str, **kwargs: Any) -> Bunch | tuple[np.ndarray, np.ndarray]:
    """Load any dataset of :func:`list_datasets` by name.

    Parameters
    ----------
    name : str
        A name from :func:`list_datasets`.
    **kwargs
        Passed to the specific loader (:func:`load_usps`, :func:`load_uci`,
        :func:`load_umist32`, :func:`load_sklearn`, or :func:`make_two_moons_3d`
        for ``"two_moons_3d"``); all accept ``return_X_y``.

    Returns
    -------
    sklearn.utils.Bunch or tuple
        Always has ``data``, ``target`` and ``DESCR``.
    """
    dataset_info(name)  # uniform error for unknown names
    loader = _LOADERS[name]
    try:
        inspect.signature(loader).bind(**kwargs)
    except TypeError as exc:
        raise InputError(f"bad arguments for dataset {name!r}: {exc}") from exc
    return loader(**kwargs)


# --------------------------------------------------------------------------- labels


def partial_labels(y: ArrayLike, fraction: float | int, *, per_class: bool = True,
                   min_per_class: int = 1, random_state: RandomStateLike = None) -> np.ndarray:
    """Hide labels at random: a copy of ``y`` with ``-1`` for unlabeled points.

    Parameters
    ----------
    y : array-like of int, shape (n,)
        Complete labels (no ``-1``).
    fraction : float in (0, 1] or int >= 1
        If float, the fraction of labels **kept**: per class,
        :math:`\\max(m, \\lfloor f\\, n_c + 1/2 \\rfloor)` of the :math:`n_c`
        points of class :math:`c` stay labeled (``per_class=True``), or
        :math:`\\lfloor f\\, n + 1/2 \\rfloor` overall (``per_class=False``).
        If int, the number of labels kept per class (``per_class=True``) or in
        total (``per_class=False``), as in scikit-learn's ``train_test_split``.
        For example TCA's "5 % labeled per class" is ``fraction=0.05`` and the
        DVU paper's "20 % of labels hidden" is ``fraction=0.8``.
    per_class : bool, default=True
        Stratify: draw the labeled points class by class.
    min_per_class : int, default=1
        Every class keeps at least this many labels (in both modes), so that
        every class is represented.
    random_state : int, RandomState instance or None
        Seed of the draw.

    Returns
    -------
    ndarray of int64, shape (n,)
        ``y`` with the hidden labels set to ``-1``.

    Raises
    ------
    LabelError
        ``y`` holds ``-1`` or non-integers, or a class has fewer than
        ``min_per_class`` points, or the requested count exceeds a class size.
    InputError
        ``fraction`` or ``min_per_class`` out of range.
    """
    y = _check_complete_labels(y)
    classes, y_idx, counts = np.unique(y, return_inverse=True, return_counts=True)
    if isinstance(min_per_class, bool) or not isinstance(min_per_class, numbers.Integral) \
            or min_per_class < 0:
        raise InputError(f"min_per_class must be an integer >= 0; got {min_per_class!r}")
    small = classes[counts < min_per_class]
    if small.size:
        raise LabelError(
            f"classes {small.tolist()} have fewer than min_per_class={min_per_class} points")
    rng = check_random_state(random_state)
    n = y.size
    if isinstance(fraction, bool) or not isinstance(fraction, numbers.Real):
        raise InputError(f"fraction must be a float in (0, 1] or an int >= 1; got {fraction!r}")
    is_count = isinstance(fraction, numbers.Integral)
    if (is_count and fraction < 1) or (not is_count and not 0.0 < float(fraction) <= 1.0):
        raise InputError(f"fraction must be a float in (0, 1] or an int >= 1; got {fraction!r}")

    if per_class:
        keep = (np.full(classes.size, int(fraction)) if is_count
                else np.floor(float(fraction) * counts + 0.5).astype(np.int64))
        keep = np.maximum(keep, min_per_class)
        too_many = classes[keep > counts]
        if too_many.size:
            raise LabelError(
                f"cannot keep {int(fraction)} labels in classes {too_many.tolist()}: they have "
                f"only {counts[keep > counts].tolist()} points")
        # Random rank of each point within its class; keep the lowest `keep[c]` ranks.
        rank = _rank_within_class(y_idx, rng.permutation(n))
        labeled = rank < keep[y_idx]
    else:
        total = int(fraction) if is_count else int(np.floor(float(fraction) * n + 0.5))
        if total > n:
            raise LabelError(f"cannot keep {total} labels out of {n} points")
        rank = _rank_within_class(y_idx, rng.permutation(n))
        labeled = rank < min_per_class
        rest = np.flatnonzero(~labeled)
        extra = max(total - int(labeled.sum()), 0)
        labeled[rng.choice(rest, size=extra, replace=False)] = True
    out = y.copy()
    out[~labeled] = -1
    logger.debug("partial_labels: kept %d of %d labels", int(labeled.sum()), n)
    return out


def _rank_within_class(y_idx: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Rank of each point among its class when points are visited in ``order``."""
    visit = order[np.argsort(y_idx[order], kind="stable")]
    starts = np.concatenate([[0], np.cumsum(np.bincount(y_idx))[:-1]])
    rank = np.empty_like(y_idx)
    rank[visit] = np.arange(y_idx.size) - starts[y_idx[visit]]
    return rank


def _integer_labels(y: np.ndarray, name: str = "y", *, kinds: str = "iu") -> np.ndarray:
    """Class labels as int64: an integer array, or a float array of whole numbers.

    Parameters
    ----------
    y : ndarray
        Labels of any shape.
    name : str, default="y"
        How error messages call ``y``.
    kinds : str, default="iu"
        numpy dtype kinds taken as they are (add ``"b"`` to accept booleans).

    Raises
    ------
    LabelError
        ``y`` has another dtype, or floats that are not finite whole numbers.
    """
    if y.dtype.kind in kinds or (y.dtype.kind == "f" and np.all(np.isfinite(y))
                                 and np.all(y == np.round(y))):
        return y.astype(np.int64)
    raise LabelError(f"{name} must hold integer class labels; got dtype {y.dtype}")


def _check_complete_labels(y) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        raise LabelError(f"y must be a non-empty 1-D array of labels; got shape {y.shape}")
    y = _integer_labels(y)
    if np.any(y < 0):
        raise LabelError("y must be complete (no -1 or negative labels); pass the true labels")
    return y


# --------------------------------------------------------------------------- HDF5


def _read_hdf5(data: bytes, paths: list[str]) -> dict[str, np.ndarray]:
    """Read the datasets ``paths`` (``"group/name"``) of an HDF5 file held in memory.

    Uses h5py (libhdf5), which reads every layout, filter and format version
    libhdf5 writes.

    Raises
    ------
    DatasetFormatError
        The bytes are not an HDF5 file, or a path is missing or is not a dataset.
    """
    import h5py

    try:
        with h5py.File(io.BytesIO(data), "r") as f:
            missing = [p for p in paths if p not in f]
            if missing:
                raise DatasetFormatError(
                    f"HDF5 file has no datasets {missing}; found {_hdf5_datasets(f)}")
            not_data = [p for p in paths if not isinstance(f[p], h5py.Dataset)]
            if not_data:
                raise DatasetFormatError(f"HDF5 objects {not_data} are not datasets")
            return {p: np.asarray(f[p][()]) for p in paths}
    except OSError as exc:
        raise DatasetFormatError(f"not a readable HDF5 file ({exc})") from exc


def _hdf5_datasets(f) -> list[str]:
    """Paths of every dataset in an open h5py file, for error messages."""
    import h5py

    names: list[str] = []
    f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
    return sorted(names)
