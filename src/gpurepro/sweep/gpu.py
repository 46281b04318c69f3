"""The GPU stage: the case's harness on the distinct artifacts a sweep chooses, one run each.

Each run is ``python -m gpurepro run <case> --arms ... --artifact <artifact>=<path> ...`` in a
process of its own, so its trials go through the harness's isolation, classification and
journal like any run's; the substitute's sha256 goes into the journal header. Which runs, in
which rounds, with which arms, is the choice's (choose.py: a bisection's search, or a matrix's
grid under a wall-clock budget). An artifact chosen again (a bisection's release whose cubin an
earlier one built) runs once. What the stage did goes to ``<out>/sweep-gpu.json`` after every
run (an interrupted stage keeps what it has); assemble.py turns that and the journals into the
document. Needs the prebuilt case (``build/<case>``) and the sweep's artifacts (under
``build/bisect`` or ``build/matrix``), Python and the standard library; without a GPU nothing
runs and the status is 5.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..case.load import load_case
from ..env import fingerprint as envmod
from ..errors import EXIT_ERROR, EXIT_NO_DRIVER, EXIT_OK, Stopped, UsageError
from ..model.files import sha256_file
from ..run.journal import read
from .choose import Choice
from .model import GPU_FILE, GpuRecord, Run

# What other modules use; the rest is this module's own.
__all__ = ["envmod", "run_gpu_stage"]

NO_GPU = "not run: no GPU"


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _harness(argv: list[str], root: Path, log: Path) -> int:
    # The harness is this very package, wherever it was imported from (PYTHONPATH=src on a node).
    package_dir = str(Path(__file__).resolve().parents[2])
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join(filter(None, (package_dir, os.environ.get("PYTHONPATH"))))}
    with open(log, "w") as fh:
        proc = subprocess.Popen(argv, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT)
        try:
            return proc.wait()
        except (Stopped, KeyboardInterrupt):
            proc.terminate()  # the harness kills its own trials and journals what finished
            proc.wait()
            raise


def _last_line(log: Path) -> str:
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()] \
        if log.is_file() else []
    return lines[-1] if lines else "no output"


def check_arms(choice: Choice, root: Path) -> None:
    """Every arm the runs name is one of the case's, or a one-line refusal before anything runs
    (a run of an arm the manifest no longer has would fail on the node, every one of them)."""
    named = choice.harness.case  # a name, or a manifest's path in the repository
    case = load_case(root / named if (root / named).is_file() else named, root)
    known = case.resolved_arms()
    unknown = sorted({a for r in choice.first() for a in r.arms if a not in known})
    if unknown:
        asked = "--arms/--newest-arms: " if choice.kind == "matrix" else ""
        raise UsageError(f"{asked}{case.name} has no arm {', '.join(unknown)} "
                         f"(known: {', '.join(known)})")


def _repeat(run: Run, earlier: Run) -> None:
    """``run`` is ``earlier``'s artifact with its arms again: its result, not a second run."""
    for name in ("status", "reason", "journal", "exit", "wall_s", "counts", "klass", "timing"):
        setattr(run, name, getattr(earlier, name))
    run.same_as = earlier.point


def _execute(choice: Choice, run: Run, record: GpuRecord, out: Path, root: Path,
             say: Callable[[str], None]) -> int:
    """One harness run; the stage's status after it."""
    journal, log = out / f"{run.id}.journal.jsonl", out / f"{run.id}.log"
    say(f"{choice.name}: {choice.label(run)}")
    t0 = time.monotonic()
    trials: Sequence[Mapping[str, Any]] | None = None
    try:
        rc = _harness(choice.harness.argv(run, journal), root, log)
    except (Stopped, KeyboardInterrupt):
        # Said in the record too: assembly then reports the runs done and this one.
        run.status, run.reason = "failed", "stopped by a signal while it ran"
        run.journal = journal.name if journal.is_file() else None
        choice.decide(run, None)
        record.runs.append(run)
        record.status, record.reason = "stopped", f"stopped by a signal during {run.id}"
        record.write(out)
        raise
    run.exit, run.wall_s = rc, round(time.monotonic() - t0, 1)
    run.journal = journal.name if journal.is_file() else None
    status = EXIT_OK
    if rc == EXIT_NO_DRIVER:
        run.status, run.reason = "not run", NO_GPU
    elif rc in (EXIT_OK, EXIT_ERROR) and journal.is_file():
        # 1: some trial was the harness's error; the others still count.
        run.status, run.reason = "ran", None if rc == EXIT_OK else _last_line(log)
        trials = read(journal).trials
    else:
        run.status, run.reason = "failed", f"the harness exited {rc}: {_last_line(log)}"
        status = EXIT_ERROR
    choice.decide(run, trials)
    return status


def run_gpu_stage(document: Path, out: Path, root: Path, choice: Choice, seed: int = 0,
                  say: Callable[[str], None] = _say) -> int:
    """Run what ``choice`` chooses from the CPU document ``document``; the exit status."""
    check_arms(choice, root)
    found = GpuRecord.exists(out)
    if found is not None:
        raise UsageError(f"{found} exists: give the GPU stage a new --out folder")
    missing = [path for sha, path in choice.artifacts().items()
               if not (root / path).is_file() or sha256_file(root / path) != sha]
    if missing:
        raise UsageError(f"{missing[0]} is missing or not the CPU stage's artifact here (carry "
                         f"{choice.carry})")
    out.mkdir(parents=True, exist_ok=True)
    record = GpuRecord(kind=choice.kind, document_sha256=sha256_file(document), mode=choice.mode,
                       seed=seed, options=choice.options)
    info = envmod.gpus()
    if not info.get("available"):
        record.status, record.reason = "not run", NO_GPU
        record.detail = info.get("reason") or "none found"
        record.write(out)
        say(f"{choice.name}: {NO_GPU} ({record.detail}); nothing run ({out / GPU_FILE})")
        return EXIT_NO_DRIVER
    first = (info.get("gpus") or [{}])[0]
    record.device = {"name": first.get("name"), "compute_capability": first.get("compute_capability"),
                     "driver_version": info.get("driver_version"),
                     "cuda_driver_api": info.get("cuda_driver_api")}
    started = time.monotonic()
    status = EXIT_OK
    ran: dict[tuple[Any, ...], Run] = {}
    todo = choice.first()
    while todo:
        for run in todo:
            if choice.done(run):
                continue
            run.seed = seed + len(record.runs)
            key = (tuple(sorted((a, s.sha256) for a, s in run.substitutes.items())), run.arms)
            spent, need = time.monotonic() - started, choice.harness.seconds(run)
            if key in ran:  # an artifact seen again later on the axis: run once
                _repeat(run, ran[key])
            elif choice.budget_s is not None and spent + need > choice.budget_s:
                run.status = "not run"
                run.reason = (f"not run: the GPU stage's budget of {choice.budget_s:g} s would be "
                              f"exceeded ({spent:.0f} s spent, about {need:.0f} s more needed)")
                choice.decide(run, None)
            else:
                status = _execute(choice, run, record, out, root, say) or status
                ran[key] = run
            choice.settle(run)
            record.runs.append(run)
            record.write(out)
            if run.exit == EXIT_NO_DRIVER and run.same_as is None:
                record.status, record.reason = "not run", NO_GPU
                record.detail = _last_line(out / f"{run.id}.log")
                record.write(out)
                return EXIT_NO_DRIVER
        todo = choice.next()
    record.status, record.wall_s = "ran", round(time.monotonic() - started, 1)
    record.write(out)
    say(f"{choice.name}: {choice.summary(record, document, out)} ({out / GPU_FILE})")
    return status
