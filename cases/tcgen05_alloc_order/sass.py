"""PTX -> SASS analysis for the tcgen05 alloc-order case, derived from the disassembly every run.

    python cases/tcgen05_alloc_order/sass.py --out DIR [--arch sm_103a --arch sm_100a] [--repro BIN]

1. Differential compilation of mbarrier operations with public semantics (snippets.MBARRIER)
   with the pinned ptxas: which SASS each one becomes (the report's appendix table, re-derived).
2. The tcgen05 allocation instructions with .cta_group::2 (snippets.TCGEN05): where the lowering
   branches on the CTA's parity, and what only the leader or only the follower executes, with
   each memory access classified as own / peer shared memory.
3. The same split read from the reporter's own cubin (seed/repro.cu built with the pinned nvcc,
   or ``--repro BIN``), compared with the snippet's.
4. The report's claims about the lowering, each checked against 1-3, and findings derived from
   them (does the leader wait for the follower? does dealloc synchronise with the peer?).
SASS opcodes such as UTCATOMSWS, SYNCS.ARRIVE.TRANS64.*, SYNCS.PHASECHK.* and STAS have no public
semantics. What is derived here is which opcodes and memory targets appear on which path; what an
opcode does ("arrive on the peer's barrier", "allocates") is a reading by differential compilation
against PTX with documented semantics (1), never documented semantics, and the Markdown says so.
Writes DIR/sass_analysis.json and DIR/sass_analysis.md. Needs the pinned wheels (manifest.py's
PINS; the tools from them, manifest.py's TOOLS, found by gpurepro.case.toolchain) in this
interpreter's environment or in ``--venv``; exits 2 naming what is missing otherwise.
Standard library and gpurepro only.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from gpurepro.building import sass as harness_sass
from gpurepro.case import load_sibling, toolchain

HERE = Path(__file__).resolve().parent
sass_parse = load_sibling(__file__, "sass_parse")
snippets = load_sibling(__file__, "snippets")
manifest = load_sibling(__file__, "manifest")  # the pins and the tools taken from them
Instr = sass_parse.Instr

TARGETS = ("sm_103a", "sm_100a")

# The report's appendix, as claims to test (never as results). Each names opcodes and memory
# targets (what is checked) and, in parentheses, the report's reading of what they do (not checked:
# the opcodes have no public semantics).
MBARRIER_CLAIMS = {
    "k_arrive": "SYNCS.ARRIVE.TRANS64.A1T0",
    "k_arrive_expect_tx": "SYNCS.ARRIVE.TRANS64",
    "k_expect_tx": "SYNCS.ARRIVE.TRANS64.RED.A0TR",
    "k_complete_tx": "SYNCS.ARRIVE.TRANS64.RED.A0TX",
    "k_try_wait_parity": "SYNCS.PHASECHK.TRANS64.TRYWAIT",
}
# (side, opcode regex, memory target or None, the report's wording)
LOWERING_CLAIMS = [
    ("leader", r"UTCATOMSWS\..*FIND_AND_SET.*", None,
     "leader: UTCATOMSWS.2CTA.FIND_AND_SET.ALIGN, retried with NANOSLEEP (allocates)"),
    ("leader", r"SYNCS\.ARRIVE\.TRANS64\.RED", "peer",
     "leader: SYNCS.ARRIVE.TRANS64.RED [peer], 4 (expect_tx(4) + arrive on the peer's barrier)"),
    ("leader", r"STAS", "peer", "leader: STAS [peer_smem], addr (async store of the TMEM address)"),
    ("follower", r"SYNCS\.PHASECHK\.TRANS64\.TRYWAIT", "own",
     "follower: SYNCS.PHASECHK.TRANS64.TRYWAIT [own+8] (waits on its own barrier)"),
    ("follower", r"LDS", "own", "follower: LDS [tmem_addr] (reads the address)"),
    ("follower", r"SYNCS\.ARRIVE\.TRANS64\.RED\.A1T0", "peer",
     "follower: SYNCS.ARRIVE.TRANS64.RED.A1T0 [peer] (plain ack)"),
]


class ToolMissing(RuntimeError):
    pass


NEEDS = ("nvcc", "ptxas", "cuobjdump")


def tools(venv: Path | None = None) -> dict[str, Path]:
    found: dict[str, Path] = {}
    missing: list[str] = []
    for name in NEEDS:
        try:
            found[name] = toolchain.find_tool(name, manifest.TOOLS, venv)
        except toolchain.ToolNotFound:
            missing.append(name)
    if missing:
        where = venv or sys.prefix
        raise ToolMissing(f"not found in {where}: {', '.join(missing)}; install the pins "
                          + " ".join(manifest.PINS))
    return found


def versions(venv: Path | None = None) -> dict[str, str]:
    """``13.0.88``-style release of each tool, as the analysis records them."""
    return {n: toolchain.release(toolchain.tool_version(n, manifest.TOOLS, venv)) for n in NEEDS}


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def disassemble(cuobjdump: Path, path: Path) -> dict[str, list[Instr]]:
    """``cuobjdump -sass`` through the harness's disassembler finder (gpurepro.building.sass)."""
    got = harness_sass.disassemble(path, {"cuobjdump": cuobjdump}, order=("cuobjdump",))
    if got.read_by is None:
        raise RuntimeError(f"cuobjdump -sass {path.name}: {got.attempts['cuobjdump']}")
    return got.listing


def compile_kernels(t: dict[str, Path], target: str, kernels: list[tuple[str, str, str]],
                    work: Path, stem: str) -> dict[str, list[Instr]]:
    ptx = work / f"{stem}_{target}.ptx"
    ptx.write_text(snippets.module(target, kernels))
    cubin = work / f"{stem}_{target}.cubin"
    _run([str(t["ptxas"]), f"-arch={target}", str(ptx), "-o", str(cubin)])
    return disassemble(t["cuobjdump"], cubin)


def build_repro(t: dict[str, Path], target: str, work: Path) -> Path:
    out = work / f"repro_{target}"
    virtual = "compute_" + target[3:]
    _run([str(t["nvcc"]), "-gencode", f"arch={virtual},code={target}",
          f"-L{toolchain.nvcc_lib_dir(t['nvcc'])}", "-o", str(out), str(HERE / "seed" / "repro.cu")])
    return out


# ----------------------------------------------------------------------------- derivations


def _row(instrs: list[Instr], i: int) -> dict[str, Any]:
    ins = instrs[i]
    row = {"offset": f"0x{ins.offset:04x}", "sass": ins.text, "opcode": ins.opcode,
           "memory": sass_parse.target(instrs, i)}
    const = sass_parse.constant_operand(instrs, i)
    if const is not None:
        row["value"] = const  # e.g. the tx byte count an arrive carries
    return row


def key_rows(instrs: list[Instr], indices: list[int] | None = None) -> list[dict[str, Any]]:
    idx = range(len(instrs)) if indices is None else indices
    return [_row(instrs, i) for i in idx if sass_parse.is_key(instrs[i])]


def mbarrier_table(funcs: dict[str, list[Instr]]) -> list[dict[str, Any]]:
    reference = {ins.text for ins in funcs.get("k_empty", [])}
    rows = []
    for kernel, ptx, _ in snippets.MBARRIER[1:]:
        instrs = funcs[kernel]
        sass = [_row(instrs, i) for i, ins in enumerate(instrs)
                if sass_parse.is_key(ins) and ins.text not in reference]
        claim = MBARRIER_CLAIMS.get(kernel)
        opcodes = [r["opcode"] for r in sass]
        rows.append({"kernel": kernel, "ptx": ptx, "sass": sass, "report_claim": claim,
                     "claim_verified": None if claim is None else claim in opcodes})
    return rows


def lowering(instrs: list[Instr]) -> dict[str, Any]:
    split = sass_parse.parity_split(instrs)
    if split is None:
        return {"splits_on_parity": False, "all": key_rows(instrs)}
    common = sorted(set(range(len(instrs))) - set(split.leader) - set(split.follower))
    # Program order, not address order: ptxas outlines the wait's retry loop after the body.
    lead = set(split.leader)
    signals = [i for i in split.leader if instrs[i].opcode.startswith(("SYNCS.ARRIVE", "STAS"))
               and sass_parse.target(instrs, i) == "peer"]
    waits_after = waits_before = False
    if signals:
        after = sass_parse.reachable(instrs, signals[0], split.predicate,
                                     split.predicate_means_leader) & lead
        waits_after = any(instrs[i].opcode.startswith("SYNCS.PHASECHK") for i in after)
        waits_before = any(instrs[i].opcode.startswith("SYNCS.PHASECHK") for i in lead - after)
    return {
        "splits_on_parity": True,
        "branch": f"0x{split.branch_offset:04x}",
        "predicate": split.predicate,
        "predicate_true_means": "leader (even CTA)" if split.predicate_means_leader else "follower (odd CTA)",
        "leader": key_rows(instrs, split.leader),
        "follower": key_rows(instrs, split.follower),
        "common": key_rows(instrs, common),
        "leader_waits_before_signal": waits_before,
        "leader_waits_after_signal": waits_after,
    }


def check_claims(low: dict[str, Any]) -> list[dict[str, Any]]:
    out = [{"claim": "tcgen05.alloc.cta_group::2 splits into leader/follower paths on cta_id & 1",
            "verified": bool(low.get("splits_on_parity")),
            "evidence": f"branch at {low.get('branch')} on {low.get('predicate')}" if low.get("splits_on_parity") else "no parity branch"}]
    for side, pattern, where, text in LOWERING_CLAIMS:
        rows = low.get(side, [])
        hits = [r for r in rows if re.fullmatch(pattern, r["opcode"]) and (where is None or r["memory"] == where)]
        out.append({"claim": text, "verified": bool(hits),
                    "evidence": "; ".join(f"{r['offset']} {r['sass']} [{r['memory'] or '-'}]" for r in hits)
                    or f"no {pattern} on the {side} path" + (f" targeting {where} memory" if where else "")})
    return out


def findings(low_alloc: dict[str, Any], dealloc: list[Instr], relinquish: list[Instr],
             cg1: list[Instr]) -> list[dict[str, Any]]:
    f: list[dict[str, Any]] = []
    if low_alloc.get("leader"):
        f.append({"id": "leader_waits_before_signalling",
                  "value": low_alloc["leader_waits_before_signal"],
                  "text": "Whether the leader's path has a SYNCS.PHASECHK...TRYWAIT on its own shared "
                          "memory after FIND_AND_SET and before its first remote SYNCS/STAS; read "
                          "as: it waits on its own mbarrier (phase parity kept in reserved shared "
                          "memory) for the acknowledgement of the previous allocation."})
        f.append({"id": "leader_waits_after_signalling",
                  "value": low_alloc["leader_waits_after_signal"],
                  "text": "Whether the leader's path has any SYNCS.PHASECHK after its first remote "
                          "SYNCS/STAS (false, read as: its alloc returns without the follower's "
                          "acknowledgement of this allocation)."})
    follower = low_alloc.get("follower", [])
    fpeer = [r for r in follower if r["memory"] == "peer"]
    if fpeer:
        f.append({"id": "follower_last_peer_access", "value": fpeer[-1]["sass"],
                  "text": "The follower's last access to the peer CTA's shared memory (the address is "
                          "the peer's); read as: its alloc ends with a remote operation on the "
                          "leader's shared memory, which must still find the leader CTA resident."})
    dealloc_cross = [r for r in key_rows(dealloc) if r["memory"] in ("peer", "cluster") or r["opcode"].startswith("SYNCS")]
    f.append({"id": "dealloc_synchronises_with_peer", "value": bool(dealloc_cross),
              "text": "Whether tcgen05.dealloc.cta_group::2 contains any cross-CTA access or SYNCS "
                      "instruction (false: a local UTCATOMSWS.AND; read as: it never waits for "
                      "the peer)."})
    f.append({"id": "dealloc_splits_on_parity", "value": sass_parse.parity_split(dealloc) is not None,
              "text": "Whether the dealloc lowering branches on CTA parity."})
    relq_cross = [r for r in key_rows(relinquish) if r["memory"] in ("peer", "cluster") or r["opcode"].startswith("SYNCS")]
    f.append({"id": "relinquish_synchronises_with_peer", "value": bool(relq_cross),
              "text": "Whether tcgen05.relinquish_alloc_permit.cta_group::2 touches the peer."})
    f.append({"id": "cta_group1_alloc_splits_on_parity", "value": sass_parse.parity_split(cg1) is not None,
              "text": "Contrast: whether tcgen05.alloc.cta_group::1 has a leader/follower split."})
    return f


def _opcodes(rows: list[dict[str, Any]]) -> list[str]:
    return [f"{r['opcode']}[{r['memory'] or '-'}]" for r in rows]


def analyze(target: str, work: Path, t: dict[str, Path], repro: Path | None) -> dict[str, Any]:
    mb = compile_kernels(t, target, snippets.MBARRIER, work, "mbarrier")
    tc: dict[str, list[Instr]] = {}
    for k in snippets.TCGEN05:  # one module each: .cta_group must not mix within a kernel
        tc.update(compile_kernels(t, target, [k], work, k[0]))
    low_alloc = lowering(tc["k_alloc_cg2"])
    repro_bin = repro or build_repro(t, target, work)
    repro_funcs = disassemble(t["cuobjdump"], repro_bin)
    repro_low = lowering(repro_funcs.get("repro", []))
    same = (repro_low.get("splits_on_parity") and low_alloc.get("splits_on_parity")
            and _opcodes(repro_low["leader"]) == _opcodes(low_alloc["leader"])
            and _opcodes(repro_low["follower"]) == _opcodes(low_alloc["follower"]))
    return {
        "target": target,
        "mbarrier_table": mbarrier_table(mb),
        "tcgen05": {
            "alloc_cg2": low_alloc,
            "relinquish_cg2": {"all": key_rows(tc["k_relinquish_cg2"])},
            "dealloc_cg2": {"all": key_rows(tc["k_dealloc_cg2"])},
            "sequence_cg2": lowering(tc["k_sequence_cg2"]),
            "alloc_cg1": lowering(tc["k_alloc_cg1"]),
        },
        "repro": {"binary": repro_bin.name, "lowering": repro_low,
                  "matches_snippet": bool(same),
                  "instruction_count": len(repro_funcs.get("repro", []))},
        "claims": check_claims(repro_low if repro_low.get("splits_on_parity") else low_alloc),
        "findings": findings(low_alloc, tc["k_dealloc_cg2"], tc["k_relinquish_cg2"], tc["k_alloc_cg1"]),
    }


# ----------------------------------------------------------------------------- report


def _md_rows(rows: list[dict[str, Any]]) -> list[str]:
    return [f"| `{r['offset']}` | `{r['sass']}` | {r['memory'] or ''}"
            f"{' (' + r['value'] + ')' if 'value' in r else ''} |" for r in rows]


def markdown(doc: dict[str, Any]) -> str:
    tv = doc["tools"]
    out = ["# tcgen05 alloc-order: PTX -> SASS analysis", "",
           "Derived from the disassembly on every run by `cases/tcgen05_alloc_order/sass.py`; "
           "nothing here is typed by hand.", "",
           "**Readings, not documented semantics.** NVIDIA documents no semantics for the SASS "
           "opcodes below (`UTCATOMSWS`, `SYNCS.ARRIVE.TRANS64.*`, `SYNCS.PHASECHK.*`, `STAS`, "
           "`UVIRTCOUNT`, ...). What this file derives is which opcodes, with which memory targets "
           "(own or peer shared memory, from the address computation), appear on which path. What "
           "an opcode does (\"allocates\", \"arrive on the peer's barrier\", \"async store of "
           "the TMEM address\", \"waits\") is a reading by differential compilation: PTX with "
           "documented semantics (the first table) compiled by the same ptxas, and its SASS read "
           "back.", "",
           f"Tools: ptxas {tv['ptxas']}, nvcc {tv['nvcc']}, cuobjdump {tv['cuobjdump']} "
           "(from the pinned PyPI wheels).", ""]
    for a in doc["targets"]:
        tgt = a["target"]
        out += [f"## {tgt}", "", "### PTX -> SASS, differential compilation", "",
                "| PTX (documented) | SASS (synchronisation/memory instructions) | report's reading | verified |",
                "| --- | --- | --- | --- |"]
        for r in a["mbarrier_table"]:
            sass = "<br>".join(f"`{s['sass']}`" + (f" ({s['memory']})" if s["memory"] and s["memory"] != "own" else "")
                               for s in r["sass"])
            ver = "" if r["claim_verified"] is None else ("yes" if r["claim_verified"] else "**no**")
            out.append(f"| `{r['ptx']}` | {sass} | {('`' + r['report_claim'] + '`') if r['report_claim'] else ''} | {ver} |")
        low = a["tcgen05"]["alloc_cg2"]
        out += ["", "### `tcgen05.alloc.cta_group::2`: leader and follower paths", ""]
        if low.get("splits_on_parity"):
            out += [f"Branch at `{low['branch']}` on `{low['predicate']}` "
                    f"(true means {low['predicate_true_means']}).", "",
                    "Leader (even CTA) only:", "", "| offset | SASS | memory |", "| --- | --- | --- |",
                    *_md_rows(low["leader"]), "", "Follower (odd CTA) only:", "",
                    "| offset | SASS | memory |", "| --- | --- | --- |", *_md_rows(low["follower"]), "",
                    "Both (prelude, bookkeeping, trap stubs):", "", "| offset | SASS | memory |",
                    "| --- | --- | --- |", *_md_rows(low["common"])]
        else:
            out.append("No branch on CTA parity was found.")
        for name, title in (("relinquish_cg2", "tcgen05.relinquish_alloc_permit.cta_group::2"),
                            ("dealloc_cg2", "tcgen05.dealloc.cta_group::2")):
            out += ["", f"### `{title}`", "", "| offset | SASS | memory |", "| --- | --- | --- |",
                    *_md_rows(a["tcgen05"][name]["all"])]
        rp = a["repro"]
        out += ["", "### The reporter's cubin (seed/repro.cu)", "",
                f"`{rp['binary']}`, {rp['instruction_count']} instructions in `repro`; its alloc "
                f"leader/follower paths {'match' if rp['matches_snippet'] else '**differ from**'} "
                "the snippet's (opcode and memory target, in order).", ""]
        if rp["lowering"].get("splits_on_parity"):
            out += ["Leader only:", "", "| offset | SASS | memory |", "| --- | --- | --- |",
                    *_md_rows(rp["lowering"]["leader"]), "", "Follower only:", "",
                    "| offset | SASS | memory |", "| --- | --- | --- |", *_md_rows(rp["lowering"]["follower"])]
        out += ["", "### The report's claims", "",
                "Verified: the opcode and memory target on that path; the words in parentheses "
                "are the report's reading of what the opcode does.", "",
                "| claim | verified | evidence |", "| --- | --- | --- |"]
        for c in a["claims"]:
            out.append(f"| {c['claim']} | {'yes' if c['verified'] else '**no**'} | {c['evidence']} |")
        out += ["", "### Findings", "",
                "The value is derived from opcodes and memory targets; \"read as\" marks the "
                "reading of undocumented opcodes.", "",
                "| finding | value | meaning |", "| --- | --- | --- |"]
        for f in a["findings"]:
            out.append(f"| {f['id']} | `{f['value']}` | {f['text']} |")
        out.append("")
    if len(doc["targets"]) > 1:
        out += ["## Across targets", "", doc["across_targets"], ""]
    return "\n".join(out)


def run(out_dir: Path, targets: list[str], repro: Path | None,
        venv: Path | None = None) -> dict[str, Any]:
    t = tools(venv)
    doc: dict[str, Any] = {
        "tools": versions(venv),
        "tool_paths": {n: str(p) for n, p in t.items()},
        "targets": [],
    }
    with tempfile.TemporaryDirectory(prefix="tcgen05-sass-") as tmp:
        for target in targets:
            doc["targets"].append(analyze(target, Path(tmp), t, repro))
    if len(doc["targets"]) > 1:
        a, b = doc["targets"][0], doc["targets"][1]
        la, lb = a["tcgen05"]["alloc_cg2"], b["tcgen05"]["alloc_cg2"]
        same = (la.get("splits_on_parity") and lb.get("splits_on_parity")
                and _opcodes(la["leader"]) == _opcodes(lb["leader"])
                and _opcodes(la["follower"]) == _opcodes(lb["follower"]))
        doc["across_targets"] = (
            f"The alloc.cta_group::2 leader/follower lowering for {a['target']} and {b['target']} is "
            + ("identical (opcodes and memory targets, in order)." if same else "**different**.")
        )
    # Flattened for the result record (Case.analyses): the first target's claims and findings.
    doc["claims"] = doc["targets"][0]["claims"]
    doc["findings"] = doc["targets"][0]["findings"]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "sass_analysis.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out_dir / "sass_analysis.md").write_text(markdown(doc))
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--arch", action="append", choices=TARGETS,
                    help="target(s); default: sm_103a and sm_100a")
    ap.add_argument("--repro", type=Path, help="a prebuilt seed binary (only with one --arch)")
    ap.add_argument("--venv", type=Path, help="take the tools from this virtualenv instead")
    args = ap.parse_args(argv)
    targets = args.arch or list(TARGETS)
    if args.repro and len(targets) != 1:
        ap.error("--repro needs exactly one --arch")
    try:
        doc = run(args.out, targets, args.repro, args.venv)
    except ToolMissing as exc:
        print(f"sass.py: {exc}", file=sys.stderr)
        return 2
    bad = [c["claim"] for a in doc["targets"] for c in a["claims"] if not c["verified"]]
    print(f"wrote {args.out / 'sass_analysis.json'} and sass_analysis.md; "
          f"{len(bad)} report claim(s) not verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
