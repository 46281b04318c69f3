"""The stock Python-program driver: a Python program run once per trial, its exit, exception or
crash classified.

    python python_program.py [--counter runs] [--versions numba,llvmlite] [--exit-check]
                             [--instrumented] [--calls NAME,...]
                             [--printed REGEX | --returned NAME]
                             [--expect JSON | --expect-from FILE.py] [--check-rel R --check-abs A]
                             -- SCRIPT [ARG ...]

The program is the reporter's script (from the case's ``seed/``, byte for byte as filed) or an
instrumented variant of it; a case's ``trial_command`` returns ``ctx.python_program(script,
*args, preload=ctx.artifacts["crash_preload"])`` (model.TrialContext), so the arm's runtime
packages (Case.runtime) come first on its path and the crash object (kit.crash_preload) is
preloaded. This file speaks the driver kit's protocol (gpurepro.case.driver) around the
program: libcuda loaded first (none: ``no_driver``), the start event (the program's file name,
its arguments, the versions of the ``--versions`` distributions), heartbeats, one count of the
exposure counter (``--counter``: the case's ``Exposure.counter``) before the program starts,
the thread's phase (``program``) for a crash record, and the final record. The program runs in
this process as ``__main__`` (runpy), with its own ``sys.argv`` and its folder first on
``sys.path``, as ``python SCRIPT ARG ...`` runs it, except that what it prints goes to standard
error (standard output carries the protocol's events, and the trial record keeps both tails);
its non-daemon threads are joined when it returns, as the interpreter would.

How a trial ends, and the outcome the harness gives it (gpurepro.run.classify):

- the program returns, or exits with status 0: final ``ok``, ``survived``;
- it dies of a signal (a SIGSEGV inside libcuda): no final record, ``crashed``, with the native
  crash record and Python's frames below it;
- it raises an exception that carries a CUDA error: final ``cuda_error``, ``cuda_error`` with
  the error's name and, where the message names one (``cuCtxSynchronize``), the call. Carrying
  one is: a ``code`` on an exception whose class name says CUDA (numba's CudaAPIError), named
  by the driver's cuGetErrorName; a CUresult among its arguments; a ``CUDA_ERROR_*`` name in
  its message; or a message that mentions CUDA and holds the driver's own description of an
  error (cuGetErrorString: what runtime-API libraries such as PyTorch print). An error that
  means no usable device (CUDA_ERROR_NO_DEVICE, _INSUFFICIENT_DRIVER, _STUB_LIBRARY) is
  ``unsupported`` instead, as for every driver of the kit;
- it raises ImportError, or the variant raises ``Unsupported``: final ``unsupported`` (this
  node cannot run it: a package neither pinned nor installed here);
- any other exception, or a non-zero exit status: the taxonomy (DESIGN.md) has no outcome "the
  program failed some other way". Without ``--exit-check`` the closest is ``harness_error``:
  the traceback and the exit status, no final record, the exception named in the detail; no
  evidence about the bug, and the run says so. With ``--exit-check`` the case declares that
  the program's clean exit is its output check (the reporter's ``assert``, or its
  ``sys.exit(1)`` on a wrong answer; the case declares ``check=OutputCheck("exact")`` and
  ``wrong_result`` among its failures): every final ``ok`` carries a one-element check, which
  mismatches here: ``wrong_result``.

A value the program prints or returns (``--printed``/``--returned`` with ``--expect`` or
``--expect-from``; ``TrialContext.python_program(..., value=ProgramValue(...))``): what the
program prints still goes to standard error, and is kept too; once the program has returned or
exited 0, its value (the last match of ``--printed`` in what it printed, the first group where
the expression has one; the global ``--returned`` names; neither: its last printed line) is
compared with the expected one: ``--expect``, a JSON value, or what ``expected(libcuda)`` in
``--expect-from`` returns, called before the program runs (the driver's own answer: libcuda,
loaded here, asked directly). Numbers compare exactly or within ``--check-rel``/``--check-abs``,
lists element by element, strings exactly; a printed value is read as the expected one's type.
Every final ``ok`` then carries the comparison as its check (the case declares
``check=OutputCheck(...)`` and ``wrong_result`` among its failures), so a program that prints a
wrong value is ``wrong_result``, never ``survived``, and one that printed no value is a
mismatch against nothing. The observations name ``value``: what it got, what was expected and
where each came from.

An instrumented variant (``from gpurepro.case import python_program as trial``) may use, while
it runs under this driver: ``trial.observe(**facts)`` (the final record's observations),
``trial.enter(name)`` and ``trial.leave()`` around a call it makes (``name`` one of ``--calls``:
the crash record's thread names it), ``trial.error_name(code)`` and ``raise
trial.Unsupported(reason)``;
with ``--instrumented`` it also writes the start event itself, ``trial.start(**facts)`` (facts
it learns after its imports; a crash after it keeps them), and counts its own exposure,
``trial.expose()`` (before the call it measures, as a native driver counts). Standard library
only.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.metadata
import importlib.util
import io
import json
import math
import os
import re
import runpy
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from gpurepro.case import driver as kit

# What other modules use; the rest is this module's own.
__all__ = [
    "as_expected", "compare_value", "cuda_error", "descriptions", "enter", "error_name",
    "expose", "installed_version", "leave", "main", "observe", "plain", "printed_value",
    "start", "Unsupported"
]

_CUDA_NAME = re.compile(r"\bCUDA_ERROR_[A-Z0-9_]+\b")
_CALL = re.compile(r"\b(cu[A-Z][A-Za-z0-9_]*)\b")
_TRIAL: dict[str, Any] = {}  # the running trial: its driver, its config, whether it started


class Unsupported(Exception):
    """Raised by a program: this node cannot run it (final ``unsupported``, the message the
    reason)."""


def start(**facts: Any) -> None:
    """The start event, once, with the driver's config and ``facts`` (--instrumented)."""
    if _TRIAL and not _TRIAL["started"]:
        _TRIAL["started"] = True
        _TRIAL["driver"].start({**_TRIAL["config"], **facts})


def expose(n: int = 1) -> None:
    """Count ``n`` on the exposure counter (--instrumented: the driver counts nothing itself)."""
    if _TRIAL:
        _TRIAL["driver"].counters[_TRIAL["counter"]].inc(n)


def enter(name: str) -> None:
    """The thread is now in the call ``name`` (one of --calls): a crash until ``leave()`` names
    it in the crash record's threads, as a native driver's does. A plain function, so the program
    makes the call itself, as it would without this driver."""
    if _TRIAL:
        _TRIAL["slot"].enter(_TRIAL["phases"].id(name))


def leave() -> None:
    """The thread has left the call it entered (the record keeps it as the last one)."""
    if _TRIAL:
        _TRIAL["slot"].exit()


def observe(**facts: Any) -> None:
    """Facts for the final record's observations."""
    if _TRIAL:
        _TRIAL["driver"].observations.update(facts)


def error_name(code: Any) -> str:
    """A CUDA result's name, as the driver names it (cuGetErrorName)."""
    return _TRIAL["driver"].error_name(code) if _TRIAL else f"CUDA_ERROR_{int(code)}"


def installed_version(dist: str) -> str | None:
    """The version of the distribution ``dist`` this interpreter imports, None without it."""
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def cuda_error(exc: BaseException, name_of: Callable[[Any], str],
               described: Callable[[str], str | None] = lambda text: None
               ) -> tuple[str, str | None] | None:
    """(the CUDA error's name, the call the message names or None) when ``exc`` carries a CUDA
    error (see the module's docstring), else None. ``name_of`` names a code (cuGetErrorName);
    ``described`` finds the name whose driver description a text holds."""
    text = str(exc)
    call = _CALL.search(text)
    name = None
    code = getattr(exc, "code", None)
    if "cuda" in type(exc).__name__.lower() and code is not None and not isinstance(code, bool):
        try:
            name = name_of(code)
        except (TypeError, ValueError):
            name = None
    for arg in exc.args:
        named = getattr(arg, "name", None)
        if name is None and isinstance(named, str) and named.startswith("CUDA_ERROR_"):
            name = named
    found = _CUDA_NAME.search(text)
    if name is None and found:
        name = found.group(0)
    if name is None and re.search(r"\bcuda\b", text, re.IGNORECASE):
        name = described(text)
    return (name, call.group(1) if call else None) if name else None


def descriptions(lib: ctypes.CDLL | None,
                 name_of: Callable[[int], str]) -> Callable[[str], str | None]:
    """A text -> the name of the CUDA error whose description (cuGetErrorString) it holds, the
    longest one found; None without the function or a match."""
    fn = getattr(lib, "cuGetErrorString", None) if lib is not None else None

    def find(text: str) -> str | None:
        if fn is None:
            return None
        fn.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        best: tuple[int, int] | None = None
        for code in range(1, 1000):
            s = ctypes.c_char_p()
            if fn(code, ctypes.byref(s)) == 0 and s.value:
                said = s.value.decode(errors="replace")
                if said in text and (best is None or len(said) > best[0]):
                    best = (len(said), code)
        return name_of(best[1]) if best else None
    return find


def _exit_status(code: Any) -> int:
    """SystemExit's code as the interpreter turns it into an exit status (a message: 1)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


class _Kept(io.TextIOBase):
    """Standard output for the program: what it prints goes to standard error, and its last
    KEPT characters are kept for its value (--printed)."""

    KEPT = 1 << 20

    def __init__(self, stream: Any):
        self.stream, self.text = stream, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.stream.write(text)
        self.text = (self.text + text)[-self.KEPT:]
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:
        return int(self.stream.fileno())

    @property
    def buffer(self) -> Any:  # bytes written here are not kept
        return self.stream.buffer

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(self.stream.encoding)


def plain(value: Any) -> Any:
    """A value as JSON holds it: numbers, strings, booleans, None and lists of them; a numpy
    scalar or an int-like object (a CUdevice) as its number; a float that is not finite as its
    name ("nan", "inf"), anything else as its str()."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):
        try:
            return plain(value.item())
        except (TypeError, ValueError):
            pass
    if hasattr(value, "__index__") or hasattr(value, "__int__"):
        try:
            return int(value)
        except (TypeError, ValueError):
            pass
    return str(value)


def printed_value(text: str, pattern: str) -> str | None:
    """The last match of ``pattern`` in ``text`` (its first group where it has one), or the
    last non-blank line when ``pattern`` is empty; None when nothing matches."""
    if not pattern:
        lines = [line for line in text.splitlines() if line.strip()]
        return lines[-1].strip() if lines else None
    found = list(re.finditer(pattern, text, re.M))
    if not found:
        return None
    last = found[-1]
    return (last.group(1) if last.re.groups else last.group(0)).strip()


def as_expected(got: Any, want: Any) -> Any:
    """A printed value (a string) read as the expected value's type: a number, a list (JSON, or
    numbers separated by commas or blanks) or the string itself; anything else as it is."""
    if not isinstance(got, str) or isinstance(want, str):
        return got
    text = got.strip()
    try:
        if isinstance(want, list):
            try:
                return json.loads(text)
            except ValueError:
                return [_number(x) for x in re.split(r"[,\s]+", text.strip("[]() ")) if x]
        if isinstance(want, bool):
            return {"true": True, "false": False}.get(text.lower(), text)
        if isinstance(want, (int, float)):
            return _number(text)
    except ValueError:
        return got
    return got


def _number(text: str) -> int | float:
    try:
        return int(text, 0)
    except ValueError:
        return float(text)


def compare_value(got: Any, want: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The check object of the program's value against the expected one: element by element
    for lists, one element otherwise; numbers exactly or within the tolerance, anything else
    exactly (kit.compare's shape)."""
    rel, abs_tol = args.check_rel or None, args.check_abs or None
    tolerance = rel is not None or abs_tol is not None
    g = got if isinstance(got, list) else [got]
    w = want if isinstance(want, list) else [want]
    numbers = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in [*g, *w])
    if numbers and len(g) == len(w):
        return kit.compare(g, w, rel=rel, abs_tol=abs_tol)
    bad = [[i, plain(g[i]) if i < len(g) else None, plain(w[i]) if i < len(w) else None]
           for i in range(max(len(g), len(w)))
           if i >= len(g) or i >= len(w) or g[i] != w[i]]
    out: dict[str, Any] = {"kind": "tolerance" if tolerance else "exact",
                           "n": max(len(g), len(w)), "mismatches": len(bad), "first": bad[:8]}
    if tolerance:
        out.update(rel=float(rel or 0.0), abs=float(abs_tol or 0.0))
    return out


def driver_answer(path: Path, lib: Any) -> Any:
    """``expected(libcuda)`` of the case's file ``path``: the driver's own answer."""
    spec = importlib.util.spec_from_file_location(f"gpurepro_answer_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.expected(lib)


def _join_program_threads() -> None:
    for t in threading.enumerate():
        if t is not threading.current_thread() and not t.daemon:
            t.join()


def main(argv: list[str]) -> None:
    cut = argv.index("--") if "--" in argv else len(argv)
    own, program = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counter", default="runs", help="the case's exposure counter (one per run)")
    ap.add_argument("--versions", default="",
                    help="distributions whose versions the start event names, comma-separated")
    ap.add_argument("--calls", default="",
                    help="the calls a variant names (enter), comma-separated")
    ap.add_argument("--exit-check", action="store_true",
                    help="the program's clean exit is its output check (wrong_result otherwise)")
    ap.add_argument("--instrumented", action="store_true",
                    help="the program writes the start event and counts its exposure itself")
    source = ap.add_mutually_exclusive_group()
    source.add_argument("--printed", metavar="REGEX",
                        help="the value: the last match in what the program printed (its first group)")
    source.add_argument("--returned", metavar="NAME",
                        help="the value: the global NAME the program leaves")
    expect = ap.add_mutually_exclusive_group()
    expect.add_argument("--expect", metavar="JSON", type=json.loads,
                        help="the value the program should print or return")
    expect.add_argument("--expect-from", metavar="FILE.py", type=Path,
                        help="a file whose expected(libcuda) is the value the program should give")
    kit.add_check_arguments(ap)
    kit.add_budget_arguments(ap)
    args = ap.parse_args(own)
    if not program:
        kit.usage_error(ap, "no program: -- SCRIPT [ARG ...]")
    checks_value = args.expect is not None or args.expect_from is not None
    if (args.printed or args.returned) and not checks_value:
        kit.usage_error(ap, "--printed and --returned name a value: give --expect or --expect-from")
    d = kit.Driver("python-program", (args.counter,), exposure=args.counter,
                   budget=kit.Budget.of(args))
    threading.excepthook = threading.__excepthook__  # a program's thread may raise, as it would
    lib = d.libcuda()
    script = Path(program[0])
    phases = d.track_calls(("program", *filter(None, args.calls.split(","))), workers=1)
    _TRIAL.update(driver=d, started=False, counter=args.counter, phases=phases,
                  slot=phases.slot(0), config={
                      "program": script.name, "args": program[1:],
                      **{dist.replace("-", "_"): installed_version(dist)
                         for dist in filter(None, args.versions.split(","))}})
    if not args.instrumented:
        start()
        expose()  # one run, counted before it: a crash in it counts it
    want: Any = args.expect
    if args.expect_from is not None:  # the driver's own answer, before the program runs
        want = plain(driver_answer(args.expect_from, lib))
        d.observations["value"] = {"expected": want, "expected_from": args.expect_from.name}
    sys.argv = [str(script), *program[1:]]
    sys.path[0] = str(script.resolve().parent)
    kept = _Kept(sys.stderr)
    # The protocol's events own standard output: the program prints to standard error (kept,
    # where its printed value is checked).
    sys.stdout = kept if checks_value else sys.stderr
    failed, status, left, stopped = None, 0, None, False
    _TRIAL["slot"].enter(0)
    try:
        left = runpy.run_path(str(script), run_name="__main__")
        _join_program_threads()
    except SystemExit as exc:
        status = _exit_status(exc.code)
        failed = f"exit status {status}" if status else None
    except Unsupported as exc:
        stopped = True
        d.stop_with("unsupported", reason=str(exc) or "the program says this node cannot run it")
    except ImportError as exc:
        stopped = True
        d.stop_with("unsupported", reason=f"the program cannot import what it needs: {exc}")
    except Exception as exc:
        error = cuda_error(exc, d.error_name, descriptions(lib, d.error_name))
        if error is None and not args.exit_check:
            raise  # the kit's excepthook: the traceback, exit status 1, no final record
        if error is None:
            traceback.print_exc()
            failed = f"{type(exc).__name__}: {exc}"[:300]
        else:
            stopped = True
            name, at = error
            d.record_error(SimpleNamespace(name=name))  # counted by its name
            if name in kit.UNSUPPORTED_SETUP_ERRORS:  # no device, or a driver too old
                d.stop_with("unsupported", name, at, f"{at or type(exc).__name__}: {name}")
            else:
                d.stop_with("cuda_error", name, at)
    _TRIAL["slot"].exit()
    start()  # a program that stopped before its start(): the event, before the final record
    checks = []
    if args.exit_check:
        checks.append({"kind": "exact", "n": 1, "mismatches": 1 if failed else 0,
                       "first": [[0, failed, "a clean exit"]] if failed else []})
    if checks_value and not (status or failed or stopped):
        got = (plain((left or {}).get(args.returned)) if args.returned
               else as_expected(printed_value(kept.text, args.printed or ""), want))
        checks = [compare_value(plain(got), want, args)]  # the exit check passed: a clean exit
        d.observations["value"] = {
            **d.observations.get("value", {}), "got": plain(got), "expected": want,
            "source": f"returned {args.returned}" if args.returned
            else f"printed {args.printed!r}" if args.printed else "the last line printed"}
    if checks:
        d.exit(check=kit.merge_checks(checks) if len(checks) > 1 else checks[0])
    if status:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(status)  # no final record: the exit status is what the program said
    d.exit()


if __name__ == "__main__":
    # Run as a file, this module is __main__: the program's `from gpurepro.case import
    # python_program` must find the trial's state, so main runs in the importable module.
    from gpurepro.case import python_program as _importable

    _importable.main(sys.argv[1:])
