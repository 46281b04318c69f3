"""The result document: assembled from a run's journal (header and trials), and written.

``build_document`` gathers the run's statistics (stats.py), the case's analyses of its built
artifacts, the decided claims and the verdict (verdict.py) into one document in the shape of
``schema/result.schema.json``; ``write_document`` validates it (validation.py) and writes it
atomically.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..analyze import stats
from ..analyze.known_rates import run_plan
from ..analyze.verdict import decide_claims, verdict_for
from ..case.model import Case
from ..cluster.merge import cluster_header, document_fields
from ..model.files import create_atomic, sha256_file, write_atomic
from ..model.journal import RunHeader
from ..model.result import Result
from ..run import journal as journal_format
from . import provenance
from .validation import validate_document

# What other modules use; the rest is this module's own.
__all__ = [
    "build_document", "capped", "plain", "run_analyses", "SCHEMA_ID", "STRING_MAX",
    "with_plan_and_verdict", "write_document"
]

SCHEMA_ID = "gpurepro/result/1"
# The most characters of one string a document keeps (a driver's 64 KiB word, a verdict of
# megabytes): the rest is cut and counted. The journal keeps a trial's strings whole.
STRING_MAX = 8192


def capped(value: Any) -> Any:
    """``value`` with every string longer than STRING_MAX cut to that length, its end saying
    how many characters were cut (keys are left as they are); a string cut once is not cut
    again."""
    if isinstance(value, str):
        if len(value) <= STRING_MAX:
            return value
        keep = STRING_MAX - 40  # room for the note, at most 40 characters
        return value[:keep] + f"… [{len(value) - keep} more characters cut]"
    if isinstance(value, Mapping):
        return {k: capped(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [capped(v) for v in value]
    return value


def run_analyses(case: Case, header: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """The case's analyses over its built artifacts, if the artifacts here match the run's."""
    out: dict[str, Any] = {}
    artifacts = header.get("artifacts", {})
    paths = {}
    mismatched = []
    for name, entry in artifacts.items():
        p = root / entry["path"]
        if p.is_file() and sha256_file(p) == entry["sha256"]:
            paths[name] = p
        else:
            mismatched.append(name)
    for name, fn in case.analyses.items():
        try:
            out[name] = dict(fn(paths))
        except Exception as exc:  # an analysis failing must not lose the run's record
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
        if mismatched:
            out[name]["artifacts_unavailable"] = sorted(mismatched)
    return out


def build_document(case: Case, header: Mapping[str, Any], trials: Sequence[Mapping[str, Any]],
                   root: Path, journal_path: Path | None = None,
                   manifest_changed: Mapping[str, Any] | None = None,
                   found: provenance.Found | None = None) -> dict[str, Any]:
    """``manifest_changed``: recorded with a manifest other than the run's (record
    --manifest-changed), what ``record.result.case_for_journal`` said; kept under
    ``case.manifest_changed``. ``found``: the commit whose manifest is the run's
    (record.provenance.find; looked up here when not given)."""
    journaled = RunHeader.from_json(header)
    if journaled.cluster:
        header = cluster_header(journaled)  # the nodes' GPUs, drivers and device gates
    plan = header["plan"]
    trials = capped(list(trials))  # everything below is computed from what the document keeps

    measured = stats.analyze(trials, plan["arms"], case.baseline, case.failure_outcomes,
                             case.exposure.unit, case.exposure.per)
    device = dict(header.get("device") or {})
    completion = run_completion(case, header, trials, journal_path, root)
    run = RunHeader.from_json(header)
    claims = decide_claims(case, run, trials,
                           stopped=completion is not None and not completion["complete"])
    manifest_sha = hashlib.sha256(case.path.read_bytes()).hexdigest() if case.path else None
    doc: dict[str, Any] = {
        "schema": SCHEMA_ID,
        "gpurepro_version": __version__,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "case": {"name": case.name, "question": case.question, "report_url": case.report_url,
                 **({"reported": dict(case.reported)} if case.reported else {}),
                 "manifest_sha256": manifest_sha, "baseline": case.baseline,
                 "failure_outcomes": list(case.failure_outcomes),
                 "exposure": {"counter": case.exposure.counter, "unit": case.exposure.unit,
                              "per": case.exposure.per,
                              **({"label": case.exposure.label} if case.exposure.label else {})},
                 **({"check": case.check.describe()} if case.check is not None else {}),
                 **({"manifest_changed": dict(manifest_changed)} if manifest_changed else {}),
                 # The targets the run's manifest builds, where its journal keeps them: the
                 # report's commands come from the document, never from a checkout's manifest.
                 **({"targets": list(header["targets"])} if "targets" in header else {})},
        "environment": {**header["environment"],
                        "repository": provenance.repository(
                            run, found or provenance.find(run, root, journal_path),
                            provenance.manifest_path(run))},
        "device": device,
        "toolchain": header["toolchain"],
        **({"runtime": header["runtime"]} if header.get("runtime") else {}),
        "artifacts": {k: {"path": v["path"], "sha256": v["sha256"], "tools": v.get("tools", {}),
                          "description": v.get("description", "")}
                      for k, v in header["artifacts"].items()},
        "plan": {**plan, "options": _options(header)},
        "started_at": header.get("started_at"),
        "trials": list(trials),
        "summary": measured["arms"],
        "comparisons": measured["comparisons"],
        "crash_sites": measured["crash_sites"],
        "per_gpu": measured["per_gpu"],
        "analyses": run_analyses(case, header, root),
        "probe": header.get("probe"),
        "claims": claims,
        "verdict": None,  # below: from the document's own fields
        "journal": str(journal_path.relative_to(root)) if journal_path and journal_path.is_relative_to(root) else None,
    }
    if completion is not None:
        doc["completion"] = completion
    deeper = beyond_main(case, header, claims)
    if deeper:
        doc["case"]["deeper"] = deeper
    if header.get("resumed"):  # each resume: when, on which device, and whether it was another
        doc["resumed"] = list(header["resumed"])
    if journaled.cluster:
        doc.update(document_fields(journaled, trials, case.failure_outcomes))
    return with_plan_and_verdict(case, doc, header.get("options", {}), root)


def beyond_main(case: Case, header: Mapping[str, Any],
                claims: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A main-question run (``scope`` "main"): the case's arms it did not run and the claims
    they would decide, which --deep runs; None for any other run."""
    if (header.get("options") or {}).get("scope") != "main":
        return None
    arms = [a for a in case.resolved_arms() if a not in header["plan"]["arms"]]
    ran = {c["name"] for c in claims}
    return {"arms": arms, "claims": [c.name for c in case.claims if c.name not in ran]} if arms else None


def run_completion(case: Case, header: Mapping[str, Any], trials: Sequence[Mapping[str, Any]],
                   journal_path: Path | None, root: Path) -> dict[str, Any] | None:
    """Whether the run's execution finished (its journal's end record) or was stopped, and how
    to continue it; None for a journal from before end records (format 3 and older) or a
    cluster run's shards, where it is not known."""
    if header.get("cluster") or int(header.get("journal_format") or 0) < journal_format.END_FORMAT:
        return None
    out: dict[str, Any] = {"complete": "ended" in header, "trials": len(trials),
                           "planned": len(header["plan"]["order"])}
    if not out["complete"]:
        where = (str(journal_path.relative_to(root)) if journal_path is not None
                 and journal_path.is_relative_to(root) else "JOURNAL")
        out["resume"] = f"python -m gpurepro run {case.name} --resume {where}"
    return out


def with_plan_and_verdict(case: Case, doc: Mapping[str, Any], options: Mapping[str, Any],
                          root: Path) -> dict[str, Any]:
    """``doc`` as JSON gives it back, with its known-rates plan and its verdict computed from
    its own fields: what `record` writes last, and what `validate` recomputes
    (record/recompute.py)."""
    out: dict[str, Any] = plain(doc)
    if case.claims and "families" in options:
        # Runs that fixed their claim families before their first trial (the older ones did not
        # and their documents stay as recorded): the known-rates plan for their own rates.
        plan = run_plan(case, Result.of(out), root)
        if plan is not None:
            out["known_rates_plan"] = plain(plan)
    # The verdict reads the document as recorded, through its typed views (model/result.py).
    out["verdict"] = plain(verdict_for(case, Result.of(out)))
    capped_out: dict[str, Any] = capped(out)
    return capped_out


def _options(header: Mapping[str, Any]) -> dict[str, Any]:
    """The run's options; with sequential stopping, its decisions (per arm: when and why)."""
    options = dict(header.get("options", {}))
    if options.get("stopping") and header.get("stopping_result"):
        options["stopping"] = {**options["stopping"], **header["stopping_result"]}
    return options


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if hasattr(obj, "item"):
        return obj.item()  # numpy scalars
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def plain(obj: Any) -> Any:
    """``obj`` as JSON gives it back (paths as strings, numpy scalars as numbers)."""
    return json.loads(json.dumps(obj, default=_jsonable))


def write_document(doc: Mapping[str, Any], path: Path, replace: bool = True) -> Path:
    """Validate and write ``doc`` whole; ``replace=False``: as one atomic create, so of two
    writers of one name exactly one wins (the other gets ``FileExistsError``)."""
    validate_document(doc, str(path))
    text = json.dumps(doc, indent=1, sort_keys=False, allow_nan=False) + "\n"
    if replace:
        write_atomic(path, text)
    else:
        create_atomic(path, text)
    return path
