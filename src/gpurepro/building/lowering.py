"""How ptxas lowers PTX whose SASS is undocumented, read by differential compilation.

    python -m gpurepro.building.lowering --spec SPEC.py --out DIR --arch sm_103a \\
        [--tool ptxas=PATH --tool cuobjdump=PATH] [--repro BINARY] [--name lowering]

A case declares, in a spec file (a Python module of its folder), what is specific to it:

- ``REFERENCE``: kernels ``(name, PTX shown, body)`` of instructions with documented semantics,
  the first an empty reference kernel; compiled in one module, each kernel's synchronisation and
  memory instructions that the reference kernel lacks are what that PTX becomes (the table a
  reading of the undocumented opcodes rests on);
- ``STUDIED``: the kernels under study, each compiled in a module of its own (``.cta_group``
  must not mix within a kernel); ``module(target, kernels)`` writes a PTX module of kernels;
- ``PAIR``: the studied kernel whose CTA-pair split (``sass_pairs.parity_split``) is the
  lowering; ``REPRO``: the function of ``--repro`` (the reporter's binary) compared with it;
- ``OPCODE_CLAIMS`` (reference kernel -> the opcode a report says it becomes) and
  ``PATH_CLAIMS`` (``(side, opcode regex, memory or None, the report's words)``): what is
  checked, opcodes and memory targets only;
- ``FINDINGS``: ``(id, kind, kernel, text)``, each derived by a kind of this module
  (``FINDING_KINDS``).

Writes ``DIR/NAME.json`` (``tools``, ``targets`` and, flattened for a result's analyses, the
first target's ``claims`` and ``findings``) and ``DIR/NAME.md``; a tool not given with ``--tool``
is the one installed beside this interpreter (gpurepro.case.toolchain). What an opcode does is never
derived: the Markdown says that the words are readings. Standard library only.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from ..case.toolchain import ToolNotFound, find_tool, release, version_of
from . import sass_pairs
from .sass import Instr, disassemble

# What other modules use; the rest is this module's own.
__all__ = ["analysis", "analyze", "check_claims", "FINDING_KINDS", "findings", "key_rows",
           "load_spec", "main", "markdown", "pair_lowering", "reference_table", "run", "same_split"]

Rows = list[dict[str, Any]]
Listing = dict[str, list[Instr]]


def load_spec(path: Path) -> ModuleType:
    """The case's spec module, imported from its file."""
    spec = importlib.util.spec_from_file_location(f"lowering_spec_{Path(path).stem}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(cmd: Sequence[str]) -> None:
    done = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")


def _listing(cuobjdump: Path, path: Path) -> Listing:
    got = disassemble(path, {"cuobjdump": cuobjdump}, order=("cuobjdump",))
    if got.read_by is None:
        raise RuntimeError(f"cuobjdump -sass {path.name}: {got.attempts['cuobjdump']}")
    return got.listing


def compile_ptx(tools: Mapping[str, Path], ptx: str, target: str, work: Path, stem: str) -> Listing:
    """One PTX module through ptxas for ``target``, and its SASS."""
    src, cubin = work / f"{stem}_{target}.ptx", work / f"{stem}_{target}.cubin"
    src.write_text(ptx)
    _run([str(tools["ptxas"]), f"-arch={target}", str(src), "-o", str(cubin)])
    return _listing(tools["cuobjdump"], cubin)


def _row(instrs: list[Instr], i: int) -> dict[str, Any]:
    ins = instrs[i]
    row = {"offset": f"0x{ins.offset:04x}", "sass": ins.text, "opcode": ins.opcode,
           "memory": sass_pairs.target(instrs, i)}
    const = sass_pairs.constant_operand(instrs, i)
    if const is not None:
        row["value"] = const  # e.g. the tx byte count an arrive carries
    return row


def key_rows(instrs: list[Instr], indices: Sequence[int] | None = None) -> Rows:
    """The synchronisation and memory instructions (``sass_pairs.is_key``) with their targets."""
    idx = range(len(instrs)) if indices is None else indices
    return [_row(instrs, i) for i in idx if sass_pairs.is_key(instrs[i])]


def reference_table(funcs: Listing, kernels: Sequence[tuple[str, str, str]],
                    claims: Mapping[str, str]) -> Rows:
    """Per reference kernel (the first is the empty one): what its PTX became beyond the empty
    kernel's instructions, and whether a report's opcode for it is among them."""
    empty = {ins.text for ins in funcs.get(kernels[0][0], [])}
    rows = []
    for kernel, ptx, _ in kernels[1:]:
        instrs = funcs[kernel]
        sass = [_row(instrs, i) for i, ins in enumerate(instrs)
                if sass_pairs.is_key(ins) and ins.text not in empty]
        claim = claims.get(kernel)
        rows.append({"kernel": kernel, "ptx": ptx, "sass": sass, "report_claim": claim,
                     "claim_verified": None if claim is None else claim in [r["opcode"] for r in sass]})
    return rows


def pair_lowering(instrs: list[Instr]) -> dict[str, Any]:
    """The leader-only, follower-only and common rows of a kernel that branches on its CTA's
    parity, and whether the leader waits (SYNCS.PHASECHK) before or after its first signal to
    the peer (a SYNCS.ARRIVE or STAS into the peer's shared memory), in program order."""
    split = sass_pairs.parity_split(instrs)
    if split is None:
        return {"splits_on_parity": False, "all": key_rows(instrs)}
    common = sorted(set(range(len(instrs))) - set(split.leader) - set(split.follower))
    lead = set(split.leader)
    signals = [i for i in split.leader if instrs[i].opcode.startswith(("SYNCS.ARRIVE", "STAS"))
               and sass_pairs.target(instrs, i) == "peer"]
    waits_after = waits_before = False
    if signals:
        after = sass_pairs.reachable(instrs, signals[0], split.predicate,
                                     split.predicate_means_leader) & lead
        waits_after = any(instrs[i].opcode.startswith("SYNCS.PHASECHK") for i in after)
        waits_before = any(instrs[i].opcode.startswith("SYNCS.PHASECHK") for i in lead - after)
    return {
        "splits_on_parity": True, "branch": f"0x{split.branch_offset:04x}",
        "predicate": split.predicate,
        "predicate_true_means": ("leader (even CTA)" if split.predicate_means_leader
                                 else "follower (odd CTA)"),
        "leader": key_rows(instrs, split.leader), "follower": key_rows(instrs, split.follower),
        "common": key_rows(instrs, common),
        "leader_waits_before_signal": waits_before, "leader_waits_after_signal": waits_after,
    }


def check_claims(low: Mapping[str, Any], claims: Sequence[tuple[str, str, str | None, str]]) -> Rows:
    """Each path claim ``(side, opcode regex, memory or None, words)`` against a pair lowering,
    after the claim that it splits on parity at all."""
    split = bool(low.get("splits_on_parity"))
    out = [{"claim": "the lowering splits into leader/follower paths on cta_id & 1",
            "verified": split,
            "evidence": f"branch at {low.get('branch')} on {low.get('predicate')}" if split
            else "no parity branch"}]
    for side, pattern, where, text in claims:
        hits = [r for r in low.get(side, []) if re.fullmatch(pattern, r["opcode"])
                and (where is None or r["memory"] == where)]
        out.append({"claim": text, "verified": bool(hits), "evidence": "; ".join(
            f"{r['offset']} {r['sass']} [{r['memory'] or '-'}]" for r in hits)
            or f"no {pattern} on the {side} path" + (f" targeting {where} memory" if where else "")})
    return out


def _touches_peer(instrs: list[Instr], _low: Mapping[str, Any]) -> bool:
    return any(r["memory"] in ("peer", "cluster") or r["opcode"].startswith("SYNCS")
               for r in key_rows(instrs))


def _last_peer_access(_instrs: list[Instr], low: Mapping[str, Any]) -> str | None:
    peer = [r for r in low.get("follower", []) if r["memory"] == "peer"]
    return peer[-1]["sass"] if peer else None


# kind -> (the kernel's instructions, its pair lowering) -> the finding's value (None: omitted).
FINDING_KINDS: dict[str, Callable[[list[Instr], Mapping[str, Any]], Any]] = {
    "leader_waits_before_signal": lambda _i, low: low.get("leader_waits_before_signal")
    if low.get("leader") else None,
    "leader_waits_after_signal": lambda _i, low: low.get("leader_waits_after_signal")
    if low.get("leader") else None,
    "follower_last_peer_access": _last_peer_access,
    "touches_peer": _touches_peer,
    "splits_on_parity": lambda _i, low: bool(low.get("splits_on_parity")),
}


def findings(declared: Sequence[tuple[str, str, str, str]], funcs: Listing) -> Rows:
    """The declared findings ``(id, kind, kernel, text)`` with their values."""
    out = []
    for fid, kind, kernel, text in declared:
        instrs = funcs[kernel]
        value = FINDING_KINDS[kind](instrs, pair_lowering(instrs))
        if value is not None:
            out.append({"id": fid, "value": value, "text": text})
    return out


def _opcodes(rows: Rows) -> list[str]:
    return [f"{r['opcode']}[{r['memory'] or '-'}]" for r in rows]


def same_split(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two pair lowerings with the same leader and follower opcodes and targets, in order."""
    return bool(a.get("splits_on_parity") and b.get("splits_on_parity")
                and _opcodes(a["leader"]) == _opcodes(b["leader"])
                and _opcodes(a["follower"]) == _opcodes(b["follower"]))


def analyze(spec: ModuleType, target: str, tools: Mapping[str, Path], work: Path,
            repro: Path | None) -> dict[str, Any]:
    """One target's record: the reference table, every studied kernel's lowering, the
    reporter's function against the pair kernel, the checked claims and the findings."""
    ref = compile_ptx(tools, spec.module(target, spec.REFERENCE), target, work, "reference")
    studied: Listing = {}
    for kernel in spec.STUDIED:
        studied.update(compile_ptx(tools, spec.module(target, [kernel]), target, work, kernel[0]))
    pair = pair_lowering(studied[spec.PAIR])
    record: dict[str, Any] = {
        "target": target,
        "reference_table": reference_table(ref, spec.REFERENCE, spec.OPCODE_CLAIMS),
        "studied": {k: pair_lowering(studied[k]) for k, _, _ in spec.STUDIED},
        "studied_ptx": {k: ptx for k, ptx, _ in spec.STUDIED},
    }
    checked = pair
    if repro is not None:
        instrs = _listing(tools["cuobjdump"], repro).get(spec.REPRO, [])
        low = pair_lowering(instrs)
        record["repro"] = {"binary": repro.name, "function": spec.REPRO, "lowering": low,
                           "matches_pair": same_split(low, pair),
                           "instruction_count": len(instrs)}
        checked = low if low.get("splits_on_parity") else pair
    record["claims"] = check_claims(checked, spec.PATH_CLAIMS)
    record["findings"] = findings(spec.FINDINGS, studied)
    return record


def _md_rows(rows: Rows) -> list[str]:
    head = ["| offset | SASS | memory |", "| --- | --- | --- |"]
    return head + [f"| `{r['offset']}` | `{r['sass']}` | {r['memory'] or ''}"
                   f"{' (' + r['value'] + ')' if 'value' in r else ''} |" for r in rows]


def _md_split(low: Mapping[str, Any]) -> list[str]:
    if not low.get("splits_on_parity"):
        return ["No branch on CTA parity; every synchronisation and memory instruction:", "",
                *_md_rows(low["all"])]
    return [f"Branch at `{low['branch']}` on `{low['predicate']}` (true means "
            f"{low['predicate_true_means']}).", "", "Leader (even CTA) only:", "",
            *_md_rows(low["leader"]), "", "Follower (odd CTA) only:", "",
            *_md_rows(low["follower"]), "", "Both:", "", *_md_rows(low["common"])]


def markdown(doc: Mapping[str, Any], title: str) -> str:
    """The record as a page: every table derived, the readings labelled as readings."""
    tools = ", ".join(f"{n} {v}" for n, v in doc["tools"].items())
    out = [f"# {title}: PTX -> SASS", "",
           "Derived from the disassembly by `gpurepro.building.lowering`; nothing here is typed "
           "by hand.", "",
           "**Readings, not documented semantics.** NVIDIA documents no semantics for SASS "
           "opcodes. What this page derives is which opcodes, with which memory targets (own or "
           "peer shared memory, from the address computation), appear on which path. What an "
           "opcode does is a reading by differential compilation: PTX with documented semantics "
           "(the first table) compiled by the same ptxas, and its SASS read back.", "",
           f"Tools: {tools}.", ""]
    for t in doc["targets"]:
        out += [f"## {t['target']}", "", "### PTX with documented semantics -> SASS", "",
                "| PTX | SASS (synchronisation/memory) | report's opcode | verified |",
                "| --- | --- | --- | --- |"]
        for r in t["reference_table"]:
            sass = "<br>".join(f"`{s['sass']}`" + (f" ({s['memory']})" if s["memory"] not in
                                                    (None, "own") else "") for s in r["sass"])
            ver = "" if r["claim_verified"] is None else "yes" if r["claim_verified"] else "**no**"
            claim = f"`{r['report_claim']}`" if r["report_claim"] else ""
            out.append(f"| `{r['ptx']}` | {sass} | {claim} | {ver} |")
        for kernel, low in t["studied"].items():
            out += ["", f"### `{t['studied_ptx'][kernel]}` ({kernel})", "", *_md_split(low)]
        if "repro" in t:
            rp = t["repro"]
            out += ["", f"### The reporter's binary (`{rp['binary']}`, `{rp['function']}`)", "",
                    f"{rp['instruction_count']} instructions; its leader/follower paths "
                    f"{'match' if rp['matches_pair'] else '**differ from**'} the studied "
                    "kernel's (opcode and memory target, in order).", "", *_md_split(rp["lowering"])]
        out += ["", "### The report's claims", "", "| claim | verified | evidence |",
                "| --- | --- | --- |"]
        out += [f"| {c['claim']} | {'yes' if c['verified'] else '**no**'} | {c['evidence']} |"
                for c in t["claims"]]
        out += ["", "### Findings", "", "| finding | value | meaning (\"read as\": a reading) |",
                "| --- | --- | --- |"]
        out += [f"| {f['id']} | `{f['value']}` | {f['text']} |" for f in t["findings"]] + [""]
    if "across_targets" in doc:
        out += ["## Across targets", "", doc["across_targets"], ""]
    return "\n".join(out)


def run(spec: ModuleType, out_dir: Path, targets: Sequence[str], tools: Mapping[str, Path],
        repro: Path | None = None, name: str = "lowering") -> dict[str, Any]:
    """Every target analysed; ``NAME.json`` and ``NAME.md`` written to ``out_dir``."""
    doc: dict[str, Any] = {"tools": {n: release(version_of(p)) for n, p in sorted(tools.items())},
                           "targets": []}
    with tempfile.TemporaryDirectory(prefix="lowering-") as tmp:
        for target in targets:
            doc["targets"].append(analyze(spec, target, tools, Path(tmp), repro))
    if len(targets) > 1:
        a, b = doc["targets"][:2]
        same = same_split(a["studied"][spec.PAIR], b["studied"][spec.PAIR])
        doc["across_targets"] = (f"The {spec.PAIR} leader/follower lowering for {a['target']} and "
                                 f"{b['target']} is " + ("identical (opcodes and memory targets, "
                                                         "in order)." if same else "**different**."))
    doc["claims"], doc["findings"] = doc["targets"][0]["claims"], doc["targets"][0]["findings"]
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out_dir / f"{name}.md").write_text(markdown(doc, getattr(spec, "TITLE", spec.PAIR)))
    return doc


def analysis(artifact: str) -> Callable[[Mapping[str, Path]], dict[str, Any]]:
    """A case analysis (``Case.analyses``) of the artifact that ran this module: its record's
    tools, claims and findings, or why it is not available."""
    def read(paths: Mapping[str, Path]) -> dict[str, Any]:
        p = paths.get(artifact)
        if p is None or not Path(p).is_file():
            return {"available": False, "reason": f"{artifact} artifact not built"}
        data = json.loads(Path(p).read_text())
        return {"available": True, **{k: data[k] for k in ("tools", "claims", "findings") if k in data}}
    return read


USAGE = ("usage: python -m gpurepro.building.lowering --spec SPEC.py --out DIR --arch ARCH... "
         "[--tool NAME=PATH...] [--repro BINARY (one --arch)] [--name STEM]")


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    given: dict[str, list[str]] = {}
    while len(args) >= 2 and args[0] in ("--spec", "--out", "--arch", "--tool", "--repro", "--name"):
        given.setdefault(args.pop(0), []).append(args.pop(0))
    one = {k: v[-1] for k, v in given.items()}
    archs = given.get("--arch", [])
    if args or "--spec" not in one or "--out" not in one or not archs or (
            "--repro" in one and len(archs) != 1):
        print(USAGE, file=sys.stderr)
        return 2
    tools = {n: Path(p) for n, _, p in (t.partition("=") for t in given.get("--tool", []))}
    try:
        for needed in ("ptxas", "cuobjdump"):
            tools.setdefault(needed, find_tool(needed))
    except ToolNotFound as exc:
        print(f"gpurepro.building.lowering: {exc}", file=sys.stderr)
        return 2
    name, out = one.get("--name", "lowering"), Path(one["--out"])
    repro = Path(one["--repro"]) if "--repro" in one else None
    doc = run(load_spec(Path(one["--spec"])), out, archs, tools, repro, name)
    bad = sum(not c["verified"] for t in doc["targets"] for c in t["claims"])
    print(f"wrote {out / (name + '.json')} and {name}.md; {bad} report claim(s) not verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
