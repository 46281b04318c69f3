"""Command line: `python -m gpurepro <command>`; the nox sessions call these. ``main`` parses
(gpurepro.cli.parser), runs the command's function (the module of its command, imported then:
gpurepro.cli.run for `run` and `case`, gpurepro.cli.results for the commands on documents, ...)
and turns what it raises into a status.

Errors a user can cause (a bad flag, a bad manifest, a missing build, no GPU, a file that is no
result) end with one line and a documented exit status, never a traceback. Every value is
checked before the first build step or trial; anything else that goes wrong is named as a
harness error (exit 1).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import (
    EXIT_COULD_NOT_RUN,
    EXIT_ERROR,
    EXIT_NO_DRIVER,
    EXIT_PIPE,
    EXIT_UNSUPPORTED,
    EXIT_USAGE,
    STOP_SIGNALS,
    BuildError,
    ClusterError,
    HarnessError,
    InvalidDocument,
    JournalError,
    JournalMismatch,
    ManifestError,
    NotInert,
    RecordError,
    SlurmError,
    Stopped,
    ToolNotFound,
    UsageError,
    exit_for_signal,
)
from ..run.execute import ignore_stop_signals, stop_signals
from ..run.rerun_of import VARIABLE as RERUN_OF
from . import extras
from .args import say
from .parser import parser, prog_name


def _dispatch(args: argparse.Namespace) -> int:
    needs = extras.what_needs_it(args)
    missing = extras.absent(needs[1]) if needs else None
    if needs and missing:
        say(f"gpurepro: {extras.missing_line(needs[0], missing)}")
        return EXIT_ERROR
    try:
        return int(args.fn(args))
    except BrokenPipeError:
        return _stdout_closed()
    except (UsageError, JournalMismatch) as exc:
        say(f"gpurepro: usage error: {exc}")
        return EXIT_USAGE
    except (ManifestError, BuildError, ToolNotFound, JournalError, RecordError, NotInert,
            InvalidDocument) as exc:
        say(f"gpurepro: error: {exc}")
        return EXIT_ERROR
    except (ClusterError, SlurmError) as exc:
        say(f"gpurepro: error: {exc}")
        return EXIT_ERROR
    except HarnessError as exc:
        say(f"gpurepro: harness error: {exc}")
        return EXIT_ERROR
    except ModuleNotFoundError as exc:
        module = extras.analysis_module(exc)
        if module is None:
            return _harness_bug(exc)
        say(f"gpurepro: {extras.missing_line(args.command, module)}")
        return EXIT_ERROR
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        say(f"gpurepro: error: {exc.strerror or exc}{where}")
        return EXIT_ERROR
    except Stopped as exc:
        say(f"gpurepro: stopped by {exc}")
        return exit_for_signal(exc.signum)
    except KeyboardInterrupt:
        say("gpurepro: stopped by SIGINT")
        return exit_for_signal(signal.SIGINT)
    except Exception as exc:
        return _harness_bug(exc)


# A rerun checking itself (--rerun-of, GPUREPRO_RERUN_OF) that ends before a verdict: why, for
# the line that says it could not run (git bisect run skips the commit).
_COULD_NOT_RUN = {EXIT_ERROR: "an error, above", EXIT_USAGE: "a usage error, above",
                  EXIT_UNSUPPORTED: "the GPU cannot run this case",
                  EXIT_NO_DRIVER: "no CUDA driver or GPU here"}
# The commands a rerun runs (prepare: nox checks the arguments with it first).
_RERUN_COMMANDS = ("case", "run", "prepare")


def _rerun_wanted(argv: list[str]) -> bool:
    """Whether ``argv`` runs a rerun that checks itself, read from the words alone (for an
    argument the parser refused: one this commit does not take)."""
    command = next((a for a in argv if not a.startswith("-")), None)
    return command in _RERUN_COMMANDS and (
        bool(os.environ.get(RERUN_OF)) or any(a == "--rerun-of" or a.startswith("--rerun-of=")
                                             for a in argv))


def _rerun_status(argv: list[str], status: int) -> int:
    """A rerun's status: 125 where it could not run as far as a verdict, else its own."""
    if status in _COULD_NOT_RUN and _rerun_wanted(argv):
        say(f"gpurepro: rerun check: could not run ({_COULD_NOT_RUN[status]}): exit "
            f"{EXIT_COULD_NOT_RUN}")
        return EXIT_COULD_NOT_RUN
    return status


def _harness_bug(exc: Exception) -> int:
    if os.environ.get("GPUREPRO_DEBUG"):
        raise exc
    say(f"gpurepro: harness error (a bug in gpurepro, please report it): "
        f"{type(exc).__name__}: {exc}; GPUREPRO_DEBUG=1 shows the traceback")
    return EXIT_ERROR


def _stdout_closed() -> int:
    """The reader of stdout went away: nothing more is written (what is still buffered goes to
    /dev/null, so Python's exit does not complain) and the status says so without a line."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return EXIT_PIPE


def _restore(found: Mapping[signal.Signals, Any]) -> None:
    import threading

    if threading.current_thread() is threading.main_thread():
        for sig, handler in found.items():
            if handler is not None:
                signal.signal(sig, handler)


def _status_file(argv: list[str]) -> str | None:
    """--exit-status-file, read before parsing: a usage error must reach the file too."""
    for i, a in enumerate(argv):
        if a == "--exit-status-file" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--exit-status-file="):
            return a.split("=", 1)[1]
    return None


def main(argv: list[str] | None = None) -> int:
    """The program (``argv`` None: sys.argv), or a command run as a function (``argv`` given),
    which leaves the caller's signal dispositions as it found them."""
    as_program = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    found = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    try:
        args = parser(prog_name(sys.argv[0])).parse_args(argv)
        # From here on SIGINT, SIGTERM and SIGHUP raise Stopped wherever the main thread is,
        # so a stop at any moment ends with the cleanup of the step it interrupted and one line;
        # once the work is done the program ignores them, never restored to their default (a
        # SIGTERM in that window would end the process by the signal, with the run complete).
        # A caller of the function gets its own back: an ignored SIGTERM would be inherited by
        # every process it starts after (exec keeps an ignored signal ignored).
        try:
            with stop_signals():
                status = _dispatch(args)
        finally:
            if as_program:
                ignore_stop_signals()
            else:
                _restore(found)
    except Stopped as exc:  # arrived between the work's end and the line above
        status = exit_for_signal(exc.signum)
    except KeyboardInterrupt:  # Ctrl-C while the parser was being built: nothing had started
        status = exit_for_signal(signal.SIGINT)
    except BrokenPipeError:  # --help into a closed pipe
        status = _stdout_closed()
    except SystemExit as exc:  # argparse: usage error (2), --help / --version (0)
        status = exc.code if isinstance(exc.code, int) else EXIT_USAGE
    status = _rerun_status(argv, status)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        status = _stdout_closed()
    status_file = _status_file(argv)
    if status_file:
        Path(status_file).write_text(f"{status}\n")
    return status
