"""The reporter's Tile IR kernel (kernel_tile.py) compiled by tileiras without line information.

    python kernel_tile_nodebug.py --tileiras TILEIRAS --gpu-code sm_90 --out build/kernel.cubin

cuda.tile always passes --lineinfo (or --device-debug) to tileiras and has no option against it,
so this exports the Tile IR bytecode (to a temporary file: it names this checkout's paths in
its debug locations) and runs tileiras on it with the flags cuda.tile passes, less --lineinfo. `.text` and `.nv.host` come out
byte-identical to kernel_tile.py's cubin (tests/cases/test_tile_build.py); the line tables do not.
A file of its own so that kernel_tile.py, whose line numbers are in its cubin's line tables,
stays byte for byte what the toolchain matrix and the committed runs built.
"""

import argparse
import subprocess
import tempfile
from pathlib import Path

from cuda.tile.compilation import CallingConvention, KernelSignature, export_kernel

from gpurepro.case import load_sibling

kernel_tile = load_sibling(__file__, "kernel_tile")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tileiras", required=True, help="the tileiras to compile with")
    ap.add_argument("--kernel", choices=sorted(kernel_tile.KERNELS), default="add")
    ap.add_argument("--gpu-code", default="sm_90", help="e.g. sm_90, sm_120")
    ap.add_argument("--out", required=True, help="cubin path to write")
    args = ap.parse_args()
    kernel = kernel_tile.KERNELS[args.kernel]
    sig = KernelSignature([kernel_tile.arr(), kernel_tile.arr(), kernel_tile.arr()],
                          CallingConvention.cutile_python_v2(), symbol="repro_kernel")
    # The flags cuda.tile's compile_cubin passes, less --lineinfo.
    opt = kernel._compiler_options.opt_level_for_target(args.gpu_code)
    with tempfile.TemporaryDirectory() as tmp:
        bytecode = Path(tmp) / "kernel.tileirbc"
        export_kernel(kernel, [sig], str(bytecode), gpu_code=args.gpu_code,
                      output_format="tileir_bytecode")
        subprocess.run([args.tileiras, str(bytecode), "-o", str(Path(args.out).resolve()),
                        "--gpu-name", args.gpu_code, f"-O{opt}"], check=True, cwd=tmp)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
