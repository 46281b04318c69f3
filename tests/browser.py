"""A headless Chromium for the documentation site's browser test (tests/project/test_docs_site.py).

Debian's `chromium` and `chromium-driver` are installed with apt-get when they are missing and
this is root (CI runs as root; the browser builds that Selenium Manager or Playwright download
come from hosts CI does not reach). `python tests/browser.py available` installs them where it
can and says in one line whether a browser can run, exit 0 or 1.
"""

from __future__ import annotations

import shutil
import sys

if __package__:
    from . import apt
else:  # run as a script: apt.py beside this file
    import apt  # type: ignore[no-redef]

PACKAGES = ("chromium", "chromium-driver")
# Debian names the browser chromium; other distributions chromium-browser.
BROWSERS = ("chromium", "chromium-browser")


def browser() -> str | None:
    return next((p for p in map(shutil.which, BROWSERS) if p), None)


def driver() -> str | None:
    return shutil.which("chromedriver") or shutil.which("chromedriver", path="/usr/lib/chromium")


def missing() -> list[str]:
    return [name for name, found in (("chromium", browser()), ("chromedriver", driver()))
            if found is None]


def install() -> str | None:
    """Install the packages when they are missing; None on success, else why not."""
    return apt.install(PACKAGES, missing)


def main(argv: list[str]) -> int:
    if argv[1:] != ["available"]:
        print("usage: python tests/browser.py available", file=sys.stderr)
        return 2
    why = install()
    if why:
        print(f"no headless Chromium here: {why}", flush=True)
        return 1
    print(f"headless Chromium: {browser()} with {driver()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
