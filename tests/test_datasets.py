"""Tests of sdpembed.datasets: converters, cache/download logic, loaders, partial labels.

Converters are checked against small synthetic files in each original format
(text written here, a MATLAB file written by scipy, HDF5 files written by
libhdf5 through h5py), and against the project's shared data folder when it
is present: the CSV sources of car and sonar are rebuilt byte for byte from
the shared archives (their sha256 equals the published one), which lets the
whole download -> checksum -> convert -> load path run without network.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sdpembed import datasets
from sdpembed.datasets import (
    ChecksumError,
    DatasetFormatError,
    DatasetNotFoundError,
    convert_source,
    data_home,
    dataset_info,
    list_datasets,
    load_dataset,
    load_uci,
    load_umist32,
    load_usps,
    make_two_moons_3d,
    partial_labels,
)
from sdpembed.exceptions import InputError, LabelError


def _shared_data_dir() -> Path | None:
    """The shared data folder: $SDPEMBED_DATA if it holds the archives, else ../shared/data."""
    candidates = [os.environ.get(datasets.ENV_VAR, ""),
                  Path(__file__).resolve().parents[2] / "shared" / "data"]
    for c in candidates:
        if c and (Path(c) / "usps.npz").is_file():
            return Path(c)
    return None


SHARED = _shared_data_dir()
needs_shared = pytest.mark.skipif(SHARED is None, reason="shared data folder not present")

REMOTE = ["usps", "sonar", "ionosphere", "car", "mushroom", "umist32"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty data home, and a network that fails loudly if touched."""
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path))

    def no_network(url, output_file, pooch):
        raise AssertionError(f"unexpected download of {url}")

    _serve(monkeypatch, no_network)
    return tmp_path


def _serve(monkeypatch, download):
    """Replace pooch's HTTP downloader (the only network access) by ``download(url,
    output_file, pooch)``; pooch's retrieve, sha256 check and file handling still run."""
    monkeypatch.setattr(datasets.archive, "_downloader", lambda: download)


def _bytes_at(content: bytes, calls: list):
    def download(url, output_file, pooch):
        calls.append(url)
        Path(output_file).write_bytes(content)
    return download


def _shared(name: str) -> dict[str, np.ndarray]:
    with np.load(SHARED / f"{name}.npz", allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _assert_same_arrays(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for k in a:
        assert a[k].dtype == b[k].dtype, k
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


# --------------------------------------------------------------------------- rebuilt sources


def _car_source(z) -> bytes:
    """UCI car.data with the header line of the GitHub copy (published sha256 97f9e7...)."""
    lines = [",".join([*row, z["classes"][c]]) for row, c in zip(z["X_raw"], z["y"], strict=True)]
    return ("buying,maint,doors,persons,lug_boot,safety,deal\n" + "\n".join(lines) + "\n").encode()


def _sonar_source(z) -> bytes:
    """UCI sonar.all-data: 60 values with four decimals and R/M (published sha256 e90434...)."""
    lines = [",".join([*(f"{v:.4f}" for v in row), z["classes"][c]])
             for row, c in zip(z["X"], z["y"], strict=True)]
    return ("\n".join(lines) + "\n").encode()


def _mushroom_lines(z) -> bytes:
    lines = [",".join([z["classes"][c], *row]) for row, c in zip(z["X_raw"], z["y"], strict=True)]
    return ("\n".join(lines) + "\n").encode()


# --------------------------------------------------------------------------- data_home, registry


def test_data_home_precedence(tmp_path, monkeypatch):
    import platformdirs

    monkeypatch.delenv(datasets.ENV_VAR, raising=False)
    assert data_home() == Path(platformdirs.user_cache_dir("sdpembed")) / "data"
    monkeypatch.setenv(datasets.ENV_VAR, str(tmp_path / "env"))
    assert data_home() == tmp_path / "env"
    assert data_home(tmp_path / "explicit") == tmp_path / "explicit"


def test_registry_lists_every_dataset_with_its_source():
    assert list_datasets() == sorted(
        ["usps", "sonar", "ionosphere", "car", "mushroom", "umist32", "iris", "wine",
         "breast_cancer", "digits", "two_moons_3d"])
    info = dataset_info("usps")
    assert info.source.url == (
        "https://raw.githubusercontent.com/niuers/Learning-From-Data-A-Short-Course/"
        "35684e893b63bf4039bafcc6d34fe935851baf9a/data/usps.h5")
    assert info.source.filename == "usps.h5"
    with pytest.raises(InputError, match="unknown dataset 'nope'"):
        dataset_info("nope")
    with pytest.raises(InputError, match="unknown dataset"):
        load_dataset("nope")
    with pytest.raises(InputError, match="bad arguments"):
        load_dataset("iris", colour="red")


# --------------------------------------------------------------------------- shared data


# Class counts published in shared/data/README.md (independent of the archives' code).
README_COUNTS = {
    "usps": [1553, 1269, 929, 824, 852, 716, 834, 792, 708, 821],
    "sonar": [97, 111],
    "ionosphere": [126, 225],
    "car": [1210, 384, 69, 65],
    "mushroom": [4208, 3916],
    "umist32": [38, 35, 26, 24, 26, 23, 19, 22, 20, 32, 34, 34, 26, 30, 19, 26, 26, 33, 48, 34],
}


@needs_shared
@pytest.mark.parametrize("name", REMOTE)
def test_load_shared_archive(name, monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(SHARED))
    bunch = load_dataset(name, download_if_missing=False)
    info = dataset_info(name)
    assert bunch.data.shape == (info.n_samples, info.n_features)
    assert bunch.data.dtype == (np.float32 if name in ("usps", "umist32") else np.float64)
    assert bunch.target.dtype == np.int64
    assert np.bincount(bunch.target).tolist() == README_COUNTS[name]
    X, y = load_dataset(name, return_X_y=True, download_if_missing=False)
    np.testing.assert_array_equal(X, bunch.data)
    np.testing.assert_array_equal(y, bunch.target)


@needs_shared
def test_usps_split_images_and_esl_values(monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(SHARED))
    train, test = load_usps(subset="train"), load_usps(subset="test")
    assert np.bincount(train.target).tolist() == [1194, 1005, 731, 658, 652, 556, 664, 645,
                                                   542, 644]
    assert np.bincount(test.target).tolist() == [359, 264, 198, 166, 200, 160, 170, 147, 166, 177]
    assert set(train.split) == {"train"} and set(test.split) == {"test"}
    np.testing.assert_array_equal(train.images[5], train.data[5].reshape(16, 16))
    # README: the ESL values in [-1, 1] have three decimals; residual below 1e-7.
    v = 2 * train.data.astype(np.float64) - 1
    assert np.abs(v - np.round(v, 3)).max() < 1e-7
    assert train.target[:3].tolist() == [6, 5, 4]  # first labels of ESL zip.train
    with pytest.raises(InputError, match="subset"):
        load_usps(subset="validation")


@needs_shared
def test_umist_images(monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(SHARED))
    faces = load_umist32()
    assert faces.images.shape == (575, 32, 32) and faces.image_shape == (32, 32)
    np.testing.assert_array_equal(faces.images[7], faces.data[7].reshape(32, 32))
    assert faces.data.min() == 3 and faces.data.max() == 241  # README: grey levels [3, 241]


@needs_shared
def test_one_hot_structure_of_car_and_mushroom(monkeypatch):
    monkeypatch.setenv(datasets.ENV_VAR, str(SHARED))
    car, mush = load_uci("car"), load_uci("mushroom")
    assert car.attribute_offsets.tolist() == [0, 4, 8, 12, 15, 18, 21]
    assert np.all(car.data.sum(axis=1) == 6) and np.all(mush.data.sum(axis=1) == 22)
    assert np.diff(mush.attribute_offsets).tolist() == [6, 4, 10, 2, 9, 2, 2, 2, 12, 2, 5, 4,
                                                        4, 9, 9, 1, 4, 3, 5, 9, 6, 7]
    # Every one of the 4*4*4*3*3*3 attribute combinations occurs exactly once.
    assert np.unique(car.data_raw, axis=0).shape[0] == 1728
    # The one-hot column of each raw value is the one named attribute=value.
    cols = np.argmax(car.data[:, car.attribute_offsets[2]:car.attribute_offsets[3]], axis=1)
    names = car.feature_names[car.attribute_offsets[2] + cols]
    np.testing.assert_array_equal(names, np.char.add("doors=", car.data_raw[:, 2]))
    assert (mush.data_raw[:, 10] == "?").sum() == 2480  # stalk-root missing values


# --------------------------------------------------------------------------- download path


@needs_shared
@pytest.mark.parametrize("name, rebuild", [("car", _car_source), ("sonar", _sonar_source)])
def test_download_checksum_convert_and_cache(name, rebuild, home, monkeypatch):
    source = rebuild(_shared(name))
    info = dataset_info(name)
    assert hashlib.sha256(source).hexdigest() == info.source.sha256  # rebuilt byte for byte
    calls = []
    _serve(monkeypatch, _bytes_at(source, calls))
    bunch = load_uci(name)
    assert calls == [info.source.url]
    assert (home / info.filename).is_file()
    assert not (home / info.source.filename).exists()  # only the archive is kept
    with np.load(home / info.filename, allow_pickle=False) as z:
        _assert_same_arrays({k: z[k] for k in z.files}, _shared(name))
    np.testing.assert_array_equal(bunch.data, _shared(name)["X"])
    load_uci(name)
    assert len(calls) == 1  # second load reads the cached archive


@needs_shared
def test_source_placed_by_hand_is_used_offline(home):
    (home / "sonar.all-data.csv").write_bytes(_sonar_source(_shared("sonar")))
    bunch = load_uci("sonar")  # the `home` fixture fails on any download
    np.testing.assert_array_equal(bunch.data, _shared("sonar")["X"])


def test_offline_error_says_which_file_to_put_where(home, monkeypatch):
    import requests

    def offline(url, output_file, pooch):
        raise requests.exceptions.ConnectionError("no network")

    _serve(monkeypatch, offline)
    with pytest.raises(DatasetNotFoundError) as err:
        load_usps()
    msg = str(err.value)
    assert str(home / "usps.npz") in msg
    assert str(home / "usps.h5") in msg
    assert dataset_info("usps").source.url in msg
    assert dataset_info("usps").source.sha256 in msg
    assert "no network" in msg and datasets.ENV_VAR in msg
    assert isinstance(err.value, FileNotFoundError)
    assert list(home.iterdir()) == []


def test_download_disabled_never_touches_network(home):
    with pytest.raises(DatasetNotFoundError, match="downloads are disabled"):
        load_uci("mushroom", download_if_missing=False)


def test_checksum_mismatch_is_refused(home, monkeypatch):
    _serve(monkeypatch, _bytes_at(b"not the file", []))
    with pytest.raises(ChecksumError, match="sha256") as err:
        load_uci("ionosphere")
    # pooch's digest of what came and the recorded one are both in the message
    assert hashlib.sha256(b"not the file").hexdigest() in str(err.value)
    assert dataset_info("ionosphere").source.sha256 in str(err.value)
    assert list(home.iterdir()) == []
    (home / "ionosphere.data").write_bytes(b"tampered")
    with pytest.raises(ChecksumError, match=str(home / "ionosphere.data")):
        load_uci("ionosphere")


@pytest.mark.parametrize("broken, match", [
    ({"X": np.zeros((208, 60), np.float32)}, "'X' must be float64"),
    ({"X": np.zeros((207, 60))}, "'X' must be float64 of shape \\(208, 60\\)"),
    ({"y": np.zeros(208, np.int64)}, "y must take every value"),
    ({"classes": None}, "missing arrays \\['classes'\\]"),
    ({"X": np.full((208, 60), np.nan)}, "NaN"),
])
def test_invalid_archive_is_rejected(home, broken, match):
    arrays = {"X": np.zeros((208, 60)), "y": np.arange(208, dtype=np.int64) % 2,
              "classes": np.array(["R", "M"])}
    arrays.update(broken)
    np.savez(home / "sonar.npz", **{k: v for k, v in arrays.items() if v is not None})
    with pytest.raises(DatasetFormatError, match=match):
        load_uci("sonar")


def test_archive_needing_pickle_is_rejected(home):
    np.savez(home / "sonar.npz", X=np.array([object()]), y=np.zeros(1), classes=np.zeros(1))
    with pytest.raises(DatasetFormatError, match="not a readable .npz"):
        load_uci("sonar")


# --------------------------------------------------------------------------- text converters


def test_sonar_converter_with_and_without_header():
    rows = [[0.02, 0.5] + [0.0] * 58 + ["R"], [1.0, 0.25] + [0.125] * 58 + ["M"]]
    body = "\r\n".join(",".join(str(v) for v in r) for r in rows) + "\r\n"
    for text in (body, "f" + ",f" * 59 + ",label\n" + body):
        out = convert_source("sonar", text.encode())
        np.testing.assert_array_equal(out["X"][:, :2], [[0.02, 0.5], [1.0, 0.25]])
        assert out["X"].dtype == np.float64 and out["X"].shape == (2, 60)
        assert out["y"].tolist() == [0, 1] and out["classes"].tolist() == ["R", "M"]


def test_ionosphere_converter_maps_b_and_g(tmp_path):
    header = ",".join([f"a{j}" for j in range(34)] + ["label"])
    rows = ["1,0," + ",".join(["-0.5"] * 32) + ",g", "0,0," + ",".join(["0.25"] * 32) + ",b"]
    path = tmp_path / "ionosphere.data"
    path.write_text(header + "\n" + "\n".join(rows) + "\n\n")
    out = convert_source("ionosphere", path)
    assert out["y"].tolist() == [1, 0] and out["classes"].tolist() == ["b", "g"]
    assert out["X"][0, :3].tolist() == [1.0, 0.0, -0.5]


@pytest.mark.parametrize("text, match", [
    (b"0.1,R\n", "lines \\[1\\] do not have 61"),
    (("0.1," * 60 + "X\n").encode(), "unknown class labels \\['X'\\]"),
    (("0.1," * 59 + "abc,R\n0.1,R\n").encode(), "lines \\[2\\]"),
    (b"\n\n", "no data lines"),
    ("é".encode(), "not ASCII"),
])
def test_text_converter_errors_name_the_problem(text, match):
    with pytest.raises(DatasetFormatError, match=match):
        convert_source("sonar", text)


def test_car_converter_documented_column_order():
    text = ("buying,maint,doors,persons,lug_boot,safety,deal\n"
            "low,vhigh,5more,more,big,high,vgood\n"
            "vhigh,low,2,2,small,low,unacc\n")
    out = convert_source("car", text.encode())
    assert out["attribute_offsets"].tolist() == [0, 4, 8, 12, 15, 18, 21]
    # buying=low is column 3, maint=vhigh 4, doors=5more 11, persons=more 14,
    # lug_boot=big 17, safety=high 20 (UCI documentation order within each attribute).
    assert np.flatnonzero(out["X"][0]).tolist() == [3, 4, 11, 14, 17, 20]
    assert np.flatnonzero(out["X"][1]).tolist() == [0, 7, 8, 12, 15, 18]
    assert out["feature_names"][11] == "doors=5more"
    assert out["y"].tolist() == [3, 0]
    assert out["X_raw"].dtype.kind == "U" and out["X_raw"][0, 2] == "5more"
    with pytest.raises(DatasetFormatError, match="doors has unknown values \\['6'\\]"):
        convert_source("car", b"low,vhigh,6,more,big,high,vgood\n")


def test_mushroom_converter_observed_sorted_values_and_missing_marker():
    attrs = datasets._MUSHROOM_ATTRIBUTES
    header = "class, " + ", ".join(attrs)
    base = ["x", "s", "n", "t", "p", "f", "c", "n", "k", "e", "e", "s", "s", "w", "w", "p", "w",
            "o", "p", "k", "s", "u"]
    r2 = list(base)
    r2[0], r2[10] = "b", "?"  # cap-shape b, stalk-root missing
    text = "\n".join([header, "p," + ",".join(base), "e," + ",".join(r2)]) + "\n"
    out = convert_source("mushroom", text.encode())
    assert out["X"].shape == (2, 24) and np.all(out["X"].sum(axis=1) == 22)
    off = out["attribute_offsets"]
    assert out["feature_names"][off[0]:off[1]].tolist() == ["cap-shape=b", "cap-shape=x"]
    assert out["feature_names"][off[10]:off[11]].tolist() == ["stalk-root=?", "stalk-root=e"]
    assert out["X"][1, off[10]] == 1.0 and out["X"][0, off[10] + 1] == 1.0
    assert out["y"].tolist() == [1, 0] and out["X_raw"].shape == (2, 22)


@needs_shared
def test_mushroom_ionosphere_converters_reproduce_shared_archives():
    z = _shared("mushroom")
    lines = _mushroom_lines(z)
    # The README's sha256 of the 8,124 data lines: the rebuilt text is the real file.
    assert hashlib.sha256(lines).hexdigest().startswith("e65d082030501a3e")
    _assert_same_arrays(convert_source("mushroom", b"class,cap-shape\n" + lines), z)
    z = _shared("ionosphere")
    text = "\n".join(",".join([*map(repr, row.tolist()), z["classes"][c]])
                     for row, c in zip(z["X"], z["y"], strict=True))
    _assert_same_arrays(convert_source("ionosphere", text.encode()), z)


# --------------------------------------------------------------------------- binary converters


def _umist_mat(fea: np.ndarray, gnd: np.ndarray) -> bytes:
    import scipy.io

    buf = io.BytesIO()
    scipy.io.savemat(buf, {"fea": fea, "gnd": gnd})
    return buf.getvalue()


def test_umist_converter_column_major_to_row_major():
    rng = np.random.default_rng(0)
    fea = rng.integers(0, 256, size=(3, 1024), dtype=np.uint8)
    out = convert_source("umist32", _umist_mat(fea, np.array([[2], [1], [20]], np.uint8)))
    assert out["X"].dtype == np.float32 and out["y"].tolist() == [1, 0, 19]
    for i in range(3):  # README: X[i].reshape(32, 32) == fea[i].reshape(32, 32, order="F")
        np.testing.assert_array_equal(out["X"][i].reshape(32, 32),
                                      fea[i].reshape(32, 32, order="F"))
    import scipy.io

    buf = io.BytesIO()
    scipy.io.savemat(buf, {"X": fea, "Y": np.ones((3, 1))})
    with pytest.raises(DatasetFormatError, match="'fea' and 'gnd'; found \\['X', 'Y'\\]"):
        convert_source("umist32", buf.getvalue())
    with pytest.raises(DatasetFormatError, match="not a readable MATLAB file"):
        convert_source("umist32", b"garbage")


@needs_shared
def test_umist_converter_inverts_shared_archive():
    z = _shared("umist32")
    n = z["X"].shape[0]
    fea = z["X"].reshape(n, 32, 32).reshape(n, 1024, order="F").astype(np.uint8)
    _assert_same_arrays(convert_source("umist32", _umist_mat(fea, (z["y"] + 1)[:, None])), z)


# USPS source format: HDF5 files written by libhdf5 2.0.0 through h5py 3.16, stored
# gzip-compressed and base64-encoded (fixed bytes, independent of the h5py installed
# when the tests run). Generated with (libver "earliest" is h5py's default and the layout of the
# published usps.h5; "v108" adds version-2 object headers and link messages):
#
#     i, j = np.mgrid[0:5, 0:256]; train_X = np.where(j % 7 == 0, ((i*256 + j) % 1000) / 1000, 0)
#     i, j = np.mgrid[0:3, 0:256]; test_X = np.where(j % 3 == 0, (i + 1) / 4, 0)
#     with h5py.File(buf, "w", libver=libver) as f:
#         g = f.create_group("train")
#         g.create_dataset("data", data=train_X.astype("f4"), chunks=(2, 96),
#                          compression="gzip", shuffle=True)    # chunked, edge chunks
#         g.create_dataset("target", data=np.array([3, 1, 4, 1, 5], "i4"), chunks=(2,),
#                          fletcher32=True)
#         g = f.create_group("test")
#         g.create_dataset("data", data=test_X.astype("f4"))             # contiguous
#         g.create_dataset("target", data=np.array([9, 2, 6], ">i4"))    # big-endian
#     fixture = base64.b64encode(gzip.compress(buf.getvalue(), mtime=0))
_USPS_H5_EARLIEST = """
H4sIAAAAAAACA+v0cHHj5ZLiYgABDg4GFgYBBmTwHwpkTFH5MPkEKM0IpTug9AommDgjWE4CKi4INR9dXUiQqytI
9X80ALPnASuE5mAYBSMReLg6BoDoCCgflp5OMKGqKylKzMwD0anFJcjp0oFMe3GlXw9mCD+Dlbj0awFNuAKjUTma
fpHSUwcrqrqUxJJEcDpOLEpPLaE8/Qb7+bswMjDB090LJdTyWkAZQhuoopavCsyo6tDT+0gDjAxskLBghPE1IDQT
RICVAbUiROczA2McxBRUkAfWseAQZhDnYBCvZ4Cp5wDLMzFDDORmsADzGaHlGxNYnpGhOKM0LS0nFWoGyHiIeEpq
Wk5iCUKcA5rCmJmYGzhhRkCqa6gSC4rCA5auYOlFgx2/elj6a5EcLQuQAajeYGTgxKg3ThLQt0MYQl9EE09A4zeK
QOi5aOIH0PhBohD6LAMisWAD76HqLqCpQ7d3jxiEXoKmDt3eHnEIXQvls+Cw1wBaYFagqUO3dy1UXTyaOnR7VdHS
IUydAiN+d4yCUTAKRsEoGAWjYBQMFKiI23rBnrsxUOT4x/RJviejA0SaDyrUs02+q2Xbvclz0pIpUxw9kwwmOAp6
Tjz5wLWCn222iueUd3/vPZ3iaXn455zqd+/1rm8qUWVVLPzUnepyp/KgS1PCpMSrXGfENQ6JehU0G91ZyMS/4pBw
1gem2G0HNP0kN95p5OUzmKg7IyXM1PyzzKOCFps9C/ntLBykzgWw8+s4XOcs2iDkLc6iwKp2s0Gv56DN/dXXUvIc
pa0uNDPyJLIIzzjEM21DG++LLqc30s8u1ykf/GNuV6am21URt/bSRm5HkEe8J+mYze5VUfFcJNBsf1Bl5l/+SSo/
mf+Iqyk2P5zayOM1UWRpitGtpdX70ysOS9+XPPf8+urydzvXLw8JnKnlLCsl0GyhosCZecJBrGhCe1Oe7Sf+Xwqm
DPo8B9mVPxyWYDJoXJDHHR22ill7wvTUnWInVljaOLCd/pdrcDzkZPqLpisiT7ojLrTwnxA9bNAsFVN6+/amoPwf
TewpOwVOrOBwUWTdVM95xtD7k5RZwkGxsoIG5TkPmMx3HBaO23Wy/7HHUVYZuZ0n5DfUaSVWxC29tHEVY4DEgY+T
Dyqc9JboZeOcqNI90VNs9tk0Y69Lc991n2C+I75zJk9SAFtqQF36FOMf+vtfXvleO1fAaUVbuOmViy7SsiUXnTlP
XjuR3My0TeMRu/aXiTnt9U8CDrIUttjynVC6ySP5Z1GPfU+BG3fhw5SPc5h5DI+JFLZYikUo3RRUjyk4yltuI9DN
rZ5d475p+3o7wf95T5L9jVZIHwMlG0NvJgcG1gcHBDqdNnV0PFOScjoSGOXExRmosmiRoZPAxRfmJu3JO8JcnFuS
i012m3tfCLgk1jjnfm9v6eHfctvvPJ4l/HhzI7/NgladtoojkkU/nPifn2jfcc1/QxdjXmGX6Z6HfKVrHst+z2g5
8WL9Dkdp1iUX3MU/Xtzxn13/xQOLI1Plvh9f/+OYsV5hi2jNI07xFQmSj+M9Xkz2UNKbd8gkbcIxnWcG/aw6SZpH
psUdMSsLOKR3qkN69YpE/t8WBxI7fP/e//H0lb8k44Q5mvOBnrlo6N0UKML2ID+n71iIUtcEo0WKSosCZ81WXcQx
UcnLcUnGe3eTdm8PlxYX+0W2c6JdtFQWOex7b5m8+O5DG/1yy+/zJqscVrHmz0jija9w4X79w038+Y0D/PMubVL5
XtgtrJPcwOe3san8zsK+0JplqY7/Dhiv29Bsc6+g3zsnmct2y0UP75J9DpKTK47yntvQybnngVTokd/1l410nwcc
4EkzbK880t4d4cJpeGFG7LVlSu+TQH5QfFRoKvNQYuOGG75rFGefn/Yn/0+hqZtbeqvunIq4uRetuQ45iLg9jE5X
zXMQMbUr4L6mp7DXrUlpneMaHR2WcIVpTgec1rCKL7ohyTRvP6dK3AcTeR7jMwXHz+Qk3nc68YDH+0WjV2JoxJp3
HMIrDkv7CRxmjBNomC23/G35DUeWXSF3E4KBclzZEs688xZk5j5k5i+4/FjqQotYyQLuWokDAneWGTSzPFuw/7p5
fAJLdcHlP/+Prv0Sopl74cKR80UVL+SKQAlIkesQg0RboqEED1v3wQeMbRG8VRwHuytYJj7knNZjdHBXgtmM8KMJ
RlmzAx1vbH7E+G+7zdfH1lte+VU8aDW3y1jcrFf1IrlB0a0jt53LUuzHow6W7BjDY2zmPhOUtnHPWnm2OFhn4yEx
yW8aBW6d1vM6cr8dt2m4Ufd/lWQt0PJz2lxMiRIOF+1v5KhN5WRmW3x2mau6r/GujoN7OR5xS7q4HEntmF0gmLSF
U277h7tFr3xXTq/T3XhIKvpNoUOvsp/F4ybtvI63nWZqKzYclNUvCUxolJWrUHbOkTe54MIt+wTssBmLjvAUH/km
L3Fc8Ka4xToxrYq4o0c3cjYHiDAcMO8pvhG1q4Hj5RsWbuvZIozdEzg3NXV4dPk8EHokEOnwwc3j4/qdHR2aepvF
1v5acWldVPsk7Ssv1/ra753ycnXQybtXVoSudyy3NXm18smn/16vWFpLBE0xx5YgnVhGRtSxJRjNzCAAVirAwQAf
S8I+hqQAGUNiROgDgbSc1JLkjNQiYyP0sSKmKVKI7jpSFzhjAMZEmDHGRHhwqD8CHdPkwTF2cQFNHr1vf0cJlc/G
MDoGMApGwSgYBaNgFAx2wAxrOrEw8LHA2KwMQvA5OFYGEVzz+Ojzn4Tm8XeoQejRefyRCXDN4weooqqj9jw+IzAR
45t/ZkYoxMEncv6ZCWIgvE8AswjRfIaNQA1oPKDPP69Qxa8enl9NRtMwKmiwG2WPskfZI5Ztj1QYjLJH2aPsEcV2
QOKPskfZo+yRxMbsV6LOPTEzMKDR0LknThxzTxj9RwFTrN1HhgmDtUMEWi4NmkJiAwBQbcUXHDUAAA==
"""

_USPS_H5_V108 = """
H4sIAAAAAAACA+v0cHHj5ZLiYuLgYICB/1DgqwXhG0DFC/5/k/f3cAliYqhgEkJWCANcTAyMDAxsAgxAirWkKDEz
bzNUKxs/SIylJLW4ZJk0VMyQgXRw9ZH8NmKcALEuJbEk0YwR6gJBkBBbSWJRemqJmxADqtdIAIt0ClLBTmBkYGRU
YWBgYmJkZIVJQi1D5zOLMDAKKsgzsIB5CgziHAzi9SB1QNcyc3OLMTAyMYEczghWwQhncYgD9TIxOzFBjAFRCUAM
NqaRYeDBmbOBJ0KCXF0ZGTgxYuIkAb1VPBD6Ipp4AhrfmRdCz0UTP4DGF+GD0GcZEIGFDWyEqruApg7d3jp+CL0E
TR26vX4CELoWymfBYe8nqLoKNHXo9uYLQuh4NHXo9j4XROXD1Ckw4nfHKBgFo2AUjIJRMApGwUCBiritF+y5GwNF
jn9Mn+R7MjpApPmgQj3b5Ltatt2bPCctmTLF0TPJYIKjoOfEkw9cK/jZZqt4Tnn3997TKZ6Wh3/OqX73Xu/6phJV
VsXCT92pLncqD7o0JUxKvMp1RlzjkKhXQbPRnYVM/CsOCWd9YIrddkDTT3LjnUZePoOJujNSwkzNP8s8Kmix2bOQ
387CQepcADu/jsN1zqINQt7iLAqsajcb9HoO2txffS0lz1Ha6kIzI08ii/CMQzzTNrTxvuhyeiP97HKd8sE/5nZl
arpdFXFrL23kdgR5xHuSjtnsXhUVz0UCzfYHVWb+5Z+k8pP5j7iaYvPDqY08XhNFlqYY3VpavT+94rD0fclzz6+v
Ln+3c/3ykMCZWs6yUgLNFioKnJknHMSKJrQ35dl+4v+lYMqgz3OQXfnDYQkmg8YFedzRYauYtSdMT90pdmKFpY0D
2+l/uQbHQ06mv2i6IvKkO+JCC/8J0cMGzVIxpbdvbwrK/9HEnrJT4MQKDhdF1k31nGcMvT9JmSUcFCsraFCe84DJ
fMdh4bhdJ/sfexxllZHbeUJ+Q51WYkXc0ksbVzEGSBz4OPmgwklviV42zokq3RM9xWafTTP2ujT3XfcJ5jviO2fy
JAWwpQbUpU8x/qG//+WV77VzBZxWtIWbXrnoIi1bctGZ8+S1E8nNTNs0HrFrf5mY017/JOAgS2GLLd8JpZs8kn8W
9dj3FLhxFz5M+TiHmcfwmEhhi6VYhNJNQfWYgqO85TYC3dzq2TXum7avtxP8n/ck2d9ohfQxULIx9GZyYGB9cECg
02lTR8czJSmnI4FRTlycgSqLFhk6CVx8YW7SnrwjzMW5JbnYZLe594WAS2KNc+739pYe/i23/c7jWcKPNzfy2yxo
1WmrOCJZ9MOJ//mJ9h3X/Dd0MeYVdpnuechXuuax7PeMlhMv1u9wlGZdcsFd/OPFHf/Z9V88sDgyVe778fU/jhnr
FbaI1jziFF+RIPk43uPFZA8lvXmHTNImHNN5ZtDPqpOkeWRa3BGzsoBDeqc6pFevSOT/bXEgscP37/0fT1/5SzJO
mKM5H+iZi4beTYEibA/yc/qOhSh1TTBapKi0KHDWbNVFHBOVvByXZLx3N2n39nBpcbFfZDsn2kVLZZHDvveWyYvv
PrTRL7f8Pm+yymEVa/6MJN74Chfu1z/cxJ/fOMA/79Imle+F3cI6yQ18fhubyu8s7AutWZbq+O+A8boNzTb3Cvq9
c5K5bLdc9PAu2ecgObniKO+5DZ2cex5IhR75XX/ZSPd5wAGeNMP2yiPt3REunIYXZsReW6b0PgnkB8VHhaYyDyU2
brjhu0Zx9vlpf/L/FJq6uaW36s6piJt70ZrrkIOI28PodNU8BxFTuwLua3oKe92alNY5rtHRYQlXmOZ0wGkNq/ii
G5JM8/ZzqsR9MJHnMT5TcPxMTuJ9pxMPeLxfNHolhkasecchvOKwtJ/AYcY4gYbZcsvflt9wZNkVcjchGCjHlS3h
zDtvQWbuQ2b+gsuPpS60iJUs4K6VOCBwZ5lBM8uzBfuvm8cnsFQXXP7z/+jaLyGauRcuHDlfVPFCrgiUgBS5DjFI
tCUaSvCwdR98wNgWwVvFcbC7gmXiQ85pPUYHdyWYzQg/mmCUNTvQ8cbmR4z/ttt8fWy95ZVfxYNWc7uMxc16VS+S
GxTdOnLbuSzFfjzqYMmOMTzGZu4zQWkb96yVZ4uDdTYeEpP8plHg1mk9ryP323Gbhht1/1dJ1gItP6fNxZQo4XDR
/kaO2lROZrbFZ5e5qvsa7+o4uJfjEbeki8uR1I7ZBYJJWzjltn+4W/TKd+X0Ot2Nh6Si3xQ69Cr7WTxu0s7reNtp
prZiw0FZ/ZLAhEZZuQpl5xx5kwsu3LJPwA6bsegIT/GRb/ISxwVvilusE9OqiDt6dCNnc4AIwwHznuIbUbsaOF6+
YeG2ni3C2D2Bc1NTh0eXzwOhRwKRDh/cPD6u39nRoam3WWztrxWX1kW1T9K+8nKtr/3eKS9XB528e2VF6HrHcluT
VyuffPrv9YqltUTQFD4eIgLsJzMixkNgNDMPA6MABwN8/AM67sHBwMjEyAwW4xAGjXQwBQkjOttgxauHVJ12/iHL
d8h4CDPGeAgPDj1N0PEwHhzjFn1o8uj9+lnSqHw2htH+/ygYBaNgFIyCUTDYAaj9wwipsPlYYGxWBiH4HBIrgwhp
U16aMtCWAPKUl6km1Dgyprw0LYPV0ae8mGGSjAhvoPDxTXlxcQB9wsxoKsuA2rZZMPij66Tjy1AGhgY7hMgoe5Q9
yh5hbHukImGUPcoeZY8otgMSf5Q9yh5ljyQ2+nA3MwNqHwg83M2JNtwN7fM4aqF2eRh2DN2ua2ZwXASQAvoUPGrN
BgBAEUhsTSoAAA==
"""


def _usps_fixture(encoded: str) -> bytes:
    return gzip.decompress(base64.b64decode("".join(encoded.split())))


def _usps_expected():
    i, j = np.mgrid[0:5, 0:256]
    train = np.where(j % 7 == 0, ((i * 256 + j) % 1000) / 1000, 0).astype(np.float32)
    i, j = np.mgrid[0:3, 0:256]
    test = np.where(j % 3 == 0, (i + 1) / 4, 0).astype(np.float32)
    return np.concatenate([train, test]), [3, 1, 4, 1, 5, 9, 2, 6]


@pytest.mark.parametrize("fixture", ["_USPS_H5_EARLIEST", "_USPS_H5_V108"])
def test_usps_converter_reads_hdf5(fixture):
    out = convert_source("usps", _usps_fixture(globals()[fixture]))
    X, y = _usps_expected()
    assert out["X"].dtype == np.float32 and out["y"].dtype == np.int64
    np.testing.assert_array_equal(out["X"], X)
    assert out["y"].tolist() == y
    assert out["split"].tolist() == ["train"] * 5 + ["test"] * 3
    assert out["image_shape"].tolist() == [16, 16]


def _h5_bytes(groups: dict, libver: str = "latest") -> bytes:
    import h5py

    buf = io.BytesIO()
    with h5py.File(buf, "w", libver=libver) as f:
        for path, value in groups.items():
            f.create_dataset(path, data=value)
    return buf.getvalue()


def test_usps_converter_reads_newest_hdf5_layout():
    # libver="latest": version-3 superblock, fractal-heap-free compact groups, new headers
    X, y = _usps_expected()
    data = _h5_bytes({"train/data": X[:5], "train/target": np.array(y[:5], ">i8"),
                      "test/data": X[5:].astype(">f8"), "test/target": np.array(y[5:], "u1")})
    out = convert_source("usps", data)
    np.testing.assert_array_equal(out["X"], X)
    assert out["X"].dtype == np.float32 and out["y"].dtype == np.int64
    assert out["y"].tolist() == y


def test_hdf5_errors_name_the_problem():
    with pytest.raises(DatasetFormatError, match="not a readable HDF5 file"):
        convert_source("usps", b"\x00" * 64)
    X, y = _usps_expected()
    partial = _h5_bytes({"train/data": X[:5], "train/target": np.array(y[:5])})
    with pytest.raises(DatasetFormatError,
                       match=r"no datasets \['test/data', 'test/target'\]; found "
                             r"\['train/data', 'train/target'\]"):
        convert_source("usps", partial)
    with pytest.raises(DatasetFormatError, match=r"\['train'\] are not datasets"):
        datasets._read_hdf5(partial, ["train"])
    bad_shape = _h5_bytes({"train/data": X[:5, :100], "train/target": np.array(y[:5]),
                           "test/data": X[5:], "test/target": np.array(y[5:])})
    with pytest.raises(DatasetFormatError, match=r"train/data must be \(n, 256\)"):
        convert_source("usps", bad_shape)


# --------------------------------------------------------------------------- bundled, synthetic


@pytest.mark.parametrize("name, shape", [("iris", (150, 4)), ("wine", (178, 13)),
                                         ("breast_cancer", (569, 30)), ("digits", (1797, 64))])
def test_bundled_sklearn_sets(name, shape):
    import sklearn.datasets as skd

    bunch = load_dataset(name)
    ref = getattr(skd, f"load_{name}")()
    assert bunch.data.shape == shape and bunch.target.dtype == np.int64
    np.testing.assert_array_equal(bunch.data, ref.data)
    np.testing.assert_array_equal(bunch.target, ref.target)
    assert dataset_info(name).n_classes == np.unique(bunch.target).size


def test_two_moons_3d_lifting():
    from sklearn.datasets import make_moons

    X, y = make_two_moons_3d(600, noise=0.05, random_state=3)
    assert X.shape == (600, 3) and np.bincount(y).tolist() == [300, 300]
    # TCA section 5.1: z = sin(pi y) (y^2 + 1)^-2 + 0.3 y, on scikit-learn's moons.
    X2, y2 = make_moons(600, noise=0.05, random_state=3)
    np.testing.assert_array_equal(X[:, :2], X2)
    np.testing.assert_array_equal(y, y2)
    v = X2[:, 1]
    np.testing.assert_allclose(X[:, 2], np.sin(np.pi * v) * (v * v + 1) ** -2 + 0.3 * v,
                               rtol=0, atol=1e-15)  # same formula, rounding only
    X_again, _ = make_two_moons_3d(600, noise=0.05, random_state=3)
    np.testing.assert_array_equal(X, X_again)
    b = load_dataset("two_moons_3d", n=10, random_state=0)
    assert b.data.shape == (10, 3)
    with pytest.raises(InputError):
        make_two_moons_3d(1)
    with pytest.raises(InputError):
        make_two_moons_3d(10, noise=-1.0)


# --------------------------------------------------------------------------- partial labels


labels_strategy = st.lists(st.integers(0, 4), min_size=5, max_size=120).filter(
    lambda v: len(set(v)) >= 1)


@settings(max_examples=60, deadline=None)
@given(y=labels_strategy, fraction=st.floats(0.01, 1.0), seed=st.integers(0, 2**31 - 1),
       min_per_class=st.integers(0, 1))
def test_partial_labels_per_class_counts(y, fraction, seed, min_per_class):
    y = np.array(y)
    out = partial_labels(y, fraction, min_per_class=min_per_class, random_state=seed)
    kept = out != -1
    np.testing.assert_array_equal(out[kept], y[kept])  # visible labels unchanged
    for c in np.unique(y):
        n_c = int((y == c).sum())
        want = max(min_per_class, int(np.floor(fraction * n_c + 0.5)))
        assert int((kept & (y == c)).sum()) == want
    np.testing.assert_array_equal(
        out, partial_labels(y, fraction, min_per_class=min_per_class, random_state=seed))


@settings(max_examples=40, deadline=None)
@given(y=labels_strategy, fraction=st.floats(0.01, 1.0), seed=st.integers(0, 2**31 - 1))
def test_partial_labels_global_fraction_keeps_every_class(y, fraction, seed):
    y = np.array(y)
    out = partial_labels(y, fraction, per_class=False, random_state=seed)
    kept = out != -1
    n_classes = np.unique(y).size
    assert kept.sum() == max(int(np.floor(fraction * y.size + 0.5)), n_classes)
    assert set(out[kept]) == set(y)  # at least one labeled point per class


def test_partial_labels_counts_and_seeds():
    y = np.repeat([0, 1, 2], [50, 30, 20])
    out = partial_labels(y, 2, random_state=0)  # int: labels kept per class
    assert np.bincount(out[out >= 0]).tolist() == [2, 2, 2]
    out = partial_labels(y, 10, per_class=False, random_state=0)
    assert (out != -1).sum() == 10 and set(out[out >= 0]) == {0, 1, 2}
    a = partial_labels(y, 0.5, random_state=1)
    b = partial_labels(y, 0.5, random_state=2)
    assert not np.array_equal(a, b)
    assert partial_labels(y.astype(float), 1.0).tolist() == y.tolist()


def test_partial_labels_draw_is_uniform_within_class():
    # Each of the 40 points of a class must be kept with probability 10/40 = 1/4.
    # Over 2000 seeds a point's count is Binomial(2000, 1/4): mean 500, sd 19.4;
    # a 6-sigma band (384..616) fails by chance with probability ~ 40 * 2e-9.
    y = np.repeat([0, 1], 40)
    counts = sum((partial_labels(y, 0.25, random_state=s) != -1).astype(int)
                 for s in range(2000))
    assert np.all(np.abs(counts - 500) < 6 * 19.4)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"y": [0, 1, -1], "fraction": 0.5}, LabelError, "complete"),
    ({"y": [0.5, 1.0], "fraction": 0.5}, LabelError, "integer"),
    ({"y": [[0, 1]], "fraction": 0.5}, LabelError, "1-D"),
    ({"y": [0, 1], "fraction": 0.0}, InputError, "fraction"),
    ({"y": [0, 1], "fraction": 1.5}, InputError, "fraction"),
    ({"y": [0, 1], "fraction": True}, InputError, "fraction"),
    ({"y": [0, 1], "fraction": 0}, InputError, "fraction"),
    ({"y": [0, 0, 1], "fraction": 2}, LabelError, "only \\[1\\] points"),
    ({"y": [0, 1], "fraction": 0.5, "min_per_class": 2}, LabelError, "fewer than"),
    ({"y": [0, 1], "fraction": 3, "per_class": False}, LabelError, "out of 2"),
])
def test_partial_labels_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        partial_labels(**kwargs)


# --------------------------------------------------------------------------- corrupt archives


def _flip(data: bytes, at: float) -> bytes:
    i = int(at * (len(data) - 1))
    return data[:i] + bytes([data[i] ^ 0x10]) + data[i + 1:]


@needs_shared
@pytest.mark.parametrize("damage", [
    pytest.param(lambda b: b"", id="empty"),
    pytest.param(lambda b: b[:len(b) // 2], id="truncated-half"),
    pytest.param(lambda b: b[:-10], id="truncated-tail"),
    pytest.param(lambda b: _flip(b, 0.02), id="bit-flip-header"),
    pytest.param(lambda b: _flip(b, 0.5), id="bit-flip-data"),
])
def test_corrupt_archive_names_the_file_and_says_to_delete_it(home, damage):
    path = home / "sonar.npz"
    path.write_bytes(damage((SHARED / "sonar.npz").read_bytes()))
    with pytest.raises(DatasetFormatError) as err:
        load_uci("sonar", download_if_missing=False)
    assert str(path) in str(err.value) and f"delete {path}" in str(err.value)


@needs_shared
def test_a_bit_flip_anywhere_never_gives_wrong_data(home):
    """Flip one bit at 60 places spread over the file: each load either raises
    DatasetFormatError naming the file or returns exactly the published arrays (a flip in
    a field the zip reader ignores leaves the data intact)."""
    good = (SHARED / "sonar.npz").read_bytes()
    want = _shared("sonar")
    refused = 0
    for at in np.linspace(0, 1, 60):
        (home / "sonar.npz").write_bytes(_flip(good, at))
        try:
            bunch = load_uci("sonar", download_if_missing=False)
        except DatasetFormatError as exc:
            assert str(home / "sonar.npz") in str(exc)
            refused += 1
        else:
            np.testing.assert_array_equal(bunch.data, want["X"])
            np.testing.assert_array_equal(bunch.target, want["y"])
    assert refused >= 50  # nearly every byte matters


@needs_shared
@pytest.mark.parametrize("edit", ["value", "labels", "extra array"])
def test_tampered_archive_is_detected_by_its_checksum(home, edit):
    """A valid archive whose arrays were changed loads without any zip error; the recorded
    sha256 of the published arrays refuses it."""
    arrays = _shared("sonar")
    if edit == "value":
        arrays["X"] = arrays["X"].copy()
        arrays["X"][0, 0] += 1e-9
    elif edit == "labels":
        y = arrays["y"].copy()
        j = int(np.flatnonzero(y != y[0])[0])
        y[[0, j]] = y[[j, 0]]  # two labels of different classes swapped: counts unchanged
        arrays["y"] = y
    else:
        arrays["note"] = np.zeros(1)
    np.savez_compressed(home / "sonar.npz", **arrays)
    with pytest.raises(DatasetFormatError, match="differ from the published sonar data") as err:
        load_uci("sonar", download_if_missing=False)
    assert f"delete {home / 'sonar.npz'}" in str(err.value)


@needs_shared
@pytest.mark.parametrize("name", REMOTE)
def test_recorded_array_checksums_are_those_of_the_shared_archives(name):
    assert datasets.arrays_sha256(_shared(name)) == datasets._ARRAYS_SHA256[name]
    # independent of the zip container: the same arrays saved again have the same value
    buf = io.BytesIO()
    np.savez(buf, **_shared(name))
    buf.seek(0)
    with np.load(buf, allow_pickle=False) as z:
        assert datasets.arrays_sha256({k: z[k] for k in z.files}) == \
            datasets._ARRAYS_SHA256[name]


@needs_shared
def test_usps_virtual_examples(monkeypatch):
    """augment: each transformation appends one block of copies with the source labels; a
    one-pixel shift moves every pixel by one; rotations and scalings keep [0, 1]; a bad
    name is an InputError before any work."""
    from sdpembed.datasets import load_usps

    monkeypatch.setenv(datasets.ENV_VAR, str(SHARED))
    base = load_usps(subset="test")
    n = base.data.shape[0]
    b = load_usps(subset="test", augment=["shift", "rotate", "scale"])
    assert b.data.shape == (9 * n, 256) and b.images.shape == (9 * n, 16, 16)
    np.testing.assert_array_equal(b.target, np.tile(base.target, 9))
    np.testing.assert_array_equal(b.original, np.tile(np.arange(n), 9))
    np.testing.assert_array_equal(b.data[:n], base.data)
    left = b.images[n:2 * n]                                 # shift (0, -1): one pixel left
    np.testing.assert_allclose(left[:, :, :-1], base.images[:, :, 1:], atol=1e-6)
    assert np.all(left[:, :, -1] == 0) and list(np.unique(b.transform[n:2 * n])) == [
        "shift (0, -1)"]
    assert b.data.min() >= 0.0 and b.data.max() <= 1.0
    rot = b.images[5 * n:6 * n]
    assert not np.allclose(rot, base.images) and np.unique(b.data, axis=0).shape[0] == 9 * n
    with pytest.raises(InputError, match="augment"):
        load_usps(augment=["flip"])


def test_the_real_downloader_is_poochs_http_downloader_with_a_timeout():
    # what the tests above replace: pooch's HTTP downloader, no progress bar, a timeout
    import pooch

    d = datasets._downloader()
    assert isinstance(d, pooch.HTTPDownloader) and d.progressbar is False
    assert d.kwargs["timeout"] == datasets._DOWNLOAD_TIMEOUT_S


def test_http_error_is_a_missing_dataset_not_a_crash(home, monkeypatch):
    import requests

    def not_found(url, output_file, pooch):
        raise requests.exceptions.HTTPError("404 Client Error: Not Found for url: " + url)

    _serve(monkeypatch, not_found)
    with pytest.raises(DatasetNotFoundError, match="404 Client Error"):
        load_uci("sonar")
    assert list(home.iterdir()) == []
