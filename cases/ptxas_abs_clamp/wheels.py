"""Releases of a PyPI package and one program out of a release's wheel: the harness's
(gpurepro.bisect.pypi), with the cache ``gpurepro bisect`` uses, ``build/wheels/`` (git-ignored;
kept out of ``build/ptxas_abs_clamp/``, which a GPU node carries).

Standard library and gpurepro only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gpurepro.bisect import pypi
from gpurepro.bisect.pypi import (  # noqa: F401 (this case's scripts import them from here)
    INDEX,
    Wheel,
    extract,
    in_range,
    machine_tag,
    on_pypi,
    pick_wheel,
    pypi_json,
    releases,
    sha256_file,
    version_key,
    wheel_version,
)

HERE = Path(__file__).resolve().parent
CACHE = HERE.parents[1] / "build" / "wheels"  # the harness's cache of release wheels


def fetch(package: str, version: str, cache: Path = CACHE, index: str = INDEX,
          files: list[dict[str, Any]] | None = None) -> Wheel:
    return pypi.fetch(package, version, cache, index, files)


def tool_from_release(package: str, version: str, binary: str, cache: Path = CACHE,
                      index: str = INDEX, files: list[dict[str, Any]] | None = None
                      ) -> tuple[Path, Wheel, str | None]:
    return pypi.tool_from_release(package, version, binary, cache, index, files)
