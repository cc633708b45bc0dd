"""The documentation site: built with warnings as errors, rendered in headless Chromium.

Slow (the build executes the gallery). Needs the ``docs`` extra
(``pip install -e ".[docs]"``) and Debian's ``chromium`` and ``chromium-driver``;
without them the test is skipped and says which is missing. The same check by hand::

    python -m sphinx -W -b html docs docs/_build/html
    python docs/check_site.py docs/_build/html --screenshots docs/_build/screenshots
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def _check_site_module():
    spec = importlib.util.spec_from_file_location("_check_site", ROOT / "docs" / "check_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site built from this checkout with ``-W`` (warnings are errors)."""
    for package in ("sphinx", "pydata_sphinx_theme", "numpydoc", "myst_parser",
                    "sphinx_gallery", "selenium"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"{package} is not installed: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("docs")
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
         "-d", str(out / "doctrees"), str(ROOT / "docs"), str(out / "html")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return out / "html"


def test_pages_render_math_and_images(site, tmp_path):
    """Every page: math typeset, images loaded, nothing from another host; the pages known
    to hold math and images (home, an API page, a gallery page, the reproductions) do."""
    check = _check_site_module()
    try:
        check.find_chromium()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    problems, seen = check.check_site(site, tmp_path / "screenshots")
    assert not problems, "\n".join(problems)
    pages = check.site_pages(site)
    assert set(seen) == set(pages) and len(pages) > 50
    assert {page for page, _, _ in check.PAGES} <= set(seen)
    # sphinx-gallery's timing table (jQuery, DataTables, Bootstrap from CDNs) is not built
    assert not any("sg_execution_times" in page for page in pages)
    for page, math, _ in check.PAGES:
        assert seen[page]["nSized"] > 0 or not math, page
    shots = sorted((tmp_path / "screenshots").glob("*.png"))
    assert len(shots) == len(check.PAGES) and all(s.stat().st_size > 0 for s in shots)


def test_problems_are_detected(site, tmp_path):
    """The check fails on a page whose MathJax is missing and whose image is broken."""
    check = _check_site_module()
    try:
        check.find_chromium()
    except FileNotFoundError as error:
        pytest.skip(str(error))
    broken = tmp_path / "html"
    shutil.copytree(site, broken)
    shutil.rmtree(broken / "_static" / "mathjax")
    for image in (broken / "_images").glob("*.png"):
        image.write_bytes(b"not a png")
    problems, _ = check.check_site(broken)
    text = "\n".join(problems)
    assert "MathJax did not load" in text
    assert "raw TeX" in text
    assert "images not loaded" in text
