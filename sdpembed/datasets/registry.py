"""Where the archives live, and what each dataset is: its source file and layout."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..exceptions import (
    InputError,
)

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
