"""Case manifests: the plain data a case declares, and their validation.

A case is a folder ``cases/<name>/`` whose ``manifest.py`` defines ``CASE = Case(...)``.
Everything the harness does with a case (pins to install, artifacts to build, arms to run,
how a trial is launched, how the verdict follows from the statistics) is read from it, so a
new case is a new folder and the harness does not change.

This module imports nothing outside the standard library: the run stage loads manifests on
GPU nodes that have no network and no third-party packages.
"""

from __future__ import annotations

import importlib.util
import math
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ManifestError

if TYPE_CHECKING:
    from ..analyze.views import Analysis

# {name} or {artifact:NAME} in an artifact command template.
PLACEHOLDER = re.compile(r"\{([a-z_]+(?::[A-Za-z0-9_.-]+)?)\}")

OUTCOMES = ("survived", "crashed", "cuda_error", "wrong_result", "hung", "invalid", "unsupported",
            "harness_error")


@dataclass(frozen=True)
class Artifact:
    """One build output.

    ``command`` is an argv template. Placeholders: ``{python}`` (the toolchain's interpreter),
    ``{nvcc}``, ``{tileiras}``, ``{gxx}``, ``{case}`` (case folder), ``{native}`` (the shared
    ``native/`` folder), ``{out}`` (this artifact's output folder), ``{arch}`` (target, e.g.
    ``sm_90``), ``{nvcc_lib}`` (the nvcc wheel's library folder) and ``{artifact:NAME}`` (the
    output folder of another artifact, which is then built first); any other tool of the
    case's table (see ``Tool``: ``{ptxas}``, ``{cuobjdump}``, ``{nvdisasm}``, or one the case
    declares in ``Case.tools``) expands to its absolute path.
    ``outputs`` are file names inside ``{out}``; the first one is the artifact's main file.
    ``tools`` names the tools whose exact version strings enter the build key and the record.
    ``archs``: the targets this artifact exists for (empty: all).
    """

    name: str
    command: tuple[str, ...]
    outputs: tuple[str, ...]
    sources: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    archs: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    description: str = ""

    def placeholders(self) -> set[str]:
        return {m.group(1) for part in self.command for m in PLACEHOLDER.finditer(part)}

    def dependencies(self) -> list[str]:
        return sorted(p.split(":", 1)[1] for p in self.placeholders() if p.startswith("artifact:"))


@dataclass(frozen=True)
class Tool:
    """A program a case uses, and where it comes from.

    ``binary`` is the file name; ``package`` the PyPI distribution whose installed files
    include it (one of the case's pins): the tool is taken from that wheel and nowhere else.
    With no package the tool is the host's: PATH, then ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin``
    and ``/usr/local/cuda/bin`` (g++, or cuda-gdb, which has no wheel). ``host``: a wheel tool
    that may also come from the host when its wheel is not installed (an instrument on a GPU
    node, never a build input a case pins). gpurepro.toolchain has the defaults (nvcc,
    tileiras, ptxas, cuobjdump, nvdisasm, compute-sanitizer, cuda-gdb, g++); ``Case.tools``
    adds to them or replaces them by name, and a name usable as a placeholder (``[a-z_]+``)
    may appear in artifact commands as ``{name}``.
    """

    binary: str
    package: str = ""
    host: bool = False


@dataclass(frozen=True)
class Factor:
    """A named experimental factor, its allowed levels and the baseline level."""

    levels: tuple[Any, ...]
    default: Any
    description: str = ""


@dataclass(frozen=True)
class Arm:
    """A named combination of factor levels; unspecified factors take their defaults."""

    name: str
    factors: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


CLAIM_KINDS = ("lower", "higher", "equivalent", "outcome", "concentrated")
# A case's stratum: (trial record, the arm's factors) -> (exposure inside it, failed inside it).
Stratum = Callable[[Mapping[str, Any], Mapping[str, Any]], tuple[float, bool]]
# Claims about one arm alone: no reference arm.
SINGLE_ARM_KINDS = ("outcome", "concentrated")
# An outcome claim's bound: more than ``share`` of the trials (above) or fewer (below).
SHARE_BOUNDS = ("above", "below")
# What a lower/higher claim counts failures against: the exposure (a rate), or the trials.
CLAIM_UNITS = ("exposure", "trial")


@dataclass(frozen=True)
class Claim:
    """What a case wants to show; the harness decides it (see gpurepro.claims).

    ``kind``:
    - ``lower`` / ``higher``: ``arm``'s failure rate is below / above ``reference``'s (per unit
      of exposure where exposure is recorded, per trial otherwise);
    - ``equivalent``: the rate ratio arm/reference lies within [1/``margin``, ``margin``];
    - ``outcome``: more than ``share`` of ``arm``'s valid trials end as ``outcome`` (and, with
      ``detail``, with that text in their detail, e.g. a CUDA error name); with
      ``bound="below"``, fewer than ``share`` do ("no trial gives a wrong result" is
      ``outcome="wrong_result", share=..., bound="below"``: the harness can only bound a share);
    - ``concentrated``: ``arm``'s failures fall in the case's ``stratum`` (a named part of each
      trial's exposure, ``Case.strata``) more often than the share of its exposure spent there
      predicts, i.e. the hazard is higher inside the stratum than outside it.
    ``reference`` defaults to the case's baseline. ``unit="trial"`` makes a lower/higher claim
    compare the shares of failing trials (Fisher's exact test) even where exposure is recorded:
    a wrong result is a property of a trial, not an event per unit of exposure. ``failures``: the outcomes that count as a
    failure for this claim (default: the case's ``failure_outcomes``), so a case whose failure is a
    crash can also claim something about its hangs (``failures=("hung",)``); rates are then
    cause-specific (a trial ended by another failure is censored there). The three sentences are what the verdict
    prints for each decision; they may use {arm}, {reference} and the numbers the harness
    computes ({rate}, {reference_rate}, {ratio}, {ratio_ci}, {p}, {count}, {n}, {exposure},
    {upper}, {needed}, {reference_count}, {reference_n}; for outcome claims also {share_ci}, the
    exact 95% interval of the share); an empty sentence gets the harness's own wording.
    """

    name: str
    arm: str
    kind: str
    reference: str | None = None
    margin: float = 2.0
    outcome: str | None = None
    detail: str | None = None
    share: float = 0.5
    stratum: str | None = None
    failures: tuple[str, ...] = ()
    bound: str = "above"
    unit: str = "exposure"
    supported: str = ""
    contradicted: str = ""
    not_decided: str = ""


@dataclass(frozen=True)
class OutputCheck:
    """How a case's driver checks its output against a reference (``Case.check``).

    ``exact`` for integers (every element equal), ``tolerance`` for floating point: an element
    passes when ``math.isclose(got, expected, rel_tol=rel, abs_tol=abs)``. The driver does the
    comparison (``gpurepro.case.driver.compare``, or the same object from a native driver) and
    puts it in its final record as ``check``: ``{"kind", "n", "mismatches", "first":
    [[index, got, expected], ...]}`` (a tolerance check adds its ``rel`` and ``abs``). A case
    that declares a check gets ``invalid`` for a trial that checked nothing and
    ``harness_error`` for an ``ok`` final without a check, of another kind or looser than
    declared; ``wrong_result`` for any mismatch (classify)."""

    kind: str = "exact"
    rel: float = 0.0
    abs: float = 0.0
    first: int = 8  # mismatches the record keeps

    def refuses(self, check: Mapping[str, Any]) -> str | None:
        """Why a driver's check object does not do what the case declared (None: it does)."""
        if not isinstance(check, Mapping):
            return f"check is {type(check).__name__}, not an object"
        for key in ("n", "mismatches"):
            v = check.get(key)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                return f"check.{key} is {v!r}, not a count"
        if check["mismatches"] > check["n"]:
            return f"check.mismatches ({check['mismatches']}) exceeds check.n ({check['n']})"
        if not isinstance(check.get("first", []), list):
            return "check.first is not a list"
        if check.get("kind") != self.kind:
            return f"the case declares a {self.kind} check, the driver made a {check.get('kind')!r} one"
        if self.kind == "tolerance":
            for key, declared in (("rel", self.rel), ("abs", self.abs)):
                used = check.get(key, 0.0)
                if not isinstance(used, int | float) or used > declared:
                    return (f"check.{key} = {used!r} is looser than the case's {declared!r}")
        return None

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "tolerance":
            out.update(rel=self.rel, abs=self.abs)
        return out


CHECK_KINDS = ("exact", "tolerance")


@dataclass(frozen=True)
class Defaults:
    trials_per_arm: int = 25
    # The wall-clock limit of one trial at the default duration; a longer --duration keeps
    # the same margin. A case whose arms may hang sets it short.
    trial_timeout_s: float = 60.0
    duration_s: float = 20.0
    # A budget in the case's own exposure counter (e.g. load/launch/unload cycles), which the
    # case's trial_command hands to its driver; 0: none, only the duration.
    max_exposure: int = 0
    jobs: int = 1


@dataclass(frozen=True)
class Devices:
    """Which devices can run the case: compute capability -> build target."""

    targets: Mapping[str, str]
    why: str = ""
    # False for cases whose trials need no GPU (the harness's own test case): they run
    # anywhere, for the first target.
    requires_gpu: bool = True

    def target_for(self, compute_capability: str) -> str | None:
        return self.targets.get(compute_capability)


@dataclass(frozen=True)
class Exposure:
    """The counter that measures how much chance a trial gave the failure to happen."""

    counter: str
    unit: str
    per: float = 1e6


@dataclass(frozen=True)
class TrialBudget:
    duration_s: float
    max_exposure: int  # in the unit of the case's exposure counter; 0: none
    timeout_s: float


def harness_import_root() -> Path:
    """The folder the gpurepro package is imported from (``src/`` in a checkout)."""
    top = sys.modules[__name__.split(".")[0]]
    return Path(str(top.__file__)).resolve().parent.parent


@dataclass(frozen=True)
class TrialContext:
    """What a manifest's ``trial_command`` gets to build one trial's command line."""

    arm: str
    factors: Mapping[str, Any]
    artifacts: Mapping[str, Path]  # artifact name -> main output file
    budget: TrialBudget
    native: Path
    case_dir: Path
    # The harness's own interpreter (the GPU node's Python) and the folder it imports gpurepro
    # from: what a Python driver runs with and puts on its PYTHONPATH (python_driver).
    python: str = field(default_factory=lambda: sys.executable)
    pythonpath: Path = field(default_factory=harness_import_root)
    # The case's output check (Case.check): what the driver compares with, and how closely.
    check: OutputCheck | None = None

    def check_arguments(self) -> tuple[str, ...]:
        """The case's tolerance for a driver on ``gpurepro.case.driver`` (add_check_arguments):
        ``--check-rel R --check-abs A`` for a tolerance check, nothing for an exact one."""
        if self.check is None or self.check.kind != "tolerance":
            return ()
        return ("--check-rel", repr(float(self.check.rel)), "--check-abs", repr(float(self.check.abs)))

    def python_driver(self, script: Path | str, *args: str, preload: Path | None = None,
                      env: Mapping[str, str] | None = None) -> TrialCommand:
        """A trial running ``script``, a Python driver on ``gpurepro.case.driver``, with the
        harness's interpreter, PYTHONPATH the harness's import root and, with ``preload`` (the
        crash object, native/crash_preload.cc), LD_PRELOAD set: a fault then leaves the native
        crash record before Python's frames."""
        return TrialCommand(
            argv=(self.python, str(script), *args),
            env={"PYTHONPATH": str(self.pythonpath),
                 **({"LD_PRELOAD": str(preload)} if preload is not None else {}), **(env or {})})


@dataclass(frozen=True)
class TrialCommand:
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)
    # How stdout is read: "jsonl" (the native event protocol) or a name in Case.parsers.
    parser: str = "jsonl"


@dataclass(frozen=True)
class Case:
    name: str
    question: str
    report_url: str
    toolchains: Mapping[str, Sequence[str]]  # target ("sm_90", "*") -> PyPI requirement strings
    artifacts: Sequence[Artifact]
    factors: Mapping[str, Factor]
    arms: Sequence[Arm]
    baseline: str
    trial_command: Callable[[TrialContext], TrialCommand]
    verdict: Callable[[Analysis], Mapping[str, Any]]  # the document's typed views -> verdict
    devices: Devices
    exposure: Exposure
    defaults: Defaults = Defaults()
    failure_outcomes: tuple[str, ...] = ("crashed", "cuda_error", "hung")
    # Text-output parsers for drivers that do not speak JSON lines (the reporters' programs).
    parsers: Mapping[str, Any] = field(default_factory=dict)
    # Analyses over built artifacts (e.g. ELF sections), run when the result is recorded:
    # name -> function(artifact paths) -> JSON-able dict.
    analyses: Mapping[str, Callable[[Mapping[str, Path]], Mapping[str, Any]]] = field(
        default_factory=dict
    )
    # What the case wants to show, decided by the harness under one family-wise error rate.
    claims: Sequence[Claim] = ()
    # Named parts of a trial's exposure, for `concentrated` claims: name -> function of (the
    # trial record, the arm's factors) giving (exposure spent in the stratum, whether the trial
    # failed inside it). Arithmetic on the case's own counters, no statistics: the harness
    # tests the counts (gpurepro.claims).
    strata: Mapping[str, Stratum] = field(default_factory=dict)
    # Set by load_case.
    path: Path | None = None
    # Tools by name, beyond (or replacing) gpurepro.toolchain.DEFAULT_TOOLS: what artifact
    # commands name as {placeholders} or in Artifact.tools, and what instruments run.
    tools: Mapping[str, Tool] = field(default_factory=dict)
    # The case's drivers check their output against a reference: an ok trial without that
    # check is never a survival, one with a mismatch is a wrong_result (OutputCheck).
    check: OutputCheck | None = None
    # Toolchain axes a bisection runs along (gpurepro.bisect): name -> Axis.
    axes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        assert self.path is not None
        return self.path.parent

    def pins_for(self, target: str) -> list[str]:
        pins = list(self.toolchains.get("*", ()))
        pins += list(self.toolchains.get(target, ()))
        return pins

    def artifact(self, name: str) -> Artifact:
        for a in self.artifacts:
            if a.name == name:
                return a
        raise KeyError(name)

    def resolved_arms(self) -> dict[str, dict[str, Any]]:
        """Arm name -> full factor assignment (defaults filled in)."""
        base = {k: f.default for k, f in self.factors.items()}
        return {arm.name: {**base, **dict(arm.factors)} for arm in self.arms}


_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


def validate(case: Case, path: Path | str) -> None:
    """Check a case for the mistakes a manifest author makes; raise ManifestError."""
    if not isinstance(case, Case):
        raise ManifestError(path, "CASE", "must be a gpurepro.case.Case")
    if not _NAME.match(case.name):
        raise ManifestError(path, "name", f"{case.name!r} is not a lower-case identifier")
    if not case.question.strip():
        raise ManifestError(path, "question", "is empty")

    names: set[str] = set()
    for i, art in enumerate(case.artifacts):
        where = f"artifacts[{i}]"
        if art.name in names:
            raise ManifestError(path, f"{where}.name", f"duplicate artifact {art.name!r}")
        names.add(art.name)
        if not art.command:
            raise ManifestError(path, f"{where}.command", "is empty")
        if not art.outputs:
            raise ManifestError(path, f"{where}.outputs", "names no output file")
    for i, art in enumerate(case.artifacts):
        for dep in art.dependencies():
            if dep not in names:
                raise ManifestError(
                    path, f"artifacts[{i}].command", f"refers to unknown artifact {dep!r}"
                )
        if case.path is not None:
            top = repo_root(case.directory)
            for src in art.sources:
                if not (case.directory / src).exists() and not (top / src).exists():
                    raise ManifestError(
                        path, f"artifacts[{i}].sources", f"source {src!r} does not exist"
                    )

    for name, fac in case.factors.items():
        if fac.default not in fac.levels:
            raise ManifestError(
                path, f"factors.{name}.default", f"{fac.default!r} is not one of {fac.levels!r}"
            )

    seen: set[str] = set()
    for i, arm in enumerate(case.arms):
        where = f"arms[{i}]"
        if arm.name in seen:
            raise ManifestError(path, f"{where}.name", f"duplicate arm {arm.name!r}")
        if not _NAME.match(arm.name):
            raise ManifestError(path, f"{where}.name", f"{arm.name!r} is not a lower-case name")
        seen.add(arm.name)
        for key, value in arm.factors.items():
            if key not in case.factors:
                raise ManifestError(
                    path,
                    f"{where}.factors.{key}",
                    f"unknown factor (known: {', '.join(sorted(case.factors))})",
                )
            if value not in case.factors[key].levels:
                raise ManifestError(
                    path,
                    f"{where}.factors.{key}",
                    f"{value!r} is not one of {case.factors[key].levels!r}",
                )
    if case.baseline not in seen:
        raise ManifestError(path, "baseline", f"{case.baseline!r} is not an arm")
    _check_claims(case, seen, path)

    for i, outcome in enumerate(case.failure_outcomes):
        if outcome not in OUTCOMES:
            raise ManifestError(path, f"failure_outcomes[{i}]", f"unknown outcome {outcome!r}")
    _check_defaults(case.defaults, path)
    _check_output_check(case, path)
    if case.axes:
        from .axis import check_axes

        check_axes(case.axes, names, seen, path)
    if not _COUNTER.match(case.exposure.counter or ""):
        raise ManifestError(path, "exposure.counter",
                            f"{case.exposure.counter!r} is not a counter name (letters, digits, _)")
    if not (isinstance(case.exposure.per, (int, float)) and math.isfinite(case.exposure.per)
            and case.exposure.per > 0):
        raise ManifestError(path, "exposure.per", f"must be a positive number, got {case.exposure.per!r}")
    if not case.devices.targets:
        raise ManifestError(path, "devices.targets", "names no compute capability")
    for target in case.toolchains:
        if target != "*" and target not in set(case.devices.targets.values()):
            raise ManifestError(path, f"toolchains.{target}", "is not a target in devices")
    _check_tools(case, path)


def _check_output_check(case: Case, path: Path | str) -> None:
    c = case.check
    if c is None:
        return
    if not isinstance(c, OutputCheck):
        raise ManifestError(path, "check", "must be a gpurepro.case.OutputCheck")
    if c.kind not in CHECK_KINDS:
        raise ManifestError(path, "check.kind", f"{c.kind!r} is not one of {CHECK_KINDS}")
    for name in ("rel", "abs"):
        v = getattr(c, name)
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            raise ManifestError(path, f"check.{name}", f"must be a number, at least 0; got {v!r}")
    if c.kind == "exact" and (c.rel or c.abs):
        raise ManifestError(path, "check", "an exact check has no tolerance (kind='tolerance')")
    if c.kind == "tolerance" and not (c.rel or c.abs):
        raise ManifestError(path, "check", "a tolerance check needs rel or abs above 0")
    if not isinstance(c.first, int) or c.first < 0:
        raise ManifestError(path, "check.first", f"must be a count, got {c.first!r}")


def _check_tools(case: Case, path: Path | str) -> None:
    for name, tool in case.tools.items():
        if not isinstance(tool, Tool):
            raise ManifestError(path, f"tools.{name}", "must be a gpurepro.case.Tool")
        if not _TOOL_NAME.match(name):
            raise ManifestError(path, f"tools.{name}", "is not a tool name (lower case, digits, _ -)")
        if name in _RESERVED_PLACEHOLDERS:
            raise ManifestError(path, f"tools.{name}", "is a placeholder the harness fills itself")
        if not tool.binary or "/" in tool.binary:
            raise ManifestError(path, f"tools.{name}.binary", f"{tool.binary!r} is not a file name")


def _check_claims(case: Case, arms: set[str], path: Path | str) -> None:
    names: set[str] = set()
    for i, c in enumerate(case.claims):
        where = f"claims[{i}]"
        if not isinstance(c, Claim):
            raise ManifestError(path, where, "must be a gpurepro.case.Claim")
        if not _NAME.match(c.name) or c.name in names:
            raise ManifestError(path, f"{where}.name", f"{c.name!r} is not a new lower-case name")
        names.add(c.name)
        if c.kind not in CLAIM_KINDS:
            raise ManifestError(path, f"{where}.kind", f"{c.kind!r} is not one of {CLAIM_KINDS}")
        for field_name in ("arm", "reference"):
            arm = getattr(c, field_name)
            if arm is not None and arm not in arms:
                raise ManifestError(path, f"{where}.{field_name}", f"{arm!r} is not an arm")
        if c.kind not in SINGLE_ARM_KINDS and (c.reference or case.baseline) == c.arm:
            raise ManifestError(path, f"{where}.reference", "an arm compared with itself")
        if c.kind == "equivalent" and not (isinstance(c.margin, (int, float)) and c.margin > 1):
            raise ManifestError(path, f"{where}.margin", f"must be a ratio above 1, got {c.margin!r}")
        if c.kind == "concentrated" and c.stratum not in case.strata:
            raise ManifestError(path, f"{where}.stratum",
                                f"{c.stratum!r} is not one of the case's strata {sorted(case.strata)}")
        for j, outcome in enumerate(c.failures):
            if outcome not in OUTCOMES:
                raise ManifestError(path, f"{where}.failures[{j}]", f"{outcome!r} is not an outcome")
        if c.kind == "outcome":
            if c.outcome not in OUTCOMES:
                raise ManifestError(path, f"{where}.outcome", f"{c.outcome!r} is not an outcome")
            if not 0 <= c.share < 1 or (c.bound == "below" and c.share == 0):
                raise ManifestError(path, f"{where}.share", f"must be in [0, 1) (above) or (0, 1) "
                                    f"(below), got {c.share!r}")
        if c.bound not in SHARE_BOUNDS or (c.bound != "above" and c.kind != "outcome"):
            raise ManifestError(path, f"{where}.bound", f"{c.bound!r}: one of {SHARE_BOUNDS}, and "
                                "'below' only for an outcome claim")
        if c.unit not in CLAIM_UNITS or (c.unit != "exposure" and c.kind not in ("lower", "higher")):
            raise ManifestError(path, f"{where}.unit", f"{c.unit!r}: one of {CLAIM_UNITS}, and "
                                "'trial' only for a lower/higher claim")


_COUNTER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOOL_NAME = re.compile(r"^[a-z][a-z0-9_+-]*$")
_RESERVED_PLACEHOLDERS = {"python", "case", "native", "out", "arch", "nvcc_lib"}


def _check_defaults(d: Defaults, path: Path | str) -> None:
    """The manifest's defaults obey the same rules as the command-line flags that override them."""
    def number(name: str, value: Any, minimum: float, strict: bool, integer: bool) -> None:
        ok = isinstance(value, int) if integer else isinstance(value, (int, float))
        ok = ok and not isinstance(value, bool) and math.isfinite(value)
        ok = ok and (value > minimum if strict else value >= minimum)
        if not ok:
            kind = "an integer" if integer else "a number"
            bound = f"more than {minimum:g}" if strict else f"at least {minimum:g}"
            raise ManifestError(path, f"defaults.{name}", f"must be {kind}, {bound}; got {value!r}")

    number("trials_per_arm", d.trials_per_arm, 1, False, True)
    number("trial_timeout_s", d.trial_timeout_s, 0, True, False)
    number("duration_s", d.duration_s, 0, True, False)
    number("max_exposure", d.max_exposure, 0, False, True)
    if d.trial_timeout_s <= d.duration_s:
        raise ManifestError(path, "defaults.trial_timeout_s",
                            f"{d.trial_timeout_s!r} must exceed defaults.duration_s "
                            f"({d.duration_s!r}): a trial needs its whole budget before the limit")
    number("jobs", d.jobs, 1, False, True)


def find_repo_root(start: Path) -> Path | None:
    """The first ancestor of ``start`` (itself included) with both cases/ and native/."""
    for p in (start, *start.parents):
        if (p / "cases").is_dir() and (p / "native").is_dir():
            return p
    return None


def repo_root(start: Path) -> Path:
    """The repository holding a case folder."""
    return find_repo_root(start) or start.parent.parent


def find_case(name_or_path: str | Path, root: Path | None = None) -> Path:
    """Accept a case name (a folder under cases/), its folder, or its manifest file."""
    p = Path(name_or_path)
    if p.is_file():
        return p
    if p.is_dir() and (p / "manifest.py").is_file():
        return p / "manifest.py"
    root = root or Path.cwd()
    candidate = root / "cases" / str(name_or_path) / "manifest.py"
    if candidate.is_file():
        return candidate
    known = sorted(d.name for d in (root / "cases").glob("*") if (d / "manifest.py").is_file())
    raise ManifestError(
        name_or_path, "case", f"no such case (known: {', '.join(known) or 'none'})"
    )


def load_case(name_or_path: str | Path, root: Path | None = None) -> Case:
    """Import a manifest file, validate it and return its Case."""
    path = find_case(name_or_path, root).resolve()
    spec = importlib.util.spec_from_file_location(f"gpurepro_case_{path.parent.name}", path)
    if spec is None or spec.loader is None:
        raise ManifestError(path, "file", "cannot be imported")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ManifestError:
        raise
    except Exception as exc:  # a manifest with a bug must name itself, not show our stack
        raise ManifestError(path, "file", f"fails to import: {type(exc).__name__}: {exc}") from exc
    case = getattr(module, "CASE", None)
    if case is None:
        raise ManifestError(path, "CASE", "is not defined")
    if not isinstance(case, Case):
        raise ManifestError(path, "CASE", "must be a gpurepro.case.Case")
    object.__setattr__(case, "path", path)
    validate(case, path)
    if case.name != path.parent.name:
        raise ManifestError(path, "name", f"{case.name!r} differs from its folder "
                            f"{path.parent.name!r}; a case is named by its folder")
    return case


def load_sibling(manifest_file: str | Path, module: str) -> Any:
    """Import ``<case folder>/<module>.py`` from a manifest under a name unique to the case.

    Cases are folders, not packages; two cases may both have a ``verdict.py``.
    """
    folder = Path(manifest_file).resolve().parent
    path = folder / f"{module}.py"
    name = f"gpurepro_case_{folder.name}_{module}"
    import sys

    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ManifestError(manifest_file, module, f"cannot import {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
