"""Compile the case's PTX with one ptxas release: the cubin, and what the compile did.

    python compile_cubin.py --release nvidia-cuda-nvcc-cu12==12.6.77 --ptx K.ptx --arch sm_90 \\
        --out DIR/kernel.cubin
    python compile_cubin.py --ptxas PATH ...        (a ptxas already at hand, e.g. the pinned one)

The ptxas of a release is taken out of its wheel (wheels.py; cached under build/). Flags:
``-arch=<arch> -O3`` (FLAGS). -O3 is ptxas's default level, written out so the command says it;
XLA, where the report comes from, runs ptxas as a program as
``ptxas <ptx> -o <cubin> -arch=sm_90 --warn-on-spills`` (that flag only adds warnings). Beside
the cubin goes ``ptxas.json``: the release asked for, the version its wheel declares,
``ptxas --version``, the wheel's file and sha256, the flags, the exit status (or the signal that ended ptxas) and the first line of its standard error; with
``--nvdisasm``, ``sass.json``: each kernel's IABS, clamp and what the clamp reads (sass_facts.py)
and its instructions.
Exit status 0 when ptxas made the cubin, 1 when it did not. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import sass_facts
import wheels

FLAGS = ("-O3",)


def arch_flags(arch: str, extra: tuple[str, ...] = FLAGS) -> list[str]:
    return [f"-arch={arch}", *extra]


def tool_version(program: Path) -> dict[str, Any]:
    """``--version``'s release (``12.6.77``) and build lines."""
    try:
        done = subprocess.run([str(program), "--version"], capture_output=True, text=True,
                              timeout=60, check=False)
    except OSError as exc:
        return {"release": None, "text": None, "error": str(exc)}
    text = (done.stdout + done.stderr).strip()
    m = re.search(r"\bV(\d+\.\d+\.\d+)\b", text)
    build = next((ln.strip() for ln in text.splitlines() if ln.startswith("Build ")), None)
    return {"release": m.group(1) if m else None, "build": build}


def first_line(text: str, *paths: Path) -> str:
    """The first non-blank line, with each of ``paths`` shortened to its file name (a record
    names no folder of the machine that made it)."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    for p in paths:
        line = line.replace(str(p), p.name)
    return line


def run_ptxas(ptxas: Path, ptx: Path, cubin: Path, flags: list[str],
              timeout: float = 300) -> dict[str, Any]:
    """One ptxas run: ``status`` ok (cubin written), failed (non-zero exit), crashed (a signal)
    or timeout, with the exit status or signal and the first line of standard error."""
    cubin.parent.mkdir(parents=True, exist_ok=True)
    if cubin.exists():
        cubin.unlink()
    argv = [str(ptxas), *flags, str(ptx), "-o", str(cubin)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "exit_status": None, "signal": None, "stderr_first_line": ""}
    rc = done.returncode
    out: dict[str, Any] = {"exit_status": rc if rc >= 0 else None,
                           "signal": signal.Signals(-rc).name if rc < 0 else None,
                           "stderr_first_line": first_line(done.stderr + done.stdout, ptx, cubin)}
    if rc < 0:
        out["status"] = "crashed"
    elif rc != 0 or not cubin.is_file():
        out["status"] = "failed"
    else:
        out["status"] = "ok"
        out["cubin_sha256"] = wheels.sha256_file(cubin)
        out["cubin_size"] = cubin.stat().st_size
    if out["status"] != "ok" and cubin.exists():
        cubin.unlink()
    return out


def sass_record(nvdisasm: Path, cubin: Path) -> dict[str, Any]:
    """nvdisasm's reading of the cubin: per kernel the IABS, the clamp and what it reads."""
    done = subprocess.run([str(nvdisasm), str(cubin)], capture_output=True, text=True,
                          timeout=120, check=False)
    kernels = sass_facts.kernel_facts(done.stdout) if done.returncode == 0 else {}
    listing = sass_facts.parse(done.stdout) if done.returncode == 0 else {}
    record: dict[str, Any] = {"disassembler": "nvdisasm",
                              "version": tool_version(nvdisasm)["release"],
                              "exit_status": done.returncode,
                              "stderr_first_line": first_line(done.stderr, cubin)}
    if "abs_clamp" in kernels:
        k = kernels["abs_clamp"]
        record.update(abs_dropped=not k["iabs"], iabs_feeds_clamp=k["clamp_reads"] == "IABS")
    record["kernels"] = kernels
    # Every kernel's instructions (texts, no offsets): what a verdict diffs between releases
    # (gpurepro.build.sass.diff).
    record["listing"] = {k: [i.text for i in v] for k, v in sorted(listing.items())}
    return record


def resolve_ptxas(release: str | None, ptxas: Path | None, cache: Path) -> tuple[Path, dict[str, Any]]:
    """The ptxas to run and where it came from."""
    if ptxas is not None:
        return ptxas, {"source": "path", "requested": None, "resolved": None,
                       "ptxas_version": tool_version(ptxas)}
    assert release is not None
    package, sep, version = release.partition("==")
    if not sep:
        raise SystemExit(f"compile_cubin.py: --release wants PACKAGE==VERSION, got {release!r}")
    program, wheel, declared = wheels.tool_from_release(package, version, "ptxas", cache)
    return program, {"source": "pypi", "package": package, "requested": version,
                     "resolved": declared, "wheel": {"filename": wheel.filename,
                                                     "sha256": wheel.sha256},
                     "ptxas_version": tool_version(program)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--release", help="PACKAGE==VERSION whose wheel holds bin/ptxas")
    src.add_argument("--ptxas", type=Path, help="a ptxas program to use as it is")
    ap.add_argument("--ptx", type=Path, required=True)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--out", type=Path, required=True, help="the cubin to write")
    ap.add_argument("--cache", type=Path, default=wheels.CACHE)
    ap.add_argument("--nvdisasm", type=Path, help="also write sass.json beside the cubin")
    args = ap.parse_args(argv)
    program, origin = resolve_ptxas(args.release, args.ptxas, args.cache)
    flags = arch_flags(args.arch)
    result = run_ptxas(program, args.ptx, args.out, flags)
    record = {**origin, "flags": flags, "ptx": args.ptx.name, **result}
    (args.out.parent / "ptxas.json").write_text(json.dumps(record, indent=1) + "\n")
    if result["status"] == "ok" and args.nvdisasm:
        sass = sass_record(args.nvdisasm, args.out)
        (args.out.parent / "sass.json").write_text(json.dumps(sass, indent=1) + "\n")
    if result["status"] != "ok":
        print(f"compile_cubin.py: ptxas {result['status']}: {result['stderr_first_line']}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
