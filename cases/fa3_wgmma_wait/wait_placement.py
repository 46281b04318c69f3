"""CPU-side facts of the overlap PTX across ptxas releases: C7517, and where each puts the waits.

    python cases/fa3_wgmma_wait/wait_placement.py --ptx PTX --nvdisasm NVDISASM \
        --release nvidia-cuda-nvcc-cu12==12.4.131 [--release ...] [--ptxas PTXAS] \
        [--cache build/wheels] --out build/fa3_wgmma_wait/wait_placement.json

Each release's ptxas comes out of its wheel (gpurepro.building.releases: resolved by pip, fetched
once into --cache against the index's sha256), ``--ptxas`` adds a local one (the pinned 13.3.73). Each compiles
the PTX with ``-arch=sm_90a -O3 -v`` after its ``.version`` is set to 8.0 (CUDA 12.0's ISA: every
instruction the kernel uses, wgmma and fence.proxy.async included, is in 8.0; a ptxas that
disagrees refuses, and the refusal is recorded). Recorded per release: the C7517 lines of its
standard error ("wgmma.wait_group is injected"), registers and spills, and from nvdisasm's SASS
of ``attention`` the order of HGMMA, WARPGROUP.ARRIVE / DEPBAR and branches, with the number of
MUFU.EX2 (the softmax) issued between each 8-HGMMA group's first wait and the next
``DEPBAR.LE gsb0, 0x0``: 0 there means the softmax runs after both groups, whatever the PTX says.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from gpurepro.building.releases import fetch, program, resolve
from gpurepro.building.sass import disassemble

VERSION = re.compile(r"^(\s*\.version\s+)\d+\.\d+", re.M)
KERNEL = "attention"


def marks(instrs: list[Any]) -> list[str]:
    """The SASS as its landmarks, runs of one opcode counted: '8 HGMMA', 'DEPBAR 0x1', ..."""
    out: list[str] = []
    for i in instrs:
        if i.is_op("HGMMA"):
            word = "HGMMA"
        elif i.opcode.startswith("WARPGROUP.DEPBAR"):
            word = f"DEPBAR {i.operands[-1]}"
        elif i.opcode in ("WARPGROUP.ARRIVE", "BRA", "MUFU.EX2", "EXIT"):
            word = i.opcode
        else:
            continue
        count, last = (out[-1].split(" ", 1) if out and out[-1].split(" ", 1)[0].isdigit()
                       else ("1", out[-1] if out else ""))
        if last == word:
            out[-1] = f"{int(count) + 1} {word}"
        else:
            out.append(f"1 {word}")
    return out


def ex2_between_waits(instrs: list[Any]) -> list[int]:
    """For each wait that follows 8 HGMMAs (one iteration's two groups), in address order: the
    MUFU.EX2 between it and the next DEPBAR 0x0 (0 where that wait is DEPBAR 0x0 itself)."""
    found, hgmma = [], 0
    for at, ins in enumerate(instrs):
        if ins.is_op("HGMMA"):
            hgmma += 1
            continue
        if not ins.opcode.startswith("WARPGROUP.DEPBAR"):
            continue
        if hgmma == 8:
            n = 0
            if ins.operands[-1] != "0x0":
                for later in instrs[at + 1:]:
                    if later.opcode.startswith("WARPGROUP.DEPBAR") and later.operands[-1] == "0x0":
                        break
                    n += later.opcode == "MUFU.EX2"
            found.append(n)
        hgmma = 0
    return found


def _version(ptxas: Path) -> str:
    """'V13.3.73' from the last line of ``ptxas --version``."""
    done = subprocess.run([str(ptxas), "--version"], capture_output=True, text=True, check=False)
    release = [ln for ln in done.stdout.splitlines() if ", V" in ln]
    return release[-1].rsplit(", ", 1)[-1] if release else "(no version)"


def compile_one(ptxas: Path, ptx: str, nvdisasm: Path, work: Path) -> dict[str, Any]:
    src, cubin = work / "kernel.ptx", work / "kernel.cubin"
    src.write_text(VERSION.sub(r"\g<1>8.0", ptx, count=1))
    done = subprocess.run([str(ptxas), "-arch=sm_90a", "-O3", "-v", str(src), "-o", str(cubin)],
                          capture_output=True, text=True, timeout=300, check=False)
    err = done.stderr.replace(str(src), "kernel.ptx")
    rec: dict[str, Any] = {"exit_status": done.returncode,
                           "c7517": [ln.strip() for ln in err.splitlines() if "C7517" in ln]}
    used = re.search(r"Used (\d+) registers", err)
    spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", err)
    rec.update(registers=int(used.group(1)) if used else None,
               spill_bytes=[int(spills.group(1)), int(spills.group(2))] if spills else None)
    if done.returncode != 0:
        rec["refused"] = next((ln for ln in err.splitlines() if ln.strip()), "")
        return rec
    sass = disassemble(cubin, {"nvdisasm": nvdisasm}, order=("nvdisasm",))
    instrs = sass.listing.get(KERNEL, [])
    rec.update(sass=marks(instrs), ex2_between_waits=ex2_between_waits(instrs))
    return rec


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ptx", type=Path, required=True)
    ap.add_argument("--nvdisasm", type=Path, required=True)
    ap.add_argument("--release", action="append", default=[], help="PACKAGE==VERSION")
    ap.add_argument("--ptxas", type=Path, action="append", default=[])
    ap.add_argument("--cache", type=Path, default=Path("build/wheels"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    ptx = args.ptx.read_text()
    programs: list[tuple[str, Path]] = [(f"local ptxas {_version(p)}", p) for p in args.ptxas]
    for spec in args.release:
        package, version = spec.split("==")
        entry = resolve(package, version)
        programs.append((f"{package}=={entry['version']}",
                         program(fetch(entry, args.cache), "ptxas", args.cache)))
    out = {}
    for name, ptxas in programs:
        with tempfile.TemporaryDirectory() as tmp:
            out[name] = compile_one(ptxas, ptx, args.nvdisasm, Path(tmp))
        r = out[name]
        print(f"{name}: C7517 {'yes' if r['c7517'] else 'no'}, {r.get('registers')} registers, "
              f"EX2 between the waits per iteration {r.get('ex2_between_waits', r.get('refused'))}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    doc = {"ptx_sha256": hashlib.sha256(ptx.encode()).hexdigest(), "version_set_to": "8.0",
           "ptxas_flags": ["-arch=sm_90a", "-O3", "-v"], "kernel": KERNEL, "releases": out}
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
