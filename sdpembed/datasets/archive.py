"""Downloading a source file, checking and saving an archive, and reading one back."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..exceptions import (
    ChecksumError,
    DatasetError,
    DatasetFormatError,
    DatasetNotFoundError,
)
from .convert import convert_source
from .registry import (
    _DOWNLOAD_TIMEOUT_S,
    _INFO,
    ENV_VAR,
    DatasetInfo,
    Source,
    _home,
    _remote_info,
)

logger = logging.getLogger(__name__)


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
