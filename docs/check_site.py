"""Render pages of the built site in headless Chromium and check the math and the images.

Usage (after ``python -m sphinx -W -b html docs docs/_build/html``)::

    python docs/check_site.py docs/_build/html --screenshots docs/_build/screenshots

The site is served on 127.0.0.1 (a random free port) and every HTML page of it
(:func:`site_pages`: all but the theme's files under ``_static``) is opened in headless
Chromium, in a 1,280 px wide window, driven by Selenium through Debian's
``chromedriver`` (packages ``chromium`` and ``chromium-driver``). A page fails when

* it has math and MathJax did not load from the site itself, or did not finish
  typesetting, or no rendered math element has a non-zero size;
* a math element still holds raw TeX (``\\(``, ``\\[``, ``$$``);
* MathJax reported an error (``mjx-merror``: an unknown macro, bad TeX);
* an image did not load (``naturalWidth == 0``);
* the page fetched anything from another host;
* a table of a summary section (``#summary``) is wider than the window.

The pages of :data:`PAGES` must moreover have math (and images) where it says so, so
that a page that lost them fails too. A screenshot of each page of :data:`PAGES` is
written when ``--screenshots`` is given. Exit status 0 when every page passes; the
problems are printed otherwise.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

#: (page, whether it must have math, whether it must have images): pages that are
#: known to hold them (every page is checked; these are also photographed)
PAGES = (
    ("index.html", True, False),
    ("api/sdpembed.formulations.dvu.html", True, False),
    ("auto_examples/plot_dvu_backends.html", True, True),
    ("reproductions.html", False, True),
)


def site_pages(html: Path) -> list[str]:
    """Every HTML page of the built site (relative paths, sorted), the theme's own files
    under ``_static`` aside."""
    html = Path(html)
    return sorted(p.relative_to(html).as_posix() for p in html.rglob("*.html")
                  if p.relative_to(html).parts[0] != "_static")

CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--window-size=1280,1800")

# Evaluated in the page once MathJax has finished: what the checks need, as JSON.
_INSPECT = r"""
const done = arguments[arguments.length - 1];
const report = () => {
  const math = Array.from(document.querySelectorAll('.math'));
  const containers = Array.from(document.querySelectorAll('mjx-container'));
  const sized = containers.filter(c => {
    const r = c.getBoundingClientRect(); return r.width > 0 && r.height > 0; });
  const raw = math.filter(m => /\\\(|\\\[|\$\$/.test(m.textContent)).map(
    m => m.textContent.slice(0, 80));
  const images = Array.from(document.images).map(i => ({
    src: i.getAttribute('src'), complete: i.complete, width: i.naturalWidth}));
  const resources = performance.getEntriesByType('resource').map(r => r.name);
  const wide = Array.from(document.querySelectorAll('section#summary table')).filter(
    t => t.getBoundingClientRect().right > window.innerWidth + 1
         || t.scrollWidth > t.parentElement.clientWidth + 1).length;
  done({
    mathjax: typeof window.MathJax === 'object' && !!window.MathJax.version,
    mathjaxVersion: window.MathJax && window.MathJax.version,
    nMath: math.length, nContainers: containers.length, nSized: sized.length,
    raw: raw, errors: document.querySelectorAll('mjx-merror').length,
    images: images, resources: resources, title: document.title, wideTables: wide,
  });
};
if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
  window.MathJax.startup.promise.then(report, e => done({error: String(e)}));
} else {
  report();
}
"""


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep the output to the problems
        pass


def serve(root: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    """Serve ``root`` on 127.0.0.1 in a daemon thread; returns the server and its URL."""
    handler = functools.partial(_QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def find_chromium() -> tuple[str, str]:
    """Paths of the Chromium binary and of chromedriver (Debian's packages)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if browser is None or driver is None:
        raise FileNotFoundError("headless Chromium is needed: apt-get install chromium "
                                "chromium-driver")
    return browser, driver


def problems_of(page: str, info: dict, base: str, *, math: bool, images: bool) -> list[str]:
    """What is wrong with one rendered page (empty when it passes)."""
    out = []
    if "error" in info:
        return [f"{page}: MathJax failed: {info['error']}"]
    if math or info["nMath"]:
        if not info["mathjax"]:
            out.append(f"{page}: MathJax did not load")
        if math and info["nMath"] == 0:
            out.append(f"{page}: no math element")
        if info["nSized"] == 0:
            out.append(f"{page}: no rendered math of non-zero size "
                       f"({info['nContainers']} MathJax containers)")
    if info["raw"]:
        out.append(f"{page}: {len(info['raw'])} math elements still hold raw TeX, e.g. "
                   f"{info['raw'][0]!r}")
    if info["errors"]:
        out.append(f"{page}: {info['errors']} MathJax errors (mjx-merror)")
    broken = [i["src"] for i in info["images"] if not i["complete"] or i["width"] == 0]
    if broken:
        out.append(f"{page}: images not loaded: {broken}")
    if images and not info["images"]:
        out.append(f"{page}: no image")
    foreign = [r for r in info["resources"] if not r.startswith(base)]
    if foreign:
        out.append(f"{page}: fetched from elsewhere: {foreign}")
    if info.get("wideTables"):
        out.append(f"{page}: {info['wideTables']} summary table(s) wider than the window")
    return out


def check_site(html: Path, screenshots: Path | None = None) -> tuple[list[str], dict]:
    """Open every page of the site; returns the problems and what each page held."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    html = Path(html)
    missing = [p for p, _, _ in PAGES if not (html / p).is_file()]
    if missing:
        return [f"not built: {html / p}" for p in missing], {}
    required = {p: (math, images) for p, math, images in PAGES}
    browser, driver_path = find_chromium()
    if screenshots is not None:
        screenshots.mkdir(parents=True, exist_ok=True)
    server, base = serve(html)
    profile = tempfile.mkdtemp(prefix="sdpembed-chromium-")
    options = Options()
    options.binary_location = browser
    for arg in CHROMIUM_ARGS:
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={profile}")
    os.environ.setdefault("SE_OFFLINE", "true")  # Selenium Manager: never download a driver
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    problems, seen = [], {}
    try:
        driver.set_script_timeout(60)
        driver.set_page_load_timeout(60)
        for page in site_pages(html):
            math, images = required.get(page, (False, False))
            driver.get(base + page)
            # inspect this page once it has loaded (never the previous one, half replaced)
            WebDriverWait(driver, 60).until(lambda d, url=base + page: d.current_url == url
                                            and d.execute_script("return document.readyState")
                                            == "complete")
            info = driver.execute_async_script(_INSPECT)
            seen[page] = info
            problems += problems_of(page, info, base, math=math, images=images)
            if screenshots is not None and page in required:
                height = driver.execute_script("return document.body.scrollHeight")
                driver.set_window_size(1280, min(max(int(height), 800), 6000))
                driver.save_screenshot(str(screenshots / (page.replace("/", "__") + ".png")))
                driver.set_window_size(1280, 1800)
    finally:
        driver.quit()
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)
    return problems, seen


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", type=Path, help="the built site (docs/_build/html)")
    parser.add_argument("--screenshots", type=Path, default=None, metavar="DIR")
    args = parser.parse_args(argv)
    problems, seen = check_site(args.html, args.screenshots)
    for page, info in seen.items():
        if info.get("nMath") or info.get("images"):
            print(f"{page}: MathJax {info.get('mathjaxVersion')}, {info.get('nMath')} math "
                  f"elements, {info.get('nSized')} rendered, {len(info.get('images', []))} images")
    print(f"{len(seen)} pages opened, {len(problems)} problems")
    for p in problems:
        print("FAILED:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
