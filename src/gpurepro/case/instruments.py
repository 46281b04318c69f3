"""Instruments: run a trial under compute-sanitizer, cuda-gdb or with GPU core dumps on.

"Does the failure survive under an instrument?" is a question for any GPU bug, so an instrument
is a factor level the harness knows how to apply. A case declares the factor and wraps its
trial command::

    from gpurepro.case import instruments

    factors = {..., "instrument": instruments.factor("coredump", "compute-sanitizer", "cuda-gdb")}
    trial_command = instruments.instrumented(my_trial_command)   # reads factors["instrument"]

(or calls ``instruments.wrap(cmd, name)`` itself). Level ``none`` runs the program as it is.
Any other level runs it through this file, as a script of the standard library only::

    python instruments.py --name NAME --kind KIND [--tool-path P --tool-version V | --not-found WHY]
                          [--arg A]... -- PROGRAM ARGS...

Kinds (``BUILTIN`` names them; a case may declare its own ``Instrument`` of these kinds):

* ``coredump``: ``CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1``, with ``CUDA_COREDUMP_FILE`` in a private
  temporary folder; the dumps' names and sizes are recorded and the files deleted unless
  ``GPUREPRO_KEEP_COREDUMPS`` names a folder to move them to. The "tool" is the driver: its
  version line (``/proc/driver/nvidia/version``) is recorded.
* ``sanitizer``: ``compute-sanitizer --tool <memcheck|racecheck|...>`` logging to a file, so the
  program's stdout stays clean; the error count and the first error lines are recorded.
* ``debugger``: a cuda-gdb batch run from start, the program's stdout redirected to a file so
  it never mixes with the debugger's; on a CUDA exception the exception, the frame and the
  instructions at the faulting PC are recorded, then the program continues and reports itself.
* ``prefix``: ``TOOL ARGS... PROGRAM...``, for any other wrapper (``env -u VAR``, ``taskset``).

The tool is found by gpurepro.case.toolchain (the case's pinned wheels, else the host for tools
that allow it) when the trial command is made, and its version line read there (once per run);
both travel in the argv, so the trial record's command names them too. When the tool is missing
the wrapper prints an ``instrument`` record with ``found: false`` and a ``final`` record with
status ``unsupported`` and exits 3: the trial is "not run", never a survival.

Output: the program's stdout lines are forwarded as they come (heartbeats included). One
``{"event": "instrument", ...}`` line is added at the end (``name``, ``tool``, ``found``,
``path``, ``version``, ``exit_code`` and the kind's findings); a JSON program's ``final`` record
is held back and re-emitted last with the same findings under ``observations.instrument``, so
they land in the trial record. A text-protocol program's parser folds the ``instrument`` line in
itself. If the debugger saw a CUDA exception and the program printed no JSON ``final``, one
naming the exception is synthesised (a text parser prefers the program's own). The program's
stderr passes through untouched. Exit status: the program's; a program killed by a signal kills
the wrapper with the same signal.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from .model import Factor, Tool, TrialCommand, TrialContext

# What other modules use; the rest is this module's own.
__all__ = [
    "BUILTIN", "driver_version", "emit", "factor", "Instrument", "instrumented", "KINDS",
    "lookup", "main", "NONE", "options", "run", "UnknownInstrument", "wrap"
]

NONE = "none"
KINDS = ("coredump", "sanitizer", "debugger", "prefix")
EXIT_TOOL_MISSING = 3


@dataclass(frozen=True)
class Instrument:
    """How a factor level instruments a trial.

    ``tool``: the name of the program in gpurepro.case.toolchain's table (or the case's
    ``Case.tools``, passed as ``tools=``); None for ``coredump``. ``args``: the tool's arguments
    before the program (``sanitizer``: the ``--tool`` choice; ``prefix``: anything).
    """

    name: str
    kind: str
    tool: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    description: str = ""


BUILTIN: dict[str, Instrument] = {
    "coredump": Instrument("coredump", "coredump", None,
                           description="CUDA_ENABLE_COREDUMP_ON_EXCEPTION=1 (GPU core dump)"),
    # compute-sanitizer's default tool, under its own name.
    "compute-sanitizer": Instrument("compute-sanitizer", "sanitizer", "compute-sanitizer",
                                    ("--tool", "memcheck"), description="compute-sanitizer (memcheck)"),
    **{t: Instrument(t, "sanitizer", "compute-sanitizer", ("--tool", t),
                     description=f"compute-sanitizer --tool {t}")
       for t in ("memcheck", "racecheck", "synccheck", "initcheck")},
    "cuda-gdb": Instrument("cuda-gdb", "debugger", "cuda-gdb", description="cuda-gdb batch run"),
}


class UnknownInstrument(ValueError):
    pass


def lookup(name: str, extra: Mapping[str, Instrument] | None = None) -> Instrument:
    table = {**BUILTIN, **(extra or {})}
    if name not in table:
        raise UnknownInstrument(f"unknown instrument {name!r} (known: {', '.join(sorted(table))}, "
                                "or one the case declares)")
    inst = table[name]
    if inst.kind not in KINDS:
        raise UnknownInstrument(f"instrument {name!r}: kind {inst.kind!r} is not one of {KINDS}")
    return inst


# ----------------------------------------------------------------------------- the case's side


def factor(*names: str, default: str = NONE, description: str = "the instrument the trial runs under",
           extra: Mapping[str, Instrument] | None = None) -> Factor:
    """A factor whose levels are ``none`` and the instruments ``names``."""
    from .model import Factor  # inside: this file also runs alone, as the wrapper script

    for n in names:
        if n != NONE:
            lookup(n, extra)
    levels = (NONE, *[n for n in names if n != NONE])
    return Factor(levels, default, description)


def wrap(cmd: TrialCommand, name: str | None, tools: Mapping[str, Tool] | None = None,
         extra: Mapping[str, Instrument] | None = None) -> TrialCommand:
    """``cmd`` run under the instrument ``name`` (``none``/None: ``cmd`` itself)."""
    from . import toolchain  # inside: this file also runs alone, as the wrapper script

    if name is None or name == NONE:
        return cmd
    inst = lookup(name, extra)
    # -P: the script's folder (this package's) must not shadow standard modules.
    argv = [sys.executable, "-P", str(Path(__file__).resolve()), "--name", inst.name,
            "--kind", inst.kind]
    if inst.tool is not None:
        argv += ["--tool", inst.tool]
        try:
            path = toolchain.find_tool(inst.tool, tools)
        except toolchain.ToolNotFound as exc:
            argv += ["--not-found", str(exc)]
        else:
            argv += ["--tool-path", str(path),
                     "--tool-version", toolchain.tool_version(inst.tool, tools)]
    for a in inst.args:
        argv.append(f"--arg={a}")
    argv += ["--", *cmd.argv]
    return replace(cmd, argv=tuple(argv), env={**cmd.env, **inst.env})


def instrumented(trial_command: Callable[[TrialContext], TrialCommand], factor: str = "instrument",
                 tools: Mapping[str, Tool] | None = None,
                 extra: Mapping[str, Instrument] | None = None
                 ) -> Callable[[TrialContext], TrialCommand]:
    """A case's ``trial_command`` with the level of ``factor`` applied to every trial."""

    def command(ctx: TrialContext) -> TrialCommand:
        return wrap(trial_command(ctx), ctx.factors.get(factor), tools, extra)

    command.__name__ = getattr(trial_command, "__name__", "trial_command")
    command.__doc__ = trial_command.__doc__
    return command


# ----------------------------------------------------------------------------- the wrapper

_EXCEPTION = re.compile(r"(CUDA_EXCEPTION_\d+)\s*,\s*([^.\n]+)")
_SANITIZER_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+error")
_SANITIZER_KEY = re.compile(r"Program hit|Invalid|Error|ERROR SUMMARY|CUDA_EXCEPTION|Target")
# gdb's own exit status says nothing about the program; these lines do.
_INFERIOR_EXIT = re.compile(r"\[Inferior \d+ \(process \d+\) exited (normally|with code (\d+))\]")
_INFERIOR_SIGNAL = re.compile(r"Program terminated with signal (SIG[A-Z0-9]+)")
_DRIVER_VERSION = Path("/proc/driver/nvidia/version")


def emit(obj: Mapping[str, Any]) -> None:
    print(json.dumps(obj, separators=(",", ":")), flush=True)


def _json_event(line: str) -> dict[str, Any] | None:
    s = line.strip()
    if not s.startswith("{"):
        return None
    try:
        obj = json.loads(s)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) and "event" in obj else None


def driver_version() -> str | None:
    try:
        first = _DRIVER_VERSION.read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    return " ".join(first.split())


def gdb_commands(program: list[str], stdout_file: Path) -> list[str]:
    # The program's stdout goes to a file (set args ... > FILE: gdb starts it through the
    # shell), so it never mixes with the debugger's. After a stop on a CUDA exception: where,
    # what, then let the program see its error; with no exception the program has exited and
    # the later commands fail harmlessly.
    args = " ".join(shlex.quote(a) for a in program[1:])
    cmds = ["set pagination off", "set confirm off",
            f"set args {args} > {shlex.quote(str(stdout_file))}".replace("  ", " "),
            "run", "info cuda kernels", "bt 5", "x/6i $pc", "continue", "continue"]
    out: list[str] = []
    for c in cmds:
        out += ["-ex", c]
    return out


class _Forward:
    """Forwards the program's lines, holding back its last JSON ``final``."""

    def __init__(self) -> None:
        self.final: dict[str, Any] | None = None
        self.counters: dict[str, Any] = {}  # the program's last reported counters
        self.tool_lines: list[str] = []

    def line(self, text: str, tool_prefix: str | None = None) -> None:
        text = text.rstrip("\r\n")
        if tool_prefix is not None and text.startswith(tool_prefix):
            self.tool_lines.append(text)
            return
        ev = _json_event(text)
        if ev is not None and isinstance(ev.get("counters"), dict):
            self.counters = ev["counters"]
        if ev is not None and ev.get("event") == "final":
            self.final = ev
            return
        print(text, flush=True)


def run(name: str, kind: str, program: list[str], tool: str | None = None,
        tool_path: str | None = None, tool_version: str | None = None,
        not_found: str | None = None, args: list[str] | None = None) -> int:
    """Run ``program`` under the instrument; print the protocol (module docstring); exit status."""
    args = list(args or [])
    info: dict[str, Any] = {"event": "instrument", "name": name, "kind": kind, "tool": tool}
    if kind == "coredump":
        info.update(found=True, version=driver_version())
    elif tool_path is None or not Path(tool_path).is_file():
        reason = not_found or f"tool not found: {tool_path or tool}"
        emit({**info, "found": False, "reason": reason})
        emit({"event": "final", "status": "unsupported", "reason": f"tool not found: {reason}",
              "counters": {}, "errors": {},
              "observations": {"instrument": {"name": name, "tool": tool, "found": False}}})
        return EXIT_TOOL_MISSING
    else:
        info.update(found=True, path=tool_path, version=tool_version)

    env = dict(os.environ)
    fwd = _Forward()
    with tempfile.TemporaryDirectory(prefix="gpurepro-instrument-") as tmp:
        work = Path(tmp)
        tool_prefix = None
        if kind == "coredump":
            env["CUDA_ENABLE_COREDUMP_ON_EXCEPTION"] = "1"
            env["CUDA_COREDUMP_FILE"] = str(work / "core_%p.nvcudmp")
            argv = program
        elif kind == "sanitizer":
            log = work / "sanitizer.log"
            argv = [str(tool_path), *args, "--print-limit", "20", "--log-file", str(log), *program]
            tool_prefix = "========="
        elif kind == "debugger":
            out_file = work / "program.out"
            argv = [str(tool_path), "-batch", "-nx", *args, *gdb_commands(program, out_file),
                    program[0]]
        else:
            argv = [str(tool_path), *args, *program]
        try:
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, text=True, errors="replace")
        except OSError as exc:
            emit({**info, "found": False, "reason": f"cannot start {argv[0]}: {exc}"})
            emit({"event": "final", "status": "harness_error",
                  "reason": f"cannot start {argv[0]}: {exc}", "counters": {}, "errors": {}})
            return 1
        assert proc.stdout is not None
        tool_out: list[str] = []
        for raw in proc.stdout:
            if kind == "debugger":
                tool_out.append(raw.rstrip("\r\n"))
            else:
                fwd.line(raw, tool_prefix)
        returncode = proc.wait()
        info["exit_code"] = returncode

        if kind == "coredump":
            dumps = sorted(work.glob("core_*"))
            info["coredumps"] = [{"name": d.name, "bytes": d.stat().st_size} for d in dumps]
            keep = os.environ.get("GPUREPRO_KEEP_COREDUMPS")
            if keep and dumps:
                Path(keep).mkdir(parents=True, exist_ok=True)
                for d in dumps:
                    shutil.move(str(d), str(Path(keep) / d.name))
        elif kind == "sanitizer":
            text = log.read_text(errors="replace") if log.exists() else ""
            m = _SANITIZER_SUMMARY.search(text)
            info["sanitizer_errors"] = int(m.group(1)) if m else None
            info["sanitizer_first"] = [ln[:300] for ln in text.splitlines()
                                       if _SANITIZER_KEY.search(ln)][:8]
        elif kind == "debugger":
            if out_file.exists():
                for line in out_file.read_text(errors="replace").splitlines():
                    fwd.line(line)
            joined = "\n".join(tool_out)
            m = _EXCEPTION.search(joined)
            info["cuda_exception"] = f"{m.group(1)} ({m.group(2).strip()})" if m else None
            if m:
                start = next(i for i, ln in enumerate(tool_out) if m.group(1) in ln)
                info["stop_context"] = tool_out[start:start + 16]
            ex = _INFERIOR_EXIT.search(joined)
            if ex:
                info["program_exit_code"] = 0 if ex.group(1) == "normally" else int(ex.group(2))
            sig = _INFERIOR_SIGNAL.search(joined)
            if sig:
                info["program_signal"] = sig.group(1)
            fwd.tool_lines = tool_out
        info["tool_tail"] = fwd.tool_lines[-8:]

    emit(info)
    details = {k: v for k, v in info.items() if k != "event"}
    if fwd.final is not None:
        # A JSON program: the instrument's findings travel inside its own final record.
        final = fwd.final
        final.setdefault("observations", {})["instrument"] = details
        emit(final)
    elif info.get("cuda_exception"):
        # The debugger stopped the program on a CUDA exception and it printed no final.
        error = info["cuda_exception"].split(" ")[0]
        emit({"event": "final", "status": "cuda_error", "error": error, "call": name,
              "counters": fwd.counters, "errors": {error: 1},
              "observations": {"instrument": details}})
    # Otherwise no final: the harness classifies from the exit status, as for any program.
    sys.stdout.flush()
    signum = _signal_number(info.get("program_signal")) or (-returncode if returncode < 0 else 0)
    if signum:  # the program died of a signal: die of the same one
        try:
            signal.signal(signum, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL/SIGSTOP have no handler to reset
            pass
        os.kill(os.getpid(), signum)
    return int(info.get("program_exit_code", returncode))


def _signal_number(name: str | None) -> int:
    if not name:
        return 0
    try:
        return int(signal.Signals[name])
    except KeyError:
        return 0


# The wrapper's flags, as wrap() writes them: each once but --arg (repeated), then -- PROGRAM.
_FLAGS = ("name", "kind", "tool", "tool_path", "tool_version", "not_found", "arg")


def _usage(problem: str) -> NoReturn:
    print(f"instruments.py: {problem}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def options(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The wrapper's command line, which wrap() writes: ``--FLAG VALUE`` or ``--FLAG=VALUE``
    (``--arg`` repeated), then ``--`` and the program. Anything else is refused (exit 2)."""
    opts: dict[str, Any] = {"arg": []}
    i = 0
    while i < len(argv) and argv[i] != "--":
        flag, eq, value = argv[i].partition("=")
        key = flag[2:].replace("-", "_")
        if not flag.startswith("--") or key not in _FLAGS:
            _usage(f"unknown argument {argv[i]!r} (the program goes after --)")
        if not eq:
            i += 1
            if i == len(argv):
                _usage(f"{flag} needs a value")
            value = argv[i]
        if key == "arg":
            opts["arg"].append(value)
        else:
            opts[key] = value
        i += 1
    for required in ("name", "kind"):
        if required not in opts:
            _usage(f"--{required} is required")
    if opts["kind"] not in KINDS:
        _usage(f"--kind {opts['kind']!r}: one of {', '.join(KINDS)}")
    program = argv[i + 1:]
    if not program:
        _usage("give the program after --")
    return opts, program


def main(argv: list[str] | None = None) -> int:
    opts, program = options(sys.argv[1:] if argv is None else argv)
    return run(opts["name"], opts["kind"], program, opts.get("tool"), opts.get("tool_path"),
               opts.get("tool_version"), opts.get("not_found"), opts["arg"])


if __name__ == "__main__":
    sys.exit(main())
