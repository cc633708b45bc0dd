"""Source files to the documented ``.npz`` arrays, one converter per dataset."""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..exceptions import (
    DatasetFormatError,
    InputError,
)

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
