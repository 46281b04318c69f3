"""Every error a user can cause or meet, and the exit status each ends with.

The command line (gpurepro.cli) turns each into one line and its documented status (docs/running.md:
"Exit statuses"); nothing here imports outside the standard library, so a GPU node with no
analysis packages can name every one of them, RecordError included.
"""

from __future__ import annotations

import signal
from pathlib import Path

# Exit statuses of `python -m gpurepro` (and the nox sessions), documented in docs/running.md. 3 is
# nox's own "no such session", so "no driver" is 5.
EXIT_OK = 0
EXIT_ERROR = 1  # bad manifest, failed build, harness error
EXIT_USAGE = 2
EXIT_UNSUPPORTED = 4  # a GPU is present but the case cannot run on it; result written
EXIT_NO_DRIVER = 5  # no CUDA driver / no GPU: nothing was run
# A rerun that checks itself against its document (--rerun-of, GPUREPRO_RERUN_OF): 0 when it
# reproduced the document's verdict, 6 when it did not, 125 (git bisect run's "skip") when it
# could not run as far as a verdict (gpurepro.run.rerun_of).
EXIT_NOT_REPRODUCED = 6
EXIT_COULD_NOT_RUN = 125
# The reader of stdout closed it (`gpurepro compare ... | head`): the status of a program that
# SIGPIPE ends, said by no line.
EXIT_PIPE = 128 + signal.SIGPIPE


def exit_for_signal(signum: int) -> int:
    """128 + the signal: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP."""
    return 128 + signum


# ---------------------------------------------------------------- usage (exit 2)


class UsageError(Exception):
    """The user asked for something that cannot be done as asked (exit 2)."""


# ---------------------------------------------------------------- errors (exit 1)


class ManifestError(ValueError):
    """A manifest is malformed; the message names the file and the field."""

    def __init__(self, path: Path | str, field_name: str, problem: str):
        self.path = str(path)
        self.field = field_name
        super().__init__(f"{path}: {field_name}: {problem}")


class BuildError(RuntimeError):
    """A build step failed; ``log`` is its build log when it got as far as running."""

    def __init__(self, message: str, log: Path | None = None):
        super().__init__(message)
        self.log = log


class ToolNotFound(RuntimeError):
    """A tool a case needs is in none of the places it may come from."""


class JournalError(ValueError):
    """The journal cannot be used as asked (corrupt, locked, another run's)."""


class JournalMismatch(JournalError):
    """The journal belongs to another case, manifest or plan: a usage error."""


class RecordError(ValueError):
    """A document that cannot be recorded: it does not validate, or its verdict rests on
    claims that were not decided."""


class HarnessError(RuntimeError):
    """Our fault, never the bug's: a worker raised, or the journal could not be written."""


class SlurmError(RuntimeError):
    """A Slurm command failed or is missing; the message names it and what it said."""


class ClusterError(RuntimeError):
    """Slurm could not be used as the run needs (a command failed, the tree is gone)."""


class StageError(RuntimeError):
    """The tree could not be made as the run needs it."""


class CompareError(ValueError):
    """The documents cannot be compared (another case, a benchmark document)."""


class IssueError(ValueError):
    """The document is not a case result."""


class InvalidDocument(ValueError):
    """A document `validate` would call invalid (its schema, or what its trials give): `issue`
    makes no comment of it (exit 1)."""


class NotInert(ValueError):
    """A rendering for GitHub (the comment, the report, compare's table) would hold something
    live a document's string put there: refused, not written (report/gfm.py)."""


# ---------------------------------------------------------------- stopped (128 + signal)


# The signals a command turns into Stopped (run.execute.stop_signals).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(Exception):
    """SIGINT/SIGTERM/SIGHUP reached the harness; ``signum`` says which."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
