"""`python -m gpurepro bisect CASE --axis NAME`: a bisection over one axis's releases: a
toolchain's (``Axis``: each release builds an artifact) or a runtime package's (``RuntimeAxis``:
each release's wheels for the trials' Python, gpurepro.sweep.runtime_cpu).

The stages (gpurepro.sweep), one after the other by default (``--stage all``), or one:

- ``cpu``: every release PyPI lists in the axis's range built (the case's own build first, if
  it is missing), identical artifacts once, their SASS: ``build/bisect/<case>/<axis>/<target>/
  bisect.cpu.json``; standard library only, needs the network and the case's pins;
- ``gpu``: the fewest distinct artifacts that pin every boundary run through the harness
  (``--exhaustive``: all), into ``--gpu-out``; standard library only, no network; exit 5
  without a GPU;
- ``assemble``: the CPU document and the GPU stage's folder into
  ``results/<case>/bisect_<axis>_<stamp>_<gpu>.json`` and ``.md`` (the analysis packages).

``--table DOC`` prints a bisection document's Markdown.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..building.artifacts import build_case, index_path
from ..case.load import load_case
from ..case.model import Case
from ..errors import EXIT_NO_DRIVER, EXIT_OK, UsageError
from ..sweep.bisection import CPU_FILE, axis_root
from ..sweep.choose import Bisection
from ..sweep.cpu import axis_of, check_current, run_cpu_stage
from ..sweep.gpu import run_gpu_stage
from ..sweep.model import BISECTION, read_document
from ..sweep.runtime_cpu import run_runtime_cpu_stage, runtime_axis
from ..sweep.table import markdown
from .args import checked_build_dir, only_target, repository_root, say, show


def _cpu(args: argparse.Namespace, case: Case, target: str, root: Path) -> Path:
    runtime = runtime_axis(case, args.axis)
    if runtime is None:
        axis_of(case, args.axis)  # an unknown axis is a usage error before anything is built
    build_dir = root / checked_build_dir(args.build_dir, root)
    if not index_path(build_dir, case, target).is_file():
        say(f"bisect: building {case.name} for {target} first")
        build_case(case, target, root, build_dir)
    only = tuple(v.strip() for v in (args.only or "").split(",") if v.strip())
    if runtime is not None:
        path = run_runtime_cpu_stage(case, args.axis, target, root, build_dir, only=only, say=say,
                                     python=args.python)
        show(f"bisect: CPU document {_shown(path, root)}")
        return path
    cache = Path(args.cache) if args.cache else root / "build" / "releases"
    path = run_cpu_stage(case, args.axis, target, root, build_dir, cache, only=only, say=say)
    show(f"bisect: CPU document {_shown(path, root)}")
    return path


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def cmd(args: argparse.Namespace) -> int:
    root = repository_root()
    if args.table:
        sys.stdout.write(markdown(read_document(Path(args.table), BISECTION)))
        return EXIT_OK
    if not args.axis:
        raise UsageError("--axis: name the axis to bisect (the manifest's Case.axes)")
    case = load_case(args.case, root)
    target = only_target(case, args.arch)
    document = Path(args.document) if args.document else root / axis_root(case.name, args.axis, target) / CPU_FILE
    gpu_out = Path(args.gpu_out) if args.gpu_out else root / axis_root(case.name, args.axis, target) / "gpu"
    if args.stage in ("all", "cpu"):
        document = _cpu(args, case, target, root)
    if args.stage in ("all", "gpu"):
        cpu = read_document(document, BISECTION)
        if args.stage == "gpu":  # a CPU stage of an earlier manifest would run what it dropped
            check_current(cpu, case, root, _shown(document, root))
        choice = Bisection(cpu, exhaustive=args.exhaustive)
        status = run_gpu_stage(document, gpu_out, root, choice, seed=args.seed, say=say)
        if status != EXIT_OK:
            if status == EXIT_NO_DRIVER:
                say(f"bisect: on a GPU node, with build/{case.name} and build/bisect/{case.name} "
                    f"carried: python -m gpurepro bisect {case.name} --axis {args.axis} --stage gpu "
                    f"--gpu-out OUT; then here: --stage assemble --gpu-out OUT")
            return status
    if args.stage in ("all", "assemble"):
        from ..sweep.assemble import write_document

        path = write_document(document, gpu_out if gpu_out.is_dir() else None, root,
                              Path(args.out_dir), force=args.force)
        show(f"bisect: document {_shown(path, root)}")
    return EXIT_OK


