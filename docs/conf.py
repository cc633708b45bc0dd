"""Sphinx configuration of the sdpembed documentation.

Build (from the repository root, with the ``docs`` extra installed)::

    python -m sphinx -W -b html docs docs/_build/html

Math is rendered by MathJax 3 served from the site itself (the build machines
and many readers have no internet): the files come from the PyPI package
``sphinx-mathjax-offline`` and are copied into ``_static/mathjax``; no page
loads anything from a CDN.  The gallery (``examples/``) is executed by
sphinx-gallery on every build.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import sdpembed  # noqa: E402

project = "sdpembed"
author = "sdpembed developers"
copyright = "sdpembed developers"  # noqa: A001
release = sdpembed.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "sdpembed_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/README.rst", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.md5",
                    "auto_examples/*.codeobj.json", "sg_execution_times.rst",
                    "auto_examples/sg_execution_times.rst"]

# --------------------------------------------------------------------------- the pages
# docs/reproductions.md is written by ``python -m problems.reproduce``; without it the
# site shows a placeholder that says how to make it.
if (DOCS / "reproductions.md").exists():
    exclude_patterns.append("reproductions_placeholder.md")
else:
    exclude_patterns.append("reproductions.md")

# --------------------------------------------------------------------------- math, offline
_mathjax = importlib.util.find_spec("sphinx-mathjax-offline")
if _mathjax is None or _mathjax.origin is None:
    raise RuntimeError("the documentation renders math with the MathJax files of the package "
                       "sphinx-mathjax-offline: pip install -e '.[docs]'")
MATHJAX_STATIC = Path(_mathjax.origin).parent / "static"
mathjax_path = "mathjax/tex-chtml.js"
html_static_path = ["_static", str(MATHJAX_STATIC)]

# --------------------------------------------------------------------------- API reference
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
# the aliases of sdpembed/_typing.py by name, not expanded (NumPy's ArrayLike is a long union)
autodoc_type_aliases = {"ArrayLike": "ArrayLike", "MatrixLike": "MatrixLike",
                        "RandomStateLike": "RandomStateLike"}
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False
numpydoc_xref_param_type = False

# --------------------------------------------------------------------------- markdown
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# --------------------------------------------------------------------------- gallery
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    # dvu_digits.py is the ``sdpembed demo`` (all 1,797 digits, documented in the guide)
    "ignore_pattern": r"__init__\.py|/_|dvu_digits\.py",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    # every build runs every example, also when its source is unchanged: the outputs
    # show the current library, and a change that breaks an example fails the build
    "run_stale_examples": True,
    "show_memory": False,
    "min_reported_time": 0,
    # no sg_execution_times pages: sphinx-gallery's table loads jQuery, DataTables and
    # Bootstrap from CDNs; each example's page still states its own running time
    "write_computation_times": False,
    "matplotlib_animations": False,
    "reset_modules": ("matplotlib",),
    "capture_repr": (),
}

# --------------------------------------------------------------------------- HTML
html_theme = "pydata_sphinx_theme"
html_title = f"sdpembed {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "icon_links": [],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
    "secondary_sidebar_items": ["page-toc"],
}
html_css_files = ["sdpembed.css"]
# pages of wide tables and no sub-pages: no left sidebar (it would hold an empty
# "Section Navigation"), so that the tables get its width
html_sidebars = {"reproductions": [], "tuning": []}
html_show_sourcelink = False
html_last_updated_fmt = None
# pydata-sphinx-theme would fetch nothing at build time; keep it that way
html_theme_options["check_switcher"] = False
