"""Case fa3_wgmma_wait: which ptxas releases make FlashAttention-3's inner loop slower on
sm_90a by injecting a wgmma wait, and by how much?

Report: Dao-AILab/flash-attention issues 1243 (ptxas 12.5 and 12.6 print C7517, "warpgroup.wait
is injected", and serialize the wgmma pipeline against the softmax) and 1323 (FA3 built with
12.6 about 12 % below 12.4). One PTX (kernel.cu, FA3's loop small enough to read, by the pinned
nvcc, its .version set to 8.0 so that every release reads it) compiled by each arm's ptxas
release (the ``ptxas`` factor: releases of nvidia-cuda-nvcc-cu12, then nvidia-cuda-nvcc; locked
in locks/releases/fa3_wgmma_wait.json). Arms: the releases around the C7517 ones that
wait_placement.cpu.json measured on the CPU (12.4.131 before, 12.5.82 and 12.6.20 with it,
12.6.85 after), `overlap` (13.3.73, wait_group 1: the softmax of the next key block runs while
O += P V computes), `serialized` (13.3.73, wait_group 0 by hand: what full serialization
costs), `overlap-again` (the `overlap` cubin timed as a second arm: the noise of one cubin
across trials), and `serialized-<release>` (the control through each release: a kernel with no
wait left to inject, against the pinned release's `serialized`). A trial is driver.py: one process, warm-up repetitions, then repetitions of
many launches timed with CUDA events, the output checked against numpy.
"""

from __future__ import annotations

from pathlib import Path

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

TARGET = "sm_90a"  # wgmma needs the architecture-specific target
PINS = (
    "nvidia-cuda-nvcc==13.3.73",
    "nvidia-nvvm==13.3.73",
    "nvidia-cuda-crt==13.3.73",
    "nvidia-cuda-runtime==13.3.29",
    "nvidia-cuda-cuobjdump==13.2.51",
    "nvidia-cuda-nvdisasm==13.2.51",
)
# What driver.py imports on the GPU node (Python 3.12, no network): cuda.bindings, numpy for the
# inputs and the reference, pynvml to read the GPU's clocks, temperature and power.
RUNTIME = Runtime(packages={"*": ["cuda-bindings==13.3.1", "cuda-pathfinder==1.9.1",
                                  "numpy==2.3.5", "nvidia-ml-py==13.615.71"]})
WAITS = {"overlap": 1, "serialized": 0}  # the kernel's WAIT_PENDING
ITERS = 512  # key blocks per launch: about 0.1 ms of loop per launch, per SM
TIMING = ("--warmups", "5", "--repeats", "20", "--loops", "20")
# Margins (fractions), against the noise the first H200 run measured between two arms of one
# cubin: overlap-again / overlap 0.999, 95% CI 0.997-1.001, every trial within 0.5% of its arm's
# median (results/fa3_wgmma_wait/20261204T032055Z-befaa2). `same` within 2% is ten times that
# interval's half-width; `slower` by 5% is half what serializing by hand costs there (1.093).
SAME_MARGIN = 0.02
SLOWER_MARGIN = 0.05
_GXX = ("{gxx}", "-O2", "-pthread", "-std=c++17", "-fno-omit-frame-pointer",
        "-static-libstdc++", "-static-libgcc")


def _ptx(kernel: str) -> Artifact:
    return Artifact(
        name=f"ptx_{kernel}",
        description=f"kernel.cu -> PTX with the pinned nvcc, WAIT_PENDING={WAITS[kernel]}",
        command=("{nvcc}", "-arch={arch}", "-ptx", f"-DWAIT_PENDING={WAITS[kernel]}",
                 "-o", "{out}/kernel.ptx", "{case}/kernel.cu"),
        outputs=("kernel.ptx",), sources=("kernel.cu",), tools=("nvcc",))


def _lowered(kernel: str) -> Artifact:
    return Artifact(
        name=f"ptx80_{kernel}",
        description=f"the {kernel} PTX with .version 8.0 (CUDA 12.0's ISA holds every "
                    f"instruction it uses), so that every release's ptxas reads it",
        command=("{python}", "{case}/set_ptx_version.py", "8.0",
                 f"{{artifact:ptx_{kernel}}}/kernel.ptx", "{out}/kernel.ptx"),
        outputs=("kernel.ptx",), sources=("set_ptx_version.py",))


def _cubin(kernel: str) -> Artifact:
    return Artifact(
        name=f"cubin_{kernel}", per="ptxas",
        description=f"the {kernel} PTX (.version 8.0) -> cubin with the arm's ptxas release, -O3",
        command=("{ptxas}", "-arch={arch}", "-O3", f"{{artifact:ptx80_{kernel}}}/kernel.ptx",
                 "-o", "{out}/kernel.cubin"),
        outputs=("kernel.cubin",))


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
    *[a for k in WAITS for a in (_ptx(k), _lowered(k), _cubin(k))],
]

PTXAS = Releases("ptxas", (Family("nvidia-cuda-nvcc-cu12", ">=12.0,<13"),
                           Family("nvidia-cuda-nvcc", ">=13")))
# ptxas release -> (arm, what wait_placement.cpu.json measured there on the overlap PTX).
RELEASES = {
    "12.4.131": ("ptxas-12-4-131", "no C7517; the softmax between the waits"),
    "12.5.82": ("ptxas-12-5-82", "C7517; a wait_group 0 injected before the softmax"),
    "12.6.20": ("ptxas-12-6-20", "C7517; a wait_group 0 injected before the softmax"),
    "12.6.85": ("ptxas-12-6-85", "no C7517; the softmax between the waits"),
}
PINNED = "13.3.73"  # the pinned nvcc's own ptxas release: overlap, serialized, overlap-again
# The releases that print C7517 and inject a wait_group 0 before the softmax (the CPU facts).
INJECTED = ("ptxas-12-5-82", "ptxas-12-6-20")
# The first H200 run's times against `overlap`: slower by about 9%, or within 1%.
SLOW, FAST = ("ptxas-12-4-131", "ptxas-12-5-82"), ("ptxas-12-6-20", "ptxas-12-6-85")

CONTROLS = tuple(f"serialized-{release.replace('.', '-')}" for release in RELEASES)

FACTORS = {"kernel": Factor(tuple(WAITS), "overlap",
                            "overlap: wait_group 1 before the softmax; serialized: wait_group 0"),
           "ptxas": Factor((*RELEASES, PINNED), PINNED,
                           "the ptxas release that compiles the PTX", releases=PTXAS)}
ARMS = [
    *[Arm(arm, {"ptxas": release}, f"the overlap PTX by ptxas {release}: {measured}")
      for release, (arm, measured) in RELEASES.items()],
    Arm("overlap", {}, f"ptxas {PINNED}, wait_group 1: the softmax overlaps O += P V"),
    Arm("serialized", {"kernel": "serialized"},
        f"ptxas {PINNED}, wait_group 0 in place of 1: the hand-serialized control"),
    Arm("overlap-again", {},
        "the overlap cubin timed as a second arm: the noise between trials of one cubin"),
    # The control through each release: a kernel that already waits for both groups leaves ptxas
    # no wait to inject, so a release that slows it slows something other than the overlap.
    *[Arm(arm, {"kernel": "serialized", "ptxas": release},
          f"the serialized PTX by ptxas {release}: the control through that release")
      for release, arm in zip(RELEASES, CONTROLS, strict=True)],
]
BASELINE = "overlap"

# The bisection over every release (python -m gpurepro bisect fa3_wgmma_wait --axis ptxas): each
# release's ptxas on the overlap PTX stands in for 12.6.85's cubin in that arm, timed in every run
# beside `overlap` (13.3.73's own cubin), and the class of each release is a claim on their ratio
# with this case's margins. Segments: the waits ptxas leaves (DEPBAR.LE ... 0x0: one more where a
# wait is injected), registers and spill bytes (cuobjdump -res-usage, ptxas -v), and whether the
# build printed C7517.
AXES = {"ptxas": Axis(
    package="nvidia-cuda-nvcc-cu12", versions=">=12.0,<13", families=PTXAS.families, tool="ptxas",
    build=("{tool}", "-arch={arch}", "-O3", "-v", "{artifact:ptx80_overlap}/kernel.ptx",
           "-o", "{out}/kernel.cubin"),
    output="kernel.cubin", artifact="cubin_overlap_12.6.85", arms=("ptxas-12-6-85",),
    watch=(("attention", "#WARPGROUP.DEPBAR.LE gsb0, 0x0"), ("attention", "res:REG"),
           ("attention", "res:SPILL_STORES"), ("*", "msg:C7517")),
    reference="overlap", slower=SLOWER_MARGIN, same=SAME_MARGIN, trials=4, jobs=1,
    duration_s=30.0, timeout_s=120.0,
    description="ptxas of every nvidia-cuda-nvcc-cu12 and nvidia-cuda-nvcc release on the "
                "overlap PTX (.version 8.0), -arch=sm_90a -O3, timed against overlap")}

_COUNT = "{count} of {n} valid trials"


def _right(arm: str) -> Claim:
    return Claim(
        f"{arm}-right", arm=arm, kind="outcome", outcome="survived", share=0.5,
        supported=f"{{arm}} returns numpy's attention within the tolerance in {_COUNT} (95% CI "
                  f"of the share {{share_ci}}).",
        contradicted=f"{{arm}} does not return numpy's attention in most trials: {_COUNT}.",
        not_decided=f"Whether {{arm}} returns numpy's attention is not decided: {_COUNT}.")


CLAIMS = [
    Claim("overlap-again-same", arm="overlap-again", reference="overlap", kind="same",
          margin=SAME_MARGIN),
    Claim("serialized-slower", arm="serialized", reference="overlap", kind="slower",
          margin=SLOWER_MARGIN),
    # Each release against the pinned 13.3.73's `overlap`, in the direction the first H200 run
    # (results/fa3_wgmma_wait/20261204T032055Z-befaa2) measured: 12.4.131 and 12.5.82 about 9%
    # slower, 12.6.20 and 12.6.85 within 1%; then the boundary between 12.5.82 and 12.6.20.
    *[Claim(f"{arm}-slower", arm=arm, reference="overlap", kind="slower", margin=SLOWER_MARGIN)
      for arm in SLOW],
    *[Claim(f"{arm}-same", arm=arm, reference="overlap", kind="same", margin=SAME_MARGIN)
      for arm in FAST],
    Claim("faster-from-12-6-20", arm="ptxas-12-6-20", reference="ptxas-12-5-82", kind="faster",
          margin=SLOWER_MARGIN),
    # The control the same through every release as through the pinned one: no release can slow
    # a kernel that waits for both groups by hand (the premise, tested here).
    *[Claim(f"{arm}-same", arm=arm, reference="serialized", kind="same", margin=SAME_MARGIN)
      for arm in CONTROLS],
    *[_right(a.name) for a in ARMS],
]


def trial_command(ctx: TrialContext) -> TrialCommand:
    cubin = ctx.artifacts[f"cubin_{ctx.factors['kernel']}"]
    return ctx.python_driver(Path(ctx.case_dir) / "driver.py", "--cubin", str(cubin),
                             "--iters", str(ITERS), *TIMING, *ctx.check_arguments(),
                             preload=ctx.artifacts["crash_preload"])


CASE = Case(
    name="fa3_wgmma_wait",
    question=(
        "Which ptxas releases make FlashAttention-3's inner loop slower on sm_90a than 12.4 "
        "does, by how much, and how much does waiting for both wgmma groups (wait_group 0) "
        "by hand cost against two timings of one cubin?"
    ),
    report_url="https://github.com/Dao-AILab/flash-attention/issues/1243",
    toolchains={TARGET: PINS},
    artifacts=ARTIFACTS,
    factors=FACTORS,
    arms=ARMS,
    baseline=BASELINE,
    trial_command=trial_command,
    verdict=_verdict.verdict,
    devices=Devices(targets={"9.0": TARGET},
                    why="wgmma is sm_90a's: only a compute capability 9.0 device runs it"),
    exposure=Exposure(counter="launches", unit="launches"),
    # Timed trials one at a time (two would share the GPU); each about 2 s, mostly Python's start.
    defaults=Defaults(trials_per_arm=12, duration_s=30.0, trial_timeout_s=120.0, jobs=1),
    failure_outcomes=("wrong_result", "cuda_error", "crashed", "hung"),
    check=OutputCheck("tolerance", rel=2e-2, abs=2e-3),
    claims=CLAIMS,
    runtime=RUNTIME,
    axes=AXES,
)
