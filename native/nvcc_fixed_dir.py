"""Run nvcc on a copy of one source file in a fixed folder, so device line info is reproducible.

    python native/nvcc_fixed_dir.py NVCC SOURCE -- NVCC_ARGS... (paths in NVCC_ARGS as usual)

cicc writes the source's absolute folder and its mtime into `.debug_line` (`-lineinfo`, `-G`),
and `-ffile-prefix-map` does not reach it (gpurepro/build.py). Compiled from
/tmp/gpurepro-lineinfo/<sha256 of the source>/<name> with mtime 0, the cubin is the same in every
checkout and names no checkout path. The folder is locked while nvcc runs (two builds of the
same source would share it).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

FIXED = Path("/tmp/gpurepro-lineinfo")


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: nvcc_fixed_dir.py NVCC SOURCE -- NVCC_ARGS... (-o PATH: from the caller's folder)\n")
        return 2
    nvcc, source, args = argv[0], Path(argv[1]).resolve(), argv[3:]
    data = source.read_bytes()
    folder = FIXED / hashlib.sha256(data).hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    # nvcc runs in the fixed folder: the output path (-o PATH) is taken from where we were called.
    args = [str(Path(a).resolve()) if i and args[i - 1] == "-o" else a for i, a in enumerate(args)]
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        copy = folder / source.name
        if not copy.exists() or copy.read_bytes() != data:
            shutil.copyfile(source, copy)
        os.utime(copy, (0, 0))
        return subprocess.run([nvcc, *args, copy.name], cwd=folder).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
