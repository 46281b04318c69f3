"""The experiment's design as plain data: factors, their command-line encodings, the arms.

Shared by manifest.py (which turns it into gpurepro.manifest objects) and verdict.py (which needs
to know which arm answers which question), so an arm renamed here is renamed everywhere.
Standard library only.
"""

from __future__ import annotations

from typing import Any

# Factor levels and what the programs take on their command line (both take DELAY SPIN MODE).
DELAY = {"leader": 0, "follower": 1, "neither": 2}  # which CTA of the pair sleeps first
MODE = {  # where barrier.cluster goes (the seed's mode numbers)
    "baseline": 0,
    "barrier_before_alloc": 1,
    "barrier_after_alloc": 2,
    "barrier_before_dealloc": 6,
    "barrier_before_exit": 1,  # controls only: their mode 1 = barrier.cluster before exit
}
MODE_LABEL = {
    "baseline": "no barrier",
    "barrier_before_alloc": "barrier.cluster before alloc",
    "barrier_after_alloc": "barrier.cluster after alloc",
    "barrier_before_dealloc": "barrier.cluster immediately before dealloc",
    "barrier_before_exit": "barrier.cluster before exit",
}
GRID_MODES = ("baseline", "barrier_before_alloc", "barrier_after_alloc", "barrier_before_dealloc")
SPINS = (0, 10, 100, 1000, 5000, 50000)  # x __nanosleep(1000), i.e. roughly microseconds
BASE_SPIN = 5000
BUILDS = ("seed", "instrumented", "control")
# The control (controls/remote_arrive_after_exit.cu, no tcgen05): the odd CTA performs a remote
# operation on the even CTA's shared memory after a delay; the even CTA may have exited.
OPS = {"arrive": 0, "store": 1}  # the follower's alloc ends with a remote arrive
VARIANTS = ("as_filed", "no_relinquish", "no_dealloc", "linger")
VARIANT_LABEL = {
    "as_filed": "as filed",
    "no_relinquish": "without relinquish_alloc_permit",
    "no_dealloc": "without dealloc",
    "linger": "dealloc early, CTA exit late (linger after dealloc)",
}
INSTRUMENTS = ("none", "coredump", "compute-sanitizer", "cuda-gdb")
INSTRUMENT_LABEL = {
    "none": "no instrument",
    "coredump": "CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1",
    "compute-sanitizer": "compute-sanitizer (memcheck)",
    "cuda-gdb": "cuda-gdb batch run",
}

# (build, variant) -> artifact name in the manifest; the seed exists only as filed.
ARTIFACT = {
    ("seed", "as_filed"): "repro",
    ("instrumented", "as_filed"): "repro_instrumented",
    ("instrumented", "no_relinquish"): "repro_no_relinquish",
    ("instrumented", "no_dealloc"): "repro_no_dealloc",
    ("instrumented", "linger"): "repro_linger",
    ("control", "as_filed"): "control_remote_after_exit",
}
DEFINE = {"as_filed": [], "no_relinquish": ["NO_RELINQUISH"], "no_dealloc": ["NO_DEALLOC"],
          "linger": ["LINGER_AFTER_DEALLOC"]}

DEFAULTS = {"build": "seed", "delay": "follower", "mode": "baseline", "spin": BASE_SPIN,
            "variant": "as_filed", "instrument": "none", "op": "arrive"}

BASELINE = "follower-baseline"
INSTR_BASELINE = "instr-follower-baseline"


def _arm(name: str, description: str, **factors: Any) -> tuple[str, dict[str, Any], str]:
    return name, factors, description


def arms() -> list[tuple[str, dict[str, Any], str]]:
    out = []
    # 1. The report's grid on the reporter's own binary: delayed CTA x barrier placement, spin 5000.
    for delay in DELAY:
        for mode in GRID_MODES:
            name = f"{delay}-{mode.replace('_', '-')}"
            out.append(_arm(name, f"seed; {delay} delayed; {MODE_LABEL[mode]}",
                            delay=delay, mode=mode))
    # 2. Spin sweep for the delayed follower (5000 is the baseline above), and the report's
    #    "leader tested up to spin=50000".
    for spin in (0, 10, 100, 1000):
        out.append(_arm(f"follower-spin-{spin}", f"seed; follower delayed {spin} x 1 us",
                        spin=spin))
    out.append(_arm("leader-spin-50000", "seed; leader delayed 50000 x 1 us",
                    delay="leader", spin=50000))
    # 3. The instrumented build: markers, then the variants that need a different kernel.
    out.append(_arm(INSTR_BASELINE, "instrumented; follower delayed; no barrier (markers)",
                    build="instrumented"))
    out.append(_arm("instr-leader-baseline", "instrumented; leader delayed (markers)",
                    build="instrumented", delay="leader"))
    out.append(_arm("instr-follower-barrier-before-dealloc",
                    "instrumented; follower delayed; barrier before dealloc (markers)",
                    build="instrumented", mode="barrier_before_dealloc"))
    for variant in ("no_relinquish", "no_dealloc", "linger"):
        out.append(_arm(f"instr-{variant.replace('_', '-')}",
                        f"instrumented; follower delayed; {VARIANT_LABEL[variant]}",
                        build="instrumented", variant=variant))
    # 4. Instruments on the follower-delayed baseline: on the instrumented build (markers and the
    #    debugger's findings land in one record) and, for the env-only coredump, on the seed too.
    for inst in ("coredump", "compute-sanitizer", "cuda-gdb"):
        out.append(_arm(f"instr-{inst}", f"instrumented; follower delayed; {INSTRUMENT_LABEL[inst]}",
                        build="instrumented", instrument=inst))
    out.append(_arm("follower-coredump", "seed; follower delayed; CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1",
                    instrument="coredump"))
    # 5. Controls without tcgen05: is a late remote arrive (what the follower's alloc ends with)
    #    into an exited CTA a fault on this GPU? A late remote store is the positive control, a
    #    barrier before exit the negative one, and the instruments show what they do to a fault
    #    whose mechanism is known.
    out.append(_arm("control-arrive-after-exit", "control; late remote mbarrier arrive into an exited CTA",
                    build="control", op="arrive"))
    out.append(_arm("control-store-after-exit", "control; late remote st.shared::cluster into an exited CTA",
                    build="control", op="store"))
    out.append(_arm("control-store-barrier-before-exit",
                    "control; late remote store, barrier.cluster before exit",
                    build="control", op="store", mode="barrier_before_exit"))
    for inst in ("coredump", "cuda-gdb"):
        out.append(_arm(f"control-store-{inst}", f"control; late remote store; {INSTRUMENT_LABEL[inst]}",
                        build="control", op="store", instrument=inst))
    return out


# Which arm each non-grid arm is compared with (same binary, one factor changed).
REFERENCE = {
    INSTR_BASELINE: BASELINE,  # does the instrumentation itself perturb the race?
    "instr-leader-baseline": INSTR_BASELINE,
    "instr-follower-barrier-before-dealloc": INSTR_BASELINE,
    "instr-no-relinquish": INSTR_BASELINE,
    "instr-no-dealloc": INSTR_BASELINE,
    "instr-linger": INSTR_BASELINE,
    "instr-coredump": INSTR_BASELINE,
    "instr-compute-sanitizer": INSTR_BASELINE,
    "instr-cuda-gdb": INSTR_BASELINE,
    "follower-coredump": BASELINE,
    "control-arrive-after-exit": "control-store-barrier-before-exit",
    "control-store-after-exit": "control-store-barrier-before-exit",
    "control-store-coredump": "control-store-after-exit",
    "control-store-cuda-gdb": "control-store-after-exit",
}
