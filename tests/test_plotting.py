"""Tests of sdpembed.plotting: artists drawn where the data say, PNGs written, no pyplot state."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import PathCollection, PolyCollection  # noqa: E402

from sdpembed.exceptions import InputError  # noqa: E402
from sdpembed.plotting import (  # noqa: E402
    class_colors,
    plot_accuracy_vs_dimension,
    plot_embedding,
    plot_label_prototypes,
    plot_spectrum,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _save(ax, path):
    ax.figure.savefig(path, dpi=60)
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000
    return data


@pytest.fixture
def embedding():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 20)
    E = rng.normal(size=(60, 3)) + 3.0 * np.eye(3)[y]
    mask = np.zeros(60, bool)
    mask[[0, 1, 20, 40, 41, 42]] = True
    return E, y, mask


def test_plot_embedding_2d_groups_and_hollow_markers(embedding, tmp_path):
    E, y, mask = embedding
    ax = plot_embedding(E, y, mask, class_names=["zero", "one", "two"])
    cols = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(cols) == 6  # (class 0, 1, 2) x (labeled, unlabeled)
    # Order: class 0 labeled, class 0 unlabeled, class 1 labeled, ...
    colors = class_colors(3)
    for k, c in enumerate(cols):
        cls, labeled = k // 2, k % 2 == 0
        rows = (y == cls) & (mask if labeled else ~mask)
        np.testing.assert_array_equal(c.get_offsets(), E[rows][:, :2])
        np.testing.assert_allclose(c.get_edgecolors()[0], [0, 0, 0, 1] if labeled
                                   else colors[cls])
        assert len(c.get_facecolors()) == (1 if labeled else 0)  # hollow: no face
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["zero", "one", "two", "unlabeled (hollow)"]
    _save(ax, tmp_path / "embedding.png")
    assert plt.get_fignums() == []  # never registered with pyplot


def test_plot_embedding_defaults_and_unknown_labels(embedding):
    E, y, _ = embedding
    y_partial = np.where(np.arange(60) % 4 == 0, y, -1)
    ax = plot_embedding(E, y_partial, components=(2, 0))
    cols = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(cols) == 4  # three labeled classes + grey unknown points
    np.testing.assert_array_equal(cols[-1].get_offsets(), E[y_partial == -1][:, [2, 0]])
    assert ax.get_xlabel() == "component 3"


def test_plot_embedding_3d(embedding, tmp_path):
    E, y, mask = embedding
    ax = plot_embedding(E, y, mask, dims=3, legend=False)
    assert ax.name == "3d" and ax.get_legend() is None
    assert len(ax.collections) == 6
    _save(ax, tmp_path / "embedding3d.png")
    with pytest.raises(InputError, match="3-D Axes"):
        plot_embedding(E, y, mask, dims=3, ax=plot_embedding(E, y))
    with pytest.raises(InputError, match="dims"):
        plot_embedding(E, y, dims=4)
    with pytest.raises(InputError, match="columns"):
        plot_embedding(E[:, :1], y)
    with pytest.raises(InputError, match="labeled_mask"):
        plot_embedding(E, y, mask.astype(int))


def test_plot_spectrum_gram_share_and_fraction_mark(tmp_path):
    lam = np.array([5.0, 3.0, 1.0, 0.5, 0.3, 0.2])
    ax = plot_spectrum(lam, mark=0.9, title="DVU")
    assert len(ax.patches) == 6
    np.testing.assert_array_equal([p.get_height() for p in ax.patches], lam)
    twin = ax.figure.axes[-1]
    assert twin is not ax
    np.testing.assert_allclose(twin.lines[0].get_ydata(), np.cumsum(lam) / lam.sum())
    # share after 3 components: 9/10 = 0.9 -> d = 3; the line sits between bars 3 and 4.
    vlines = [ln for ln in ax.lines if np.allclose(ln.get_xdata(), 3.5)]
    assert len(vlines) == 1
    assert any(t.get_text() == "d = 3 (90% of total)" for t in ax.texts)
    _save(ax, tmp_path / "spectrum.png")


def test_plot_spectrum_dne_negative_count():
    lam = np.array([-2.0, -1.0, -0.25, 0.5, 1.5])
    ax = plot_spectrum(lam, mark="negative")
    twin = ax.figure.axes[-1]
    curve = twin.lines[0].get_ydata()
    np.testing.assert_allclose(curve, np.cumsum(lam))
    assert int(np.argmin(curve)) + 1 == 3  # the cumulative sum bottoms out at d = 3
    assert any(np.allclose(ln.get_xdata(), 3.5) for ln in ax.lines)
    assert len(plot_spectrum(lam, cumulative=False).figure.axes) == 1
    with pytest.raises(InputError, match="non-negative"):
        plot_spectrum(lam, mark=0.5)
    with pytest.raises(InputError, match="finite"):
        plot_spectrum([1.0, np.nan])
    with pytest.raises(InputError, match="mark"):
        plot_spectrum(lam, mark="all")


def test_plot_label_prototypes(tmp_path):
    G = np.array([[1.0, 0.0, 5.0], [0.0, 1.0, 5.0], [-1.0, -1.0, 5.0]])
    ax = plot_label_prototypes(G, class_names=["a", "b", "c"], components=(0, 1))
    assert len(ax.collections) == 3
    for k, c in enumerate(ax.collections):
        np.testing.assert_array_equal(c.get_offsets(), G[k:k + 1, :2])
    assert [t.get_text() for t in ax.texts] == ["a", "b", "c"]
    _save(ax, tmp_path / "prototypes.png")
    ax1 = plot_label_prototypes(G[:, :1])  # 1-D prototypes on a line
    np.testing.assert_array_equal(ax1.collections[1].get_offsets(), [[0.0, 0.0]])
    with pytest.raises(InputError, match="components"):
        plot_label_prototypes(G, components=(0, 3))


def test_plot_accuracy_vs_dimension_lines_bands_legend(tmp_path):
    dims = np.array([10, 2, 5])
    reps = np.array([[0.9, 0.8], [0.5, 0.7], [0.75, 0.65]])
    ax = plot_accuracy_vs_dimension(dims, reps, label="DVU")
    ax = plot_accuracy_vs_dimension(dims, [0.6, 0.4, 0.5], ax=ax, label="PCA")
    assert len(ax.lines) == 2
    np.testing.assert_array_equal(ax.lines[0].get_xdata(), [2, 5, 10])
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [0.6, 0.7, 0.85])  # sorted by dim
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(bands) == 1  # only the repeated line has a spread
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["DVU", "PCA"]
    _save(ax, tmp_path / "accuracy.png")
    with pytest.raises(InputError, match="acc must be"):
        plot_accuracy_vs_dimension(dims, [0.1, 0.2])
    with pytest.raises(InputError, match="std must"):
        plot_accuracy_vs_dimension(dims, [0.1, 0.2, 0.3], std=[0.1])
