"""`gpurepro ARGS` for the tests: the commands on documents run inside the test's process, the
others as the program a user starts. Either way the test gets a CompletedProcess.

validate, issue, compare, report, record and index read and write documents and nothing else.
Started as programs, most of their CPU time is a fresh interpreter importing scipy, jsonschema
and matplotlib (about 1.5 of the 2 CPU seconds of a `validate`), which a test process pays once.
They are called as the function gpurepro.cli.main.main (the command line run as a function,
which leaves the caller's signal dispositions as it found them) in the folder and environment
given, with stdout and stderr captured and the program's name as `python -m gpurepro` gives it.
Everything that starts trials, watchdogs or builds (run, case, build, ...) runs as
`python -m gpurepro`, under pace's limit: its processes, signals and exit are what it tests.
tests/cli/test_cli_conventions.py runs document commands as programs too: the entry point, stdout
against stderr, a closed pipe. A call from any thread but the main one is a program as well: the
folder, the environment and sys.stdout/sys.stderr belong to the whole process, so two commands
run in two threads of it would share them (two records racing for one name each read the
other's refusal), and what a race between writers tests is two processes anyway.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from . import pace

ROOT = Path(__file__).resolve().parents[1]
IN_PROCESS = frozenset({"validate", "issue", "compare", "history", "report", "record", "index"})


def gpurepro(*args: str, cwd: Path = ROOT, env: Mapping[str, str] | None = None,
             **popen: Any) -> subprocess.CompletedProcess:
    """The command ``args``: in this process when it is one of IN_PROCESS (and nothing asks for
    a process of its own: no Popen argument), else `python -m gpurepro ARGS`. ``env``, when
    given, is the whole environment, as subprocess.run takes it; by default this process's, with
    PYTHONPATH this checkout's src/."""
    alone = threading.current_thread() is threading.main_thread()
    if args and args[0] in IN_PROCESS and not popen and alone:
        return in_process(list(args), cwd, env)
    return program(list(args), cwd, env, **popen)


def program(args: list[str], cwd: Path = ROOT, env: Mapping[str, str] | None = None,
            **popen: Any) -> subprocess.CompletedProcess:
    """`python -m gpurepro ARGS`, output captured as text."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT / "src")} if env is None else env
    return pace.run([sys.executable, "-m", "gpurepro", *args], cwd=cwd, env=environment,
                    capture_output=True, text=True, **popen)


def in_process(args: list[str], cwd: Path = ROOT,
               env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
    """gpurepro.cli.main.main(ARGS) in ``cwd`` under ``env``; what it printed, and its status."""
    from gpurepro.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with _inside(cwd, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(args)
    argv = [sys.executable, "-m", "gpurepro", *args]
    return subprocess.CompletedProcess(argv, status, out.getvalue(), err.getvalue())


@contextlib.contextmanager
def _inside(cwd: Path, env: Mapping[str, str] | None) -> Iterator[None]:
    """The working folder, the environment and the program name of a `python -m gpurepro`
    started there, put back afterwards."""
    folder, environment, argv = Path.cwd(), dict(os.environ), sys.argv
    try:
        os.chdir(cwd)
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        sys.argv = [str(ROOT / "src" / "gpurepro" / "__main__.py")]
        yield
    finally:
        sys.argv = argv
        os.environ.clear()
        os.environ.update(environment)
        os.chdir(folder)
