"""The experiment's design as plain data: factors, their command-line encodings, the arms.

Shared by manifest.py (which turns it into gpurepro.case objects, claims included) and
verdict.py (which reads the claims' decisions by name), so an arm or claim renamed here is renamed
everywhere.
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


# What the case wants to show, as plain data: manifest.py turns each row into a gpurepro Claim
# (decided by the harness under one family-wise error rate) and verdict.py reads the decisions
# by these names. Rows: (name, kind, arm, reference or None, expected outcome detail or None).
# "lower"/"higher": the arm's failure rate against the reference arm (same binary, one factor
# changed); "equivalent": within a factor of 2; "outcome": more than half of the arm's valid
# trials end as cuda_error (with that error name, when one is given).
LAUNCH_FAILURE = "cudaErrorLaunchFailure"  # the report's "unspecified launch failure"

BASELINE_FAILS = "baseline-launch-failure"
BARRIER_LOWER = {mode: f"{mode.replace('_', '-')}-lower" for mode in GRID_MODES[1:]}
MARKERS_EQUIVALENT = "markers-within-2x"
LINGER_LOWER = "linger-lower"
CONTROL_STORE_HIGHER = "control-store-higher"
CONTROL_ARRIVE_FAILS = "control-arrive-fails"
INSTRUMENT_LOWER = {  # instrumented arm -> claim that the instrument suppresses the failure
    "instr-coredump": "instr-coredump-lower",
    "instr-compute-sanitizer": "instr-compute-sanitizer-lower",
    "instr-cuda-gdb": "instr-cuda-gdb-lower",
    "follower-coredump": "seed-coredump-lower",
}
CONTROL_INSTRUMENT_LOWER = {
    "control-store-coredump": "control-coredump-lower",
    "control-store-cuda-gdb": "control-cuda-gdb-lower",
}

COMPARISONS: list[tuple[str, str, str, str | None, str | None]] = [
    # the report's table: reproduced as filed, and each barrier placement removes it
    (BASELINE_FAILS, "outcome", BASELINE, None, LAUNCH_FAILURE),
    *[(claim, "lower", f"follower-{mode.replace('_', '-')}", BASELINE, None)
      for mode, claim in BARRIER_LOWER.items()],
    # the asymmetry and the spin threshold ("spin=0 passes, spin=10 fails 100%")
    ("leader-delay-lower", "lower", "leader-baseline", BASELINE, None),
    ("no-delay-lower", "lower", "neither-baseline", BASELINE, None),
    ("leader-spin-50000-lower", "lower", "leader-spin-50000", BASELINE, None),
    ("spin-0-lower", "lower", "follower-spin-0", BASELINE, None),
    ("spin-10-launch-failure", "outcome", "follower-spin-10", None, LAUNCH_FAILURE),
    # the instrumented build: do the markers perturb the race; the same effects seen with markers
    (MARKERS_EQUIVALENT, "equivalent", INSTR_BASELINE, BASELINE, None),
    ("instr-leader-delay-lower", "lower", "instr-leader-baseline", INSTR_BASELINE, None),
    ("instr-barrier-before-dealloc-lower", "lower", "instr-follower-barrier-before-dealloc",
     INSTR_BASELINE, None),
    # the report's additional checks, and early dealloc vs early exit
    ("no-relinquish-launch-failure", "outcome", "instr-no-relinquish", None, LAUNCH_FAILURE),
    ("no-dealloc-lower", "lower", "instr-no-dealloc", INSTR_BASELINE, None),
    (LINGER_LOWER, "lower", "instr-linger", INSTR_BASELINE, None),
    # "every instrument suppresses it"
    *[(claim, "lower", arm, BASELINE if arm == "follower-coredump" else INSTR_BASELINE, None)
      for arm, claim in INSTRUMENT_LOWER.items()],
    # controls without tcgen05: positive vs negative control, the late arrive alone, and what
    # the instruments do to a fault whose mechanism is known
    (CONTROL_STORE_HIGHER, "higher", "control-store-after-exit", "control-store-barrier-before-exit",
     None),
    (CONTROL_ARRIVE_FAILS, "outcome", "control-arrive-after-exit", None, None),
    *[(claim, "lower", arm, "control-store-after-exit", None)
      for arm, claim in CONTROL_INSTRUMENT_LOWER.items()],
]
