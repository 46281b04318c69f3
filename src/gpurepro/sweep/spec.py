"""A case's toolchain matrix (``cases/<case>/matrix.py``) as typed data, checked on loading.

Standard library only: each cell reads it in its own toolchain environment.
"""

from __future__ import annotations

import runpy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..case.load import find_case
from ..errors import ManifestError

# What other modules use; the rest is this module's own.
__all__ = ["build_root", "Cell", "load", "Spec", "Variant"]

SPEC_FILE = "matrix.py"


@dataclass(frozen=True)
class Variant:
    """One way of exporting the kernel: a script beside the case's own, for some releases."""

    name: str
    script: str
    description: str
    releases: tuple[str, ...] | None  # None: every release

    def applies_to(self, release: str) -> bool:
        return self.releases is None or release in self.releases


@dataclass(frozen=True)
class Cell:
    release: str  # of the front-end (cuda-tile)
    family: str  # of the back-end (tileiras and the CUDA wheels pinned with it)
    pins: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.release}-{self.family}"


@dataclass(frozen=True)
class Spec:
    case: str
    path: Path
    target: str
    releases: tuple[str, ...]
    families: dict[str, tuple[str, ...]]
    tile_artifact: str
    control_artifact: str
    control_arm: str
    variants: tuple[Variant, ...]
    arms: tuple[str, ...]
    trials: int
    duration_s: float
    trial_timeout_s: float
    jobs: int
    _pins: Any  # the spec's own pins(release, family)

    def cells(self) -> list[Cell]:
        """Every cell, oldest release first, then oldest family."""
        return [Cell(r, f, tuple(self._pins(r, f))) for r in self.releases for f in self.families]

    def cell(self, release: str, family: str) -> Cell:
        if release not in self.releases:
            raise ManifestError(self.path, "CUDA_TILE", f"no release {release!r} in the matrix")
        if family not in self.families:
            raise ManifestError(self.path, "FAMILIES", f"no family {family!r} in the matrix")
        return Cell(release, family, tuple(self._pins(release, family)))

    def newest(self) -> Cell:
        return self.cell(self.releases[-1], list(self.families)[-1])

    def rank(self, cell_id: str) -> int:
        """Position of a cell, newest highest (for running the newest first)."""
        ids = [c.id for c in self.cells()]
        return ids.index(cell_id) if cell_id in ids else -1


def _field(ns: dict[str, Any], path: Path, name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in ns:
        raise ManifestError(path, name, "missing")
    value = ns[name]
    if not isinstance(value, kind):
        raise ManifestError(path, name, f"expected {kind}, found {type(value).__name__}")
    return value


def load(case: str | Path, root: Path | None = None) -> Spec:
    """The matrix of ``case`` (a case name or its folder / manifest path)."""
    manifest = find_case(case, root)
    path = manifest.parent / SPEC_FILE
    if not path.is_file():
        raise ManifestError(path, "file", f"case {manifest.parent.name} has no toolchain matrix")
    try:
        ns = runpy.run_path(str(path))
    except Exception as exc:  # any error in the case's file: named, one line
        raise ManifestError(path, "(import)", f"{type(exc).__name__}: {exc}") from None
    variants = []
    for i, v in enumerate(_field(ns, path, "VARIANTS", tuple)):
        if not isinstance(v, dict) or not {"name", "script", "description"} <= set(v):
            raise ManifestError(path, f"VARIANTS[{i}]", "expected a dict with name, script, description")
        if not (manifest.parent / str(v["script"])).is_file():
            raise ManifestError(path, f"VARIANTS[{i}].script", f"no file {v['script']} in the case folder")
        releases = v.get("releases")
        variants.append(Variant(str(v["name"]), str(v["script"]), str(v["description"]),
                                tuple(releases) if releases is not None else None))
    families = {str(k): tuple(v) for k, v in _field(ns, path, "FAMILIES", dict).items()}
    return Spec(
        case=manifest.parent.name, path=path,
        target=_field(ns, path, "TARGET", str),
        releases=tuple(_field(ns, path, "CUDA_TILE", tuple)),
        families=families,
        tile_artifact=_field(ns, path, "TILE_ARTIFACT", str),
        control_artifact=_field(ns, path, "CONTROL_ARTIFACT", str),
        control_arm=_field(ns, path, "CONTROL_ARM", str),
        variants=tuple(variants),
        arms=tuple(_field(ns, path, "ARMS", tuple)),
        trials=_field(ns, path, "TRIALS", int),
        duration_s=float(_field(ns, path, "DURATION_S", (int, float))),
        trial_timeout_s=float(_field(ns, path, "TRIAL_TIMEOUT_S", (int, float))),
        jobs=_field(ns, path, "JOBS", int),
        _pins=_field(ns, path, "pins", type(load)),
    )


def build_root(spec: Spec) -> Path:
    """Where the matrix's cells build, relative to the repository: inside build/, like any
    build, so a GPU node gets the cubins with the rest of the prebuilt tree."""
    return Path("build") / "matrix" / spec.case / spec.target
