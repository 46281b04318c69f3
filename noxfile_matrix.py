"""The toolchain matrix of tile_unload_race: one session per cell, each in its own environment.

A cell is one cuda-tile release x one tileiras family (cases/tile_unload_race/matrix.py): it
installs the cell's pins, exports the kernel for sm_90 and records what it emits. `nox -s
tile_matrix` (noxfile.py) runs every cell, or those named after `--`, then collects the CPU
document; `nox -f noxfile_matrix.py -l` lists the cells. They are kept out of noxfile.py so that
its `nox -l` lists what a person runs.
"""

from __future__ import annotations

import runpy
import subprocess
from pathlib import Path

import nox
from nox.command import CommandFailed

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True

ROOT = Path(__file__).parent
MATRIX = runpy.run_path(str(ROOT / "cases" / "tile_unload_race" / "matrix.py"))
CELLS = MATRIX["cells"]()


def _run_gpurepro(session: nox.Session, *args: str) -> None:
    """`python -m gpurepro ARGS`, its exit status (from a file) the session's."""
    status_file = Path(session.create_tmp()) / "exit-status"
    status_file.unlink(missing_ok=True)
    session.run("python", "-m", "gpurepro", *args, "--exit-status-file", str(status_file),
                success_codes=range(256))
    status = int(status_file.read_text()) if status_file.is_file() else 1
    if status != 0:
        session.log(f"gpurepro exited with status {status}")
        raise SystemExit(status)


@nox.session
@nox.parametrize(("cuda_tile", "family"), CELLS, ids=[MATRIX["cell_id"](c, f) for c, f in CELLS])
def cell(session: nox.Session, cuda_tile: str, family: str) -> None:
    """One cell: install its pins, export the kernel for sm_90, record what it emits."""
    session.install("-e", ".", "--no-deps")  # the cell runs gpurepro from inside this env
    log = Path(session.create_tmp()) / "install.log"
    failed = []
    # An install that fails is a finding of the cell, not an error of the session: the
    # installer's output goes to a file, and the cell records its reason from there.
    with open(log, "w") as out:
        try:
            session.install(*MATRIX["pins"](cuda_tile, family), silent=False, stdout=out,
                            stderr=subprocess.STDOUT)
        except CommandFailed:
            failed = ["--install-failed"]
    _run_gpurepro(session, "matrix", "cell", "tile_unload_race", "--release", cuda_tile,
                  "--family", family, "--install-log", str(log), *failed)
