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

The package's modules (every name is importable from ``sdpembed.datasets``):
:mod:`~sdpembed.datasets.registry` (where the archives live, what each dataset is),
:mod:`~sdpembed.datasets.archive` (download, check, save, read back),
:mod:`~sdpembed.datasets.convert` (source files to arrays),
:mod:`~sdpembed.datasets.loaders` and :mod:`~sdpembed.datasets.labels`
(:func:`partial_labels`).
"""

from __future__ import annotations

from ..exceptions import (  # noqa: F401 - the dataset errors are re-exported here (see __all__)
    ChecksumError,
    DatasetError,
    DatasetFormatError,
    DatasetNotFoundError,
    InputError,
    LabelError,
)
from .archive import (  # noqa: F401 - the names of the package
    _ARRAYS_SHA256,
    _downloader,
    arrays_sha256,
    fetch_source,
)
from .convert import (  # noqa: F401 - the names of the package
    _MUSHROOM_ATTRIBUTES,
    _read_hdf5,
    convert_source,
)
from .labels import (  # noqa: F401 - the names of the package
    _integer_labels,
    partial_labels,
)
from .loaders import (  # noqa: F401 - the names of the package
    _LOADERS,
    AUGMENTATIONS,
    load_dataset,
    load_sklearn,
    load_uci,
    load_umist32,
    load_usps,
    make_two_moons_3d,
)
from .registry import (  # noqa: F401 - the names of the package
    _DOWNLOAD_TIMEOUT_S,
    ENV_VAR,
    DatasetInfo,
    Source,
    data_home,
    dataset_info,
    list_datasets,
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

