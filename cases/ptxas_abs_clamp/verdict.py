"""What the ptxas_abs_clamp claims cannot say: the arms' trials in one sentence, the SASS of the
arms' cubins and the committed bisection's boundaries (the analyses read both), the owner worded
from them, and what no arm isolates. The harness decides the claims and adds their sentences.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpurepro.building import sass
from gpurepro.case import Analysis
from gpurepro.sweep import summary

WRONG = ("first-bad-wrong", "last-bad-wrong")
RIGHT = ("last-good-never-wrong", "first-fixed-never-wrong", "newest-12-right", "cuda-13-right",
         "control-abs-only-right", "control-clamp-only-right")
BOUNDARIES = ("breaks-at-12-5", "fixed-at-12-6-85")
# The arms on either side of each boundary, by ptxas release (manifest.RELEASES).
SIDES = (("12.4.131", "last-good", "12.5.40", "first-bad"),
         ("12.6.77", "last-bad", "12.6.85", "first-fixed"))
K = "abs_clamp"


def _kernel(s: Mapping[str, Any]) -> list[sass.Instr] | None:
    texts = (s.get("listing") or {}).get(K)
    return None if texts is None else [sass.parse_instr(0, t) for t in texts]


def _iabs(instrs: list[sass.Instr]) -> str:
    return "present" if sass.has_opcode(instrs, "IABS") else "absent"


def sass_sentences(analysis: Analysis) -> list[str]:
    """The IABS of abs_clamp in the arms' cubins, and what changed at each boundary."""
    by = (analysis.analyses.get("sass") or {}).get("by_ptxas") or {}
    out = []
    for before, arm_a, after, arm_b in SIDES:
        a, b = _kernel(by.get(before) or {}), _kernel(by.get(after) or {})
        if a is None or b is None:
            continue
        changes = sass.diff(a, b)["changes"]
        change = (f"{summary.code(changes[0]['a'])} became {summary.code(changes[0]['b'])}"
                  if changes else "the same instructions")
        out.append(f"SASS of {K} (nvdisasm {by[before].get('version')}, the arms' cubins): IABS "
                   f"{_iabs(a)} in ptxas {before} ({arm_a}) and {_iabs(b)} in ptxas {after} "
                   f"({arm_b}); {change}.")
    sides = {x for side in SIDES for x in (side[0], side[2])}
    for release, s in sorted(by.items()):
        instrs = _kernel(s)
        if release not in sides and instrs is not None:
            out.append(f"SASS of {K} from ptxas {release}: IABS {_iabs(instrs)}.")
    return out


def _arm_sentences(analysis: Analysis) -> list[str]:
    """Which arms returned wrong results in how many trials, which the reference, the rest by
    outcome (each arm named with its ptxas release and, for a control, its kernel)."""
    wrong: list[str] = []
    groups = {"Wrong results: ": wrong, "every element right: ": [], "otherwise: ": []}
    for arm, s in analysis.arms.items():
        f, w, ok = s.factors, s.outcomes.get("wrong_result", 0), s.outcomes.get("survived", 0)
        name = f"{arm} (ptxas {f.get('ptxas')}{', ' + f['kernel'] if f.get('kernel', K) != K else ''})"
        if w or (ok == s.n and s.n):
            groups["Wrong results: " if w else "every element right: "].append(
                f"{name} in {w or ok} of {s.n}")
        else:
            counts = ", ".join(f"{k} {v}" for k, v in s.outcomes.items() if v) or "no trials"
            groups["otherwise: "].append(f"{name}: {counts}")
    parts = [head + "; ".join(xs) for head, xs in groups.items() if xs]
    return [("; " if wrong else ". ").join(parts) + " (trials, each checking 3 launches of 4102 "
            "elements against the host's reference)."] if parts else []


def verdict(analysis: Analysis) -> dict[str, Any]:
    status = ("reproduced" if analysis.supported(*WRONG, *BOUNDARIES) else "not_reproduced"
              if any(analysis.decision(n) == "contradicted" for n in WRONG) else "not_decided")
    bisected, named = summary.sentences(analysis.analyses.get("bisection") or {})
    owner, because = None, []
    if status == "reproduced" and analysis.supported(*RIGHT):
        where = (f"the bisection pins the boundaries at {' and '.join(named)}" if len(named) == 2
                 else "the arms pin the boundaries at 12.4.131 → 12.5.40 and 12.6.77 → 12.6.85")
        owner = ("NVIDIA ptxas: nvidia-cuda-nvcc-cu12 12.5.40 through 12.6.77 (CUDA 12.5.0 to "
                 "12.6.2) miscompile clamp(abs(m), 0, 5) for sm_90, the abs alone and the clamp "
                 f"alone compile right, 12.6.85 (CUDA 12.6.3) and later do not; {where}")
        because = [*WRONG, *RIGHT, *BOUNDARIES]
    nxt = []
    if status != "reproduced":
        nxt.append("Run more trials per arm (--trials): 12 of 12 decides an outcome claim at "
                   "p = 0.0005 against Holm's smallest threshold of 0.005.")
    if not bisected:
        nxt.append("Bisect the releases on a GPU (python -m gpurepro bisect ptxas_abs_clamp "
                   "--axis ptxas) and record this run again: the verdict then names the "
                   "boundaries it pins.")
    return {"status": status,
            "sentences": [*_arm_sentences(analysis), *sass_sentences(analysis), *bisected],
            "owner": owner, "owner_because": because, "next": nxt, "hypotheses": [
                "Releases before 12.5 lower the clamp as two VIMNMX (min with 5, max with RZ); "
                "from 12.5.40 on it is one VIMNMX.RELU (clamp_only too, rightly). In 12.5.40 to "
                "12.6.77 the IABS before it is gone, in 12.6.85 it is back: that the fold is "
                "where the abs is lost is read from the SASS (releases.cpu.json), not isolated "
                "by an arm."]}
