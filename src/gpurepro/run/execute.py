"""Run: execute a plan's trials as isolated processes and journal each one as it finishes.

Standard library only (rich is used for the progress display when it is importable), so this
stage runs from a prebuilt build/ on a GPU node with no network. Workers: ``jobs`` trial
processes at a time per GPU, each GPU pinned with CUDA_VISIBLE_DEVICES; trials are taken from
the shuffled plan in order, so every arm is spread over every GPU.
"""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..case.model import Case, TrialBudget, TrialContext
from ..env import privacy
from ..errors import STOP_SIGNALS, HarnessError, JournalError, Stopped
from ..model.plan import Plan, PlannedTrial
from .classify import COUNTER_MAX, StdoutTail, classify, exit_description, short_module
from .journal import Journal
from .progress import Progress
from .rehash import ArtifactChanged, verify_artifacts
from .runtime import site_for, verify_site
from .schedule import Pick
from .stops import start_thread
from .trial import TrialCancelled, run_trial
from .values import fitted, is_count, number_problem, unfit
from .watchdog import RUN_ID_VARIABLE, harness_tag, new_token

# What other modules use; the rest is this module's own.
__all__ = [
    "crash_summary", "execute_plan", "execute_trial", "Gate", "gate", "ignore_stop_signals",
    "RunOptions", "stop_signals", "unsupported_record"
]


@dataclass(frozen=True)
class RunOptions:
    budget: TrialBudget
    jobs: int = 1
    gpus: tuple[str, ...] = ()  # CUDA_VISIBLE_DEVICES values; () = leave as is
    redact: bool = False
    extra_env: Mapping[str, str] = field(default_factory=dict)
    # With ``harness``, tags every trial process (and what it forks) for the watchdog; see
    # watchdog.py.
    run_id: str | None = None
    # This harness process's own token: each start and each resume of a run makes its options
    # anew, so no earlier harness's watchdog matches this one's trials.
    harness: str = field(default_factory=new_token)

    @property
    def tag(self) -> str | None:
        """What this harness's trials carry in GPUREPRO_RUN_ID, and its watchdog sweeps by."""
        return harness_tag(self.run_id, self.harness) if self.run_id else None


@dataclass
class Gate:
    """Whether the device can run the case, decided once before any trial."""

    supported: bool
    target: str
    device: dict[str, Any]
    reason: str | None = None


def gate(case: Case, gpu_info: Mapping[str, Any], requested_target: str | None,
         gpus: Sequence[str]) -> Gate:
    if not case.devices.requires_gpu:
        target = requested_target or next(iter(case.devices.targets.values()))
        return Gate(True, target, {"name": None, "compute_capability": None}, None)
    listed = gpu_info.get("gpus") or []
    chosen = [g for g in listed
              if not gpus or str(g.get("index")) in gpus or str(g.get("uuid")) in gpus] or listed
    device = dict(chosen[0]) if chosen else {}
    cc = device.get("compute_capability")
    native_target = case.devices.target_for(cc) if cc else None
    target = requested_target or native_target or next(iter(case.devices.targets.values()))
    if not gpu_info.get("available") or not chosen:
        reason = gpu_info.get("reason") or "no CUDA driver or GPU present"
        return Gate(False, target, device, reason)
    if native_target is None:
        need = ", ".join(f"{c} ({t})" for c, t in case.devices.targets.items())
        why = f"; {case.devices.why}" if case.devices.why else ""
        return Gate(False, target, device,
                    f"{device.get('name')} has compute capability {cc}; this case needs {need}{why}")
    if requested_target and requested_target != native_target:
        # Running a build for another architecture is allowed (that is how one shows a
        # cubin cannot load here); trials then classify as unsupported/invalid on their own.
        return Gate(True, target, device,
                    f"running {requested_target} artifacts on a {cc} device ({native_target})")
    return Gate(True, target, device, None)


def _context(case: Case, arm: str, factors: Mapping[str, Any], index: Mapping[str, Any],
             root: Path, budget: TrialBudget) -> TrialContext:
    artifacts = {name: root / e["path"] for name, e in index["artifacts"].items()}
    # An artifact built per toolchain release (Artifact.per): its name is the arm's build.
    for art in case.artifacts:
        if art.per and art.built_name(factors.get(art.per)) in artifacts:
            artifacts[art.name] = artifacts[art.built_name(factors.get(art.per))]
    return TrialContext(arm=arm, factors=factors, artifacts=artifacts, budget=budget,
                        native=root / "native", case_dir=case.directory, check=case.check,
                        runtime=site_for(index.get("runtime"), arm, root))


def crash_summary(crash: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A crash record reduced to what is portable: module basenames and offsets."""
    if not crash:
        return None
    python = {"python_frames": crash["python_frames"]} if crash.get("python_frames") else {}
    if "unparsed" in crash:
        return {"unparsed": str(crash["unparsed"])[:500], **python}
    if "signal" not in crash:  # a Python driver's frames without a native record
        return python or None

    # Each field as the schema has it, whatever the record said (a driver's record is read,
    # not believed): text or null, an integer or null, lists of objects.
    def where(m: Any) -> dict[str, Any]:
        if not isinstance(m, Mapping):
            return {"module": "[unmapped]", "offset": None, "perms": None}
        return {"module": short_module(_text(m.get("path"))), "offset": _text(m.get("offset")),
                "perms": _text(m.get("perms"))}

    pc = where(crash.get("pc_map"))
    listed = crash.get("frames")
    listed = listed if isinstance(listed, list) else []
    frames = [{"module": short_module(_text(f.get("path"))), "offset": _text(f.get("offset"))}
              for f in listed if isinstance(f, Mapping)]
    return {
        "signal": _text(crash.get("signal")),
        "si_code": _integer(crash.get("si_code")),
        "code_name": _text(crash.get("code_name")),
        "fault_address": _text(crash.get("addr")),
        "fault_in": where(crash.get("addr_map")),
        "pc_module": pc["module"],
        "pc_offset": pc["offset"],
        "pc_perms": pc["perms"],
        "frames": frames,
        "t": _clock(crash.get("t")),
        # Every worker's published call (native/events.h, PhaseSlot), where the driver
        # publishes them: `threads` at the fault where the record says how long the snapshot
        # took (snapshot_ns; older handlers read them late), `threads_late` as read again after
        # the handler's slow part. Thread ids are left out (they differ every run).
        **_int_field(crash, "snapshot_ns"),
        **({"threads": _threads(crash["threads"])} if isinstance(crash.get("threads"), list) else {}),
        **({"threads_late": _threads(crash["threads_late"])}
           if isinstance(crash.get("threads_late"), list) else {}),
        **_int_field(crash, "late_read_ns"),
        # A Python driver's frames (faulthandler), per thread, the faulting one first.
        **python,
    }


def _text(value: Any) -> str | None:
    """A crash record's text field: a string (a number as its digits), or None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or number_problem(value):
        return None
    return str(value)


def _integer(value: Any) -> int | None:
    return (value if isinstance(value, int) and not isinstance(value, bool)
            and number_problem(value) is None else None)


def _int_field(crash: Mapping[str, Any], key: str) -> dict[str, int]:
    """A count of nanoseconds the handler measured, kept where it can be one (0 … 2^63-1)."""
    value = crash.get(key)
    return ({key: value} if isinstance(value, int) and not isinstance(value, bool)
            and 0 <= value <= COUNTER_MAX else {})


def _clock(value: Any) -> int | float | None:
    """The driver's clock at its crash (seconds since its start): None where it cannot be one
    (negative, not finite, not a number), which no JSON document could carry or believe."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if number_problem(value) is None and 0 <= value <= COUNTER_MAX else None


def _threads(threads: Sequence[Any]) -> list[dict[str, Any]]:
    """Each thread's published call as the schema has it; an entry of other types is left out."""
    kept = []
    for t in threads:
        if not isinstance(t, Mapping):
            continue
        entry = {"thread": t.get("thread"), "call": _text(t.get("call")),
                 "inside": t.get("inside"), "calls": t.get("calls"), "faulting": t.get("faulting")}
        if (is_count(entry["thread"]) and is_count(entry["calls"])
                and isinstance(entry["inside"], bool) and isinstance(entry["faulting"], bool)):
            kept.append(entry)
    return kept


def execute_trial(case: Case, planned: PlannedTrial, factors: Mapping[str, Any],
                  index: Mapping[str, Any], root: Path, opts: RunOptions, gpu: str | None,
                  worker: int, cancel: threading.Event | None = None,
                  on_line: Callable[[str], None] | None = None,
                  max_exposure: int | None = None,
                  max_seconds: float | None = None) -> dict[str, Any]:
    """Run one planned trial and return its journal record. ``max_exposure``: this trial's own
    exposure budget, below the run's (the decisive design caps a survivor whose exposure would
    decide its arm's claims before the whole budget, and a design with a horizon every trial of
    its rate claims' arms at it); ``max_seconds``: its own duration, below the run's (a capped
    trial's, so that a driver that cannot stop at an exposure stops near it). Both recorded in
    the trial."""
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    base = {"index": planned.index, "arm": planned.arm, "rep": planned.rep, "gpu": gpu,
            "worker": worker, "started_at": started_at}
    budget = opts.budget if max_exposure is None else replace(opts.budget, max_exposure=max_exposure)
    if max_exposure is not None:
        base["max_exposure"] = max_exposure
    if max_seconds is not None and max_seconds < budget.duration_s:
        budget = replace(budget, duration_s=max_seconds)
        base["max_seconds"] = max_seconds
    try:
        cmd = case.trial_command(_context(case, planned.arm, factors, index, root, budget))
        parse = None if cmd.parser == "jsonl" else case.parsers[cmd.parser]
    except Exception as exc:  # the manifest's bug: recorded, never blamed on the GPU
        return {**base, "outcome": "harness_error",
                "detail": f"trial_command failed: {type(exc).__name__}: {exc}",
                "exit": exit_description(None, False), "duration_s": 0.0, "counters": {},
                "exposure": 0, "errors": {}, "crash": None, "observations": {},
                "stderr_tail": "", "command": []}
    # What the trial runs is what the journal names: hashed again now, refused if replaced.
    verify_artifacts(index["artifacts"], root)
    site = site_for(index.get("runtime"), planned.arm, root)
    if site is not None:
        verify_site(site)
    env = {**os.environ, **opts.extra_env, **cmd.env}
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    if opts.tag:
        env[RUN_ID_VARIABLE] = opts.tag
    stdout = StdoutTail()
    done = run_trial(cmd.argv, env, root, opts.budget.timeout_s, parse=parse,
                     stall_s=opts.budget.stall_s,
                     on_line=stdout.hook(on_line), cancel=cancel)
    result = classify(done.observed, case.exposure.counter, case.check)
    record = {
        **base,
        "outcome": result.outcome,
        "detail": result.detail,
        "call": result.call,
        "exit": exit_description(done.observed.returncode, done.observed.timed_out,
                                 done.observed.stalled_s is not None),
        "duration_s": round(done.duration_s, 4),
        "counters": result.counters,
        "exposure": result.counters.get(case.exposure.counter, 0),
        "errors": result.errors,
        # A stalled trial's record is the harness's SIGQUIT, not a fault: its threads are in
        # the observations (where each one was stuck), and it is no crash.
        "crash": None if done.observed.stalled_s is not None else crash_summary(done.observed.crash),
        "observations": result.observations,
        "stderr_tail": done.observed.stderr_tail[-2000:],
        "stdout_tail": stdout.text(),
        "unparsed_lines": done.observed.unparsed_lines,
        "output_dropped": done.dropped or {},
        **({"duration_from": done.timing} if done.timing else {}),
        # What held the trial's processes (run/isolation.py): absent in journals from before.
        **({"containment": done.containment} if done.containment else {}),
        "command": list(cmd.argv),
        "env": dict(cmd.env),
        **({"check": result.check} if result.check is not None else {}),
    }
    # The journal's last guard (run/values.py): a value no document can hold, from wherever it
    # came, is named and kept as text.
    found = unfit(record, depth=-1)  # the record's own level: its observations count from 0
    if found is not None:
        record = {**fitted(record), "outcome": "harness_error",
                  "detail": f"the trial's record holds a value a result cannot: {found}"}
    # Checkout paths relative, home as ~, secret-named variables dropped (and, with --redact,
    # the hostname): the record may end up on a public issue.
    return privacy.portable_trial(record, root, opts.redact)


def unsupported_record(planned: PlannedTrial, reason: str) -> dict[str, Any]:
    return {"index": planned.index, "arm": planned.arm, "rep": planned.rep, "gpu": None,
            "worker": None, "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "outcome": "unsupported", "detail": reason, "exit": exit_description(None, False),
            "duration_s": 0.0, "counters": {}, "exposure": 0, "errors": {}, "crash": None,
            "observations": {}, "stderr_tail": "", "command": [], "spawned": False}


# Decides, before a trial starts, whether its arm still needs it (sequential stopping);
# gets the arm and every record so far.
ArmFilter = Callable[[str, list[dict[str, Any]]], bool]
# Picks the next trial (and its exposure cap, None: the run's budget) from those not yet run,
# given every record so far; None: no more trials (the decisive design, run.schedule).
Chooser = Callable[[list[dict[str, Any]], list[PlannedTrial]], "Pick | None"]


@contextmanager
def stop_signals(stopping: threading.Event | None = None) -> Iterator[None]:
    """Turn SIGTERM and SIGHUP (like SIGINT) into an exception in the main thread, setting
    ``stopping`` (when given) the moment a stop arrives, for threads that must notice it.

    Without this, SIGTERM would end the interpreter at once and leave the running trials'
    process groups behind (the watchdog would still sweep them, but the harness should not
    rely on its backstop)."""
    def raise_stopped(signum: int, _frame: object) -> None:
        if stopping is not None:
            stopping.set()
        raise Stopped(signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, raise_stopped)
                for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def ignore_stop_signals() -> None:
    """Once a command's work is done: a late stop must neither interrupt the exit nor end the
    process by the signal's default action (it would read as 'stopped', or leave no status)."""
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


def execute_plan(case: Case, plan: Plan, index: Mapping[str, Any], root: Path,
                 journal: Journal, opts: RunOptions, done: Sequence[dict[str, Any]] = (),
                 arm_still_needed: ArmFilter | None = None,
                 progress: Progress | None = None,
                 choose_next: Chooser | None = None) -> list[dict[str, Any]]:
    """Run every planned trial not already in ``done``; return all records (old and new).

    Trials are taken in the plan's order, each skipped when ``arm_still_needed`` says its arm is
    not; or, with ``choose_next``, the next trial is the one it picks from those not yet run
    (with its exposure cap), until it picks none.

    Each record is journaled (flushed) before the worker takes its next trial. On SIGINT,
    SIGTERM or SIGHUP every running trial's process group is killed, nothing is journaled for
    those trials (they rerun at resume), and ``Stopped`` propagates once every worker has
    ended. A worker that raises, or a journal that cannot be written, stops the run too and
    raises ``HarnessError``.
    """
    records = list(done)
    finished = {r["index"] for r in records}
    todo: queue.Queue[PlannedTrial] = queue.Queue()
    for t in plan.order:
        if t.index not in finished:
            todo.put(t)
    lock = threading.Lock()
    cancel = threading.Event()
    gpus: list[str | None] = list(opts.gpus) or [None]
    slots = [(gpu, j) for gpu in gpus for j in range(max(1, opts.jobs))]
    progress = progress or Progress(plan, records)
    failures: list[str] = []  # why the harness itself failed; read after the workers end

    taken: set[int] = set()

    def next_chosen() -> Pick | None:
        assert choose_next is not None
        with lock:
            remaining = [t for t in plan.order if t.index not in finished and t.index not in taken]
            picked = choose_next(list(records), remaining) if remaining else None
            if picked is None:
                return None
            taken.add(picked.trial.index)
            return picked

    def worker(slot: int, gpu: str | None) -> None:
        """``work``, and whatever ends it other than running out of trials stops the run: a
        worker that dies never leaves a run that seals its journal as complete."""
        try:
            work(slot, gpu)
        except BaseException as exc:
            failures.append(f"trial worker {slot} stopped: {type(exc).__name__}: {exc}")
            cancel.set()

    def work(slot: int, gpu: str | None) -> None:
        while not cancel.is_set():
            cap = seconds = None
            if choose_next is not None:
                picked = next_chosen()
                if picked is None:
                    return
                planned, cap, seconds = picked
            else:
                try:
                    planned = todo.get_nowait()
                except queue.Empty:
                    return
            if arm_still_needed is not None and choose_next is None:
                with lock:
                    needed = arm_still_needed(planned.arm, list(records))
                if not needed:
                    progress.skipped(planned)
                    continue
            try:
                rec = execute_trial(case, planned, plan.arms[planned.arm], index, root, opts,
                                    gpu, slot, cancel, max_exposure=cap, max_seconds=seconds)
            except TrialCancelled:
                return
            except ArtifactChanged as exc:  # not run, not journaled: the run stops, resumable
                failures.append(str(exc))
                cancel.set()
                return
            except Exception as exc:  # our bug: recorded for this trial, and the run fails
                failures.append(f"trial {planned.index} ({planned.arm}): {type(exc).__name__}: {exc}")
                rec = {**unsupported_record(planned, ""), "outcome": "harness_error",
                       "detail": f"{type(exc).__name__}: {exc}", "spawned": True}
            with lock:
                try:
                    journal.append_trial(rec)
                except OSError as exc:
                    failures.append(f"cannot write the journal {journal.path}: "
                                    f"{exc.strerror or exc}")
                    cancel.set()
                    return
                except JournalError as exc:  # our bug: the run stops, resumable, and says so
                    failures.append(f"trial {planned.index} ({planned.arm}): {exc}")
                    cancel.set()
                    return
                records.append(rec)
            progress.finished(rec)

    threads = [threading.Thread(target=worker, args=(i, g), daemon=True, name=f"trial-worker-{i}")
               for i, (g, _) in enumerate(slots)]
    with progress:
        try:
            for thread in threads:
                start_thread(thread)
            _wait(threads)
            if choose_next is not None:  # what the chooser left: not needed
                for t in plan.order:
                    if t.index not in finished and t.index not in taken:
                        progress.skipped(t)
        except (KeyboardInterrupt, Stopped):
            cancel.set()
            _wait_through_signals([t for t in threads if t.ident is not None])
            raise
    if failures:
        raise HarnessError(f"{failures[0]}" + (f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""))
    # Every planned trial ran or was not needed: the run's execution finished (a journal
    # without this record was stopped, and records as a partial run).
    journal.append_end({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "trials": len(records)})
    return records


def _wait(threads: Sequence[threading.Thread]) -> None:
    for t in threads:
        while t.is_alive():
            t.join(timeout=0.2)


def _wait_through_signals(threads: Sequence[threading.Thread]) -> None:
    """Wait for the workers to kill their trials and end, even through a second Ctrl-C."""
    while True:
        try:
            _wait(threads)
            return
        except (KeyboardInterrupt, Stopped):
            continue
