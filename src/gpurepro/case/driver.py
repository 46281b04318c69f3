"""The Python driver kit: a trial driver written in Python speaks native/'s protocol.

Standard library only: trial processes import it on GPU nodes with no network (Python 3.11+).
The protocol, the final statuses and the exit statuses are native/README.md's; this module is
the Python side of ``native/events.h`` and ``native/crash.h``::

    from gpurepro.case import driver as kit

    ap = argparse.ArgumentParser(); kit.add_budget_arguments(ap); args = ap.parse_args()
    d = kit.Driver("my-driver", counters=("cycles", "launches"), exposure="launches",
                   budget=kit.Budget.of(args))       # first: crash handling, counters
    d.start({"threads": 2})                           # start event, heartbeats from now on
    cuda = d.libcuda()                                # no driver: final no_driver, exit 3
    if d.failed(cuda.cuInit(0), "cuInit"): d.exit()   # cuda_error named at its call
    phases = d.track_calls(("cuModuleLoadData", "cuLaunchKernel"), workers=2)
    ... workers: ps = phases.slot(i); while not d.stopping: ps.enter(1); r = f(); ps.exit();
        d.expose() (the exposure counter; stops with ok at --max-exposure) ...
    d.run_until()                                     # --seconds, --max-exposure, or a stop
    d.join(threads)                                   # past --join-timeout: final hung
    d.exit(observations)                              # final record, then os._exit(status)

Crash records. ``Driver()`` enables :mod:`faulthandler` (every thread's Python frames on a
fatal signal) and, when the crash object ``libgpurepro_crash.so`` is preloaded (LD_PRELOAD),
puts the native handler in front of it (``gpurepro_crash_install_last``): on SIGSEGV inside
libcuda the native handler runs first, with the fault's own registers, and writes the
``GPUREPRO_CRASH`` line (PC as module + offset, fault address mapping, frames, counters and
every worker's call); it then calls faulthandler, which writes the Python frames below it, and
the process still dies of the signal. The counters and the thread phases live in the crash
object's own tables (plain 64-bit words written through ctypes), so the record reports them;
without the crash object they live in this process alone and only faulthandler's frames come.

Stopping. As for a native driver, SIGTERM and SIGINT keep their default action (the process
dies of them; the harness calls that ``harness_error``, killed from outside): a trial stopped
from outside is never a survival. Python's own SIGINT handler is put back to the default, and
so are SIGTERM and SIGHUP: a driver started by a process that ignores them (exec keeps an
ignored signal ignored) would otherwise outlive a stop.
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import json
import math
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

# What other modules use; the rest is this module's own.
__all__ = [
    "add_budget_arguments", "add_check_arguments", "Budget", "compare", "compare_as_declared",
    "Counter", "Driver", "elapsed", "EXIT_OK", "EXIT_UNSUPPORTED", "EXIT_USAGE",
    "MAX_PHASE_THREADS", "merge_checks", "PhaseSlot", "result_code", "UNSUPPORTED_LOAD_ERRORS",
    "UNSUPPORTED_SETUP_ERRORS", "usage_error"
]

# Exit statuses (native/README.md).
EXIT_OK = 0
EXIT_CUDA_ERROR = 1
EXIT_USAGE = 2
EXIT_UNSUPPORTED = 3  # also no_driver
EXIT_HUNG = 4
_EXIT_FOR = {"ok": EXIT_OK, "cuda_error": EXIT_CUDA_ERROR, "unsupported": EXIT_UNSUPPORTED,
             "no_driver": EXIT_UNSUPPORTED, "hung": EXIT_HUNG}

# The native tables' sizes (native/events.h: kMaxCounters, kMaxPhaseThreads).
MAX_COUNTERS = 16
MAX_PHASE_THREADS = 64

# First-load errors that mean the device cannot run the image at all (native/README.md).
UNSUPPORTED_LOAD_ERRORS = frozenset({"CUDA_ERROR_NO_BINARY_FOR_GPU", "CUDA_ERROR_INVALID_IMAGE",
                                     "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"})
# Setup errors that mean there is no usable device (host.cc's setup_failed).
UNSUPPORTED_SETUP_ERRORS = frozenset({"CUDA_ERROR_NO_DEVICE", "CUDA_ERROR_INSUFFICIENT_DRIVER",
                                      "CUDA_ERROR_STUB_LIBRARY"})

_T0 = time.monotonic()
# ctypes objects the crash object's tables point into (names, call-name arrays): they must live
# as long as the process, as native/events.h requires of its `const char *` arguments.
_KEEP: list[Any] = []


def elapsed() -> float:
    """Seconds since this module was imported (monotonic clock)."""
    return time.monotonic() - _T0


# ---- the crash object, when preloaded ----

def _crash_object() -> ctypes.CDLL | None:
    """The preloaded libgpurepro_crash.so's exports, found in the global scope; None without it."""
    try:
        lib = ctypes.CDLL(None)
        lib.gpurepro_crash_install_last  # noqa: B018 (the lookup is the test)
    except (OSError, AttributeError):
        return None
    lib.gpurepro_counter.restype = ctypes.c_void_p
    lib.gpurepro_counter.argtypes = [ctypes.c_char_p]
    lib.gpurepro_phase_slot.restype = ctypes.c_void_p
    lib.gpurepro_phase_slot.argtypes = [ctypes.c_int]
    lib.gpurepro_phase_names.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.gpurepro_phase_reserve.argtypes = [ctypes.c_int]
    return lib


_NATIVE = _crash_object()


def install_crash_handling() -> bool:
    """faulthandler for every thread's Python frames, then the native handler (when the crash
    object is preloaded) in front of it. True when the native record will be written."""
    faulthandler.enable(file=2, all_threads=True)
    if _NATIVE is not None:
        _NATIVE.gpurepro_crash_install_last()
    # Ctrl-C kills the driver as it kills a native one, instead of a traceback and exit 1; a
    # SIGTERM or SIGHUP its starter ignored kills it too.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    return _NATIVE is not None


# ---- counters and thread phases ----

class Counter:
    """One named 64-bit counter. ``inc`` is thread-safe and returns the new value."""

    __slots__ = ("name", "_word", "_lock")

    def __init__(self, name: str, word: ctypes.c_uint64):
        self.name = name
        self._word = word
        self._lock = threading.Lock()

    def inc(self, n: int = 1) -> int:
        with self._lock:
            v = self._word.value + n
            self._word.value = v
        return v

    def get(self) -> int:
        return self._word.value


def _counter_word(name: str) -> ctypes.c_uint64:
    if _NATIVE is None:
        return ctypes.c_uint64(0)
    raw = name.encode()
    _KEEP.append(raw)
    return ctypes.c_uint64.from_address(_NATIVE.gpurepro_counter(raw))


class PhaseSlot:
    """Where one worker thread is: the call it is in, or last left, and how many it entered.

    Two plain stores per call (``enter`` before it, ``exit`` after), to a word only this thread
    writes, in the layout of native/events.h's PhaseSlot: (calls << 16) | (call id << 1) | inside.
    """

    __slots__ = ("index", "tid", "_word", "_w")

    def __init__(self, index: int, word: ctypes.c_uint64, tid: int):
        self.index = index
        self.tid = tid
        self._word = word
        self._w = 0

    def enter(self, call: int) -> None:
        self._w = ((((self._w >> 16) + 1) << 16) | (call << 1) | 1)
        self._word.value = self._w

    def exit(self) -> None:
        self._w &= ~1
        self._word.value = self._w

    def run(self, call: int, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` with the phase published around it."""
        self.enter(call)
        try:
            return fn(*args)
        finally:
            self.exit()


class Phases:
    """The call names and one slot per worker thread (native/events.h: phase_names,
    phase_reserve, phase_slot). Ids index ``names``."""

    def __init__(self, names: Sequence[str], workers: int):
        if not 0 < workers < MAX_PHASE_THREADS:
            raise ValueError(f"workers must be 1..{MAX_PHASE_THREADS - 1}, got {workers}")
        self.names = tuple(names)
        self.workers = workers
        self._slots: dict[int, PhaseSlot] = {}
        self._lock = threading.Lock()
        if _NATIVE is not None:
            raw = (ctypes.c_char_p * len(self.names))(*(n.encode() for n in self.names))
            _KEEP.append(raw)
            _NATIVE.gpurepro_phase_names(ctypes.cast(raw, ctypes.c_void_p), len(self.names))
            _NATIVE.gpurepro_phase_reserve(workers)

    def id(self, name: str) -> int:
        return self.names.index(name)

    def slot(self, index: int) -> PhaseSlot:
        """The calling thread's slot for worker ``index``: call it in that thread, first."""
        if not 0 <= index < MAX_PHASE_THREADS:
            raise ValueError(f"phase slot {index} outside 0..{MAX_PHASE_THREADS - 1}")
        if _NATIVE is not None:
            _NATIVE.gpurepro_thread_altstack()
            word = ctypes.c_uint64.from_address(_NATIVE.gpurepro_phase_slot(index))
        else:
            word = ctypes.c_uint64(0)
        s = PhaseSlot(index, word, threading.get_native_id())
        with self._lock:
            self._slots[index] = s
        return s

    def snapshot(self) -> list[dict[str, Any]]:
        """Every reserved worker's call, as a hung final's ``observations.threads`` has them."""
        out = []
        with self._lock:
            slots = dict(self._slots)
        for i in range(max([self.workers, *(k + 1 for k in slots)])):
            w = slots[i]._word.value if i in slots else 0
            calls, call = w >> 16, (w >> 1) & 0x7FFF
            out.append({"thread": i,
                        "call": self.names[call] if calls and call < len(self.names) else None,
                        "inside": bool(w & 1), "calls": calls})
        return out


# ---- CUDA: the library, error names ----

class NoDriver(OSError):
    """libcuda.so.1 could not be loaded."""


def load_libcuda() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        raise NoDriver(str(exc)) from exc


def result_code(r: Any) -> int:
    """The integer of a CUDA result: an int (ctypes), a cuda.bindings ``CUresult`` (``.value``),
    or the tuple cuda.bindings returns (its first item)."""
    if isinstance(r, tuple):
        r = r[0]
    return int(getattr(r, "value", r))


class ErrorNames:
    """``CUresult`` -> name, asked of the driver itself (``cuGetErrorName``), cached."""

    def __init__(self, lib: ctypes.CDLL | None):
        self._fn = None
        if lib is not None:
            try:
                fn = lib.cuGetErrorName
            except AttributeError:
                fn = None
            if fn is not None:
                fn.restype = ctypes.c_int
                fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
                self._fn = fn
        self._cache: dict[int, str] = {}

    def __call__(self, code: int) -> str:
        name = self._cache.get(code)
        if name is None:
            s = ctypes.c_char_p()
            if self._fn is not None and self._fn(code, ctypes.byref(s)) == 0 and s.value:
                name = s.value.decode(errors="replace")
            else:
                name = f"CUDA_ERROR_{code}"
            self._cache[code] = name
        return name


# ---- the checked output ----

def compare(got: Sequence[Any], expected: Sequence[Any], *, rel: float | None = None,
            abs_tol: float | None = None, first: int = 8) -> dict[str, Any]:
    """The ``check`` object of a final record: ``{"kind": "exact"|"tolerance", "n": N,
    "mismatches": K, "first": [[i, got, expected], ...]}``, element by element (a missing or
    extra element is a mismatch, its missing side null); ``tolerance`` with ``rel``/``abs_tol``
    (math.isclose)."""
    tolerance = rel is not None or abs_tol is not None
    n = max(len(got), len(expected))
    bad: list[list[Any]] = []
    mismatches = 0
    for i in range(n):
        g = got[i] if i < len(got) else None
        e = expected[i] if i < len(expected) else None
        if g is None or e is None:
            same = g is e
        elif tolerance:
            same = math.isclose(g, e, rel_tol=rel or 0.0, abs_tol=abs_tol or 0.0)
        else:
            same = g == e
        if not same:
            mismatches += 1
            if len(bad) < first:
                bad.append([i, _json_number(g), _json_number(e)])
    out: dict[str, Any] = {"kind": "tolerance" if tolerance else "exact", "n": n,
                           "mismatches": mismatches, "first": bad}
    if tolerance:
        out.update(rel=float(rel or 0.0), abs=float(abs_tol or 0.0))
    return out


def _json_number(value: Any) -> Any:
    """A value as JSON can carry it: a float that is not finite by its name ("NaN",
    "Infinity", "-Infinity"; JSON has no such number, and a result document refuses one)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _json_numbers(value: Any) -> Any:
    """``_json_number`` over every value of a record (a NumPy scalar's float included)."""
    if isinstance(value, Mapping):
        return {k: _json_numbers(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_numbers(v) for v in value]
    return _json_number(float(value)) if isinstance(value, float) else value


def merge_checks(checks: Iterable[Mapping[str, Any]], first: int = 8) -> dict[str, Any]:
    """Several ``compare`` results (one per launch, say) as one check object: the counts
    summed, the indices running on from one to the next, the first ``first`` mismatches."""
    merged: dict[str, Any] | None = None
    offset = 0
    for c in checks:
        if merged is None:
            merged = {k: v for k, v in c.items() if k not in ("n", "mismatches", "first")}
            merged.update(n=0, mismatches=0, first=[])
        elif c.get("kind") != merged.get("kind"):
            raise ValueError(f"cannot merge a {c.get('kind')} check into a {merged.get('kind')} one")
        for i, g, e in c["first"]:
            if len(merged["first"]) < first:
                merged["first"].append([i + offset, g, e])
        merged["n"] += c["n"]
        merged["mismatches"] += c["mismatches"]
        offset += c["n"]
    return merged or {"kind": "exact", "n": 0, "mismatches": 0, "first": []}


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """--check-rel and --check-abs: the tolerance the case declares (``Case.check``), which
    ``TrialContext.check_arguments()`` passes on; 0 and 0 (the default): an exact check."""
    parser.add_argument("--check-rel", type=float, default=0.0,
                        help="relative tolerance of the output check (0: exact)")
    parser.add_argument("--check-abs", type=float, default=0.0,
                        help="absolute tolerance of the output check (0: exact)")


def compare_as_declared(got: Sequence[Any], expected: Sequence[Any], args: argparse.Namespace,
                        first: int = 8) -> dict[str, Any]:
    """``compare`` with the tolerance given by --check-rel/--check-abs (exact without one)."""
    rel = args.check_rel or None
    abs_tol = args.check_abs or None
    return compare(got, expected, rel=rel, abs_tol=abs_tol, first=first)


# ---- the budget ----

@dataclass(frozen=True)
class Budget:
    """What a trial may spend: ``seconds`` (<= 0: no time limit), ``max_exposure`` in the
    exposure counter (0: none), the heartbeat period and the join deadline (<= 0: wait for
    ever, the harness's limit then ends the trial)."""

    seconds: float = 20.0
    max_exposure: int = 0
    heartbeat_ms: int = 1000
    join_timeout_s: float = 10.0

    @classmethod
    def of(cls, args: argparse.Namespace) -> Budget:
        return cls(args.seconds, args.max_exposure, args.heartbeat_ms, args.join_timeout)


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    """--seconds, --max-exposure (alias --max-cycles, host.cc's name), --heartbeat-ms and
    --join-timeout, as native drivers take them."""
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="duration budget in seconds (<= 0: none)")
    parser.add_argument("--max-exposure", "--max-cycles", dest="max_exposure", type=int,
                        default=0, help="budget in the exposure counter (0: none)")
    parser.add_argument("--heartbeat-ms", type=int, default=1000)
    parser.add_argument("--join-timeout", type=float, default=10.0,
                        help="seconds to wait for the workers after the stop (0: for ever)")


# ---- the driver ----

class Driver:
    """One trial process's side of the protocol (native/README.md).

    Create it first thing: it installs the crash handling and registers the counters (in
    order; ``exposure`` names the manifest's exposure counter). Every status decision goes
    through :meth:`stop_with`, the first one wins; :meth:`exit` writes the final record for
    it and ends the process with its exit status.
    """

    def __init__(self, name: str, counters: Sequence[str], *, exposure: str | None = None,
                 budget: Budget = Budget()):
        if len(counters) > MAX_COUNTERS:
            raise ValueError(f"at most {MAX_COUNTERS} counters, got {len(counters)}")
        if exposure is not None and exposure not in counters:
            raise ValueError(f"exposure counter {exposure!r} is not among {list(counters)}")
        self.native_crash_record = install_crash_handling()
        self.name = name
        self.budget = budget
        self.counters = {c: Counter(c, _counter_word(c)) for c in counters}
        self.exposure = self.counters[exposure] if exposure else None
        self.stopping = False  # read by the workers' loops: one attribute load per iteration
        # Facts for the final record's ``observations``, gathered as the trial goes (a setup
        # failure's final record still carries what was learnt before it).
        self.observations: dict[str, Any] = {}
        self.phases: Phases | None = None
        self._wake = threading.Event()
        self._decision: tuple[str, str | None, str | None, str | None] | None = None
        self._decision_lock = threading.Lock()
        self._errors: dict[str, int] = {}
        self._errors_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._heartbeats: threading.Thread | None = None
        self._beating = threading.Event()
        self._names = ErrorNames(None)
        self._lib: ctypes.CDLL | None = None
        # A worker that raised is the driver's bug, never a survival: see finish().
        self._raised: str | None = None
        self._excepthook = threading.excepthook
        threading.excepthook = self._thread_raised
        self._sys_excepthook = sys.excepthook
        sys.excepthook = self._main_raised

    def _main_raised(self, exc_type: type[BaseException], exc_value: BaseException,
                     tb: types.TracebackType | None) -> None:
        """The main thread raised: the traceback, then exit status 1 at once, without a final
        record and without the interpreter's teardown (whose CUDA clean-up beside a worker
        still in a driver call could crash, and turn the driver's bug into a crash)."""
        self._beating.set()
        self._sys_excepthook(exc_type, exc_value, tb)
        try:
            sys.stderr.flush()
        except (OSError, ValueError, AttributeError):
            pass
        os._exit(EXIT_CUDA_ERROR)

    def _thread_raised(self, args: threading.ExceptHookArgs) -> None:
        self._excepthook(args)  # the traceback on stderr, where classify reads its last line
        if self._raised is None:
            self._raised = f"{args.exc_type.__name__}: {args.exc_value}"
        self.request_stop()

    # -- events --

    def _write(self, event: Mapping[str, Any]) -> None:
        """One event as one JSON line. A number JSON cannot carry (a NaN or an infinity in an
        observation or a checked output) goes as its name: the harness judges it (a NaN
        element of a check is a mismatch; one where a time belongs, the driver's error), and
        the final record is written whatever a case put in it."""
        try:
            text = json.dumps(event, separators=(",", ":"), allow_nan=False)
        except ValueError:
            text = json.dumps(_json_numbers(event), separators=(",", ":"), allow_nan=False)
        data = (text + "\n").encode()
        with self._write_lock:
            view = memoryview(data)
            while view:
                try:
                    n = os.write(1, view)
                except InterruptedError:
                    continue
                except OSError:
                    return  # stdout gone: nothing sensible left to do
                view = view[n:]

    def counter_values(self) -> dict[str, int]:
        return {c.name: c.get() for c in self.counters.values()}

    def errors(self) -> dict[str, int]:
        with self._errors_lock:
            return dict(self._errors)

    def start(self, config: Mapping[str, Any]) -> None:
        """The start event; heartbeats follow every ``budget.heartbeat_ms`` on a background
        thread until the final record."""
        self._write({"event": "start", "driver": self.name, "pid": os.getpid(),
                     "config": dict(config),
                     "python": {"version": sys.version.split()[0],
                                "native_crash_record": self.native_crash_record}})
        period = max(self.budget.heartbeat_ms, 1) / 1000.0
        self._heartbeats = threading.Thread(target=self._beat, args=(period,), daemon=True,
                                            name="gpurepro-heartbeat")
        self._heartbeats.start()

    def heartbeat(self) -> None:
        self._write({"event": "heartbeat", "t": round(elapsed(), 3),
                     "counters": self.counter_values(), "errors": self.errors()})

    def _beat(self, period: float) -> None:
        while not self._beating.wait(period):
            self.heartbeat()

    # -- stopping --

    def stop_with(self, status: str, error: str | None = None, call: str | None = None,
                  reason: str | None = None) -> bool:
        """Ask every loop to stop; the first call decides the final record. True if it won."""
        with self._decision_lock:
            if self._decision is not None:
                return False
            self._decision = (status, error, call, reason)
        self.stopping = True
        self._wake.set()
        return True

    def request_stop(self) -> None:
        """Stop the loops without deciding the status (a worker's last error still wins)."""
        self.stopping = True
        self._wake.set()

    def expose(self, n: int = 1) -> int:
        """Count ``n`` on the exposure counter; at the --max-exposure budget, stop with ok."""
        assert self.exposure is not None, "Driver(exposure=...) names no counter"
        v = self.exposure.inc(n)
        if self.budget.max_exposure and v >= self.budget.max_exposure:
            self.stop_with("ok")
        return v

    def run_until(self) -> None:
        """Main thread: wait until the duration or the exposure budget is spent, or a stop."""
        end = elapsed() + self.budget.seconds if self.budget.seconds > 0 else math.inf
        while not self.stopping:
            if (self.budget.max_exposure and self.exposure is not None
                    and self.exposure.get() >= self.budget.max_exposure):
                return
            left = end - elapsed()
            if left <= 0:
                return
            self._wake.wait(min(left, 0.010))

    def join(self, threads: Sequence[threading.Thread], deadline_s: float | None = None) -> int:
        """Stop the loops, then wait for each thread (heartbeats keep coming). Past
        ``deadline_s`` (default ``budget.join_timeout_s``; <= 0: for ever) the final status
        becomes ``hung`` (it replaces an ok, never a cuda_error decided first); returns how
        many threads were still running."""
        self.request_stop()
        deadline_s = self.budget.join_timeout_s if deadline_s is None else deadline_s
        stopped_at = elapsed()
        for t in threads:
            if deadline_s > 0:
                t.join(max(0.0, stopped_at + deadline_s - elapsed()))
            else:
                t.join()
        running = sum(t.is_alive() for t in threads)
        if running:
            reason = (f"{running} of {len(threads)} worker threads still running "
                      f"{elapsed() - stopped_at:.3g} s after the stop")
            with self._decision_lock:
                if self._decision is None or self._decision[0] == "ok":
                    self._decision = ("hung", None, None, reason)
        return running

    # -- CUDA --

    def libcuda(self) -> ctypes.CDLL:
        """libcuda.so.1 through ctypes, error names from its cuGetErrorName. No driver: the
        final record says no_driver (reason: the loader's message) and the process exits 3."""
        try:
            self._lib = load_libcuda()
        except NoDriver as exc:
            self.stop_with("no_driver", reason=str(exc))
            self.exit()
        self._names = ErrorNames(self._lib)
        return self._lib

    def error_name(self, r: Any) -> str:
        """The error's name: the one a cuda.bindings ``CUresult`` carries, else the driver's
        own (cuGetErrorName)."""
        named = getattr(r[0] if isinstance(r, tuple) and r else r, "name", None)
        if isinstance(named, str) and named.startswith("CUDA_"):
            return named
        return self._names(result_code(r))

    def record_error(self, r: Any) -> str:
        """Count one failed call; returns the error's name."""
        name = self.error_name(r)
        with self._errors_lock:
            self._errors[name] = self._errors.get(name, 0) + 1
        return name

    def failed(self, r: Any, call: str, *, unsupported: Iterable[str] = ()) -> bool:
        """False for CUDA_SUCCESS. Otherwise the error is counted and terminal: the trial
        stops as ``unsupported`` when its name is in ``unsupported`` (reason: "call: NAME"),
        else as ``cuda_error`` with the error's name and ``call``; returns True."""
        if result_code(r) == 0:
            return False
        name = self.record_error(r)
        if name in set(unsupported):
            self.stop_with("unsupported", name, call, f"{call}: {name}")
        else:
            self.stop_with("cuda_error", name, call)
        return True

    def track_calls(self, names: Sequence[str], workers: int) -> Phases:
        """Publish where each of ``workers`` threads is (native/events.h PhaseSlot): the crash
        record lists them, a hung final record too."""
        self.phases = Phases(names, workers)
        return self.phases

    # -- the end --

    def finish(self, observations: Mapping[str, Any] | None = None,
               check: Mapping[str, Any] | None = None) -> int:
        """Write the final record for whichever stop_with won ("ok" if none did), with
        ``observations`` (added to :attr:`observations`) and ``check`` when given; returns the
        exit status. Call it once every worker has returned (:meth:`join`), or a call that never
        returns would end as ok. A worker thread that raised leaves no final record at all and
        exit status 1: the harness calls that harness_error and names the exception."""
        if self._raised is not None:
            self._beating.set()
            return EXIT_CUDA_ERROR
        self.stop_with("ok")
        with self._decision_lock:
            status, error, call, reason = self._decision or ("ok", None, None, None)
        self._beating.set()
        if self._heartbeats is not None and self._heartbeats is not threading.current_thread():
            self._heartbeats.join(1.0)  # a heartbeat being written lands before the final
        event: dict[str, Any] = {"event": "final", "status": status, "t": round(elapsed(), 3),
                                 "counters": self.counter_values(), "errors": self.errors()}
        for key, value in (("error", error), ("call", call), ("reason", reason)):
            if value is not None:
                event[key] = value
        if check is not None:
            event["check"] = dict(check)
        obs = {**self.observations, **(observations or {})}
        if status == "hung" and self.phases is not None:
            obs["threads"] = self.phases.snapshot()
        if obs:
            event["observations"] = obs
        self._write(event)
        return _EXIT_FOR.get(status, EXIT_CUDA_ERROR)

    def exit(self, observations: Mapping[str, Any] | None = None,
             check: Mapping[str, Any] | None = None) -> NoReturn:
        """:meth:`finish`, then end the process at once (``os._exit``, as a native driver's
        ``_exit(finish())``): no interpreter teardown, whose CUDA clean-up could crash after
        the final record, and no wait for a worker stuck in a driver call."""
        code = self.finish(observations, check)
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        os._exit(code)


def usage_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """Exit status 2 with the usage, as a native driver's usage()."""
    parser.error(message)  # argparse exits 2
