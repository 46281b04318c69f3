"""ptxas releases on the CPU: which ones compile the case's PTX, and which drop the IABS.

    python releases.py --out build/ptxas_abs_clamp/releases.json \\
        [--spec 'nvidia-cuda-nvcc-cu12>=12.0,<13'] [--spec 'nvidia-cuda-nvcc==13.5.37'] \\
        [--ptxas LABEL=PATH] [--ptx K.ptx | --nvcc PATH] [--cuobjdump PATH] [--nvdisasm PATH] \\
        [--cubins build/ptxas_abs_clamp/cubins]

The releases of each ``--spec`` are the final releases PyPI's JSON API lists for the package
in the range (wheels.py); ``--ptxas LABEL=PATH`` adds a ptxas already at hand. For every
release, with its ptxas taken out of its wheel:

1. the PTX lowered to ISA 8.0 (lower_ptx_version.py) compiled with ``-arch=sm_90 -O3``: exit
   status or signal, the first line of standard error, the cubin's sha256 (the arm's cubin);
2. the same without ``-O3``: whether ptxas's default level gives the same cubin;
3. the PTX as nvcc wrote it (``.version 9.3``): accepted, refused (and the newest ISA the
   release names in its refusal), or crashed;
4. for every distinct cubin, once: ``cuobjdump -sass`` and ``nvdisasm`` (the pinned 13.x
   ones), whether each could read it, and per kernel the IABS, the clamp and what the clamp
   reads (sass_facts.py); whether the two disassemblers agree on every opcode.

The document lists the releases in order with requested and resolved versions, the distinct
cubins (identical cubins counted once, with the releases that made each) and the boundaries:
adjacent measured releases of one package whose abs_clamp kernel differs in whether an IABS
feeds its clamp, with the SASS on both sides. Whether an older disassembler exists on PyPI
(``-cu12`` wheels) is asked too. ``--cubins DIR`` copies each distinct cubin there with an
``index.json``, what gpu_check.py runs on a GPU. Standard library only; tools are found in this
interpreter's environment (the case's pinned wheels) unless given.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import urllib.error
from pathlib import Path
from typing import Any

import compile_cubin
import lower_ptx_version
import sass_facts
import wheels

SCHEMA = "gpurepro/ptxas-abs-clamp-releases/1"
HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
KERNEL = "abs_clamp"
CONTROLS = ("abs_only", "clamp_only")
DEFAULT_SPECS = ("nvidia-cuda-nvcc-cu12>=12.0,<13",)
# Disassemblers of CUDA 12 that a cubin a 13.x one cannot read might be tried with.
OLDER_DISASSEMBLERS = ("nvidia-cuda-cuobjdump-cu12", "nvidia-cuda-nvdisasm-cu12")
_MAX_ISA = re.compile(r"current version is '(\d+\.\d+)'")
_SPEC = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(.*)$")


def pinned_tool(name: str) -> Path | None:
    """``nvidia/cu13/bin/<name>`` among this interpreter's installed wheels."""
    for key in ("purelib", "platlib"):
        p = Path(sysconfig.get_paths()[key]) / "nvidia" / "cu13" / "bin" / name
        if p.is_file():
            return p
    return None


def rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return path.name


# ----------------------------------------------------------------------------- the input


def make_ptx(nvcc: Path | None, ptx: Path | None, arch: str, work: Path) -> dict[str, Any]:
    """The PTX as emitted and lowered: paths, sha256, .version before and after."""
    emitted = work / "kernel.emitted.ptx"
    if ptx is None:
        assert nvcc is not None
        argv = [str(nvcc), f"-arch={arch}", "-ptx", str(HERE / "kernel.cu"), "-o", str(emitted)]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"releases.py: nvcc failed ({done.returncode}): {done.stderr}")
        made_by = {"nvcc": compile_cubin.tool_version(nvcc)["release"],
                   "flags": [f"-arch={arch}", "-ptx"]}
    else:
        shutil.copyfile(ptx, emitted)
        made_by = {"given": rel(ptx)}
    lowered = work / "kernel.ptx"
    text, old, new = lower_ptx_version.lower(emitted.read_text())
    lowered.write_text(text)
    return {"emitted": emitted, "lowered": lowered, "made_by": made_by,
            "emitted_version": old, "lowered_version": new,
            "emitted_sha256": wheels.sha256_file(emitted), "sha256": wheels.sha256_file(lowered)}


# ----------------------------------------------------------------------------- disassembly


def disassemble(tool: Path, args: list[str], cubin: Path) -> dict[str, Any]:
    """One disassembler on one cubin: could it read it, and the kernels' SASS facts."""
    try:
        done = subprocess.run([str(tool), *args, str(cubin)], capture_output=True, text=True,
                              timeout=120, check=False)
    except subprocess.TimeoutExpired:
        return {"status": "timeout"}
    kernels = sass_facts.kernel_facts(done.stdout)
    out: dict[str, Any] = {"exit_status": done.returncode,
                           "stderr_first_line": compile_cubin.first_line(done.stderr, cubin)}
    if done.returncode != 0 or KERNEL not in kernels:
        out["status"] = "unreadable"
        out["kernels_found"] = sorted(kernels)
        return out
    out["status"] = "ok"
    out["kernels"] = kernels
    out["_opcodes"] = sass_facts.opcodes(done.stdout)
    out["_listing"] = sass_facts.parse(done.stdout)
    return out


def sass_of(cubin: Path, tools: dict[str, Path]) -> dict[str, Any]:
    """Both disassemblers on one cubin, and what the first that read it says about the abs."""
    runs = {"cuobjdump": disassemble(tools["cuobjdump"], ["-sass"], cubin),
            "nvdisasm": disassemble(tools["nvdisasm"], [], cubin)}
    readers = [n for n, r in runs.items() if r["status"] == "ok"]
    result: dict[str, Any] = {"read_by": readers}
    if len(readers) == 2:
        result["disassemblers_agree"] = runs["cuobjdump"]["_opcodes"] == runs["nvdisasm"]["_opcodes"]
    if readers:
        first = runs[readers[0]]
        k = first["kernels"][KERNEL]
        result["kernels"] = first["kernels"]
        result["iabs_feeds_clamp"] = k["clamp_reads"] == "IABS"
        result["abs_dropped"] = not k["iabs"]
        listing = first["_listing"]
        if "clamp_only" in listing:
            same = [i.text for i in listing[KERNEL]] == [i.text for i in listing["clamp_only"]]
            result["abs_clamp_same_as_clamp_only"] = same
    for r in runs.values():
        r.pop("_opcodes", None)
        r.pop("_listing", None)
    result["disassemblers"] = runs
    return result


# ----------------------------------------------------------------------------- one release


def same_code(nvdisasm: Path, a: Path, b: Path) -> bool | None:
    """Whether two cubins hold the same instructions in every kernel (None: unreadable)."""
    listings = []
    for cubin in (a, b):
        done = subprocess.run([str(nvdisasm), str(cubin)], capture_output=True, text=True,
                              timeout=120, check=False)
        if done.returncode != 0:
            return None
        listings.append({k: [i.text for i in v] for k, v in sass_facts.parse(done.stdout).items()})
    return listings[0] == listings[1] and bool(listings[0])


def measure(label: str, ptxas: Path, origin: dict[str, Any], ptx: dict[str, Any], arch: str,
            work: Path, nvdisasm: Path) -> tuple[dict[str, Any], Path | None]:
    """Compile the lowered PTX (the arm's cubin), without -O3, and as emitted."""
    d = work / re.sub(r"[^A-Za-z0-9_.=-]", "_", label)
    flags = compile_cubin.arch_flags(arch)
    main = compile_cubin.run_ptxas(ptxas, ptx["lowered"], d / "kernel.cubin", flags)
    record: dict[str, Any] = {"label": label, **origin, "flags": flags, "compile": main}
    if main["status"] == "ok":
        plain = compile_cubin.run_ptxas(ptxas, ptx["lowered"], d / "plain.cubin", [f"-arch={arch}"])
        record["default_level_same_cubin"] = plain.get("cubin_sha256") == main["cubin_sha256"]
        if plain["status"] == "ok" and not record["default_level_same_cubin"]:
            # ptxas 13 writes its options into the cubin (.note.nv.tkinfo): the bytes differ
            # when the flags are spelled differently, the code need not.
            record["default_level_same_code"] = same_code(nvdisasm, d / "plain.cubin",
                                                          d / "kernel.cubin")
    emitted = compile_cubin.run_ptxas(ptxas, ptx["emitted"], d / "emitted.cubin", flags)
    m = _MAX_ISA.search(emitted["stderr_first_line"])
    record["as_emitted"] = {
        "version": ptx["emitted_version"],
        "status": {"failed": "refused"}.get(emitted["status"], emitted["status"]),
        "exit_status": emitted["exit_status"], "signal": emitted["signal"],
        "stderr_first_line": emitted["stderr_first_line"],
        "newest_isa_named": m.group(1) if m else None,
    }
    if emitted["status"] == "ok" and main["status"] == "ok":
        record["as_emitted"]["same_cubin"] = emitted["cubin_sha256"] == main["cubin_sha256"]
    return record, (d / "kernel.cubin") if main["status"] == "ok" else None


def origin_of_release(package: str, version: str, cache: Path, files: list[dict[str, Any]]
                      ) -> tuple[Path | None, dict[str, Any]]:
    origin: dict[str, Any] = {"package": package, "requested": version}
    try:
        program, wheel, declared = wheels.tool_from_release(package, version, "ptxas", cache,
                                                            files=files)
    except (LookupError, ValueError, OSError, urllib.error.URLError) as exc:
        origin.update(resolved=None, unavailable=f"{type(exc).__name__}: {exc}")
        return None, origin
    origin.update(resolved=declared, wheel={"filename": wheel.filename, "sha256": wheel.sha256},
                  ptxas_version=compile_cubin.tool_version(program))
    return program, origin


# ----------------------------------------------------------------------------- the document


def boundaries(releases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Adjacent measured releases of one package whose abs_clamp differs in abs_dropped."""
    out = []
    by_pkg: dict[str, list[dict[str, Any]]] = {}
    for r in releases:
        if r.get("package"):
            by_pkg.setdefault(r["package"], []).append(r)
    for pkg, rs in by_pkg.items():
        prev, skipped = None, []
        for r in rs:
            if "abs_dropped" not in r:
                skipped.append(r["requested"])
                continue
            if prev is not None and prev["abs_dropped"] != r["abs_dropped"]:
                out.append({
                    "package": pkg, "between": [prev["requested"], r["requested"]],
                    "change": "IABS dropped" if r["abs_dropped"] else "IABS restored",
                    "not_measured_between": skipped,
                    "before": prev["sass_abs_clamp"], "after": r["sass_abs_clamp"],
                })
            prev, skipped = r, []
    return out


def older_disassemblers(index: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in OLDER_DISASSEMBLERS:
        try:
            found[name] = "on PyPI" if wheels.on_pypi(name, index) else "not on PyPI (404)"
        except (OSError, urllib.error.URLError) as exc:
            found[name] = f"not asked: {exc}"
    return found


def parse_spec(spec: str) -> tuple[str, str]:
    m = _SPEC.match(spec)
    if not m:
        raise SystemExit(f"releases.py: cannot read --spec {spec!r}")
    return m.group(1), m.group(2).strip()


def run(args: argparse.Namespace) -> dict[str, Any]:
    tools = {n: getattr(args, n) or pinned_tool(n) for n in ("cuobjdump", "nvdisasm")}
    missing = [n for n, p in tools.items() if p is None]
    if missing:
        raise SystemExit(f"releases.py: {', '.join(missing)} not found: install the case's pins "
                         "(nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm) or pass the paths")
    nvcc = args.nvcc or (None if args.ptx else pinned_tool("nvcc"))
    if args.ptx is None and nvcc is None:
        raise SystemExit("releases.py: no --ptx and no nvcc: install nvidia-cuda-nvcc or pass one")
    work = Path(tempfile.mkdtemp(prefix="ptxas-releases-", dir=args.cache))
    ptx = make_ptx(nvcc, args.ptx, args.arch, work)

    axes, releases, cubins = [], [], {}
    todo: list[tuple[str, Path | None, dict[str, Any]]] = []
    for spec in args.spec:
        package, rng = parse_spec(spec)
        listed = wheels.releases(package, args.index)
        chosen = [v for v in listed["final"] if wheels.in_range(v, rng)]
        axes.append({"package": package, "range": rng, "listed": listed["listed"],
                     "considered": chosen,
                     "excluded": [{"version": v, "reason": "not a final release"}
                                  for v in listed["other"]]})
        for v in chosen:
            program, origin = origin_of_release(package, v, args.cache, listed["files"][v])
            todo.append((f"{package}=={v}", program, origin))
    for item in args.ptxas:
        label, _, path = item.partition("=")
        program = Path(path)
        version = compile_cubin.tool_version(program)
        # A program at hand: what it says it is (ptxas --version) is its resolved version.
        todo.append((label, program, {"package": None, "requested": label,
                                      "resolved": version["release"], "ptxas_version": version}))

    for label, program, origin in todo:
        print(f"releases.py: {label}", file=sys.stderr, flush=True)
        if program is None:
            releases.append({"label": label, **origin})
            continue
        record, cubin = measure(label, program, origin, ptx, args.arch, work, tools["nvdisasm"])
        if cubin is not None:
            sha = record["compile"]["cubin_sha256"]
            if sha not in cubins:
                cubins[sha] = {"sha256": sha, "path": cubin, "releases": [],
                               "sass": sass_of(cubin, tools)}
            cubins[sha]["releases"].append(label)
            s = cubins[sha]["sass"]
            if "abs_dropped" in s:
                record["abs_dropped"] = s["abs_dropped"]
                record["sass_abs_clamp"] = {k: v for k, v in s["kernels"][KERNEL].items()
                                            if k != "instructions"}
            record["sass_read_by"] = s["read_by"]
        releases.append(record)

    doc = {
        "schema": SCHEMA,
        "question": "Which ptxas releases drop the IABS that feeds the clamp of "
                    "clamp(abs(m), 0, 5) for sm_90?",
        "arch": args.arch,
        "input": {"source": "cases/ptxas_abs_clamp/kernel.cu", **ptx["made_by"],
                  "emitted_version": ptx["emitted_version"],
                  "emitted_sha256": ptx["emitted_sha256"],
                  "lowered_version": ptx["lowered_version"], "ptx_sha256": ptx["sha256"]},
        "disassemblers": {n: compile_cubin.tool_version(p)["release"] for n, p in tools.items()},
        "axes": axes,
        "releases": releases,
        "distinct_cubins": [{k: v for k, v in c.items() if k != "path"} for c in cubins.values()],
        "boundaries": boundaries(releases),
    }
    unread = [lbl for c in cubins.values() for lbl in c["releases"] if len(c["sass"]["read_by"]) < 2]
    doc["unreadable_by_a_13x_disassembler"] = unread
    if not args.offline:
        doc["older_disassemblers"] = older_disassemblers(args.index)
    if args.cubins:
        write_cubins(args.cubins, cubins)
    shutil.rmtree(work, ignore_errors=True)
    return doc


def write_cubins(folder: Path, cubins: dict[str, dict[str, Any]]) -> None:
    """Each distinct cubin as <sha256[:16]>.cubin, and index.json: what gpu_check.py runs."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    index = []
    for sha, c in cubins.items():
        name = f"{sha[:16]}.cubin"
        shutil.copyfile(c["path"], folder / name)
        index.append({"file": name, "sha256": sha, "releases": c["releases"],
                      "abs_dropped": c["sass"].get("abs_dropped"),
                      "kernels": sorted(c["sass"].get("kernels", {})) or [KERNEL, *CONTROLS]})
    (folder / "index.json").write_text(json.dumps({"cubins": index}, indent=1) + "\n")


def summarize(doc: dict[str, Any]) -> dict[str, Any]:
    """The document without what repeats: each distinct cubin's kernel facts once (from the
    first disassembler that read it), each disassembler's run as its status line."""
    cubins = []
    for c in doc["distinct_cubins"]:
        s = c["sass"]
        cubins.append({
            "sha256": c["sha256"], "releases": c["releases"], "read_by": s["read_by"],
            **{k: s[k] for k in ("disassemblers_agree", "abs_dropped", "iabs_feeds_clamp",
                                 "abs_clamp_same_as_clamp_only") if k in s},
            "disassemblers": {n: {k: v for k, v in r.items() if k != "kernels"}
                              for n, r in s["disassemblers"].items()},
            "kernels": {k: {f: v for f, v in facts.items() if f != "instructions"}
                        for k, facts in s.get("kernels", {}).items()},
        })
    keep = ("label", "package", "requested", "resolved", "unavailable", "wheel", "flags",
            "compile", "default_level_same_cubin", "default_level_same_code", "as_emitted",
            "abs_dropped", "sass_abs_clamp", "sass_read_by")
    releases = [{k: r[k] for k in keep if k in r} for r in doc["releases"]]
    for r in releases:
        if "wheel" in r:
            r["wheel"] = {"filename": r["wheel"]["filename"], "sha256": r["wheel"]["sha256"]}
    return {**{k: v for k, v in doc.items() if k not in ("releases", "distinct_cubins")},
            "releases": releases, "distinct_cubins": cubins}


def markdown_table(doc: dict[str, Any]) -> str:
    """The README's table: one row per release, identical cubins numbered once."""
    number = {c["sha256"]: i + 1 for i, c in enumerate(doc["distinct_cubins"])}
    read = {c["sha256"]: c["sass"]["read_by"] if "sass" in c else c["read_by"]
            for c in doc["distinct_cubins"]}
    rows = ["| release | ptxas on `.version 8.0` | cubin (sha256) | IABS in abs_clamp | "
            "clamp reads | `.version 9.3` as emitted | read by (13.2.51) |",
            "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in doc["releases"]:
        c = r.get("compile") or {}
        sha = c.get("cubin_sha256")
        ptxas = c.get("status") or f"unavailable: {r.get('unavailable')}"
        cubin = f"#{number[sha]} `{sha[:12]}`" if sha else "–"
        iabs = {True: "**absent**", False: "present"}.get(r.get("abs_dropped"), "–")
        reads = (r.get("sass_abs_clamp") or {}).get("clamp_reads") or "–"
        a = r.get("as_emitted") or {}
        emitted = a.get("status", "–")
        if a.get("signal"):
            emitted += f" ({a['signal']})"
        elif a.get("newest_isa_named"):
            emitted += f" (names ISA {a['newest_isa_named']})"
        readers = ", ".join(read.get(sha, [])) if sha else "–"
        label = r["requested"] if r.get("package") in (None, "nvidia-cuda-nvcc-cu12") \
            else f"{r['requested']} ({r['package']})"
        rows.append(f"| {label} | {ptxas} | {cubin} | {iabs} | {reads} | {emitted} | {readers} |")
    return "\n".join(rows) + "\n"


def summary_rows(doc: dict[str, Any]) -> list[str]:
    """One line per release: release, ptxas, cubin sha256 prefix, IABS in abs_clamp."""
    rows = []
    for r in doc["releases"]:
        c = r.get("compile") or {}
        status = c.get("status") or ("unavailable" if "unavailable" in r else "-")
        sha = (c.get("cubin_sha256") or "")[:12] or "-"
        iabs = {True: "absent", False: "present"}.get(r.get("abs_dropped"), "-")
        rows.append(f"{r['label']:36} ptxas {status:9} {sha:12} IABS {iabs}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="the JSON document to write")
    ap.add_argument("--spec", action="append", default=None,
                    help="PACKAGE[RANGE], e.g. 'nvidia-cuda-nvcc-cu12>=12.0,<13' (repeatable)")
    ap.add_argument("--no-pypi", action="store_true", help="no --spec defaults: --ptxas only")
    ap.add_argument("--ptxas", action="append", default=[], metavar="LABEL=PATH")
    ap.add_argument("--ptx", type=Path, help="the PTX to compile (default: nvcc on kernel.cu)")
    ap.add_argument("--nvcc", type=Path)
    ap.add_argument("--cuobjdump", type=Path)
    ap.add_argument("--nvdisasm", type=Path)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--cubins", type=Path, help="copy the distinct cubins here, with index.json")
    ap.add_argument("--summary", type=Path, help="also write the shorter document (summarize)")
    ap.add_argument("--markdown", type=Path, help="also write the release table (Markdown)")
    ap.add_argument("--cache", type=Path, default=wheels.CACHE)
    ap.add_argument("--index", default=wheels.INDEX)
    ap.add_argument("--offline", action="store_true", help="ask PyPI nothing (--ptxas only)")
    args = ap.parse_args(argv)
    if args.spec is None:
        args.spec = [] if (args.no_pypi or args.offline) else list(DEFAULT_SPECS)
    if args.offline and args.spec:
        ap.error("--offline cannot list releases: leave out --spec")
    args.cache.mkdir(parents=True, exist_ok=True)
    doc = run(args)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    if args.summary:
        args.summary.write_text(json.dumps(summarize(doc), indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(markdown_table(doc))
    print("\n".join(summary_rows(doc)))
    for b in doc["boundaries"]:
        print(f"boundary: {b['package']} {b['between'][0]} -> {b['between'][1]}: {b['change']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
