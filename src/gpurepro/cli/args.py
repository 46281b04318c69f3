"""Checked values for command-line flags: a bad value is a one-line usage error before anything
runs (no build step, no trial), never a schema failure after the trials or a traceback.

Standard library only (the run stage parses its flags on GPU nodes).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from ..errors import UsageError


def _number(text: str, kind: type) -> float | int:
    try:
        value = kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    value = int(_number(text, int))
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def nonneg_int(text: str) -> int:
    value = int(_number(text, int))
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive_float(text: str) -> float:
    value = float(_number(text, float))
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def alpha_value(text: str) -> float:
    value = float(_number(text, float))
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"is a probability: more than 0 and less than 1, got {text}")
    return value


def artifact_override(text: str) -> tuple[str, str]:
    """``NAME=PATH`` for --artifact: a prebuilt file to use instead of the built artifact NAME."""
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=PATH (e.g. tile_cubin=build/x.cubin), got {text!r}")
    return name.strip(), path.strip()


def checked_artifact_file(name: str, given: str, root: Path) -> Path:
    """A substitute artifact file, relative to the repository.

    Like the build folder, it is recorded relative to the repository (a copied tree finds it,
    and no machine path reaches a result document), so a file elsewhere is refused.
    """
    path = Path(given)
    absolute = (path if path.is_absolute() else root / path).resolve()
    if not absolute.is_relative_to(root.resolve()):
        raise UsageError(f"--artifact {name}={given}: must be inside the repository ({root.name}/); "
                         f"artifact paths are recorded relative to it")
    if not absolute.is_file():
        raise UsageError(f"--artifact {name}={given}: no such file")
    return absolute.relative_to(root.resolve())


def checked_build_dir(given: str | Path, root: Path) -> Path:
    """The build folder, relative to the repository.

    Artifact paths are recorded relative to the repository so that a copied tree (a GPU node)
    finds them and no machine path reaches a result document; a build folder elsewhere could
    not be recorded, so it is refused before anything is built or run.
    """
    path = Path(given)
    absolute = (path if path.is_absolute() else root / path).resolve()
    if not absolute.is_relative_to(root.resolve()):
        raise UsageError(f"--build-dir {given}: must be inside the repository ({root.name}/); "
                         f"artifact paths are recorded relative to it")
    if absolute.exists() and not absolute.is_dir():
        raise UsageError(f"--build-dir {given}: exists and is not a folder")
    return absolute.relative_to(root.resolve())
