"""The ptxas_abs_clamp verdict: measurements, and status/owner from decided claims.

No statistics here: the claims of manifest.py are decided by the harness, which appends their
sentences. Written here: per arm what its trials ended as; the SASS of each arm's cubin
(nvdisasm's reading, from the build: is there an IABS in abs_clamp, and what changed between
the arms on either side of each boundary, by the harness's instruction diff); the boundaries
of the committed bisection over every nvidia-cuda-nvcc-cu12 release (analyses.bisection); the
status and the owner from the decisions; and what no arm isolates, as a hypothesis.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpurepro.analyze.views import Analysis
from gpurepro.build import sass

WRONG = ("first-bad-wrong", "last-bad-wrong")
RIGHT = ("last-good-never-wrong", "first-fixed-never-wrong", "newest-12-right", "cuda-13-right")
CONTROLS = ("control-abs-only-right", "control-clamp-only-right")
BOUNDARIES = ("breaks-at-12-5", "fixed-at-12-6-85")
# The arms on either side of each boundary, by ptxas release (manifest.RELEASES).
SIDES = (("12.4.131", "last-good", "12.5.40", "first-bad"),
         ("12.6.77", "last-bad", "12.6.85", "first-fixed"))
KERNEL = "abs_clamp"


def _listing(s: Mapping[str, Any]) -> dict[str, list[sass.Instr]]:
    return {k: [sass.parse_instr(0, t) for t in texts] for k, texts in (s.get("listing") or {}).items()}


def _code(texts: list[str]) -> str:
    return " · ".join(f"`{t}`" for t in texts) or "nothing"


def sass_sentences(analysis: Analysis) -> list[str]:
    """The measured SASS facts of the arms' cubins: IABS present in A, absent in B."""
    by = (analysis.analyses.get("sass") or {}).get("by_ptxas") or {}
    out = []
    for before, arm_a, after, arm_b in SIDES:
        a, b = by.get(before), by.get(after)
        if not a or not b:
            continue
        la, lb = _listing(a), _listing(b)
        if KERNEL not in la or KERNEL not in lb:
            continue
        has_a, has_b = sass.has_opcode(la[KERNEL], "IABS"), sass.has_opcode(lb[KERNEL], "IABS")
        word = {True: "present", False: "absent"}
        d = sass.diff(la[KERNEL], lb[KERNEL])
        change = d["changes"][0] if d["changes"] else None
        out.append(
            f"SASS of {KERNEL} (nvdisasm {a.get('version')}, the arms' cubins): IABS "
            f"{word[has_a]} in ptxas {before} ({arm_a}) and {word[has_b]} in ptxas {after} "
            f"({arm_b})" + (f"; {_code(change['a'])} became {_code(change['b'])}" if change else
                            "; the same instructions") + ".")
    for release, s in sorted(by.items()):
        if release in {x for side in SIDES for x in (side[0], side[2])}:
            continue
        la = _listing(s)
        if KERNEL in la:
            out.append(f"SASS of {KERNEL} from ptxas {release}: IABS "
                       f"{'present' if sass.has_opcode(la[KERNEL], 'IABS') else 'absent'}.")
    return out


def bisection_sentences(analysis: Analysis) -> tuple[list[str], list[str]]:
    """The committed bisection's boundaries, and the releases they name (``[]``: none)."""
    b = analysis.analyses.get("bisection") or {}
    if not b.get("available"):
        return [], []
    bounds = b.get("boundaries") or []
    head = (f"Bisection ({b['document']}): every {b['package']} release PyPI lists in "
            f"{b['versions']} ({b['releases']}, {b['built']} built, {b['distinct']} distinct "
            f"cubins), {b['runs']} of them run on {b.get('device') or 'a GPU'} ({b.get('mode')}); "
            f"{len(bounds)} boundar{'y' if len(bounds) == 1 else 'ies'}"
            + (f", {len(b['open'])} not pinned" if b.get("open") else "") + ".")
    out = [head]
    ex = b.get("exhaustive")
    if ex:
        out.append(f"An exhaustive bisection ({ex['document']}, every distinct cubin, {ex['runs']} "
                   f"runs) pins {'the same boundaries' if ex['same_boundaries'] else 'other boundaries'}.")
    names = []
    for x in bounds:
        watched = "; ".join(f"{w['fact'].replace(':', ' ')} {'present' if w['before'] else 'absent'} → "
                            f"{'present' if w['after'] else 'absent'}" for w in x["watched"])
        change = x["abs_clamp_changes"][0] if x["abs_clamp_changes"] else None
        out.append(f"Boundary {x['between'][0]} → {x['between'][1]} (adjacent releases): "
                   f"{x['classes'][0]} → {x['classes'][1]} on the GPU"
                   + (f"; {watched}" if watched else "")
                   + (f"; {_code(change['a'])} became {_code(change['b'])}" if change else "") + ".")
        names.append(f"{x['between'][0]} → {x['between'][1]}")
    return out, names


def _arm_sentences(analysis: Analysis) -> list[str]:
    """One sentence: which arms returned wrong results in how many trials, which the reference,
    and the rest by outcome (each arm named with its ptxas release and, for a control, kernel)."""
    def name(arm: str) -> str:
        f = analysis.arms[arm].factors
        kernel = f.get("kernel")
        return f"{arm} (ptxas {f.get('ptxas')}{', ' + kernel if kernel and kernel != KERNEL else ''})"

    wrong, right, other = [], [], []
    for arm, s in analysis.arms.items():
        w, ok = s.outcomes.get("wrong_result", 0), s.outcomes.get("survived", 0)
        if w:
            wrong.append(f"{name(arm)} in {w} of {s.n}")
        elif ok == s.n and s.n:
            right.append(f"{name(arm)} in {ok} of {s.n}")
        else:
            counts = ", ".join(f"{k} {v}" for k, v in s.outcomes.items() if v) or "no trials"
            other.append(f"{name(arm)}: {counts}")
    parts = []
    if wrong:
        parts.append("Wrong results: " + "; ".join(wrong))
    if right:
        parts.append("every element right: " + "; ".join(right))
    if other:
        parts.append("otherwise: " + "; ".join(other))
    return [(". ".join(parts) if not wrong else "; ".join(parts)) + " (trials, each checking 3 "
            "launches of 4102 elements against the host's reference)."] if parts else []


def verdict(analysis: Analysis) -> dict[str, Any]:
    decided = [n for n in (*WRONG, *RIGHT, *CONTROLS, *BOUNDARIES) if analysis.decision(n) is not None]
    if not decided:
        status = "not_decided"
    elif analysis.supported(*WRONG, *BOUNDARIES):
        status = "reproduced"
    elif any(analysis.decision(n) == "contradicted" for n in WRONG):
        status = "not_reproduced"
    else:
        status = "not_decided"
    bisected, named = bisection_sentences(analysis)
    owner, because = None, []
    if status == "reproduced" and analysis.supported(*RIGHT, *CONTROLS):
        where = (f"the bisection pins the boundaries at {' and '.join(named)}" if len(named) == 2
                 else "the arms pin the boundaries at 12.4.131 → 12.5.40 and 12.6.77 → 12.6.85")
        owner = ("NVIDIA ptxas: nvidia-cuda-nvcc-cu12 12.5.40 through 12.6.77 (CUDA 12.5.0 to "
                 "12.6.2) miscompile clamp(abs(m), 0, 5) for sm_90, the abs alone and the clamp "
                 f"alone compile right, 12.6.85 (CUDA 12.6.3) and later do not; {where}")
        because = [*WRONG, *RIGHT, *CONTROLS, *BOUNDARIES]
    nxt = []
    if status != "reproduced":
        nxt.append("Run more trials per arm (--trials): 12 of 12 decides an outcome claim at "
                   "p = 0.0005 against Holm's smallest threshold of 0.005.")
    if not bisected:
        nxt.append("Bisect the releases on a GPU (python -m gpurepro bisect ptxas_abs_clamp "
                   "--axis ptxas) and record this run again: the verdict then names the "
                   "boundaries it pins.")
    return {
        "status": status,
        "sentences": [*_arm_sentences(analysis), *sass_sentences(analysis), *bisected],
        "owner": owner,
        "owner_because": because,
        "next": nxt,
        "hypotheses": [
            "Releases before 12.5 lower the clamp as two VIMNMX (min with 5, max with RZ); from "
            "12.5.40 on it is one VIMNMX.RELU (clamp_only too, rightly). In 12.5.40 to 12.6.77 "
            "the IABS before it is gone, in 12.6.85 it is back: that the fold is where the abs "
            "is lost is read from the SASS (releases.cpu.json), not isolated by an arm.",
        ],
    }
