"""A toolchain axis: what a bisection over one package's releases varies (``Case.axes``); or
a runtime axis (``RuntimeAxis``): the releases of a runtime package the trials import.

Plain data a manifest declares; ``gpurepro.sweep`` does the work. The releases are never typed
in: they are every final release PyPI lists for ``package`` within ``versions``, found when the
bisection runs. For each release the program ``tool`` is taken out of its wheel (``bin/<tool>``)
and ``build`` runs with ``{tool}`` naming it; the file it writes, ``{out}/<output>``, stands in
for the manifest's artifact ``artifact`` in the trials of ``arms`` on the GPU
(``--artifact artifact=PATH``). Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ManifestError
from .model import Family, Releases

# What other modules use; the rest is this module's own.
__all__ = ["Axis", "check_axes", "check_family", "check_runtime_axis", "RUNTIME_SUBSTITUTE",
           "RuntimeAxis"]

# Placeholders of an axis's build command beyond an artifact's (case/model.py Artifact).
AXIS_PLACEHOLDERS = ("tool",)
_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_PACKAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*\d+(?:\.\d+)*\s*$")


@dataclass(frozen=True)
class Axis:
    """One package's releases, and what each of them builds.

    - ``package``, ``versions``: the PyPI package and a range (``>=12.0,<13``: clauses, all of
      which must hold; empty: every final release). Pre-releases and dev releases are left
      out. ``families``: instead, several packages in release order (``Family``), each with
      its range: an axis across ``nvidia-cuda-nvcc-cu12`` and ``nvidia-cuda-nvcc``.
    - ``tool``: the program each release's wheel holds under ``bin/``.
    - ``build``: an argv template with ``{tool}`` (that program) and an artifact command's
      placeholders (``{python}``, ``{case}``, ``{arch}``, ``{out}``, ``{artifact:NAME}`` of the
      case's own build, the case's tools such as ``{nvdisasm}``); it writes ``output`` in
      ``{out}``. A release whose build fails (a status, a signal, a timeout) is recorded with
      why, and left out of the GPU stage.
    - ``artifact``: the manifest artifact the output replaces on the GPU, in the trials of
      ``arms``; ``trials`` per arm and artifact (``jobs`` at a time), ``duration_s`` and
      ``timeout_s`` per trial.
    - ``watch``: ``(kernel, pattern)`` pairs each distinct artifact's SASS is read for (the
      harness's disassembler finder and parser, gpurepro.building.sass.watched): an opcode's
      presence (``IABS``), an instruction with its operands and immediates, ``*`` and ``?``
      as wildcards (``VIMNMX.RELU *, *, 0x5, PT``), or with ``#`` in front the number of
      instructions that match (``#VIMNMX``); the GPU stage runs both sides of every change in
      them and the ends, then bisects between runs that differ. Empty: every kernel's opcode
      sequence is watched. Beyond the SASS: ``res:REG`` (``res:STACK``, ``res:LOCAL``,
      ``res:SHARED``, ...) a kernel's resource usage as ``cuobjdump -res-usage`` prints it, and
      ``("*", "msg:C7517")`` whether the build's output carried that ptxas message.
    - ``reference``, ``slower``, ``same``: a timed axis (the arms' trials measure times,
      gpurepro.analyze.timing). Every run on the GPU times ``reference`` beside the point's arm,
      with the case's own artifact, and the point's class comes from a claim on the ratio of
      their trial times: ``fails`` when the point is decided slower by at least ``slower``
      (or a trial's output was wrong), ``passes`` when it is decided within ``same`` of it,
      ``unknown`` when neither is decided; each at ``alpha`` split over the axis's points.
    """

    package: str
    versions: str
    tool: str
    build: tuple[str, ...]
    output: str
    artifact: str
    arms: tuple[str, ...]
    watch: tuple[tuple[str, str], ...] = ()
    families: tuple[Family, ...] = ()
    trials: int = 3
    jobs: int = 1
    duration_s: float = 5.0
    timeout_s: float = 30.0
    description: str = ""
    reference: str = ""
    slower: float = 0.0
    same: float = 0.0
    alpha: float = 0.05

    @property
    def timed(self) -> bool:
        return bool(self.reference)

    def releases(self) -> Releases:
        """The packages the axis lists releases of, in release order."""
        return Releases(self.tool, self.families or (Family(self.package, self.versions),))

    def placeholders(self) -> set[str]:
        return {m.group(1) for part in self.build for m in re.finditer(r"\{([a-z_]+(?::[A-Za-z0-9_.-]+)?)\}", part)}

    def dependencies(self) -> list[str]:
        return sorted(p.split(":", 1)[1] for p in self.placeholders() if p.startswith("artifact:"))

    def describe(self) -> dict[str, Any]:
        return {"package": self.package, "versions": self.versions, "tool": self.tool,
                "build": list(self.build), "output": self.output, "artifact": self.artifact,
                "arms": list(self.arms), "watch": [list(w) for w in self.watch],
                "trials": self.trials, "jobs": self.jobs, "duration_s": self.duration_s,
                "timeout_s": self.timeout_s, "description": self.description,
                **({"families": [{"package": f.package, "versions": f.versions}
                                 for f in self.families]} if self.families else {}),
                **({"timed": {"reference": self.reference, "slower": self.slower,
                              "same": self.same, "alpha": self.alpha}} if self.timed else {})}


# What a runtime axis's point stands in for in a sweep's runs: the arms' runtime index
# (``gpurepro run --runtime-index``), not an artifact; no artifact name has parentheses.
RUNTIME_SUBSTITUTE = "(runtime)"


@dataclass(frozen=True)
class RuntimeAxis:
    """The releases of a runtime package as a bisection's points: ``factor`` names a factor of
    ``Runtime.releases`` (its levels are releases of that package), and each release pip lists
    inside ``versions`` (``>=0.60,<=0.62.1``: between a good and a bad release; empty: every
    final release), or each of ``releases`` where the manifest gives a list, is one point.

    The CPU stage resolves each release as a level of the factor is resolved (its wheel's
    dependencies pinned inside their declared ranges, gpurepro.building.runtime_releases) and
    downloads its wheels for the Python that runs the trials; the GPU stage runs ``arms``
    (arms whose level of ``factor`` is a release) with the point's release in place of that
    level; ``trials``, ``jobs``, ``duration_s`` and ``timeout_s`` as a toolchain axis's.
    """

    factor: str
    arms: tuple[str, ...]
    versions: str = ""
    releases: tuple[str, ...] = ()
    trials: int = 3
    jobs: int = 1
    duration_s: float = 5.0
    timeout_s: float = 30.0
    description: str = ""

    # A runtime axis is decided on outcomes, and nothing it builds has SASS to watch.
    timed = False
    watch: tuple[tuple[str, str], ...] = ()

    def describe(self) -> dict[str, Any]:
        return {"versions": self.versions, "artifact": RUNTIME_SUBSTITUTE,
                "arms": list(self.arms), "watch": [], "trials": self.trials, "jobs": self.jobs,
                "duration_s": self.duration_s, "timeout_s": self.timeout_s,
                "description": self.description,
                "runtime": {"factor": self.factor, **({"releases": list(self.releases)}
                                                      if self.releases else {})}}


def check_runtime_axis(name: str, ax: RuntimeAxis, releases: Mapping[str, str],
                       arm_levels: Mapping[str, Mapping[str, Any]], path: Path | str) -> None:
    """The mistakes a runtime axis can hold, as ManifestError naming the field: ``releases``
    is the manifest's ``Runtime.releases``, ``arm_levels`` every arm's levels."""
    where = f"axes.{name}"
    if not _NAME.match(str(name)):
        raise ManifestError(path, where, f"{name!r} is not a lower-case name")
    if ax.factor not in releases:
        known = ", ".join(releases) or "none"
        raise ManifestError(path, f"{where}.factor", f"{ax.factor!r} is not a factor of "
                            f"Runtime.releases (its factors: {known})")
    if not ax.arms or any(a not in arm_levels for a in ax.arms):
        raise ManifestError(path, f"{where}.arms", f"{list(ax.arms)!r}: arms of the case expected")
    for arm in ax.arms:
        level = str(arm_levels[arm].get(ax.factor))
        if not re.match(r"^\d+(\.\d+)*", level):
            raise ManifestError(path, f"{where}.arms", f"arm {arm}'s level of {ax.factor} is "
                                f"{level!r}, no release: the axis replaces a release level")
    if ax.versions:
        check_family(Family(releases[ax.factor], ax.versions), where, path)
    if ax.versions and ax.releases:
        raise ManifestError(path, f"{where}.releases", "give versions (a range) or releases (a "
                            "list), not both")
    if not (isinstance(ax.trials, int) and ax.trials >= 1):
        raise ManifestError(path, f"{where}.trials", f"must be at least 1, got {ax.trials!r}")
    if not (isinstance(ax.jobs, int) and ax.jobs >= 1):
        raise ManifestError(path, f"{where}.jobs", f"must be at least 1, got {ax.jobs!r}")
    if not (0 < ax.duration_s < ax.timeout_s):
        raise ManifestError(path, f"{where}.timeout_s",
                            f"must exceed duration_s ({ax.duration_s!r}), got {ax.timeout_s!r}")


def check_family(fam: Any, where: str, path: Path | str) -> None:
    """One ``Family``: a package name and a readable range."""
    if not isinstance(fam, Family):
        raise ManifestError(path, where, "must be a gpurepro.case.Family")
    if not _PACKAGE.match(fam.package):
        raise ManifestError(path, f"{where}.package", f"{fam.package!r} is not a package name")
    for clause in filter(None, (c.strip() for c in fam.versions.split(","))):
        if not _CLAUSE.match(clause):
            raise ManifestError(path, f"{where}.versions",
                                f"cannot read {clause!r} (use >=, <=, ==, !=, >, < and a version)")


def check_axes(axes: Any, artifacts: set[str], arms: set[str], path: Path | str) -> None:
    """The mistakes a manifest's ``axes`` can hold, as ManifestError naming the field."""
    if not isinstance(axes, dict):
        raise ManifestError(path, "axes", "must be a dict of name -> gpurepro.case.Axis or RuntimeAxis")
    for name, ax in axes.items():
        where = f"axes.{name}"
        if isinstance(ax, RuntimeAxis):
            continue  # check_runtime_axis: it needs the case's runtime and its arms' levels
        if not isinstance(ax, Axis):
            raise ManifestError(path, where, "must be a gpurepro.case.Axis or RuntimeAxis")
        if not _NAME.match(str(name)):
            raise ManifestError(path, where, f"{name!r} is not a lower-case name")
        if ax.families:
            for i, fam in enumerate(ax.families):
                check_family(fam, f"{where}.families[{i}]", path)
        else:
            check_family(Family(ax.package, ax.versions), where, path)
        if not ax.tool or "/" in ax.tool:
            raise ManifestError(path, f"{where}.tool", f"{ax.tool!r} is not a program name")
        if "tool" not in ax.placeholders():
            raise ManifestError(path, f"{where}.build", "never names {tool}, the release's program")
        if not ax.output or "/" in ax.output:
            raise ManifestError(path, f"{where}.output", f"{ax.output!r} is not a file name")
        if ax.artifact not in artifacts:
            raise ManifestError(path, f"{where}.artifact", f"{ax.artifact!r} is not an artifact")
        for dep in ax.dependencies():
            if dep not in artifacts:
                raise ManifestError(path, f"{where}.build", f"refers to unknown artifact {dep!r}")
        if not ax.arms or any(a not in arms for a in ax.arms):
            raise ManifestError(path, f"{where}.arms", f"{list(ax.arms)!r}: arms of the case expected")
        if any(not (isinstance(w, tuple) and len(w) == 2 and all(isinstance(x, str) and x for x in w))
               for w in ax.watch):
            raise ManifestError(path, f"{where}.watch", "expected (kernel, opcode) pairs")
        if ax.timed:
            if ax.reference not in arms or ax.reference in ax.arms:
                raise ManifestError(path, f"{where}.reference",
                                    f"{ax.reference!r}: an arm of the case, not one of the axis's arms")
            if not (0 < ax.same < ax.slower < 1):
                raise ManifestError(path, f"{where}.slower",
                                    f"a timed axis needs 0 < same < slower < 1 (fractions), got "
                                    f"same={ax.same!r}, slower={ax.slower!r}")
            if not (0 < ax.alpha < 1):
                raise ManifestError(path, f"{where}.alpha", f"must be in (0, 1), got {ax.alpha!r}")
            if ax.trials < 2:
                raise ManifestError(path, f"{where}.trials", "a timed axis needs 2 trials per arm")
        if not (isinstance(ax.trials, int) and ax.trials >= 1):
            raise ManifestError(path, f"{where}.trials", f"must be at least 1, got {ax.trials!r}")
        if not (isinstance(ax.jobs, int) and ax.jobs >= 1):
            raise ManifestError(path, f"{where}.jobs", f"must be at least 1, got {ax.jobs!r}")
        if not (0 < ax.duration_s < ax.timeout_s):
            raise ManifestError(path, f"{where}.timeout_s",
                                f"must exceed duration_s ({ax.duration_s!r}), got {ax.timeout_s!r}")
