"""Compile a case source with the pinned nvcc for one target, exactly as the report did.

Why a wrapper: the manifest's ``{arch}`` placeholder is ``sm_103a``, but the report's line is
``-gencode arch=compute_103a,code=sm_103a`` (SASS only, no PTX), and nvcc rejects
``-arch=sm_103a -code=sm_103a``. This spells the report's flags out for any target, adds the
wheel's ``lib`` folder for ``cudart_static``/``cudadevrt`` (the wheels ship no libcuda
dependency at link time), and prints the exact command it ran. Standard library only.

    python build.py --nvcc NVCC --nvcc-lib LIB --arch sm_103a --src repro.cu --out build/repro [-D NO_DEALLOC]
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path


def command(nvcc: str, nvcc_lib: str, arch: str, src: str, out: str, defines: list[str]) -> list[str]:
    if not arch.startswith("sm_"):
        raise ValueError(f"target must look like sm_103a, not {arch!r}")
    virtual = "compute_" + arch[3:]
    cmd = [nvcc, "-gencode", f"arch={virtual},code={arch}"]
    cmd += [f"-D{d}" for d in defines]
    cmd += [f"-L{nvcc_lib}", "-o", out, src]
    return cmd


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nvcc", required=True)
    ap.add_argument("--nvcc-lib", required=True)
    ap.add_argument("--arch", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("-D", dest="defines", action="append", default=[])
    args = ap.parse_args(argv)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    cmd = command(args.nvcc, args.nvcc_lib, args.arch, args.src, args.out, args.defines)
    print("+ " + shlex.join(cmd), flush=True)
    return subprocess.run(cmd, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
