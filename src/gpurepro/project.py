"""The project's one address, and how a user installs gpurepro from it.

``pyproject.toml``'s ``[project.urls] Repository`` is the address every other place uses: the
README's links, mkdocs.yml's ``repo_url``, the schemas' ``$id``s (``schema_id``), the issue
comment's clone line and the install hints (tests/project/test_address.py holds them to it). It is
read from the checkout's ``pyproject.toml`` where gpurepro is imported from a checkout, else
from the installed package's metadata (``Project-URL``); ``GPUREPRO_REPOSITORY_URL`` replaces
it (a fork's address). A host under ``.invalid`` (RFC 2606) is a placeholder and never printed.

There is no gpurepro package on PyPI: outside a checkout the install hint is a direct
reference to the repository (``gpurepro[analysis] @ git+URL``), inside one ``.[analysis]``.
Standard library only: the run stage names these too.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from urllib.parse import urlparse

from .case.load import find_repo_root

# What other modules use; the rest is this module's own.
__all__ = [
    "configured_url", "install_command", "install_requirement", "repository_url", "schema_id",
    "URL_VARIABLE"
]

URL_VARIABLE = "GPUREPRO_REPOSITORY_URL"
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"  # in a checkout


def _checkout_url() -> str | None:
    """``[project.urls] Repository`` of the checkout gpurepro is imported from, if it is one."""
    try:
        project = tomllib.loads(PYPROJECT.read_text()).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    if project.get("name") != "gpurepro":
        return None
    url = (project.get("urls") or {}).get("Repository")
    return str(url) if url else None


def _installed_url() -> str | None:
    """The Repository URL the installed package was built with."""
    try:
        entries = metadata.metadata("gpurepro").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    for entry in entries:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "repository":
            return str(url).strip()
    return None


def configured_url() -> str | None:
    """The project's address as configured: the checkout's pyproject.toml, else the installed
    package's metadata (an editable install's metadata may be older than its checkout)."""
    return _checkout_url() or _installed_url()


def repository_url(environ: Mapping[str, str] | None = None) -> str | None:
    """The URL a user clones gpurepro from (``GPUREPRO_REPOSITORY_URL``, else the configured
    address), or None while only a placeholder is known."""
    environ = os.environ if environ is None else environ
    url = (environ.get(URL_VARIABLE) or "").strip() or configured_url()
    if not url:
        return None
    host = urlparse(url).hostname or ""
    if host == "invalid" or host.endswith(".invalid"):
        return None
    return url.rstrip("/")


def schema_id(name: str, url: str) -> str:
    """The ``$id`` of schema ``name`` (``result``, ``bisect``, ...): the file on the default
    branch of the repository at ``url``."""
    return f"{url.rstrip('/')}/blob/main/schema/{name}.schema.json"


def install_requirement(extra: str | None = "analysis",
                        environ: Mapping[str, str] | None = None) -> str:
    """What pip installs gpurepro from outside a checkout: the repository itself (PEP 508
    direct reference), with ``extra``."""
    name = f"gpurepro[{extra}]" if extra else "gpurepro"
    url = repository_url(environ)
    return f"{name} @ git+{url}" if url else f"{name} from a clone of gpurepro"


def install_command(cwd: Path | None = None, extra: str = "analysis") -> str:
    """How to install gpurepro with ``extra``: from the checkout when the command runs inside
    one (the package is installed from there), from the repository's address otherwise."""
    root = find_repo_root((cwd or Path.cwd()).resolve())
    if root is not None and (root / "pyproject.toml").is_file():
        return f"pip install '.[{extra}]'"
    url = repository_url()
    if url is None:
        return f"pip install '.[{extra}]' in a clone of gpurepro"
    return f"pip install '{install_requirement(extra)}'"
