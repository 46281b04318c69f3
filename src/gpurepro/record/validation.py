"""Validation: a document against its schema (jsonschema), then what no schema can say.

A result document's summary must be recomputable from its trials, and no document may carry a
secret, nor, when redacted, a hostname, home directory or absolute checkout path. A document
that does not validate is never written (``document.write_document``); the error names the
offending field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

from ..analyze import tally
from ..env import privacy
from ..errors import RecordError
from .outputs import check_errors

# What other modules use; the rest is this module's own.
__all__ = [
    "load_schema", "meaning_errors", "privacy_errors", "schema_errors", "SHARED",
    "validate_document", "validation_errors"
]


def schema_path(name: str = "result.schema.json") -> Path:
    # The schemas are package data (the repository's top-level schema/ links to them), so an
    # installed gpurepro validates without a checkout.
    return Path(str(resources.files("gpurepro") / "schema" / name))


def load_schema(name: str = "result.schema.json") -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(schema_path(name).read_text())
    return schema


# Schemas the others refer to (by their $id): the release sweep's core, which the bisection and
# matrix schemas are built on.
SHARED = ("sweep.schema.json",)
# The release sweeps' documents: their schema and privacy here, their consistency (what the
# rest of the document gives) gpurepro.sweep.validation's.
SWEEP_SCHEMAS = ("matrix.schema.json", "bisect.schema.json")


@cache
def _registry() -> Registry[Any]:
    shared = [load_schema(name) for name in SHARED]
    return Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in shared)


def validation_errors(doc: Any, schema: Mapping[str, Any] | None = None) -> list[str]:
    """Every schema violation as 'path/to/field: message' (empty when valid); for a result
    document (not a bench document) every meaning error after them (see ``meaning_errors``)."""
    out = schema_errors(doc, schema)
    if _schema_for(doc) == "result.schema.json":
        out += meaning_errors(doc)
    elif _schema_for(doc) in SWEEP_SCHEMAS:
        # What else a sweep's document must be is the sweep's to say (gpurepro.sweep.validation).
        out += privacy_errors(doc)
    return out


def schema_errors(doc: Any, schema: Mapping[str, Any] | None = None) -> list[str]:
    """Every violation of the document's schema (``schema``, or the one its kind names) as
    'path/to/field: message', in the order of the fields."""
    schema = schema or load_schema(_schema_for(doc))
    validator = jsonschema.Draft202012Validator(schema, registry=_registry())
    out = []
    for err in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path)):
        where = "/".join(str(p) for p in err.absolute_path) or "(document)"
        out.append(f"{where}: {err.message[:300]}")
    return out


def meaning_errors(doc: Any) -> list[str]:
    """What the schema cannot say, as 'path/to/field: what was expected, what was found':
    the summary's counts recomputed from the trials; each trial's outcome agreeing with its
    output check (record/outputs.py); no secret anywhere; and in a redacted
    document no hostname, home directory or absolute checkout path."""
    if not isinstance(doc, Mapping):
        return []

    return _trial_errors(doc) + _summary_errors(doc) + check_errors(doc) + privacy_errors(doc)


# How far past its limit a trial may end: the harness kills at the limit, then waits for the
# process and its group to go (watchdog.DEADLINE_GRACE_S is the later backstop).
LIMIT_SLACK_S = 2.0


def _trial_errors(doc: Mapping[str, Any]) -> list[str]:
    """Each trial index once and in the plan (with its arm); no trial that counts as evidence
    longer than the recorded wall-clock limit allows."""
    trials = doc.get("trials")
    plan = doc.get("plan")
    if not isinstance(trials, list) or not isinstance(plan, Mapping):
        return []
    order = plan.get("order") if isinstance(plan.get("order"), list) else []
    budget = (plan.get("options") or {}).get("budget") if isinstance(plan.get("options"), Mapping) else None
    limit = budget.get("timeout_s") if isinstance(budget, Mapping) else None
    out = []
    seen: dict[Any, int] = {}
    for i, t in enumerate(trials):
        if not isinstance(t, Mapping):
            continue
        index = t.get("index")
        if index in seen:
            out.append(f"trials/{i}/index: each trial once expected, found index {index} again "
                       f"(trials/{seen[index]})")
        seen.setdefault(index, i)
        if isinstance(index, int) and order:
            planned = order[index] if 0 <= index < len(order) else None
            if not isinstance(planned, Mapping) or planned.get("arm") != t.get("arm"):
                out.append(f"trials/{i}/index: a trial of the plan expected, found index {index} "
                           f"({t.get('arm')}), which the plan "
                           + ("gives another arm" if isinstance(planned, Mapping) else "does not have"))
        duration = t.get("duration_s")
        if (isinstance(limit, int | float) and isinstance(duration, int | float)
                and t.get("outcome") != "harness_error" and duration > limit + LIMIT_SLACK_S):
            out.append(f"trials/{i}/duration_s: at most the limit of {limit:g} s (+{LIMIT_SLACK_S:g} s) "
                       f"expected for a {t.get('outcome')} trial, found {duration:g} s")
    return out


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
        if key in privacy.ENV_KEYS or (key == "environment" and parent == "environment"):
            yield path, value
        for k, v in value.items():
            yield from _env_dicts(v, f"{path}/{k}" if path else str(k), str(k), key)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _env_dicts(v, f"{path}/{i}" if path else str(i), None, key)


def privacy_errors(doc: Mapping[str, Any]) -> list[str]:
    out = []
    for where, env in _env_dicts(doc):
        for name in env:
            if privacy.is_secret_name(str(name)):
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
        for token in privacy.secret_values(text):
            out.append(f"{where}: no secret-looking value expected, found {token[:6]}… "
                       f"({len(token)} characters)")
        if not redacted:
            continue
        home = privacy.HOME_PATH.search(text)
        if home:
            out.append(f"{where}: no home directory expected in a redacted document, "
                       f"found {home.group(0)!r}")
        checkout = privacy.CHECKOUT_PREFIX.search(text)
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
    if kind.startswith("gpurepro/bisect"):
        return "bisect.schema.json"
    return "result.schema.json"


def validate_document(doc: Any, where: str = "document") -> None:
    errors = validation_errors(doc)
    if errors:
        raise RecordError(f"{where} does not match the schema:\n  " + "\n  ".join(errors[:20]))


