"""Compile the case's lowered PTX with one ptxas release; sass.json beside the cubin.

    python compile_cubin.py PTXAS --ptx K.ptx --arch sm_90 --nvdisasm NVDISASM --out DIR/kernel.cubin

PTXAS is the arm's release's program (the harness takes it out of the locked wheel:
``Factor.releases``, ``Artifact.per``). Flags ``-arch=<arch> -O3`` (FLAGS), the bisection's
argv: -O3 is ptxas's default level, written out so the command says it. ``sass.json``: nvdisasm's
reading (each kernel's IABS, clamp and what the clamp reads, sass_facts.py, and every kernel's
instructions, which the verdict diffs between releases).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import sass_facts

from gpurepro.build import toolchain

FLAGS = ("-O3",)


def sass_record(nvdisasm: Path, cubin: Path) -> dict:
    done = subprocess.run([str(nvdisasm), str(cubin)], capture_output=True, text=True,
                          timeout=120, check=False)
    ok = done.returncode == 0
    kernels = sass_facts.kernel_facts(done.stdout) if ok else {}
    listing = sass_facts.parse(done.stdout) if ok else {}
    line = next((ln.strip() for ln in done.stderr.splitlines() if ln.strip()), "")
    record = {"disassembler": "nvdisasm",
              "version": toolchain.release(toolchain.version_of(nvdisasm)),
              "exit_status": done.returncode, "stderr_first_line": line.replace(str(cubin), cubin.name)}
    if "abs_clamp" in kernels:
        k = kernels["abs_clamp"]
        record.update(abs_dropped=not k["iabs"], iabs_feeds_clamp=k["clamp_reads"] == "IABS")
    record["kernels"] = kernels
    record["listing"] = {k: [i.text for i in v] for k, v in sorted(listing.items())}
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ptxas", type=Path)
    ap.add_argument("--ptx", type=Path, required=True)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--nvdisasm", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True, help="the cubin to write")
    args = ap.parse_args(argv)
    argv_ = [str(args.ptxas), f"-arch={args.arch}", *FLAGS, str(args.ptx), "-o", str(args.out)]
    if subprocess.run(argv_, check=False).returncode != 0 or not args.out.is_file():
        print("compile_cubin.py: ptxas did not write the cubin", file=sys.stderr)
        return 1
    sass = sass_record(args.nvdisasm, args.out)
    (args.out.parent / "sass.json").write_text(json.dumps(sass, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
