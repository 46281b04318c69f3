"""A case's committed bisections over one axis, for its analyses and its verdict.

``committed(root, case, axis, kernels)`` reads ``results/<case>/bisect_<axis>_<stamp>_<gpu>.json``
and summarizes the newest whose GPU stage ran (one that bisected, before an exhaustive one):
how many releases it built and ran, and its boundaries, each between two adjacent releases, with
the classes the GPU gave either side, the watched SASS facts and the first change in each of
``kernels`` (``<kernel>_changes``); with whether the newest exhaustive bisection pins the same
boundaries. ``analysis`` is that as a case's analysis (``Case.analyses``); ``sentences``
words a summary for a verdict: what was bisected, then one sentence per boundary. Standard
library only; the documents are the assembled ones (``bisect.document``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any


def _pinned(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    return (doc.get("boundaries") or {}).get("pinned") or []


def _runs(doc: Mapping[str, Any]) -> int:
    """The points the GPU stage ran (a release whose artifact another ran is counted once)."""
    return sum(1 for r in doc.get("runs") or []
               if r.get("status") == "ran" and "same_as_point" not in r)


def summarize(docs: Sequence[tuple[str, Mapping[str, Any]]], kernels: Sequence[str],
              where: str = "results/") -> dict[str, Any]:
    """The summary of ``docs`` (name, document), oldest first (the module's docstring)."""
    ran = [(n, d) for n, d in docs if (d.get("gpu") or {}).get("status") == "ran"]
    if not ran:
        return {"available": False, "reason": f"no bisection document under {where} whose GPU "
                                              "stage ran"}
    name, doc = ([x for x in ran if x[1]["gpu"].get("mode") == "bisect"] or ran)[-1]
    exhaustive = [x for x in ran if x[1]["gpu"].get("mode") == "exhaustive"]
    bounds = [{"between": b["between"], "classes": b["classes"],
               "not_built_between": b["not_built_between"], "watched": b["sass"]["watched"],
               **{f"{k}_changes": ((b["sass"]["kernels"].get(k) or {}).get("changes") or [])[:1]
                  for k in kernels}} for b in _pinned(doc)]
    out = {"available": True, "document": name, "package": doc["axis"]["package"],
           "versions": doc["axis"]["versions"], "releases": len(doc["releases"]),
           "built": sum(1 for r in doc["releases"] if r.get("sha256")),
           "distinct": len(doc["artifacts"]), "runs": _runs(doc), "mode": doc["gpu"].get("mode"),
           "device": (doc["gpu"].get("device") or {}).get("name"), "boundaries": bounds,
           "open": (doc.get("boundaries") or {}).get("open") or []}
    if exhaustive and exhaustive[-1][0] != name:
        other, d = exhaustive[-1]
        same = [b["between"] for b in _pinned(d)] == [b["between"] for b in _pinned(doc)]
        out["exhaustive"] = {"document": other, "same_boundaries": same, "runs": _runs(d)}
    return out


def committed(root: Path, case: str, axis: str, kernels: Sequence[str]) -> dict[str, Any]:
    """The summary of the bisections over ``axis`` committed under ``results/<case>/``."""
    found = sorted((root / "results" / case).glob(f"bisect_{axis}_[0-9]*.json"))
    return summarize([(f"results/{case}/{p.name}", json.loads(p.read_text())) for p in found],
                     kernels, f"results/{case}/")


def analysis(case_dir: Path | str, axis: str, kernels: Sequence[str]
             ) -> Callable[[Mapping[str, Path]], dict[str, Any]]:
    """A case analysis (``Case.analyses``) giving ``committed`` for the case whose folder is
    ``case_dir`` (``cases/<case>`` of a repository): ``analysis(Path(__file__).parent, ...)``."""
    folder = Path(case_dir).resolve()
    return lambda _paths: committed(folder.parents[1], folder.name, axis, kernels)


def code(texts: Sequence[str]) -> str:
    """Instructions as inline code, joined (``nothing`` for none: a run only one side has)."""
    return " · ".join(f"`{t}`" for t in texts) or "nothing"


def _state(value: Any) -> str:
    return "present" if value else "absent"


def sentences(b: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """A verdict's sentences of the summary ``b``, and the boundaries they name (``A → B``);
    none where no bisection ran."""
    if not b.get("available"):
        return [], []
    bounds, ex = b.get("boundaries") or [], b.get("exhaustive")
    out = [f"Bisection ({b['document']}): every {b['package']} release PyPI lists in "
           f"{b['versions']} ({b['releases']}, {b['built']} built, {b['distinct']} distinct "
           f"cubins), {b['runs']} of them run on {b.get('device') or 'a GPU'} ({b.get('mode')}); "
           f"{len(bounds)} boundar{'y' if len(bounds) == 1 else 'ies'}"
           + (f", {len(b['open'])} not pinned" if b.get("open") else "") + "."]
    if ex:
        out.append(f"An exhaustive bisection ({ex['document']}, every distinct cubin, {ex['runs']} "
                   f"runs) pins {'the same' if ex['same_boundaries'] else 'other'} boundaries.")
    for x in bounds:
        watched = "; ".join(f"{w['fact'].replace(':', ' ')} {_state(w['before'])} → "
                            f"{_state(w['after'])}" for w in x["watched"])
        changes = "".join(f"; {code(c[0]['a'])} became {code(c[0]['b'])}"
                          for k, c in x.items() if k.endswith("_changes") and c)
        out.append(f"Boundary {x['between'][0]} → {x['between'][1]} (adjacent releases): "
                   f"{x['classes'][0]} → {x['classes'][1]} on the GPU"
                   + (f"; {watched}" if watched else "") + changes + ".")
    return out, [f"{x['between'][0]} → {x['between'][1]}" for x in bounds]
