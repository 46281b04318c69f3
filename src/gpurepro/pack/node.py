"""A pack on its GPU node: ``python3 run.py [flags of gpurepro run]`` in the unpacked folder.

Standard library only, no network. run.py has checked the whole tree against pack.json before
this module is imported (a copy cut short or edited on the way, a file added, a link: named,
not run); this checks the node's Python against the runtime wheels'; then runs ``python -m gpurepro run CASE --no-record`` with the pack's arguments
and any given here, as the commit the pack was made from (GPUREPRO_COMMIT), and the GPU stage of
each bisection the pack carries. It ends by naming what to bring back and the commands that
record it where the analysis packages are (the checkout the pack came from).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from ..errors import EXIT_ERROR, EXIT_NO_DRIVER, EXIT_OK, EXIT_UNSUPPORTED, EXIT_USAGE

USAGE = ("usage: python3 run.py [flags of `python -m gpurepro run`, e.g. --trials 12]\n"
         "runs the pack's case here (pack.json names it, its target and its run flags)")


def _say(line: str) -> None:
    print(f"pack: {line}", file=sys.stderr, flush=True)


def python_mismatch(wanted: str | None) -> str | None:
    have = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if wanted and have != wanted:
        return (f"the pack's runtime wheels are for Python {wanted}; {sys.executable} is "
                f"{have}: run it with python{wanted}")
    return None


def _journals(folder: Path) -> set[Path]:
    return set(folder.glob("*.journal.jsonl")) if folder.is_dir() else set()


def _shown(path: Path, here: Path) -> str:
    return str(path.relative_to(here)) if path.is_relative_to(here) else str(path)


def _resumed(argv: list[str]) -> str | None:
    """The journal a --resume among ``argv`` names."""
    for i, a in enumerate(argv):
        if a == "--resume" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--resume="):
            return a.split("=", 1)[1]
    return None


def _call(argv: list[str], here: Path, env: dict[str, str]) -> int:
    """A gpurepro command in its own process; Ctrl-C reaches it too (one process group), and
    this side waits for it to journal and exit instead of leaving it."""
    child = subprocess.Popen(argv, cwd=here, env=env)
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            continue


def main(here_text: str, argv: list[str]) -> int:
    here = Path(here_text).resolve()
    if argv[:1] in (["-h"], ["--help"]):
        print(USAGE)
        return EXIT_OK
    try:
        meta: dict[str, Any] = json.loads((here / "pack.json").read_text())
    except (OSError, ValueError) as exc:
        _say(f"error: {here / 'pack.json'} is not readable ({exc}); unpack the archive whole")
        return EXIT_ERROR
    mismatch = python_mismatch(meta.get("python"))
    if mismatch:
        _say(f"usage error: {mismatch}")
        return EXIT_USAGE
    # run.py checked every file of the tree against pack.json before importing this module.
    case, named = meta["case"], meta.get("case_argument") or meta["case"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
               [str(here / "src"), *filter(None, [os.environ.get("PYTHONPATH")])]),
           "GPUREPRO_COMMIT": meta["commit"], "GPUREPRO_DIRTY": "1" if meta["dirty"] else "0",
           # No bytecode caches written into the pack: run.py refuses a file it does not list.
           "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    # The node journals and records nothing (--no-record): a rerun's check against a document
    # (GPUREPRO_RERUN_OF) needs the record, made back in the checkout.
    env.pop("GPUREPRO_RERUN_OF", None)
    results = here / "results" / case
    before = _journals(results)
    # -P: the folder it starts in is not put on sys.path (only the pack's src/ is).
    gpurepro = [sys.executable, "-P", "-m", "gpurepro"]
    # A resume takes its plan from its journal: the pack's flags would be refused beside it.
    resumed = _resumed(argv)
    flags = [] if resumed else list(meta["run"])
    status = _call([*gpurepro, "run", named, "--no-record", *flags, *argv], here, env)
    journals = sorted(_journals(results) - before)
    if resumed and (here / resumed).is_file():
        journals = [(here / resumed).resolve()]
    back = [_shown(j, here) for j in journals]
    if status == EXIT_OK:
        for axis in meta.get("bisect") or []:
            out = Path("results", "bisect", case, axis)
            code = _call([*gpurepro, "bisect", named, "--axis", axis, "--arch", meta["target"],
                          "--stage", "gpu", "--gpu-out", str(out)], here, env)
            back.append(f"{out}/")
            status = status or code
    if back:
        _say(f"exit status {status}; bring back, to the same paths in the checkout of "
             f"{meta['commit'][:12]}: {', '.join(back)}")
        for j in journals:
            _say(f"then there: python -m gpurepro record {_shown(j, here)}")
        for axis in meta.get("bisect") or []:
            _say(f"then there: python -m gpurepro bisect {named} --axis {axis} --stage assemble "
                 f"--gpu-out results/bisect/{case}/{axis}")
    if status not in (EXIT_OK, EXIT_UNSUPPORTED, EXIT_NO_DRIVER) and journals:
        _say(f"an interrupted run goes on from its journal: python3 run.py --resume "
             f"{_shown(journals[0], here)}")
    return status
