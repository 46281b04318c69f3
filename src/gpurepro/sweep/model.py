"""What crosses the sweep's stages, typed: the documents' kinds and names, and the GPU stage's
record of its runs (``sweep-gpu.json``), which the node writes and assembly reads at home.

A CPU document is one of two kinds, each with its schema (``schema/bisect.schema.json``,
``schema/matrix.schema.json``, both built on ``schema/sweep.schema.json``): a bisection (the
releases of one axis, ``bisection.py``) or a matrix (a case's declared grid of releases ×
toolchain families, ``matrix.py``). The GPU stage's record is one format for both; records
the GPU stages wrote before they were one (``bisect-gpu.json``, ``matrix-gpu.json``) are read
too. Standard library only: the GPU stage runs where nothing else is installed.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..model.files import write_atomic
from ..model.outcomes import EVIDENCE

BISECTION = "bisection"
MATRIX = "matrix"
# A sweep document's schema id -> its kind (every version this code reads).
KINDS = {"gpurepro/bisect/2": BISECTION, "gpurepro/bisect/1": BISECTION,
         "gpurepro/matrix/1": MATRIX}

GPU_FILE = "sweep-gpu.json"
GPU_SCHEMA = "gpurepro/sweep-gpu/1"
# The GPU stages' records before the sweep was one package: file -> (schema, kind).
_OLD_GPU = {"bisect-gpu.json": ("gpurepro/bisect-gpu/1", BISECTION),
            "matrix-gpu.json": ("gpurepro/matrix-gpu/1", MATRIX)}


def stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def document_name(prefix: str, started_at: str | None, gpu_name: str | None) -> str:
    """``<prefix>_<UTC stamp>_<gpu>``: the GPU stage's start and GPU, or ``no-gpu``."""
    when = re.sub(r"[-:]", "", started_at or "")
    gpu = re.sub(r"[^A-Za-z0-9]+", "-", gpu_name or "no-gpu").strip("-") or "no-gpu"
    return f"{prefix}_{when}_{gpu}"


def kind_of(doc: Any) -> str | None:
    return KINDS.get(str(doc.get("schema"))) if isinstance(doc, Mapping) else None


def read_document(path: Path, kind: str | None = None) -> dict[str, Any]:
    """A sweep document (a CPU stage's or an assembled one) of ``kind`` (None: either)."""
    what = {BISECTION: "bisection", MATRIX: "matrix", None: "bisection or matrix"}[kind]
    try:
        doc: dict[str, Any] = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable {what} document ({type(exc).__name__}); its "
                         f"CPU stage writes one") from None
    found = kind_of(doc)
    if found is None or (kind is not None and found != kind):
        ids = ", ".join(s for s, k in KINDS.items() if kind in (None, k))
        raise UsageError(f"{path}: not a {what} document (schema {ids} expected)")
    return doc


@dataclass(frozen=True)
class Substitute:
    """A file that stands in for one of the case's artifacts in a run (``--artifact NAME=PATH``)."""

    sha256: str
    path: str

    def to_json(self) -> dict[str, str]:
        return {"sha256": self.sha256, "path": self.path}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Substitute:
        return cls(str(d["sha256"]), str(d["path"]))


@dataclass(frozen=True)
class ArmCounts:
    """One arm's trials of one run: how many, by outcome (and by detail, e.g. the signal), the
    valid ones (evidence), the failures among them, and the valid trials' exposure."""

    n: int
    outcomes: dict[str, int]
    details: dict[str, dict[str, int]]
    n_valid: int
    failures: int
    exposure: float

    @classmethod
    def of(cls, trials: Sequence[Mapping[str, Any]], failure_outcomes: Sequence[str]) -> ArmCounts:
        valid = [t for t in trials if t["outcome"] in EVIDENCE]
        details: dict[str, Counter[str]] = {}
        for t in trials:
            details.setdefault(t["outcome"], Counter())[str(t.get("detail") or "")] += 1
        return cls(n=len(trials),
                   outcomes=dict(sorted(Counter(t["outcome"] for t in trials).items())),
                   details={o: dict(sorted(c.items())) for o, c in sorted(details.items())},
                   n_valid=len(valid), failures=sum(t["outcome"] in failure_outcomes for t in valid),
                   exposure=float(sum(t.get("exposure") or 0 for t in valid)))

    @classmethod
    def by_arm(cls, trials: Sequence[Mapping[str, Any]], failure_outcomes: Sequence[str],
               arms: Sequence[str] = ()) -> dict[str, ArmCounts]:
        """Per arm met (``arms`` first, in their order, where they have trials; then the rest
        sorted): its counts."""
        grouped: dict[str, list[Mapping[str, Any]]] = {a: [] for a in arms}
        for t in sorted(trials, key=lambda t: t["arm"]) if not arms else trials:
            grouped.setdefault(t["arm"], []).append(t)
        return {a: cls.of(ts, failure_outcomes) for a, ts in grouped.items() if ts}

    def to_json(self) -> dict[str, Any]:
        """As a bisection run records it (its GPU record and its document)."""
        return {"n": self.n, "outcomes": self.outcomes, "n_valid": self.n_valid,
                "failures": self.failures, "exposure": self.exposure}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ArmCounts:
        exposure = d.get("exposure") or 0
        return cls(int(d["n"]), dict(d["outcomes"]), dict(d.get("details") or {}),
                   int(d["n_valid"]), int(d["failures"]),
                   float(exposure["total"] if isinstance(exposure, Mapping) else exposure))


@dataclass
class Run:
    """One harness run of the GPU stage (``gpurepro run CASE --artifact NAME=PATH ...``): what
    it substitutes, with which arms and seed, why it ran, and how it ended. A bisection's run
    is one point of its search (``point``, ``releases``), and its trials decide the point's
    class (``klass``: fails, passes, unknown; ``counts`` and, on a timed axis, ``timing``);
    ``same_as`` names the earlier run of the same artifact whose result it repeats."""

    id: str
    substitutes: dict[str, Substitute]
    arms: tuple[str, ...]
    why: str = ""
    seed: int = 0
    status: str = "not run"  # ran, not run, failed
    reason: str | None = None
    exit: int | None = None
    wall_s: float | None = None
    journal: str | None = None
    point: int | None = None
    releases: tuple[str, ...] = ()
    klass: str | None = None
    counts: dict[str, ArmCounts] | None = None
    timing: dict[str, Any] | None = None
    same_as: int | None = None

    @property
    def sha256(self) -> str:
        """The artifact of a bisection's point (its one substitute)."""
        return next(iter(self.substitutes.values())).sha256

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id, "substitutes": {a: s.to_json() for a, s in self.substitutes.items()},
            "arms": list(self.arms), "why": self.why, "seed": self.seed, "status": self.status,
            "reason": self.reason, "exit": self.exit, "wall_s": self.wall_s,
            "journal": self.journal}
        if self.point is not None:
            out.update(point=self.point, releases=list(self.releases),
                       counts=None if self.counts is None else
                       {a: c.to_json() for a, c in self.counts.items()},
                       **{"class": self.klass})
            if self.timing is not None:
                out["timing"] = self.timing
            if self.same_as is not None:
                out["same_as_point"] = self.same_as
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Run:
        """A run of this format, or of a bisection's or a matrix's record before it."""
        point = d.get("point")
        subs = d.get("substitutes")
        if subs is None and point is not None:  # a bisection's record before the sweep's
            subs = {"": {"sha256": d["sha256"], "path": ""}}
        counts = d.get("counts")
        return cls(
            id=str(d.get("id") or f"point{point:03d}_{str(d.get('sha256'))[:12]}"),
            substitutes={a: Substitute.from_json(s) for a, s in (subs or {}).items()},
            arms=tuple(d.get("arms") or ()), why=str(d.get("why") or ""),
            seed=int(d.get("seed") or 0), status=str(d["status"]), reason=d.get("reason"),
            exit=d.get("exit"), wall_s=d.get("wall_s"), journal=d.get("journal"),
            point=point, releases=tuple(d.get("releases") or ()), klass=d.get("class"),
            counts=None if counts is None else {a: ArmCounts.from_json(c) for a, c in counts.items()},
            timing=d.get("timing"), same_as=d.get("same_as_point"))


@dataclass
class GpuRecord:
    """What the GPU stage did: written to ``<out>/sweep-gpu.json`` after every run, so an
    interrupted stage keeps what it has. ``mode``: how the runs were chosen (``bisect``,
    ``exhaustive``, ``grid``); ``options``: a matrix run's arms, budget and trial settings."""

    kind: str
    document_sha256: str
    mode: str
    seed: int
    started_at: str = field(default_factory=stamp)
    options: dict[str, Any] | None = None
    status: str = "running"  # running, ran, not run, stopped
    reason: str | None = None
    detail: str | None = None
    device: dict[str, Any] | None = None
    wall_s: float | None = None
    runs: list[Run] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"schema": GPU_SCHEMA, "kind": self.kind, "document_sha256": self.document_sha256,
                "started_at": self.started_at, "mode": self.mode, "seed": self.seed,
                "options": self.options, "status": self.status, "reason": self.reason,
                "detail": self.detail, "device": self.device, "wall_s": self.wall_s,
                "runs": [r.to_json() for r in self.runs]}

    @classmethod
    def from_json(cls, d: Mapping[str, Any], kind: str) -> GpuRecord:
        return cls(kind=kind, document_sha256=str(d.get("document_sha256")),
                   mode=str(d.get("mode") or ("grid" if kind == MATRIX else "bisect")),
                   seed=int(d.get("seed") or 0), started_at=str(d.get("started_at")),
                   options=d.get("options"), status=str(d["status"]), reason=d.get("reason"),
                   detail=d.get("detail"), device=d.get("device"), wall_s=d.get("wall_s"),
                   runs=[Run.from_json(r) for r in d.get("runs") or []])

    def write(self, out: Path) -> None:
        write_atomic(out / GPU_FILE, json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def exists(cls, out: Path) -> Path | None:
        """The record already in ``out``, of this format or an earlier one."""
        return next((p for p in (out / n for n in (GPU_FILE, *_OLD_GPU)) if p.exists()), None)

    @classmethod
    def read(cls, out: Path, kind: str) -> GpuRecord:
        """The record of a ``kind`` sweep's GPU stage in ``out``."""
        path = cls.exists(out) or out / GPU_FILE
        try:
            d = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError(f"{path}: the GPU stage's record is missing or unreadable "
                             f"({type(exc).__name__}); give the folder the GPU stage's --out "
                             f"wrote") from None
        schema, found = ((GPU_SCHEMA, d.get("kind")) if path.name == GPU_FILE
                         else _OLD_GPU[path.name]) if isinstance(d, dict) else (None, None)
        if not isinstance(d, dict) or d.get("schema") != schema or found != kind:
            raise UsageError(f"{path}: not the record of a {kind}'s GPU stage ({GPU_SCHEMA} of "
                             f"kind {kind} expected)")
        return cls.from_json(d, kind)
