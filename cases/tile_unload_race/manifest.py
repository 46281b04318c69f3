"""Case tile_unload_race: host SIGSEGV in cuLaunchKernel with a concurrent cuModuleUnload.

Report: NVIDIA/cuda-tile issue 23 (RTX 5090, sm_120, driver 595.84, CUDA 13.2, cuda-tile 1.5.0).
Question: is the crash attributable to cuda-tile, and if not, who owns it?
"""

from __future__ import annotations

from gpurepro.building.elf_analysis import sections_analysis
from gpurepro.case import (
    Arm,
    Artifact,
    Case,
    Claim,
    Defaults,
    Devices,
    Exposure,
    Factor,
    Runtime,
    TrialCommand,
    TrialContext,
    kit,
    load_sibling,
    printed,
)
from gpurepro.case import crash_claims as cc

_verdict = load_sibling(__file__, "verdict")
_strata = load_sibling(__file__, "strata")

# cuda-tile 1.5.0 as filed. Every pin exact (locks/ adds the hashes; README "Locks"): the 13.2
# ones are what `13.2.*` resolved to when the sm_120 artifacts were first built and recorded,
# the 13.3 runtime and nvJitLink what the H200 results recorded. tileiras refuses to run beside nvcc/nvvm wheels of another
# release, so the whole CUDA family is pinned together. tileiras 13.2 (the report's CUDA)
# rejects sm_90; 13.3 is the oldest release that accepts Hopper (and Ampere).
_CUDA_13_3 = [
    "cuda-tile==1.5.0",
    "nvidia-cuda-tileiras==13.3.36",
    "nvidia-cuda-nvcc==13.3.73",
    "nvidia-nvvm==13.3.73",
    "nvidia-cuda-crt==13.3.73",
    "nvidia-cuda-runtime==13.3.29",
    "nvidia-nvjitlink==13.3.33",
]
_CUDA_13_2_AS_FILED = [
    "cuda-tile==1.5.0",
    "nvidia-cuda-tileiras==13.2.86",
    "nvidia-cuda-nvcc==13.2.86",
    "nvidia-nvvm==13.2.86",
    "nvidia-cuda-crt==13.2.86",
    "nvidia-cuda-runtime==13.2.86",
    "nvidia-nvjitlink==13.2.86",
]

ARTIFACTS = [
    kit.host_driver("host", "host.cc", "instrumented driver: the reporter's loop with options, "
                    "events and crash records"),
    kit.crash_preload(),  # the crash handler, LD_PRELOADed into the reporter's unmodified repro
    Artifact(
        name="libcuda_stub",
        description="link-time stub libcuda.so (soname libcuda.so.1) so repro.cc links without a driver",
        command=("{python}", "native/make_libcuda_stub.py", "{case}/seed/repro.cc", "{out}"),
        outputs=("libcuda.so",),
        sources=("native/make_libcuda_stub.py", "seed/repro.cc"),
    ),
    Artifact(
        name="seed_repro",
        description="seed/repro.cc built exactly as the report says: g++ -O2 -pthread repro.cc -o repro -lcuda",
        command=("{gxx}", "-O2", "-pthread", "{case}/seed/repro.cc", "-o", "{out}/repro",
                 "-L{artifact:libcuda_stub}", "-lcuda"),
        outputs=("repro",),
        sources=("seed/repro.cc",),
        tools=("gxx",),
    ),
    Artifact(
        name="tile_cubin",
        description="the reporter's Tile IR kernel, exported by cuda.tile for the target",
        command=("{python}", "{case}/kernel_tile.py", "--kernel", "add", "--gpu-code", "{arch}",
                 "--out", "{out}/kernel.cubin"),
        outputs=("kernel.cubin",),
        sources=("kernel_tile.py",),
        tools=("tileiras",),
    ),
    Artifact(
        name="tile_cubin_nodebug",
        description=("the reporter's Tile IR kernel compiled by tileiras without --lineinfo (cuda.tile "
                     "always passes it): no line tables, same .text and .nv.host"),
        command=("{python}", "{case}/kernel_tile_nodebug.py", "--tileiras", "{tileiras}",
                 "--gpu-code", "{arch}", "--out", "{out}/kernel.cubin"),
        outputs=("kernel.cubin",),
        sources=("kernel_tile_nodebug.py", "kernel_tile.py"),
        tools=("tileiras",),
    ),
    Artifact(
        name="tile_cubin_other",
        description="a different Tile IR kernel with the same argument ABI",
        command=("{python}", "{case}/kernel_tile.py", "--kernel", "other", "--gpu-code", "{arch}",
                 "--out", "{out}/kernel.cubin"),
        outputs=("kernel.cubin",),
        sources=("kernel_tile.py",),
        tools=("tileiras",),
    ),
    Artifact(
        name="tile_cubin_as_filed",
        description="seed/export_kernel.py run unchanged (it targets sm_120 only)",
        command=("{python}", "{case}/seed/export_kernel.py", "{out}/kernel.cubin"),
        outputs=("kernel.cubin",),
        sources=("seed/export_kernel.py",),
        tools=("tileiras",),
        archs=("sm_120",),
    ),
    Artifact(
        name="cuda_cubin",
        description="the reporter's plain CUDA kernel, nvcc -cubin",
        command=("{nvcc}", "-arch={arch}", "-cubin", "-o", "{out}/kernel.cubin", "{case}/kernel_cuda.cu"),
        outputs=("kernel.cubin",),
        sources=("kernel_cuda.cu",),
    ),
    Artifact(
        name="cuda_cubin_lineinfo",
        description=("the reporter's plain CUDA kernel, nvcc -cubin -lineinfo: line tables like the "
                     "Tile IR cubin's, so Tile IR vs plain differs only where it must"),
        # Device line info names the source's folder and mtime: compiled from a fixed folder
        # (native/nvcc_fixed_dir.py) so the cubin is the same in every checkout.
        command=("{python}", "native/nvcc_fixed_dir.py", "{nvcc}", "{case}/kernel_cuda.cu", "--",
                 "-arch={arch}", "-cubin", "-lineinfo", "-o", "{out}/kernel.cubin"),
        outputs=("kernel.cubin",),
        sources=("kernel_cuda.cu", "native/nvcc_fixed_dir.py"),
    ),
    Artifact(
        name="cuda_cubin_globals",
        description="plain CUDA kernel with initialised __device__ module data (.nv.global.init)",
        command=("{nvcc}", "-arch={arch}", "-cubin", "-DWITH_MODULE_GLOBALS", "-o",
                 "{out}/kernel.cubin", "{case}/kernel_cuda.cu"),
        outputs=("kernel.cubin",),
        sources=("kernel_cuda.cu",),
    ),
]

FACTORS = {
    "driver": Factor(("host", "seed", "cuda-python"), "host",
                     "host.cc (instrumented), seed/repro.cc as filed, or host_cuda_python.py (the "
                     "same loop in Python threads on cuda.bindings)"),
    "module": Factor(("tile", "cuda", "cuda_globals", "tile_other", "tile_distinct", "tile_nodebug",
                      "cuda_lineinfo"), "tile", "which cubin(s) the loop loads"),
    "threads": Factor((1, 2, 4), 2, "worker threads"),
    "unload": Factor(("never", "three-in-four", "always"), "three-in-four", "which iterations unload"),
    "lock": Factor(("none", "iteration", "unload-launch", "unload-load", "launch"), "none",
                   "one mutex around: nothing, each whole iteration, unload vs get-function+launch, "
                   "unload vs load, or get-function+launch alone (launches never overlap)"),
    "context": Factor(("shared", "per-thread", "two", "primary"), "shared",
                      "one context for all threads, one each, two shared by alternate threads, or "
                      "device 0's primary context (cuda.core's; cuda-python driver only)"),
    "api": Factor(("module", "library"), "module", "cuModule* or cuLibrary* entry points"),
    "preload": Factor((0, 2000, 3000, 4095), 0,
                      "modules main loads, launches once and holds before the workers start"),
    "prime": Factor((0, 9000), 0, "modules main loads first, then unloads back down to preload"),
    "lifetime": Factor(("none", "primary-reset", "primary-reset-kernel", "primary-reset-retain",
                        "ctx-destroy", "ctx-destroy-kernel"), "none",
                       "cuda-python driver, one thread: each cycle's context goes (primary reset or "
                       "cuCtxDestroy) before its library is unloaded (NVIDIA/cuda-python PR 1672)"),
}

ARMS = [
    Arm("baseline", {}, "host.cc, Tile IR cubin, 2 threads, unload 3 in 4: the report's loop"),
    Arm("as-filed", {"driver": "seed"}, "seed/repro.cc unchanged, on the Tile IR cubin for this device"),
    Arm("as-filed-cuda", {"driver": "seed", "module": "cuda"}, "seed/repro.cc on the plain CUDA cubin"),
    Arm("control-cuda", {"module": "cuda"}, "plain nvcc cubin, same loop"),
    Arm("cuda-module-globals", {"module": "cuda_globals"}, "plain cubin with .nv.global.init data"),
    Arm("one-thread", {"threads": 1}, "no concurrency"),
    Arm("never-unload", {"unload": "never"}),
    Arm("always-unload", {"unload": "always"}),
    Arm("serialized", {"lock": "iteration"}, "two threads, but never overlapping"),
    Arm("context-per-thread", {"context": "per-thread"}),
    Arm("other-tile-kernel", {"module": "tile_other"}),
    Arm("distinct-cubins", {"module": "tile_distinct"}, "thread 0 the add kernel, thread 1 the other"),
    Arm("library-api", {"api": "library"}, "cuLibraryLoadData / GetKernel / Unload, as cuda-tile uses"),
    # The mechanism, by intervention.
    Arm("hold-near-pow2", {"preload": 4095, "unload": "always"},
        "4095 modules held: the live count oscillates across 4096"),
    Arm("hold-far", {"preload": 3000, "unload": "always"},
        "3000 modules held: the live count stays far from any power of two"),
    Arm("grow-from-2000", {"preload": 2000},
        "2000 modules held, unload 3 in 4: the live count rises through 2048, 4096 and 8192"),
    Arm("primed-grow-from-2000", {"preload": 2000, "prime": 9000},
        "as grow-from-2000 after 9000 modules were loaded and unloaded back to 2000: any table "
        "sized by the count has already grown past 8192"),
    Arm("lock-unload-launch", {"lock": "unload-launch"},
        "one mutex around cuModuleUnload and around cuModuleGetFunction + cuLaunchKernel"),
    Arm("lock-unload-load", {"lock": "unload-load"},
        "one mutex around cuModuleUnload and around cuModuleLoadData"),
    Arm("lock-launch", {"lock": "launch"},
        "one mutex around cuModuleGetFunction + cuLaunchKernel only: the two threads' launches never "
        "overlap, unloads and loads run free"),
    Arm("tile-nodebug", {"module": "tile_nodebug"},
        "the Tile IR cubin without line tables (.text and .nv.host byte-identical)"),
    Arm("control-cuda-lineinfo", {"module": "cuda_lineinfo"}, "plain nvcc cubin with -lineinfo"),
    Arm("two-contexts-two-threads", {"threads": 4, "context": "two"},
        "two contexts with two threads each"),
    # The same race through cuda-python (host_cuda_python.py): two Python threads on
    # cuda.bindings.driver, which releases the GIL around its calls (cuda-bindings 13.0+).
    Arm("cuda-python", {"driver": "cuda-python"},
        "the report's loop in two Python threads on cuda.bindings (cuModule*), Tile IR cubin"),
    Arm("cuda-python-cuda", {"driver": "cuda-python", "module": "cuda"},
        "the same on the plain nvcc cubin"),
    Arm("cuda-python-lock-unload-launch", {"driver": "cuda-python", "lock": "unload-launch"},
        "the same with one lock around cuModuleUnload and around cuModuleGetFunction + "
        "cuLaunchKernel"),
    Arm("cuda-python-library", {"driver": "cuda-python", "api": "library", "context": "primary"},
        "cuda.core's calls: cuLibraryLoadData / GetKernel / Unload on the primary context, Tile IR"),
    Arm("cuda-python-library-cuda", {"driver": "cuda-python", "api": "library", "context": "primary",
                                     "module": "cuda"},
        "cuda.core's calls on the plain nvcc cubin"),
    Arm("cuda-python-library-lock", {"driver": "cuda-python", "api": "library", "context": "primary",
                                     "lock": "unload-launch"},
        "cuda.core's calls with one lock around cuLibraryUnload and around get-kernel + launch"),
    *(Arm(f"lifetime-{scenario}", {"driver": "cuda-python", "api": "library", "module": "cuda",
                                   "threads": 1, "unload": "always", "lifetime": scenario}, what)
      for scenario, what in (
          ("primary-reset", "a library outliving a primary context reset (PR 1672 scenario 1)"),
          ("primary-reset-kernel", "its kernel asked for an attribute after the reset (2, 6)"),
          ("primary-reset-retain", "the primary context retained again before the unload (3, "
                                   "numba-cuda's pattern)"),
          ("ctx-destroy", "a library outliving cuCtxDestroy of its context (4)"),
          ("ctx-destroy-kernel", "its kernel asked for an attribute after the destroy (5, 7)"))),
]

# What the cuda-python arms' driver (host_cuda_python.py) imports: cuda.bindings as the H200
# image has it (13.3.1, what every committed cuda-python trial reported in its start event) and
# the cuda-pathfinder it requires, at the version the same image's ctx_get_device_v2 run
# recorded. Carried as wheels for the node's Python (build/runtime): a machine without that
# image runs the same bindings. The host.cc and seed arms import nothing.
CUDA_BINDINGS = ["cuda-bindings==13.3.1", "cuda-pathfinder==1.9.1"]
RUNTIME = Runtime(packages={a.name: CUDA_BINDINGS for a in ARMS
                            if a.factors.get("driver") == "cuda-python"})

_CUBINS = {
    "tile": ("tile_cubin",),
    "cuda": ("cuda_cubin",),
    "cuda_globals": ("cuda_cubin_globals",),
    "tile_other": ("tile_cubin_other",),
    "tile_distinct": ("tile_cubin", "tile_cubin_other"),
    "tile_nodebug": ("tile_cubin_nodebug",),
    "cuda_lineinfo": ("cuda_cubin_lineinfo",),
}


# What the arms are meant to show, as claims the harness decides under one family-wise alpha
# (gpurepro.analyze.claims). Every rate claim compares crashes per 10^6 load/launch/unload cycles with
# the baseline's. The as-filed arms' counters come from a once-a-second printout (a crash in the
# first second shows 0 cycles), so no rate claim is made about `as-filed` itself: only that it
# crashes at all. The verdict (verdict.py) reads the decisions and computes no statistics.
_RATE, _RATIO, _rate_vs = cc.rate_against(), cc.RATIO, cc.rate_against
_lower, _crashes = cc.fails_less, cc.fails_at_all


def _lower_than(name: str, reference: str, what: str, meaning: str) -> Claim:
    return cc.fails_less(name, what, meaning, reference)


# Equivalence band for "crashes like the baseline": GPU concurrency alone (--jobs 2) moved the
# baseline's rate about fourfold between committed runs, so a factor of 4 is the resolution at
# which two arms can be called the same race here.
EQUIVALENCE_MARGIN = 4.0


def _hangs(name: str, what: str) -> Claim:
    """`name` hangs at all: a worker stuck inside a driver call is a failure of its own, which
    the case's crash claims count as a censored trial."""
    return Claim(
        f"{name}-hangs", arm=name, kind="outcome", outcome="hung", share=0.0,
        supported=(f"The race also hangs: {what} ({{arm}}) ended hung in {{count}} of {{n}} valid "
                   "trials, a worker still inside a driver call after the stop."),
        not_decided=(f"Whether {what} ({{arm}}) hangs is not decided: {{count}} of {{n}} valid "
                     "trials ended hung."))


CLAIMS = [
    # Reproduction: one SIGSEGV is the reported failure happening; share 0 makes the claim
    # "at least one valid trial ends in SIGSEGV" (a count rule, still counted in the family).
    Claim("baseline-crashes", arm="baseline", kind="outcome", outcome="crashed", detail="SIGSEGV",
          share=0.0,
          supported=("Reproduced: the baseline (host.cc, Tile IR cubin, two threads, three unloads in "
                     "four) ended in SIGSEGV in {count} of {n} valid trials."),
          not_decided="No SIGSEGV in the baseline's {n} valid trials."),
    Claim("as-filed-crashes", arm="as-filed", kind="outcome", outcome="crashed", detail="SIGSEGV",
          share=0.0,
          supported=("Reproduced with the reporter's program: seed/repro.cc, unchanged (as-filed), "
                     "ended in SIGSEGV in {count} of {n} valid trials."),
          not_decided="No SIGSEGV in the {n} valid trials of seed/repro.cc, unchanged (as-filed)."),
    Claim("control-cuda", arm="control-cuda", kind="lower",
          supported=("Tile IR modules raise the crash rate: the same loop on the plain nvcc cubin "
                     f"({{arm}}) crashes less often than the baseline: {_RATE} ({_RATIO})."),
          contradicted=("Not specific to Tile IR: the same loop on the plain nvcc cubin ({arm}) "
                        f"crashes more often than the baseline: {_RATE} ({_RATIO})."),
          not_decided=("Whether the same loop on the plain nvcc cubin ({arm}) crashes less often than "
                       f"the baseline is not decided: {_RATE}; deciding it needs {{needed}}.")),
    _lower("as-filed-cuda", "the reporter's unchanged seed/repro.cc on the plain nvcc cubin",
           "The plain cubin crashes less with the reporter's own program too"),
    _lower("cuda-module-globals", "a plain nvcc cubin with initialised __device__ data (.nv.global.init)",
           ".nv.global.init alone does not bring the baseline's rate"),
    _lower("one-thread", "the same loop in one thread", "Concurrency matters"),
    _lower("serialized", "two threads with one mutex around each whole load/launch/sync/unload iteration",
           "Two threads are not enough, their calls have to overlap for the baseline's rate"),
    _lower("context-per-thread",
           "a context per thread (so every context also has a single thread; the arm does not "
           "separate the two)",
           "Separate contexts, each with one thread, crash less"),
    _lower("never-unload", "the same loop never unloading", "Unloads matter"),
    _crashes("always-unload", "unloading every module (at most two loaded at a time)"),
    _crashes("distinct-cubins", "each thread loading a different Tile IR cubin"),
    _crashes("other-tile-kernel", "a different Tile IR kernel"),
    _crashes("library-api", "the cuLibrary* entry points cuda-tile itself uses"),
    # Hangs: a worker stuck inside cuModuleUnload or cuLaunchKernel after the stop, seen in
    # always-unload and hold-far (a failure of its own; the crash claims censor these trials).
    _hangs("always-unload", "unloading every module"),
    _hangs("hold-far", "3000 modules held, unloading every module"),
    # ---- the mechanism, by intervention (see strata.py for the power-of-two strata)
    Claim("hold-near-pow2", arm="hold-near-pow2", reference="hold-far", kind="higher",
          supported=("Holding the live module count at a power of two raises the rate: 4095 modules "
                     "held, unloading every module (hold-near-pow2: 4095-4097 loaded), crashes more often "
                     f"than 3000 held (hold-far): {_rate_vs('hold-far')} ({_RATIO})."),
          contradicted=("Holding the live module count at a power of two lowers the rate: hold-near-pow2 "
                        f"crashes less often than hold-far: {_rate_vs('hold-far')} ({_RATIO})."),
          not_decided=("Whether holding the live count at 4095-4097 (hold-near-pow2) crashes more often "
                       f"than at 3000-3002 (hold-far) is not decided: {_rate_vs('hold-far')}; "
                       "deciding it needs {needed}.")),
    Claim("hold-near-pow2-like-far", arm="hold-near-pow2", reference="hold-far", kind="equivalent",
          margin=EQUIVALENCE_MARGIN,
          supported=("Where the live count sits does not matter within a factor of "
                     f"{EQUIVALENCE_MARGIN:g}: hold-near-pow2 (4095-4097 loaded) crashes at a rate within "
                     f"{EQUIVALENCE_MARGIN:g}x of hold-far's (3000-3002): "
                     f"{_rate_vs('hold-far')} ({_RATIO})."),
          contradicted=(f"hold-near-pow2 crashes at a rate more than {EQUIVALENCE_MARGIN:g}x away from "
                        f"hold-far's: {_rate_vs('hold-far')} ({_RATIO})."),
          not_decided=(f"Whether hold-near-pow2 crashes within {EQUIVALENCE_MARGIN:g}x of hold-far's rate "
                       f"is not decided: {_rate_vs('hold-far')}; deciding it needs {{needed}}.")),
    Claim("grow-crossings-live", arm="grow-from-2000", kind="concentrated", stratum="live-near-pow2",
          supported=("Crashes fall where the live module count crosses a power of two: of grow-from-2000's "
                     "{n} crashes, {count} came within ±0.7% of 2048, 4096 or 8192 loaded modules, where "
                     "its trials spent {share} of their cycles."),
          contradicted=("grow-from-2000's crashes avoid the power-of-two crossings of the live count: "
                        "{count} of {n} there, where its trials spent {share} of their cycles."),
          not_decided=("Whether grow-from-2000's crashes fall at the crossings of the live count more "
                       "often than a count-independent hazard predicts is not decided: {count} of {n} "
                       "crashes there, {share} of the cycles.")),
    Claim("grow-crossings-loads", arm="grow-from-2000", kind="concentrated", stratum="loads-near-pow2",
          supported=("Crashes fall where the number of modules ever loaded crosses a power of two: of "
                     "grow-from-2000's {n} crashes, {count} came within ±0.7% of one (main's 2000 "
                     "included), where its trials spent {share} of their cycles."),
          contradicted=("grow-from-2000's crashes avoid the power-of-two crossings of the loads count: "
                        "{count} of {n} there, where its trials spent {share} of their cycles."),
          not_decided=("Whether grow-from-2000's crashes fall where the loads count crosses a power of "
                       "two more often than a count-independent hazard predicts is not decided: {count} "
                       "of {n} crashes there, {share} of the cycles.")),
    Claim("primed-crossings-live", arm="primed-grow-from-2000", kind="concentrated",
          stratum="live-near-pow2",
          supported=("After the count had been to 9000, crashes still fall at the live count's crossings: "
                     "of primed-grow-from-2000's {n} crashes, {count} came within ±0.7% of a power of "
                     "two, where its trials spent {share} of their cycles."),
          contradicted=("primed-grow-from-2000's crashes avoid the live count's crossings: {count} of {n} "
                        "there, {share} of the cycles."),
          not_decided=("Whether primed-grow-from-2000's crashes fall at the live count's crossings is not "
                       "decided: {count} of {n} crashes there, {share} of the cycles.")),
    Claim("baseline-crossings-live", arm="baseline", kind="concentrated", stratum="live-near-pow2",
          supported=("In the report's own loop too, crashes fall where the live module count crosses a "
                     "power of two: {count} of the baseline's {n} crashes, where its trials spent {share} "
                     "of their cycles."),
          contradicted=("The baseline's crashes avoid the live count's power-of-two crossings: {count} of "
                        "{n}, {share} of the cycles."),
          not_decided=("Whether the baseline's crashes fall at the live count's crossings is not decided: "
                       "{count} of {n} crashes there, {share} of the cycles.")),
    Claim("primed-grow-from-2000", arm="primed-grow-from-2000", reference="grow-from-2000", kind="lower",
          supported=("Having been to 9000 modules protects: primed-grow-from-2000 crashes less often than "
                     f"grow-from-2000: {_rate_vs('grow-from-2000')} ({_RATIO})."),
          contradicted=("Having been to 9000 modules makes it worse: primed-grow-from-2000 crashes more "
                        f"often than grow-from-2000: {_rate_vs('grow-from-2000')} ({_RATIO})."),
          not_decided=("Whether having been to 9000 modules changes grow-from-2000's rate is not decided: "
                       f"{_rate_vs('grow-from-2000')}; deciding it needs {{needed}}.")),
    _lower("lock-unload-launch",
           "one mutex around cuModuleUnload and around cuModuleGetFunction + cuLaunchKernel, loads and "
           "synchronizes still concurrent",
           "Unload racing with get-function/launch is needed for the baseline's rate"),
    _lower("lock-unload-load",
           "one mutex around cuModuleUnload and around cuModuleLoadData, launches still concurrent",
           "Unload racing with load is needed for the baseline's rate"),
    _lower("lock-launch",
           "one mutex around cuModuleGetFunction + cuLaunchKernel alone (the threads' launches never "
           "overlap; unloads, loads and synchronizes run free)",
           "Two launches overlapping is needed for the baseline's rate"),
    _crashes("tile-nodebug", "the Tile IR cubin without line tables (same .text and .nv.host)"),
    _lower("control-cuda-lineinfo", "the plain nvcc cubin with line tables (-lineinfo)",
           "Line tables do not bring the crash to plain modules"),
    Claim("two-contexts-two-threads", arm="two-contexts-two-threads", reference="context-per-thread",
          kind="higher",
          supported=("Threads sharing a context, not the number of contexts, bring the crash back: two "
                     "contexts with two threads each (two-contexts-two-threads) crash more often than one "
                     f"thread per context (context-per-thread): {_rate_vs('context-per-thread')} "
                     f"({_RATIO})."),
          contradicted=("two-contexts-two-threads crashes less often than context-per-thread: "
                        f"{_rate_vs('context-per-thread')} ({_RATIO})."),
          not_decided=("Whether two contexts with two threads each crash more often than one thread per "
                       f"context is not decided: {_rate_vs('context-per-thread')}; deciding "
                       "it needs {needed}.")),
]


def _lifetime_survives(scenario: str, what: str) -> Claim:
    arm = f"lifetime-{scenario}"
    return Claim(
        f"{arm}-survives", arm=arm, kind="outcome", outcome="survived", share=0.5,
        supported=(f"{what[0].upper()}{what[1:]} ({{arm}}): the library unloads without a crash "
                   "or an error in {count} of {n} valid trials."),
        contradicted=(f"{what[0].upper()}{what[1:]} ({{arm}}) fails in most trials: only "
                      "{count} of {n} valid trials ran their budget."),
        not_decided=(f"Whether {what} ({{arm}}) unloads safely is not decided: {{count}} of {{n}} "
                     "valid trials did."))


# The cuda-python arms, each compared with the cuda-python arm that differs from it in one factor
# (the C++ baseline's own claims about the same factors are decided beside them when the run
# includes those arms).
CLAIMS += [
    Claim("cuda-python-crashes", arm="cuda-python", kind="outcome", outcome="crashed",
          detail="SIGSEGV", share=0.0,
          supported=("Through cuda-python too: the report's loop in two Python threads on "
                     "cuda.bindings (cuda-python, Tile IR cubin) ended in SIGSEGV in {count} of {n} "
                     "valid trials."),
          not_decided="No SIGSEGV in the {n} valid trials of the loop on cuda.bindings (cuda-python)."),
    _lower_than("cuda-python-cuda", "cuda-python", "the cuda.bindings loop on the plain nvcc cubin",
                "Through cuda-python too, Tile IR modules raise the crash rate"),
    _lower_than("cuda-python-lock-unload-launch", "cuda-python",
                "the cuda.bindings loop with one lock around cuModuleUnload and around "
                "cuModuleGetFunction + cuLaunchKernel",
                "Through cuda-python too, unload racing get-function/launch is needed"),
    Claim("cuda-python-library-crashes", arm="cuda-python-library", kind="outcome", outcome="crashed",
          detail="SIGSEGV", share=0.0,
          supported=("cuda.core's calls race too: cuLibraryLoadData / GetKernel / Unload in two "
                     "Python threads on the primary context (cuda-python-library, Tile IR cubin) "
                     "ended in SIGSEGV in {count} of {n} valid trials."),
          not_decided=("No SIGSEGV in the {n} valid trials of cuda.core's calls on the Tile IR "
                       "cubin (cuda-python-library).")),
    _lower_than("cuda-python-library-cuda", "cuda-python-library",
                "cuda.core's calls on the plain nvcc cubin",
                "With plain cubins cuda.core's unloading crashes less"),
    _lower_than("cuda-python-library-lock", "cuda-python-library",
                "cuda.core's calls with one lock around cuLibraryUnload and around get-kernel + "
                "launch", "Under the lock cuda.core's unloading crashes less"),
    _lifetime_survives("primary-reset", "a library unloaded after a primary context reset"),
    _lifetime_survives("primary-reset-kernel", "a library unloaded after a primary context reset, "
                                               "its kernel asked for an attribute in between"),
    _lifetime_survives("primary-reset-retain", "a library unloaded after a primary context reset "
                                               "and a new retain"),
    _lifetime_survives("ctx-destroy", "a library unloaded after cuCtxDestroy of its context"),
    _lifetime_survives("ctx-destroy-kernel", "a library unloaded after cuCtxDestroy, its kernel "
                                             "asked for an attribute in between"),
]


def _loop_argv(ctx: TrialContext, cubins: list[str], python: bool) -> list[str]:
    """host.cc's options; host_cuda_python.py takes the same, and --lifetime."""
    f = ctx.factors
    context = ["--contexts", "2"] if f["context"] == "two" else ["--context", f["context"]]
    return [*(a for c in cubins for a in ("--cubin", c)), "--threads", str(f["threads"]),
            "--unload", f["unload"], "--lock", f["lock"], *context, "--api", f["api"],
            *(["--lifetime", f["lifetime"]] if python else []),
            "--seconds", str(ctx.budget.duration_s), "--max-cycles", str(ctx.budget.max_exposure)]


def trial_command(ctx: TrialContext) -> TrialCommand:
    f = ctx.factors
    cubins = [str(ctx.artifacts[name]) for name in _CUBINS[f["module"]]]
    if f["driver"] == "seed" and f["module"] == "tile" and "tile_cubin_as_filed" in ctx.artifacts:
        # For sm_120 the reporter's own export script ran unchanged: use its cubin.
        cubins = [str(ctx.artifacts["tile_cubin_as_filed"])]
    if f["driver"] == "seed":
        # As filed: `./repro kernel.cubin SECONDS`. Only the cubin and the duration vary; the
        # crash handler comes in by LD_PRELOAD so the program itself stays unchanged.
        fixed = {k: FACTORS[k].default for k in FACTORS if k not in ("driver", "module")}
        changed = {k: v for k, v in fixed.items() if f[k] != v}
        if changed or len(cubins) != 1:
            raise ValueError(f"seed/repro.cc cannot vary {sorted(changed) or 'the cubin count'}")
        return TrialCommand(
            argv=(str(ctx.artifacts["seed_repro"]), cubins[0], str(max(1, round(ctx.budget.duration_s)))),
            env={"LD_PRELOAD": str(ctx.artifacts["crash_preload"])},
            parser="seed",
        )
    if f["driver"] == "cuda-python":  # through the harness's interpreter, the crash object preloaded
        if f["preload"] or f["prime"]:
            raise ValueError("host_cuda_python.py does not preload modules (--preload/--prime)")
        return ctx.python_driver(ctx.case_dir / "host_cuda_python.py", *_loop_argv(ctx, cubins, True),
                                 preload=ctx.artifacts["crash_preload"])
    if f["context"] == "primary" or f["lifetime"] != "none":
        raise ValueError("host.cc has no primary-context or lifetime scenarios (cuda-python only)")
    argv = [str(ctx.artifacts["host"]), *_loop_argv(ctx, cubins, False)]
    if f["preload"]:
        argv += ["--preload", str(f["preload"])]
    if f["prime"]:
        argv += ["--prime", str(f["prime"])]
    return TrialCommand(argv=tuple(argv))


CASE = Case(
    name="tile_unload_race",
    question=("Is the host SIGSEGV below cuLaunchKernel, with cuModuleUnload running concurrently "
              "in another thread of the same context, attributable to cuda-tile (Tile IR modules), "
              "and if not, who owns it?"),
    report_url="https://github.com/NVIDIA/cuda-tile/issues/23",
    reported={"gpu": "NVIDIA GeForce RTX 5090", "target": "sm_120", "driver": "595.84",
              "toolchain": "CUDA 13.2, cuda-tile 1.5.0"},
    toolchains={"sm_80": _CUDA_13_3, "sm_90": _CUDA_13_3, "sm_100": _CUDA_13_3,
                "sm_120": _CUDA_13_2_AS_FILED},
    artifacts=ARTIFACTS,
    factors=FACTORS,
    arms=ARMS,
    baseline="baseline",
    trial_command=trial_command,
    verdict=_verdict.verdict,
    devices=Devices(
        targets={"9.0": "sm_90", "12.0": "sm_120", "8.0": "sm_80", "10.0": "sm_100"},
        why="Tile IR cubins are exported per architecture by tileiras",
    ),
    exposure=Exposure(counter="launches", unit="cycles", label="load/launch/unload iterations"),
    # A crash is the bug; a CUDA error or a hang would be a different finding, reported apart.
    failure_outcomes=("crashed",),
    # A hang: both workers inside a driver call while main heartbeats on, the counters still.
    # host.cc heartbeats every second and even the slowest arm (context-per-thread) makes
    # thousands of cycles a second, so four seconds without one is no healthy pause.
    defaults=Defaults(trials_per_arm=10, trial_timeout_s=90, duration_s=20, max_exposure=0,
                      hang_after_s=4.0),
    # seed/repro.cc prints "  launches=N loads=N unloads=N" once a second, "SURVIVED Ns" at the end.
    parsers={"seed": printed.counters_parser(r"launches=\d+\s+loads=\d+\s+unloads=\d+",
                                             r"^SURVIVED (\d+)s")},
    analyses={"sections": sections_analysis({"tile": "tile_cubin", "tile_other": "tile_cubin_other",
                                             "cuda": "cuda_cubin", "cuda_globals": "cuda_cubin_globals"})},
    claims=CLAIMS,
    # The report's own questions, what `make tile-unload-race` decides by default: reproduced
    # (and reproduced with seed/repro.cc as filed), the owner (Tile IR modules crash more than
    # plain ones, and the crash needs the calls to overlap and to unload) and the workaround
    # users can adopt. The mechanism and cuda-python arms run with --deep.
    main_question=("baseline-crashes", "as-filed-crashes", "control-cuda", "as-filed-cuda",
                   "one-thread", "serialized", "never-unload", "lock-unload-launch"),
    strata=_strata.STRATA,
    runtime=RUNTIME,
)
