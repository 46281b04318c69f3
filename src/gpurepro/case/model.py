"""Case manifests: the plain data a case declares (its checks and loading are load.py).

A case is a folder ``cases/<name>/`` whose ``manifest.py`` defines ``CASE = Case(...)``.
Everything the harness does with a case (pins to install, artifacts to build, arms to run,
how a trial is launched, how the verdict follows from the statistics) is read from it, so a
new case is a new folder and the harness does not change.

This module imports nothing outside the standard library: the run stage loads manifests on
GPU nodes that have no network and no third-party packages.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ManifestError
from .declared import Declared
from .hypotheses import Hypothesis

if TYPE_CHECKING:
    from ..model.result import Analysis

# What other modules use; the rest is this module's own.
__all__ = [
    "Arm", "Artifact", "Case", "CHECK_KINDS", "Claim", "CLAIM_KINDS", "CLAIM_UNITS",
    "Conclusion", "Defaults", "DETERMINISTIC_TRIALS", "Devices", "Exposure", "Factor", "Family",
    "harness_import_root", "normalized_name", "OutputCheck", "PLACEHOLDER", "ProgramValue",
    "Releases", "Runtime", "RUNTIME_PIN", "SHARE_BOUNDS", "SINGLE_ARM_KINDS", "Stratum",
    "TIMED_KINDS", "Timing", "Tool", "TrialBudget", "TrialCommand", "TrialContext"
]

# {name} or {artifact:NAME} in an artifact command template.
PLACEHOLDER = re.compile(r"\{([a-z_]+(?::[A-Za-z0-9_.-]+)?)\}")


# How many agreeing valid trials of an arm establish its outcome where the case declares its
# outcomes deterministic (Case.deterministic): at least two, so that a disagreement can be seen.
# What a journal from before the check ran; a new run journals its declaration checked, with
# at least this many and as many more as bound its error (gpurepro.analyze.shortcut).
DETERMINISTIC_TRIALS = 3


@dataclass(frozen=True)
class Artifact:
    """One build output.

    ``command`` is an argv template. Placeholders: ``{python}`` (the toolchain's interpreter),
    ``{nvcc}``, ``{tileiras}``, ``{gxx}``, ``{case}`` (case folder), ``{native}`` (the shared
    ``native/`` folder), ``{out}`` (this artifact's output folder), ``{arch}`` (target, e.g.
    ``sm_90``), ``{virtual_arch}`` (its virtual architecture, ``compute_90``: nvcc's
    ``-gencode arch={virtual_arch},code={arch}`` builds SASS alone), ``{nvcc_lib}`` (the nvcc
    wheel's library folder) and ``{artifact:NAME}`` (the
    output folder of another artifact, which is then built first); any other tool of the
    case's table (see ``Tool``: ``{ptxas}``, ``{cuobjdump}``, ``{nvdisasm}``, or one the case
    declares in ``Case.tools``) expands to its absolute path.
    ``outputs`` are file names inside ``{out}``; the first one is the artifact's main file.
    ``tools`` names the tools whose exact version strings enter the build key and the record.
    ``archs``: the targets this artifact exists for (empty: all).
    ``per``: a factor whose levels are toolchain releases (``Factor.releases``): the artifact
    is built once per level an arm uses, as ``<name>_<level>``, with the placeholder of the
    factor's tool (``{ptxas}``) naming that release's program; a trial's ``ctx.artifacts``
    maps ``<name>`` to its arm's build.
    ``stdout``: one of ``outputs``, the file the command's standard output is written to (a
    program that prints what it makes: a disassembly, a table, a tool's version), with no
    shell; its standard error still goes to the build log.
    """

    name: str
    command: tuple[str, ...]
    outputs: tuple[str, ...]
    sources: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    archs: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    per: str = ""
    stdout: str = ""

    def placeholders(self) -> set[str]:
        return {m.group(1) for part in self.command for m in PLACEHOLDER.finditer(part)}

    def built_name(self, level: Any) -> str:
        """The name of this artifact's build for one level of its ``per`` factor."""
        return f"{self.name}_{level}" if self.per else self.name

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
    node, never a build input a case pins). gpurepro.case.toolchain has the defaults (nvcc,
    tileiras, ptxas, cuobjdump, nvdisasm, compute-sanitizer, cuda-gdb, g++); ``Case.tools``
    adds to them or replaces them by name, and a name usable as a placeholder (``[a-z_]+``)
    may appear in artifact commands as ``{name}``.
    """

    binary: str
    package: str = ""
    host: bool = False


@dataclass(frozen=True)
class Family:
    """One PyPI package of a toolchain family and the range of its releases that count
    (``>=12.0,<13``: clauses, all of which must hold; empty: every final release)."""

    package: str
    versions: str = ""


@dataclass(frozen=True)
class Releases:
    """Where a toolchain factor's levels come from: releases (versions) of the packages
    ``families``, in release order (``nvidia-cuda-nvcc-cu12`` for 12.x, then
    ``nvidia-cuda-nvcc``), each level a version that the first family whose range holds it
    provides; ``tool`` the program each release's wheel holds under ``bin/``. The build resolves
    each level an arm uses with pip, locks it (``locks/releases/<case>.json``) and builds the
    artifacts declared ``per`` the factor with that program (gpurepro.building.releases)."""

    tool: str
    families: tuple[Family, ...]


@dataclass(frozen=True)
class Factor:
    """A named experimental factor, its allowed levels and the baseline level; ``releases``
    where the levels are toolchain releases (``Releases``)."""

    levels: tuple[Any, ...]
    default: Any
    description: str = ""
    releases: Releases | None = None


@dataclass(frozen=True)
class Arm:
    """A named combination of factor levels; unspecified factors take their defaults."""

    name: str
    factors: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""


CLAIM_KINDS = ("lower", "higher", "equivalent", "outcome", "concentrated", "slower", "faster",
               "same")
# Claims on the times a timed arm's trials measured (Claim, "slower" ...), not on failures.
TIMED_KINDS = ("slower", "faster", "same")
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
    """What a case wants to show; the harness decides it (see gpurepro.analyze.claims).

    ``kind``:
    - ``lower`` / ``higher``: ``arm``'s failure rate is below / above ``reference``'s (per unit
      of exposure where exposure is recorded, per trial otherwise);
    - ``equivalent``: the rate ratio arm/reference lies within [1/``margin``, ``margin``];
    - ``outcome``: more than ``share`` of ``arm``'s valid trials end as ``outcome`` (and, with
      ``detail``, with that text in their detail, e.g. a CUDA error name); with
      ``bound="below"``, fewer than ``share`` do ("no trial gives a wrong result" is
      ``outcome="wrong_result", share=..., bound="below"``: the harness can only bound a share);
    - ``slower`` / ``faster``: ``arm``'s time is above ``(1 + margin)`` times / below
      ``1 / (1 + margin)`` times ``reference``'s; ``same``: the ratio lies within
      ``[1 / (1 + margin), 1 + margin]``. Here ``margin`` is a fraction (0.05: 5 %), and the
      time of a trial is the median of the per-launch times its driver measured (its final
      record's ``observations.timing.values``, seconds); the ratio is that of the geometric
      means of the trials' times (Welch's t-test on their logarithms, gpurepro.analyze.timing);
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
    # The no-progress limit: a trial whose counters have not moved for this many seconds is
    # stopped then and recorded hung, with where each thread was stuck (None: none, only the
    # wall-clock limit). Longer than any pause a healthy trial makes between heartbeats.
    hang_after_s: float | None = None


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
    # What one unit is, in words, where the unit's name alone could be read otherwise (the
    # tile race's "cycles" are load/launch/unload iterations, not clock cycles); the issue
    # comment names the unit by it.
    label: str = ""
    # Whether the counter measures the failures' opportunity within a trial, so that a rate per
    # unit of it means something (the tile race's iterations: each one can crash). False: it
    # counts what every trial does a fixed number of times (ctx_get_device_v2's one query per
    # trial), and every arm's trials are modelled per trial, each way of ending with its own
    # share of trials (gpurepro.analyze.simulate).
    opportunity: bool = True
    # Outcomes that are a property of a whole trial, found when it ends (an output checked
    # after the last launch): always modelled per trial, never as a rate in the exposure.
    per_trial_outcomes: tuple[str, ...] = ("wrong_result",)


# An exact pin: a runtime package is one release, the wheel the build downloads.
RUNTIME_PIN = re.compile(r"^([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)==([0-9][A-Za-z0-9.+!_-]*)$")
# The manylinux tags a wheel for an x86-64 GPU node may carry (glibc 2.17 to 2.28).
NODE_PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64",
                  "manylinux_2_17_x86_64", "manylinux2014_x86_64")


@dataclass(frozen=True)
class Runtime:
    """The Python packages a case's trials import, as exact pins (``name==version``).

    ``packages``: ``"*"`` (every arm) or an arm's name -> pins; an arm gets ``"*"``'s and its
    own, its own winning by name, so arms that compare releases each pin theirs. The build
    (gpurepro.building.runtime) downloads each pin's wheel for the Python that runs the trials
    (and ``platforms``) into build/, with its sha256, and checks that every requirement the
    wheels declare is met by another pin of the same arm, or is named in ``from_node``: left to
    the node's own installation, whose version each run records beside the requirement. A
    pin's own dependencies are pinned beside it (numba's llvmlite and numpy), inside the ranges
    it declares. The run stage unpacks an arm's wheels into a folder of its own on the node
    (gpurepro.run.runtime) and hands it to the trial command as ``TrialContext.runtime``, which
    ``python_driver`` puts first on PYTHONPATH: nothing is installed from the network.

    ``releases``: factor name -> package, for a factor whose levels are releases of that
    package (``{"numba": "numba"}``: the level ``0.62.1`` is ``numba==0.62.1``); a level that
    is no version (``node``) pins nothing. An arm's runtime pins are then ``"*"``'s, the
    release of each such factor at its level with that release's own dependencies (each
    ``Requires-Dist`` its wheel declares that no shared pin meets and ``from_node`` does not
    name: the newest final release inside the declared range, and so on for theirs), then its
    own. The build finds them from the wheels' metadata and pip's release list, once, into
    ``locks/runtime/<case>.json`` (commit it: the same pins on every later build);
    gpurepro.building.runtime_releases.

    ``python``: None (the default) builds the wheels for the interpreter that runs the build,
    which is the one `case` and every case session run the trials with (any Python that
    pyproject.toml supports), or for the one `build --python X.Y` or `pack --python X.Y` names
    (a GPU node with another Python). A version here ties the case to that Python alone, for
    pins that publish wheels for no other.
    """

    packages: Mapping[str, Sequence[str]]
    from_node: tuple[str, ...] = ()
    python: str | None = None
    platforms: tuple[str, ...] = NODE_PLATFORMS
    implementation: str = "cp"
    releases: Mapping[str, str] = field(default_factory=dict)

    def pins_for(self, arm: str) -> list[str]:
        """The arm's pins: ``"*"``'s, then its own in place of any of the same name."""
        pins: dict[str, str] = {}
        for key in ("*", arm):
            for pin in self.packages.get(key, ()):
                pins[normalized_name(pin.split("==")[0])] = pin
        return list(pins.values())


def normalized_name(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Conclusion:
    """How the verdict follows from the decided claims, declared in place of a verdict.py.

    ``reproduces``: the claims that establish the report's failure. All supported: the status
    is ``reproduced``; any contradicted: ``not_reproduced``; else ``inconclusive``.
    ``owner`` is named only when the status is ``reproduced`` and every claim of
    ``owner_because`` is supported. Each claim of ``workaround`` that is supported offers its
    arm as a workaround (the arm's description says what it changes). ``next``: the next steps
    of every run; ``next_not_reproduced``: added while the status is not ``reproduced``
    (another device, the reporter's target, more trials). ``hypotheses``: what no arm isolates,
    each stated labelled where the run's decisions are as it declares (case.hypotheses). The
    harness adds the sentences of the decided claims; a case with something claims cannot say
    keeps a verdict function (Case.verdict)."""
    reproduces: tuple[str, ...]
    owner: str | None = None
    owner_because: tuple[str, ...] = ()
    workaround: tuple[str, ...] = ()
    next: tuple[str, ...] = ()
    next_not_reproduced: tuple[str, ...] = ()
    # A verdict with more statuses than reproduced/not: a decision table, measurements,
    # readings, evidence and hypotheses, declared (gpurepro.case.declared); it replaces the
    # fields above but ``reproduces`` (gpurepro.analyze.declared).
    declared: Declared | None = None
    hypotheses: tuple[Hypothesis, ...] = ()

    def claims(self) -> tuple[str, ...]:
        """Every claim it names, in the order declared."""
        return tuple(dict.fromkeys((*self.reproduces, *self.owner_because, *self.workaround,
                                    *(n for h in self.hypotheses for n in h.claims()))))


@dataclass(frozen=True)
class ProgramValue:
    """A value a Python program prints or returns, checked by the stock Python-program driver
    (``TrialContext.python_program(..., value=)``): the program's clean exit then survives only
    when the value is the expected one, and is ``wrong_result`` otherwise (Case.check: exact,
    or a tolerance for numbers).

    Where the value comes from: ``printed``, a regular expression searched in what the program
    printed (its last match; the first group where it has one), or ``returned``, the name of a
    global the script leaves (what ``runpy`` returns); neither: the last line it printed.
    What it should be: ``expected`` (a number, a string, or a list of them), or ``answer``, a
    Python file of the case folder whose ``expected(libcuda)`` computes it in the trial, before
    the program runs (the driver's own answer: libcuda asked through ctypes, say)."""

    printed: str = ""
    returned: str = ""
    expected: Any = None
    answer: str = ""

    def arguments(self, case_dir: Path) -> tuple[str, ...]:
        return (*(("--printed", self.printed) if self.printed else ()),
                *(("--returned", self.returned) if self.returned else ()),
                *(("--expect", json.dumps(self.expected)) if self.expected is not None else ()),
                *(("--expect-from", str(Path(case_dir) / self.answer)) if self.answer else ()))


@dataclass(frozen=True)
class Timing:
    """How the stock cubin driver times a kernel (``TrialContext.cubin_check(..., timing=)``):
    ``warmups`` repetitions discarded, then ``repeats`` repetitions of ``loops`` launches, each
    between two CUDA events; each value the mean seconds of one launch (a timed arm's
    ``observations.timing``, which the slower/faster/same claims read)."""

    repeats: int = 20
    loops: int = 20
    warmups: int = 5

    def arguments(self) -> tuple[str, ...]:
        return ("--repeats", str(self.repeats), "--loops", str(self.loops),
                "--warmups", str(self.warmups))


@dataclass(frozen=True)
class TrialBudget:
    duration_s: float
    max_exposure: int  # in the unit of the case's exposure counter; 0: none
    timeout_s: float
    # The no-progress limit: a trial whose counters have not moved for this long is stopped and
    # recorded hung then, with where its threads were (None: only the wall-clock limit).
    stall_s: float | None = None


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
    # The arm's runtime packages (Case.runtime) unpacked on this node, or None: first on a
    # Python driver's PYTHONPATH (python_driver).
    runtime: Path | None = None

    def check_arguments(self) -> tuple[str, ...]:
        """The case's tolerance for a driver on ``gpurepro.case.driver`` (add_check_arguments):
        ``--check-rel R --check-abs A`` for a tolerance check, nothing for an exact one."""
        if self.check is None or self.check.kind != "tolerance":
            return ()
        return ("--check-rel", repr(float(self.check.rel)), "--check-abs", repr(float(self.check.abs)))

    def cubin_check(self, cubin: Path | str, spec: Path | str, *args: str,
                    reference: Path | str | None = None, timing: Timing | None = None,
                    preload: Path | None = None, env: Mapping[str, str] | None = None
                    ) -> TrialCommand:
        """A trial of the stock cubin driver (gpurepro/case/cubin_check.py): ``cubin`` loaded,
        its kernel launched as the case's ``spec`` file declares, every output compared with
        the spec's reference within the case's check (Case.check). ``reference``: another
        cubin (another arm's build, ``self.artifacts[...]``) whose kernel's outputs on the same
        inputs are the reference instead (the spec's ``expected`` is then None); ``timing``:
        the launches are also timed with CUDA events (a timed arm, Timing)."""
        stock = Path(__file__).resolve().parent / "cubin_check.py"
        own = (*(("--reference-cubin", str(reference)) if reference is not None else ()),
               *(timing.arguments() if timing is not None else ()))
        return self.python_driver(stock, "--cubin", str(cubin), "--spec", str(spec),
                                  *self.check_arguments(), *own, *args, preload=preload, env=env)

    def python_program(self, script: Path | str, *args: str, preload: Path | None = None,
                       counter: str = "runs", versions: Sequence[str] = (),
                       calls: Sequence[str] = (), exit_check: bool = False,
                       instrumented: bool = False, value: ProgramValue | None = None,
                       env: Mapping[str, str] | None = None) -> TrialCommand:
        """A trial of the stock Python-program driver (gpurepro/case/python_program.py):
        ``script`` (the reporter's, from seed/, or an instrumented variant) run once with
        ``args``, under the arm's runtime packages and, with ``preload``, the crash object; its
        exit, exception or crash classified. ``counter``: the case's exposure counter (one per
        run); ``versions``: distributions the start event names; ``calls``: the calls a variant
        names (``call``); ``exit_check``: the program's clean exit is its output check
        (wrong_result otherwise; Case.check exact); ``instrumented``: the variant writes the
        start event and counts its exposure itself; ``value``: a value the program prints or
        returns, checked against the expected one (ProgramValue; wrong_result otherwise)."""
        stock = Path(__file__).resolve().parent / "python_program.py"
        own = ("--counter", counter, *(("--versions", ",".join(versions)) if versions else ()),
               *(("--calls", ",".join(calls)) if calls else ()),
               *(("--exit-check",) if exit_check else ()),
               *(("--instrumented",) if instrumented else ()),
               *((*value.arguments(self.case_dir), *self.check_arguments())
                 if value is not None else ()))
        return self.python_driver(stock, *own, "--", str(script), *args, preload=preload, env=env)

    def python_driver(self, script: Path | str, *args: str, preload: Path | None = None,
                      env: Mapping[str, str] | None = None) -> TrialCommand:
        """A trial running ``script``, a Python driver on ``gpurepro.case.driver``, with the
        harness's interpreter, PYTHONPATH the harness's import root and, with ``preload`` (the
        crash object, native/crash_preload.cc), LD_PRELOAD set: a fault then leaves the native
        crash record before Python's frames. The arm's runtime packages, where the case pins
        some, come first on PYTHONPATH."""
        paths = ([str(self.runtime)] if self.runtime is not None else []) + [str(self.pythonpath)]
        return TrialCommand(
            argv=(self.python, str(script), *args),
            env={"PYTHONPATH": os.pathsep.join(paths),
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
    # The document's typed views -> verdict; None where ``conclusion`` declares it.
    verdict: Callable[[Analysis], Mapping[str, Any]] | None = field(default=None, kw_only=True)
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
    # tests the counts (gpurepro.analyze.claims).
    strata: Mapping[str, Stratum] = field(default_factory=dict)
    # Where the report was filed from, as the reporter gave it ("gpu", "target", "driver",
    # "toolchain"): what a run elsewhere did not run on, which the issue comment says.
    reported: Mapping[str, str] = field(default_factory=dict)
    # Set by load_case.
    path: Path | None = None
    # Tools by name, beyond (or replacing) gpurepro.case.toolchain.DEFAULT_TOOLS: what artifact
    # commands name as {placeholders} or in Artifact.tools, and what instruments run.
    tools: Mapping[str, Tool] = field(default_factory=dict)
    # The case's drivers check their output against a reference: an ok trial without that
    # check is never a survival, one with a mismatch is a wrong_result (OutputCheck).
    check: OutputCheck | None = None
    # Toolchain axes a bisection runs along (gpurepro.sweep): name -> Axis.
    axes: Mapping[str, Any] = field(default_factory=dict)
    # The Python packages the trials import, pinned per arm where arms compare releases.
    runtime: Runtime | None = None
    # The claims that answer the report's own questions (reproduced as filed, owner, workaround):
    # the main job runs their arms and stops when they are decided; every other arm is one
    # flag away (--deep), where these claims still get their trials first. Empty: every arm.
    main_question: tuple[str, ...] = ()
    # The verdict from decided claims (status, owner, workaround, next steps), where the case
    # gives no verdict function.
    conclusion: Conclusion | None = None
    # Why every valid trial of an arm ends the same way, where the case declares it: the same
    # artifact run on the same inputs with nothing racing (a miscompile returns the same wrong
    # elements at every launch). Empty: not declared. Declared, a new run journals it checked
    # (gpurepro.analyze.shortcut): a claim on shares of trials (an outcome claim, or a rate
    # claim with unit="trial") is decided once its arms each have the declaration's trials with
    # one signature (outcome, launches' agreement, output sha256, mismatches), and stands once
    # a later check trial agrees too; that number of trials is the fewest whose chance of a
    # false decision, were the declaration false for one arm (flaky at 1/2 or 1/10), is within
    # half the run's alpha, and that chance is spent from alpha. Two valid trials of one arm
    # whose signatures differ refute it: the claims it decided are withdrawn and the run goes
    # on under its own design (gpurepro.analyze.claims). A journal from before the check
    # (reason and DETERMINISTIC_TRIALS) compared outcome classes and spent no alpha.
    deterministic: str = ""

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

    def main_arms(self) -> list[str]:
        """The arms the main question's claims are about (claim arms, their references and the
        baseline), in the case's arm order; every arm where the case declares no main question."""
        if not self.main_question:
            return list(self.resolved_arms())
        chosen = [c for c in self.claims if c.name in self.main_question]
        used = {self.baseline} | {c.arm for c in chosen} | {
            c.reference or self.baseline for c in chosen if c.kind not in SINGLE_ARM_KINDS}
        return [a for a in self.resolved_arms() if a in used]

    def determinism(self) -> dict[str, Any] | None:
        """The case's declaration of deterministic outcomes: its reason and the fewest agreeing
        trials that establish an arm's outcome (what a journal from before the check holds; a
        new run journals gpurepro.analyze.shortcut.declaration of it); None where it declares
        none."""
        if not isinstance(self.deterministic, str):
            raise ManifestError(self.path or self.name, "deterministic",
                                "must be a string: why every trial of an arm ends the same way")
        if not self.deterministic.strip():
            return None
        return {"reason": self.deterministic.strip(), "trials": DETERMINISTIC_TRIALS}

    def resolved_arms(self) -> dict[str, dict[str, Any]]:
        """Arm name -> full factor assignment (defaults filled in)."""
        base = {k: f.default for k, f in self.factors.items()}
        return {arm.name: {**base, **dict(arm.factors)} for arm in self.arms}
