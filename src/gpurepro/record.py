"""Record: a journal (plus analysis and verdict) -> one result document, schema-checked, atomic.

The document is validated against ``schema/result.schema.json`` before it is written; a
document that does not validate is never written, and the error names the offending field.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from . import __version__, tally
from . import env as envmod
from .analysis import Analysis
from .build import sha256_file
from .journal import result_name  # noqa: F401  (re-exported: the name of a run)
from .manifest import Case

SCHEMA_ID = "gpurepro/result/1"


class RecordError(ValueError):
    pass


def schema_path(name: str = "result.schema.json") -> Path:
    # The schemas are package data (the repository's top-level schema/ links to them), so an
    # installed gpurepro validates without a checkout.
    return Path(str(resources.files("gpurepro") / "schema" / name))


def load_schema(name: str = "result.schema.json") -> dict[str, Any]:
    return json.loads(schema_path(name).read_text())


def validation_errors(doc: Any, schema: Mapping[str, Any] | None = None) -> list[str]:
    """Every schema violation as 'path/to/field: message' (empty when valid); for a result
    document (not a bench document) every meaning error after them (see ``meaning_errors``)."""
    schema = schema or load_schema(_schema_for(doc))
    validator = jsonschema.Draft202012Validator(schema)
    out = []
    for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(document)"
        out.append(f"{where}: {err.message[:300]}")
    if _schema_for(doc) == "result.schema.json":
        out += meaning_errors(doc)
    elif _schema_for(doc) == "matrix.schema.json":
        from .matrix.document import consistency_errors

        out += consistency_errors(doc) + _privacy_errors(doc)
    return out


def meaning_errors(doc: Any) -> list[str]:
    """What the schema cannot say, as 'path/to/field: what was expected, what was found':
    the summary's counts recomputed from the trials; no secret anywhere; and in a redacted
    document no hostname, home directory or absolute checkout path."""
    if not isinstance(doc, Mapping):
        return []
    return _summary_errors(doc) + _privacy_errors(doc)


def _summary_errors(doc: Mapping[str, Any]) -> list[str]:
    trials = doc.get("trials")
    summary = doc.get("summary")
    case = doc.get("case")
    if not isinstance(trials, list) or not isinstance(summary, Mapping) or not isinstance(case, Mapping):
        return []  # the schema reports it
    if not all(isinstance(t, Mapping) and isinstance(t.get("arm"), str) and isinstance(t.get("outcome"), str)
               for t in trials):
        return []  # the schema reports it
    failure_outcomes = case.get("failure_outcomes") or []
    plan_arms = (doc.get("plan") or {}).get("arms") or {}
    out = []
    by_arm = tally.trials_by_arm(trials, [*summary, *plan_arms])
    for arm, ts in by_arm.items():
        got = summary.get(arm)
        try:
            want = tally.arm_counts(ts, failure_outcomes)
        except (TypeError, ValueError) as exc:
            out.append(f"summary/{arm}: counts recomputable from trials expected, found {exc}")
            continue
        if not isinstance(got, Mapping):
            if ts:
                out.append(f"summary/{arm}: an arm summary expected ({want['n']} trials), found none")
            continue
        for field in ("n", "n_valid", "failures", "outcomes"):
            if got.get(field) != want[field]:
                out.append(f"summary/{arm}/{field}: {_show(got.get(field))} recorded, "
                           f"{_show(want[field])} recomputed from trials")
        total = (got.get("exposure") or {}).get("total") if isinstance(got.get("exposure"), Mapping) else None
        if not isinstance(total, int | float) or not math.isclose(
                total, want["exposure_total"], rel_tol=1e-9, abs_tol=1e-9):
            out.append(f"summary/{arm}/exposure/total: {_show(total)} recorded, "
                       f"{_show(want['exposure_total'])} recomputed from trials")
    return out


def _show(v: Any) -> str:
    return json.dumps(v, sort_keys=True) if isinstance(v, Mapping | list) else str(v)


def _strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, string) for every string value in a JSON value."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, f"{path}/{k}" if path else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{path}/{i}" if path else str(i))


def _env_dicts(value: Any, path: str = "", key: str | None = None,
               parent: str | None = None) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(path, dict) for every environment dict: under "env"/"extra_env", environment/environment."""
    if isinstance(value, Mapping):
        if key in envmod.ENV_KEYS or (key == "environment" and parent == "environment"):
            yield path, value
        for k, v in value.items():
            yield from _env_dicts(v, f"{path}/{k}" if path else str(k), str(k), key)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _env_dicts(v, f"{path}/{i}" if path else str(i), None, key)


def _privacy_errors(doc: Mapping[str, Any]) -> list[str]:
    out = []
    for where, env in _env_dicts(doc):
        for name in env:
            if envmod.is_secret_name(str(name)):
                out.append(f"{where}/{name}: no variable with a secret-looking name expected, "
                           f"found one (value not shown)")
    environment: Mapping[str, Any] = doc["environment"] if isinstance(doc.get("environment"), Mapping) else {}
    redacted = environment.get("redacted") is True
    if redacted:
        host = (environment.get("host") or {}).get("hostname") if isinstance(environment.get("host"), Mapping) else None
        if host != "redacted":
            out.append(f"environment/host/hostname: 'redacted' expected in a redacted document, "
                       f"found {host!r}")
    for where, text in _strings(doc):
        for token in envmod.secret_values(text):
            out.append(f"{where}: no secret-looking value expected, found {token[:6]}… "
                       f"({len(token)} characters)")
        if not redacted:
            continue
        home = envmod.HOME_PATH.search(text)
        if home:
            out.append(f"{where}: no home directory expected in a redacted document, "
                       f"found {home.group(0)!r}")
        checkout = envmod.CHECKOUT_PREFIX.search(text)
        if checkout:
            found = checkout.group(0) + text[checkout.end():].split("/", 1)[0] + "/"
            out.append(f"{where}: no absolute checkout path expected in a redacted document, "
                       f"found {found + '…'!r}")
    return out


def _schema_for(doc: Any) -> str:
    kind = str(doc.get("schema", "")) if isinstance(doc, Mapping) else ""
    if kind.startswith("gpurepro/bench"):
        return "bench.schema.json"
    if kind.startswith("gpurepro/matrix"):
        return "matrix.schema.json"
    return "result.schema.json"


def validate_document(doc: Any, where: str = "document") -> None:
    errors = validation_errors(doc)
    if errors:
        raise RecordError(f"{where} does not match the schema:\n  " + "\n  ".join(errors[:20]))


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


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
                   root: Path, journal_path: Path | None = None) -> dict[str, Any]:
    if header.get("cluster"):
        from .merge import cluster_header

        header = cluster_header(header)  # the nodes' GPUs, drivers and device gates
    plan = header["plan"]
    from . import stats  # scipy: only recording needs it, not validating or reporting

    analysis = stats.analyze(trials, plan["arms"], case.baseline, case.failure_outcomes,
                             case.exposure.unit, case.exposure.per)
    device = dict(header.get("device") or {})
    claims = decide_claims(case, header, trials)
    manifest_sha = hashlib.sha256(case.path.read_bytes()).hexdigest() if case.path else None
    doc: dict[str, Any] = {
        "schema": SCHEMA_ID,
        "gpurepro_version": __version__,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "case": {"name": case.name, "question": case.question, "report_url": case.report_url,
                 "manifest_sha256": manifest_sha, "baseline": case.baseline,
                 "failure_outcomes": list(case.failure_outcomes),
                 "exposure": {"counter": case.exposure.counter, "unit": case.exposure.unit,
                              "per": case.exposure.per}},
        "environment": header["environment"],
        "device": device,
        "toolchain": header["toolchain"],
        "artifacts": {k: {"path": v["path"], "sha256": v["sha256"], "tools": v.get("tools", {}),
                          "description": v.get("description", "")}
                      for k, v in header["artifacts"].items()},
        "plan": {**plan, "options": _options(header)},
        "started_at": header.get("started_at"),
        "trials": list(trials),
        "summary": analysis["arms"],
        "comparisons": analysis["comparisons"],
        "crash_sites": analysis["crash_sites"],
        "per_gpu": analysis["per_gpu"],
        "analyses": run_analyses(case, header, root),
        "probe": header.get("probe"),
        "claims": claims,
        "verdict": None,  # below: from the document's own fields
        "journal": str(journal_path.relative_to(root)) if journal_path and journal_path.is_relative_to(root) else None,
    }
    if header.get("cluster"):
        from .merge import document_fields

        doc.update(document_fields(header, trials, case.failure_outcomes))
    doc = json.loads(json.dumps(doc, default=_jsonable))
    # The verdict reads the document as recorded, through its typed views (analysis.py).
    verdict = compose_verdict(case.verdict(Analysis.of(doc)), doc["claims"])
    doc["verdict"] = json.loads(json.dumps(verdict, default=_jsonable))
    return doc


def decide_claims(case: Case, header: Mapping[str, Any],
                  trials: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every claim of the run's family with its decision: journaled by a sequential run, or
    taken now in the one look of a fixed-size run."""
    from .claims import decider_for, sentence

    decider = decider_for(case, header)
    if decider.looks_taken < decider.design.looks or len(decider.decisions) < len(decider.claims):
        decider.final(trials)
    level = decider.design.alpha_per_look / max(1, len(decider.claims))
    out = []
    for c in decider.claims:
        rec = decider.decisions[c.name]
        ref = decider.reference(c)
        out.append({"name": c.name, "kind": c.kind, "arm": c.arm, "reference": ref,
                    **({"margin": c.margin} if c.kind == "equivalent" else {}),
                    **({"outcome": c.outcome, "detail": c.detail, "share": c.share}
                       if c.kind == "outcome" else {}),
                    **({"stratum": c.stratum} if c.kind == "concentrated" else {}),
                    **rec, "alpha": decider.design.alpha, "looks": decider.design.looks,
                    "sentence": sentence(c, ref, rec, case.exposure.per, case.exposure.unit, level)})
    return out


def compose_verdict(given: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The case's verdict (measurements, status, owner, next, hypotheses) joined with the
    sentences of its decided claims. An owner may rest only on decided claims (supported, or
    contradicted: "plain modules crash more" is a decision too), never on undecided ones."""
    verdict = dict(given)
    decided = {c["name"]: c["decision"] for c in claims}
    because = list(verdict.get("owner_because") or [])
    if verdict.get("owner"):
        weak = [n for n in because if decided.get(n) not in ("supported", "contradicted")]
        if not because or weak:
            cited = ", ".join(f"{n} ({decided.get(n, 'not a claim of this run')})" for n in weak)
            raise RecordError(f"the verdict names an owner resting on {cited or 'no claim'}; "
                              f"an owner may cite only decided claims")
    verdict["owner_because"] = because
    verdict["sentences"] = list(verdict.get("sentences") or []) + [
        c["sentence"] for c in claims if c["decision"] in ("supported", "contradicted")]
    verdict["not_decided"] = [c["sentence"] for c in claims if c["decision"] == "not_decided"]
    verdict.setdefault("hypotheses", [])
    verdict.setdefault("next", [])
    if not verdict["sentences"]:
        verdict["sentences"] = ["No claim of this run was decided."]
    return verdict


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


def write_document(doc: Mapping[str, Any], path: Path) -> Path:
    validate_document(doc, str(path))
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=False, allow_nan=False) + "\n")
    return path
