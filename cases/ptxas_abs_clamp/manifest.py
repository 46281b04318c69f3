"""Case ptxas_abs_clamp: ptxas drops the abs() that feeds a clamp on sm_90 (NVIDIA bug 4826023).

Report: jax-ml/jax PR 24438 (sph_harm gave wrong results on compute capability 9.0 with CUDA
12.5.0 to 12.6.2), openxla/xla PR 19927, NVIDIA/JAX-Toolbox PR 1184/1185 (fixed in CUDA 12.6.3).
Question: which ptxas releases compile clamp(abs(m), 0, 5) as if it were clamp(m, 0, 5) for
sm_90, do those cubins return wrong results on a Hopper GPU, and do the releases on either side
of the two boundaries return the reference?

One PTX (nvcc 13.3 -arch=sm_90 -ptx on kernel.cu, its .version lowered to 8.0 by
lower_ptx_version.py) compiled by each arm's ptxas release with -arch=sm_90 -O3 (compile_cubin.py):
the ``ptxas`` factor's levels are releases of nvidia-cuda-nvcc-cu12 (12.x) then nvidia-cuda-nvcc
(13.x), which the harness resolves, locks (locks/releases/ptxas_abs_clamp.json) and builds the
``cubin`` artifact with, per arm. The arms' releases are the boundaries measured on the CPU
(releases.cpu.json) and the bisection over the ``ptxas`` axis confirms on the GPU (gpurepro
bisect ptxas_abs_clamp --axis ptxas). A trial
is driver.py: one process, three launches, every output element checked against the host's
reference (Case.check, exact): a mismatch is a wrong_result. Standard library + gpurepro only:
imported on GPU nodes with no network.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gpurepro.case import (
    Arm,
    Artifact,
    Axis,
    Case,
    Claim,
    Defaults,
    Devices,
    Exposure,
    Factor,
    Family,
    OutputCheck,
    Releases,
    Runtime,
    TrialCommand,
    TrialContext,
    load_sibling,
)

_verdict = load_sibling(__file__, "verdict")

TARGET = "sm_90"
# nvcc 13.3.73 and its family (as tile_unload_race pins it for Hopper) write the PTX; its ptxas
# is the CUDA 13 arm. The disassemblers exist on PyPI from 13.2.51 on; nvdisasm 13.2.51 reads
# every cubin of the arms (cuobjdump 13.2.51 does not read those of ptxas 12.0.76 ... 12.3.52).
PINS = (
    "nvidia-cuda-nvcc==13.3.73",
    "nvidia-nvvm==13.3.73",
    "nvidia-cuda-crt==13.3.73",
    "nvidia-cuda-runtime==13.3.29",
    "nvidia-cuda-cuobjdump==13.2.51",
    "nvidia-cuda-nvdisasm==13.2.51",
)
CU12 = "nvidia-cuda-nvcc-cu12"
PINNED_PTXAS = "13.3.73"
# ptxas release -> (arm, what releases.cpu.json measured there). Every release of the package
# between 12.0.76 and 12.9.86 was compiled; these are the two boundaries and the ends.
PTXAS = Releases("ptxas", (Family(CU12, ">=12.0,<13"), Family("nvidia-cuda-nvcc", ">=13")))
RELEASES = {
    "12.4.131": ("last-good", "the last release with IABS before the clamp (CUDA 12.4.1)"),
    "12.5.40": ("first-bad", "the first release without it (CUDA 12.5.0)"),
    "12.6.77": ("last-bad", "the last release without it (CUDA 12.6.2), the report's reproduction"),
    "12.6.85": ("first-fixed", "the first release with it again (CUDA 12.6.3)"),
    "12.9.86": ("newest-12", "the newest nvidia-cuda-nvcc-cu12 release"),
    PINNED_PTXAS: ("cuda-13", "the ptxas of the pinned nvidia-cuda-nvcc 13.3.73"),
}
# What driver.py imports in every trial: cuda.bindings as the H200 image has it (13.3.1, what
# every committed trial's check record reports) and the cuda-pathfinder it requires, at the
# version the same image's ctx_get_device_v2 run recorded; carried as wheels for the node's
# Python (build/runtime), so a machine without that image runs the same bindings.
RUNTIME = Runtime(packages={"*": ["cuda-bindings==13.3.1", "cuda-pathfinder==1.9.1"]})
KERNELS = ("abs_clamp", "abs_only", "clamp_only")
LAUNCHES = 3  # per trial, each checked; the budget's max_exposure overrides it
RANDOM_INPUTS = 4096  # seeded inputs after the report's six, per launch
_GXX = ("{gxx}", "-O2", "-pthread", "-std=c++17", "-fno-omit-frame-pointer",
        "-static-libstdc++", "-static-libgcc")


def cubin_artifact(release: str) -> str:
    return f"cubin_{release}"


ARTIFACTS = [
    Artifact(
        name="crash_preload",
        description=("the crash handler as an LD_PRELOAD object: the driver's native crash "
                     "record, written before faulthandler's Python frames"),
        command=(*_GXX, "-shared", "-fPIC", "-fvisibility=hidden", "-Wl,--exclude-libs,ALL",
                 "native/crash_preload.cc", "native/crash.cc", "native/events.cc",
                 "-o", "{out}/libgpurepro_crash.so", "-ldl"),
        outputs=("libgpurepro_crash.so",),
        sources=("native/crash_preload.cc", "native/crash.cc", "native/events.cc",
                 "native/crash.h", "native/events.h", "native/cuda_types.h"),
        tools=("gxx",),
    ),
    Artifact(
        name="ptx",
        description="kernel.cu -> PTX with the pinned nvcc (.version 9.3)",
        command=("{nvcc}", "-arch={arch}", "-ptx", "-o", "{out}/kernel.ptx", "{case}/kernel.cu"),
        outputs=("kernel.ptx",),
        sources=("kernel.cu",),
        tools=("nvcc",),
    ),
    Artifact(
        name="ptx_lowered",
        description="the PTX with .version 8.0, which every ptxas from CUDA 12.0 on accepts",
        command=("{python}", "{case}/lower_ptx_version.py", "{artifact:ptx}/kernel.ptx",
                 "{out}/kernel.ptx", "--to", "8.0"),
        outputs=("kernel.ptx",),
        sources=("lower_ptx_version.py",),
    ),
    Artifact(
        name="cubin", per="ptxas",
        description=f"the arm's ptxas release, -arch={TARGET} -O3, on the lowered PTX; sass.json beside it",
        command=("{python}", "{case}/compile_cubin.py", "{ptxas}",
                 "--ptx", "{artifact:ptx_lowered}/kernel.ptx", "--arch", "{arch}",
                 "--nvdisasm", "{nvdisasm}", "--out", "{out}/kernel.cubin"),
        outputs=("kernel.cubin", "sass.json"),
        sources=("compile_cubin.py", "sass_facts.py"),
        tools=("nvdisasm",),
    ),
]

FACTORS = {
    "ptxas": Factor(tuple(RELEASES), "12.6.77", "the ptxas release that compiled the cubin",
                    releases=PTXAS),
    "kernel": Factor(KERNELS, "abs_clamp",
                     "abs_clamp (the report's index), abs_only (no clamp), clamp_only (no abs)"),
}

ARMS = [
    *[Arm(arm, {"ptxas": release}, f"ptxas {release}: {why}")
      for release, (arm, why) in RELEASES.items()],
    Arm("control-abs-only", {"kernel": "abs_only"},
        "ptxas 12.6.77, the kernel without the clamp: the abs alone"),
    Arm("control-clamp-only", {"kernel": "clamp_only"},
        "ptxas 12.6.77, the kernel without the abs: the clamp alone"),
]
BASELINE = "last-bad"

# ---------------------------------------------------------------------------------- claims
# A trial is the unit (a wrong answer is a property of a trial): the outcome claims count
# trials, with the share's exact interval; the boundary claims compare the shares of failing
# trials of two arms (Fisher's exact test, unit="trial"). With 12 trials per arm, 12 of 12 gives
# p = 2 * 0.5^12 = 0.0005 against Holm's smallest threshold 0.05 / 10 = 0.005.
_COUNT = "{count} of {n} valid trials"


def _wrong(arm: str, release: str) -> Claim:
    return Claim(
        f"{arm}-wrong", arm=arm, kind="outcome", outcome="wrong_result", share=0.5,
        supported=f"ptxas {release} ({{arm}}) miscompiles clamp(abs(m), 0, 5) for sm_90: "
                  f"wrong results in {_COUNT} (95% CI of the share {{share_ci}}).",
        contradicted=f"ptxas {release} ({{arm}}) does not give wrong results in most trials: "
                     f"{_COUNT} wrong.",
        not_decided=f"Whether ptxas {release} ({{arm}}) gives wrong results in most trials is not "
                    f"decided: {_COUNT} wrong.")


def _never_wrong(arm: str, release: str) -> Claim:
    return Claim(
        f"{arm}-never-wrong", arm=arm, kind="outcome", outcome="wrong_result", share=0.5,
        bound="below",
        supported=f"ptxas {release} ({{arm}}) compiles clamp(abs(m), 0, 5) right: wrong results "
                  f"in {_COUNT} (95% CI of the share {{share_ci}}).",
        contradicted=f"ptxas {release} ({{arm}}) gives wrong results in {_COUNT}: not fewer "
                     f"than half.",
        not_decided=f"Whether ptxas {release} ({{arm}}) gives wrong results in fewer than half "
                    f"of its trials is not decided: {_COUNT} wrong.")


def _right(arm: str, what: str) -> Claim:
    return Claim(
        f"{arm}-right", arm=arm, kind="outcome", outcome="survived", share=0.5,
        supported=f"{what} ({{arm}}) returns the reference: every element right in {_COUNT} "
                  f"(95% CI of the share {{share_ci}}).",
        contradicted=f"{what} ({{arm}}) does not return the reference in most trials: right in "
                     f"{_COUNT}.",
        not_decided=f"Whether {what} ({{arm}}) returns the reference is not decided: right in "
                    f"{_COUNT}.")


def _boundary(name: str, arm: str, reference: str, kind: str, sentence: str) -> Claim:
    counts = ("{arm}: {count} of {n} trials failed; {reference}: {reference_count} of "
              "{reference_n}")
    return Claim(
        name, arm=arm, reference=reference, kind=kind, unit="trial",
        supported=f"{sentence}: {counts}.",
        contradicted=f"Contrary to the boundary the SASS shows: {counts}.",
        not_decided=f"Whether {sentence[0].lower() + sentence[1:]} is not decided: {counts}.")


CLAIMS = [
    _wrong("first-bad", "12.5.40"),
    _wrong("last-bad", "12.6.77"),
    _never_wrong("last-good", "12.4.131"),
    _never_wrong("first-fixed", "12.6.85"),
    _right("newest-12", "ptxas 12.9.86"),
    _right("cuda-13", f"ptxas {PINNED_PTXAS}"),
    _right("control-abs-only", "The abs without the clamp, ptxas 12.6.77"),
    _right("control-clamp-only", "The clamp without the abs, ptxas 12.6.77"),
    _boundary("breaks-at-12-5", "first-bad", "last-good", "higher",
              "ptxas 12.5.40 (first-bad) fails in more trials than 12.4.131 (last-good)"),
    _boundary("fixed-at-12-6-85", "first-fixed", "last-bad", "lower",
              "ptxas 12.6.85 (first-fixed) fails in fewer trials than 12.6.77 (last-bad)"),
]
FAILURES = ("wrong_result", "cuda_error", "crashed", "hung")

# ---------------------------------------------------------------------------------- the axis
# Every nvidia-cuda-nvcc-cu12 release PyPI lists from 12.0 to before 13, each release's ptxas
# out of its wheel on the same lowered PTX with the arms' flags (compile_cubin.FLAGS: the same
# argv, so the same cubins); each distinct cubin stands in for the last-bad arm's (abs_clamp)
# on the GPU. The SASS fact that segments the search: an IABS in abs_clamp.
AXES = {
    "ptxas": Axis(
        package=CU12, versions=">=12.0,<13", tool="ptxas",
        build=("{tool}", "-arch={arch}", "-O3", "{artifact:ptx_lowered}/kernel.ptx",
               "-o", "{out}/kernel.cubin"),
        output="kernel.cubin", artifact="cubin_12.6.77", arms=("last-bad",),
        watch=(("abs_clamp", "IABS"),), trials=3, jobs=3, duration_s=5.0, timeout_s=30.0,
        description="ptxas of every nvidia-cuda-nvcc-cu12 release on the lowered PTX, "
                    "-arch=sm_90 -O3: the abs_clamp kernel of the last-bad arm"),
    # The same on the PTX as nvcc 13.3 wrote it (.version 9.3): what a user who does not lower
    # it meets. ptxas 12.0.x dies of SIGSEGV, 12.1 ... 12.9 refuse it (exit status 255, naming
    # their newest ISA); the document records why each release could not build, and nothing
    # is left to run on a GPU.
    "ptxas-as-emitted": Axis(
        package=CU12, versions=">=12.0,<13", tool="ptxas",
        build=("{tool}", "-arch={arch}", "-O3", "{artifact:ptx}/kernel.ptx",
               "-o", "{out}/kernel.cubin"),
        output="kernel.cubin", artifact="cubin_12.6.77", arms=("last-bad",),
        watch=(("abs_clamp", "IABS"),), trials=3, jobs=3, duration_s=5.0, timeout_s=30.0,
        description="ptxas of every nvidia-cuda-nvcc-cu12 release on the PTX as emitted "
                    "(.version 9.3), -arch=sm_90 -O3"),
}


# ---------------------------------------------------------------------------------- trials


def trial_command(ctx: TrialContext) -> TrialCommand:
    f = ctx.factors
    cubin = ctx.artifacts["cubin"]
    launches = ctx.budget.max_exposure or LAUNCHES
    return ctx.python_driver(Path(ctx.case_dir) / "driver.py", "--cubin", str(cubin),
                             "--kernel", f["kernel"], "--launches", str(launches),
                             "--random", str(RANDOM_INPUTS),
                             preload=ctx.artifacts["crash_preload"])


def _sass(paths: Mapping[str, Path]) -> Mapping[str, Any]:
    """Each arm cubin's sass.json (nvdisasm's reading), by ptxas release."""
    import json

    by_release = {}
    for release in RELEASES:
        p = paths.get(cubin_artifact(release))
        sass = Path(p).parent / "sass.json" if p is not None else None
        if sass is not None and sass.is_file():
            by_release[release] = json.loads(sass.read_text())
    return {"available": bool(by_release), "by_ptxas": by_release}


BISECTION = "bisect_ptxas_[0-9]*.json"  # the ptxas axis's committed bisections, results/<case>/


def bisection_summary(docs: list[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The newest of the bisections whose GPU stage ran (one that bisected, before an
    exhaustive one): its boundaries, each between two adjacent releases, with what the GPU and
    the SASS showed; and whether the newest exhaustive bisection pins the same ones."""
    ran = [(name, d) for name, d in docs if (d.get("gpu") or {}).get("status") == "ran"]
    if not ran:
        return {"available": False,
                "reason": "no bisection document under results/ptxas_abs_clamp/ whose GPU stage ran"}
    searched = [(n, d) for n, d in ran if (d.get("gpu") or {}).get("mode") == "bisect"]
    exhaustive = [(n, d) for n, d in ran if (d.get("gpu") or {}).get("mode") == "exhaustive"]
    name, doc = (searched or ran)[-1]

    def pinned(d: Mapping[str, Any]) -> list[list[str]]:
        return [b["between"] for b in (d.get("boundaries") or {}).get("pinned") or []]

    out = []
    for b in (doc.get("boundaries") or {}).get("pinned") or []:
        changes = (b["sass"]["kernels"].get("abs_clamp") or {}).get("changes") or []
        out.append({"between": b["between"], "classes": b["classes"],
                    "not_built_between": b["not_built_between"], "watched": b["sass"]["watched"],
                    "abs_clamp_changes": changes[:1]})
    runs = [r for r in doc.get("runs") or [] if r.get("status") == "ran" and "same_as_point" not in r]
    summary = {"available": True, "document": name,
               "package": doc["axis"]["package"], "versions": doc["axis"]["versions"],
               "releases": len(doc["releases"]),
               "built": sum(1 for r in doc["releases"] if r.get("sha256")),
               "distinct": len(doc["artifacts"]), "runs": len(runs),
               "mode": (doc.get("gpu") or {}).get("mode"),
               "device": ((doc.get("gpu") or {}).get("device") or {}).get("name"),
               "boundaries": out, "open": (doc.get("boundaries") or {}).get("open") or []}
    if exhaustive and exhaustive[-1][0] != name:
        summary["exhaustive"] = {"document": exhaustive[-1][0],
                                 "same_boundaries": pinned(exhaustive[-1][1]) == pinned(doc),
                                 "runs": sum(1 for r in exhaustive[-1][1].get("runs") or []
                                             if r.get("status") == "ran" and "same_as_point" not in r)}
    return summary


def _bisection(paths: Mapping[str, Path]) -> Mapping[str, Any]:
    """The committed bisections over the ptxas axis (results/ptxas_abs_clamp/), summarized."""
    import json

    here = Path(__file__).resolve().parent
    found = sorted((here.parents[1] / "results" / here.name).glob(BISECTION))
    return bisection_summary([(f"results/{here.name}/{p.name}", json.loads(p.read_text()))
                              for p in found])


CASE = Case(
    name="ptxas_abs_clamp",
    question=(
        "Does ptxas drop the abs() of a gather index clamp(abs(m), 0, 5) on sm_90, so that "
        "negative indices read element 0; in which nvidia-cuda-nvcc-cu12 releases; and do the "
        "releases on either side of each boundary, and the kernel without the clamp or without "
        "the abs, return the reference on a Hopper GPU?"
    ),
    report_url="https://github.com/jax-ml/jax/pull/24438",
    toolchains={TARGET: PINS},
    artifacts=ARTIFACTS,
    factors=FACTORS,
    arms=ARMS,
    baseline=BASELINE,
    trial_command=trial_command,
    verdict=_verdict.verdict,
    devices=Devices(
        targets={"9.0": TARGET},
        why="the miscompile is reported for compute capability 9.0 (NVIDIA bug 4826023); the "
            "cubins hold sm_90 SASS, which only a 9.0 device runs",
    ),
    exposure=Exposure(counter="launches", unit="launches"),
    # One process per trial: load, three launches of 4102 elements, check, exit (well under a
    # second); a miscompile is no race, so four trials at a time: 96 trials in about 15 s.
    defaults=Defaults(trials_per_arm=12, duration_s=5.0, trial_timeout_s=30.0,
                      max_exposure=LAUNCHES, jobs=4),
    failure_outcomes=FAILURES,
    check=OutputCheck("exact"),
    analyses={"sass": _sass, "bisection": _bisection},
    claims=CLAIMS,
    axes=AXES,
    runtime=RUNTIME,
)
