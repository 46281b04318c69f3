"""The built documentation site in a real headless browser: every page of it loads, every image
on it renders, and every internal link resolves (Chromium through Selenium; tests/browser.py
installs Debian's chromium and chromium-driver where it can)."""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

from tests import browser
from tests.conftest import ROOT


def _nox() -> str | None:
    given = os.environ.get("GPUREPRO_NOX")
    if given and Path(given).is_file():
        return given
    local = ROOT / ".venv" / "bin" / "nox"
    return str(local) if local.is_file() else shutil.which("nox")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The site, built as `make docs` builds it, served over HTTP on localhost."""
    why = browser.install()
    if why:
        pytest.skip(f"no headless Chromium: {why}")
    nox = _nox()
    if nox is None:
        pytest.skip("no nox to build the site with (make docs installs it)")
    site = tmp_path_factory.mktemp("site")
    done = subprocess.run([nox, "-s", "docs", "--", "--site-dir", str(site)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = _Server(("127.0.0.1", 0), _quiet(handler))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    thread.join()


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # The browser drops a connection it no longer needs (a page left mid-load): not the
        # site's fault, and no traceback; anything else is printed as the server would.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


def _quiet(handler):
    class Quiet(handler.func):
        def log_message(self, *args):  # the test says what failed, not every request
            pass
    return functools.partial(Quiet, *handler.args, **handler.keywords)


@pytest.fixture(scope="module")
def chromium():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = browser.browser()
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    # The driver Debian installs, named: Selenium Manager would otherwise try to download one.
    driver = webdriver.Chrome(service=Service(executable_path=browser.driver()), options=options)
    yield driver
    driver.quit()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


IMAGES = """return Array.from(document.images).map(i => [i.currentSrc || i.src, i.complete,
  i.naturalWidth]);"""
LINKS = "return Array.from(document.querySelectorAll('a[href]')).map(a => a.href);"


@pytest.mark.slow
def test_every_page_loads_every_image_renders_every_internal_link_resolves(served, chromium):
    seen, queue, pages, images, broken, unrendered = set(), [served], 0, 0, [], []
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        status = _status(url)
        if status != 200:
            broken.append((url, status))
            continue
        if not urlparse(url).path.endswith(("/", ".html")):
            continue  # a document, a journal, a picture: it resolved, there is nothing to open
        chromium.get(url)
        assert chromium.execute_script("return document.readyState") == "complete", url
        assert chromium.title, url
        pages += 1
        for src, complete, width in chromium.execute_script(IMAGES):
            images += 1
            if not complete or not width:
                unrendered.append((url, src))
        for href in chromium.execute_script(LINKS):
            target, _ = urldefrag(urljoin(url, href))
            if target.startswith(served) and target not in seen:
                queue.append(target)
    assert broken == [] and unrendered == []
    # Every results page was reached: a page per committed result document, at least.
    results = [p for p in (ROOT / "results").glob("*/*.md") if p.name != "README.md"]
    assert pages >= len(results) + 10, pages
    # And their plots: at least a forest plot per result document was opened and drawn.
    assert images >= len(list((ROOT / "results").glob("*/*.forest.png"))), images
    print(f"{pages} pages, {images} images, {len(seen)} internal addresses")


if __name__ == "__main__":  # python tests/project/test_docs_site.py: the same as pytest -m slow on it
    sys.exit(pytest.main(["-m", "slow", "-q", __file__]))
