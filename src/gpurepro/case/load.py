"""Loading a case: a manifest imported, checked for the mistakes a manifest author makes, and
its sibling modules imported under names of its own. A bad field is a ``ManifestError`` naming
the file and the field.

Standard library only: the run stage loads manifests on GPU nodes with no network.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import math
import os
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from ..errors import ManifestError, Stopped
from ..model.outcomes import OUTCOMES
from .axis import RuntimeAxis, check_axes, check_family, check_runtime_axis
from .hypotheses import Hypothesis
from .model import (
    CHECK_KINDS,
    CLAIM_KINDS,
    CLAIM_UNITS,
    RUNTIME_PIN,
    SHARE_BOUNDS,
    SINGLE_ARM_KINDS,
    TIMED_KINDS,
    Case,
    Claim,
    Conclusion,
    Defaults,
    OutputCheck,
    Releases,
    Runtime,
    Tool,
)

# What other modules use; the rest is this module's own.
__all__ = [
    "checkout_targets", "find_case", "find_repo_root", "IMPORT_LIMIT_VARIABLE", "load_case",
    "load_sibling", "ManifestError", "repo_root", "validate"
]

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
        if art.stdout and art.stdout not in art.outputs:
            raise ManifestError(path, f"{where}.stdout", f"{art.stdout!r} is not one of its "
                                f"outputs ({', '.join(art.outputs)}): the file the command's "
                                f"standard output is written to")
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
        if fac.releases is not None:
            _check_releases(name, fac, path)
    for i, art in enumerate(case.artifacts):
        used_per = [d for d in art.dependencies() if d in names and case.artifact(d).per]
        if used_per and not art.per:
            raise ManifestError(path, f"artifacts[{i}].command",
                                f"uses {used_per[0]!r}, which is built per release: only its "
                                "trials see it (ctx.artifacts)")
        if art.per:
            per_fac = case.factors.get(art.per)
            if per_fac is None or per_fac.releases is None:
                raise ManifestError(path, f"artifacts[{i}].per",
                                    f"{art.per!r} is not a factor of toolchain releases "
                                    "(Factor(..., releases=Releases(...)))")
            if any(case.artifact(d).per for d in art.dependencies() if d in names):
                raise ManifestError(path, f"artifacts[{i}].command",
                                    "an artifact built per release cannot use another one")
            if per_fac.releases.tool not in art.placeholders():
                raise ManifestError(path, f"artifacts[{i}].command",
                                    f"never names {{{per_fac.releases.tool}}}, the release's program")

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
    if case.check is not None and "wrong_result" not in case.failure_outcomes:
        # Otherwise its claims, plots and the bisection's pass/fail class count every wrong
        # answer its check finds as a pass.
        raise ManifestError(path, "failure_outcomes",
                            f"the case declares a check ({case.check.kind}), so a wrong_result "
                            f"is one of its failures: add 'wrong_result' to failure_outcomes "
                            f"(now {', '.join(case.failure_outcomes)})")
    _check_defaults(case.defaults, path)
    _check_output_check(case, path)
    if case.axes:
        # An axis's artifact may be one release's build of an artifact built per release.
        built = {a.built_name(lv) for a in case.artifacts if a.per
                 for lv in case.factors[a.per].levels}
        check_axes(case.axes, names | built, seen, path)
        for name, ax in case.axes.items():
            if isinstance(ax, RuntimeAxis):
                check_runtime_axis(name, ax, case.runtime.releases if case.runtime else {},
                                   case.resolved_arms(), path)
    if not _COUNTER.match(case.exposure.counter or ""):
        raise ManifestError(path, "exposure.counter",
                            f"{case.exposure.counter!r} is not a counter name (letters, digits, _)")
    if not (isinstance(case.exposure.per, (int, float)) and math.isfinite(case.exposure.per)
            and case.exposure.per > 0):
        raise ManifestError(path, "exposure.per", f"must be a positive number, got {case.exposure.per!r}")
    if not isinstance(case.exposure.opportunity, bool):
        raise ManifestError(path, "exposure.opportunity",
                            f"must be True or False, got {case.exposure.opportunity!r}")
    for outcome in case.exposure.per_trial_outcomes:
        if outcome not in OUTCOMES or outcome == "survived":
            raise ManifestError(path, "exposure.per_trial_outcomes",
                                f"{outcome!r} is not a failing outcome ({', '.join(OUTCOMES[1:])})")
    if not case.devices.targets:
        raise ManifestError(path, "devices.targets", "names no compute capability")
    for target in case.toolchains:
        if target != "*" and target not in set(case.devices.targets.values()):
            raise ManifestError(path, f"toolchains.{target}", "is not a target in devices")
    _check_tools(case, path)
    _check_runtime(case, seen, path)


_RELEASE = re.compile(r"^[0-9]+(?:\.[0-9]+)*$")


def _check_releases(name: str, fac: Any, path: Path | str) -> None:
    """A factor of toolchain releases: a program name, families, final-release levels."""
    rel = fac.releases
    where = f"factors.{name}.releases"
    if not isinstance(rel, Releases):
        raise ManifestError(path, where, "must be a gpurepro.case.Releases")
    if not rel.tool or "/" in rel.tool or not re.match(r"^[a-z_]+$", rel.tool):
        raise ManifestError(path, f"{where}.tool", f"{rel.tool!r} is not a program name")
    if not rel.families:
        raise ManifestError(path, f"{where}.families", "names no package")
    for i, fam in enumerate(rel.families):
        check_family(fam, f"{where}.families[{i}]", path)
    for level in fac.levels:
        if not isinstance(level, str) or not _RELEASE.match(level):
            raise ManifestError(path, f"factors.{name}.levels",
                                f"{level!r} is not a final release (N.N.N)")


def _check_runtime(case: Case, arms: set[str], path: Path | str) -> None:
    rt = case.runtime
    if rt is None:
        return
    if not isinstance(rt, Runtime):
        raise ManifestError(path, "runtime", "must be a gpurepro.case.Runtime")
    for key, pins in rt.packages.items():
        if key != "*" and key not in arms:
            raise ManifestError(path, f"runtime.packages.{key}", "is neither '*' nor an arm")
        if isinstance(pins, str):
            raise ManifestError(path, f"runtime.packages.{key}", "must be a list of pins")
        for i, pin in enumerate(pins):
            if not isinstance(pin, str) or not RUNTIME_PIN.match(pin):
                raise ManifestError(path, f"runtime.packages.{key}[{i}]",
                                    f"{pin!r} is not an exact pin (name==version)")
    for i, name in enumerate(rt.from_node):
        if not isinstance(name, str) or not _DIST_NAME.match(name):
            raise ManifestError(path, f"runtime.from_node[{i}]", f"{name!r} is not a package name")
    for factor, package in dict(rt.releases).items():
        if factor not in case.factors:
            raise ManifestError(path, f"runtime.releases.{factor}", "is not a factor of the case")
        if not isinstance(package, str) or not _DIST_NAME.match(package):
            raise ManifestError(path, f"runtime.releases.{factor}",
                                f"{package!r} is not a package name")
    if rt.python is not None and not re.match(r"^3\.[0-9]+$", str(rt.python)):
        raise ManifestError(path, "runtime.python", f"{rt.python!r} is not a version like 3.12")
    if not rt.platforms:
        raise ManifestError(path, "runtime.platforms", "names no platform tag")


_DIST_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


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
        if c.kind in TIMED_KINDS and not (isinstance(c.margin, (int, float)) and 0 < c.margin < 1):
            raise ManifestError(path, f"{where}.margin",
                                f"a {c.kind} claim's margin is a fraction in (0, 1) (0.05: 5 %), "
                                f"got {c.margin!r}")
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
    main = case.main_question
    if not isinstance(main, tuple) or not all(isinstance(n, str) for n in main):
        raise ManifestError(path, "main_question", "must be a tuple of claim names")
    for j, name in enumerate(main):
        if name not in names:
            raise ManifestError(path, f"main_question[{j}]", f"{name!r} is not one of the case's claims")
    if len(set(main)) != len(main):
        raise ManifestError(path, "main_question", "names a claim twice")
    _check_conclusion(case, names, path)


def _check_conclusion(case: Case, claims: set[str], path: Path | str) -> None:
    """A verdict function or a Conclusion, and every claim a Conclusion names is the case's."""
    c = case.conclusion
    if case.verdict is None and c is None:
        raise ManifestError(path, "conclusion", "give a Conclusion (which claims establish the "
                            "reproduction, the owner, the workaround) or a verdict function")
    if c is None:
        return
    if not isinstance(c, Conclusion):
        raise ManifestError(path, "conclusion", "must be a gpurepro.case.Conclusion")
    if not c.reproduces:
        raise ManifestError(path, "conclusion.reproduces", "names no claim: which claims "
                            "establish that the report's failure happens?")
    for field_name in ("reproduces", "owner_because", "workaround", "next",
                       "next_not_reproduced"):
        value = getattr(c, field_name)
        if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
            raise ManifestError(path, f"conclusion.{field_name}", "must be a tuple of strings")
    for field_name in ("reproduces", "owner_because", "workaround"):
        for j, name in enumerate(getattr(c, field_name)):
            if name not in claims:
                raise ManifestError(path, f"conclusion.{field_name}[{j}]",
                                    f"{name!r} is not one of the case's claims")
    for where, hypotheses in (("conclusion.hypotheses", c.hypotheses),
                              ("conclusion.declared.hypotheses",
                               c.declared.hypotheses if c.declared else ())):
        for j, h in enumerate(hypotheses):
            if not isinstance(h, Hypothesis):
                raise ManifestError(path, f"{where}[{j}]",
                                    "must be a gpurepro.case.hypotheses.Hypothesis")
            for name in h.claims():
                if name not in claims:
                    raise ManifestError(path, f"{where}[{j}]",
                                        f"{name!r} is not one of the case's claims")
    if bool(c.owner) != bool(c.owner_because):
        raise ManifestError(path, "conclusion.owner_because" if c.owner else "conclusion.owner",
                            "an owner is named from the claims that show it: give both or "
                            "neither")


_COUNTER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TOOL_NAME = re.compile(r"^[a-z][a-z0-9_+-]*$")
_RESERVED_PLACEHOLDERS = {"python", "case", "native", "out", "arch", "virtual_arch", "nvcc_lib"}


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
    if d.hang_after_s is not None:
        number("hang_after_s", d.hang_after_s, 0, True, False)


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


# How long a manifest's import may take (seconds): one that loops is stopped and named.
IMPORT_LIMIT_VARIABLE = "GPUREPRO_MANIFEST_IMPORT_LIMIT_S"
IMPORT_LIMIT_S = 30.0


def import_limit_s() -> float:
    try:
        value = float(os.environ.get(IMPORT_LIMIT_VARIABLE, IMPORT_LIMIT_S))
    except ValueError:
        return IMPORT_LIMIT_S
    return value if value > 0 and math.isfinite(value) else IMPORT_LIMIT_S


class _ImportTimedOut(BaseException):
    """Raised in a manifest's import at its time limit (a BaseException: a manifest's own
    ``except Exception`` does not swallow it)."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """SIGALRM after ``seconds`` raises _ImportTimedOut in the import. Only where this is the
    main thread and no one else uses the real-time timer (a signal handler runs only in the
    main thread); elsewhere the import runs without a limit."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, signal.SIG_IGN)
            or signal.getitimer(signal.ITIMER_REAL)[0] > 0):
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise _ImportTimedOut()

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _ExitedAtImport(BaseException):
    """A manifest called ``os._exit`` at import (a BaseException, as _ImportTimedOut)."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


@contextlib.contextmanager
def _no_process_exit() -> Iterator[None]:
    """``os._exit`` raises instead of ending the process while a manifest imports: it would
    end the command at once, no line said and its status the manifest's (0: success)."""
    real = os._exit

    def refuse(code: int) -> NoReturn:
        raise _ExitedAtImport(code)

    os._exit = refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        os._exit = real


def load_case(name_or_path: str | Path, root: Path | None = None) -> Case:
    """Import a manifest file, validate it and return its Case."""
    path = find_case(name_or_path, root).resolve()
    spec = importlib.util.spec_from_file_location(f"gpurepro_case_{path.parent.name}", path)
    if spec is None or spec.loader is None:
        raise ManifestError(path, "file", "cannot be imported")
    module = importlib.util.module_from_spec(spec)
    limit = import_limit_s()
    try:
        with _time_limit(limit), _no_process_exit():
            spec.loader.exec_module(module)
    except (ManifestError, Stopped):
        raise  # a stop signal that lands while the manifest imports stops the command
    except _ExitedAtImport as exc:
        raise ManifestError(path, "file", f"exits at import (os._exit({exc.code!r})); a "
                            f"manifest defines CASE and returns") from None
    except _ImportTimedOut:
        raise ManifestError(path, "file", f"did not finish importing within {limit:g} s (a loop "
                            f"at import?); a manifest is data, imported in well under a "
                            f"second ({IMPORT_LIMIT_VARIABLE} sets the limit)") from None
    except SystemExit as exc:  # sys.exit() at import would end the command, status 0 and silent
        raise ManifestError(path, "file", f"exits at import (SystemExit({exc.code!r})); a "
                            f"manifest defines CASE and returns") from None
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


@functools.cache
def checkout_targets(name: str, root: Path) -> list[str] | None:
    """The build targets (the device table) of case ``name`` in the checkout at ``root``;
    None where it has no such case, or its manifest does not load."""
    if not (root / "cases" / name / "manifest.py").is_file():
        return None
    try:
        case = load_case(name, root)
    except (ManifestError, OSError):
        return None
    return sorted(set(case.devices.targets.values()))
