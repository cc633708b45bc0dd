"""DVU on scikit-learn's bundled digits: embed labelled and unlabelled digits together.

Run ``python examples/dvu_digits.py`` (the same as ``sdpembed demo``). All
1,797 digits, a fifth of the labels hidden; DVU learns a kernel by an SDP,
solved and certified by the ``LOWRANK`` backend, and the hidden labels are
predicted by 3-NN and a linear SVM on its top 10 components, compared with
the same classifiers on raw pixels. The code lives in :mod:`sdpembed.demo`
so that the installed package can run it; ``run`` takes its keyword
arguments (``n_samples=`` for a quicker subset, ``solver=``, ``plot=``).
"""

from __future__ import annotations

from sdpembed.demo import run

__all__ = ["run"]

if __name__ == "__main__":
    run(quiet=False, plot="dvu_digits.png")
