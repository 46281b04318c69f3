"""A result document checked against its own trials: what `record` would make of them now.

`validate` runs this after the schema and the meaning checks (record/validation.py): the
per-arm summaries, the comparisons, the crash sites and the per-GPU table are recomputed from
the trials with the document's own case fields (no manifest needed); the claims' decisions, the
known-rates plan (of a run that fixed its claim families before its first trial:
gpurepro.analyze.known_rates) and the verdict are recomputed with the case's manifest, found
inside the repository (the one the document's journal names, else ``cases/<name>/manifest.py``).
A flipped decision, a rewritten verdict, a changed p-value, rate or outcome is named as
``path: recorded, recomputed``.

A sequential run's decisions were taken at its looks and journaled; they are taken from the
document's ``plan.options.stopping`` as `record` takes them from the journal, so a decision
changed in ``claims`` alone is named, one changed in both places with the trials is not.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..analyze import stats
from ..analyze.verdict import decide_claims
from ..case.load import find_repo_root, load_case
from ..case.model import Case
from ..errors import JournalError, ManifestError
from ..model.journal import RunHeader
from ..run import journal as journal_format
from .document import capped, plain, with_plan_and_verdict

# What other modules use; the rest is this module's own.
__all__ = [
    "CaseNotHere", "differences", "named_files_errors", "NotRecomputed", "recomputed_errors"
]

REL_TOL = 1e-6  # floats from another scipy build may differ in their last digits


def differences(recorded: Any, recomputed: Any, path: str) -> list[str]:
    """Each place where two JSON values differ, as 'path: recorded X, recomputed Y'."""
    if isinstance(recorded, Mapping) and isinstance(recomputed, Mapping):
        out = []
        for key in dict.fromkeys([*recorded, *recomputed]):
            out += differences(recorded.get(key), recomputed.get(key), f"{path}/{key}")
        return out
    if isinstance(recorded, list) and isinstance(recomputed, list) and len(recorded) == len(recomputed):
        out = []
        for i, (a, b) in enumerate(zip(recorded, recomputed, strict=True)):
            out += differences(a, b, f"{path}/{i}")
        return out
    if _same(recorded, recomputed):
        return []
    return [f"{path}: {_show(recorded)} recorded, {_show(recomputed)} recomputed from the trials"]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    return bool(a == b)


def _show(v: Any) -> str:
    text = json.dumps(v, sort_keys=True) if isinstance(v, Mapping | list) else repr(v)
    return text if len(text) <= 120 else text[:117] + "..."


class NotRecomputed(Exception):
    """The claims and verdict of a document could not be recomputed here: the reason."""


class CaseNotHere(NotRecomputed):
    """The document's case is not in this checkout (a copy of a document made elsewhere)."""


def case_of(doc: Mapping[str, Any], root: Path) -> Case:
    """The document's case, from a manifest inside the repository: the one its journal's header
    names where that is a ``manifest.py`` in a folder of the case's name (a header can name
    none, or anything: a decoy header, a journal path out of the checkout, any other ``.py``
    are never imported), else ``cases/<name>/manifest.py``. NotRecomputed says why none
    loads."""
    root = root.resolve()
    name = (doc.get("case") or {}).get("name")
    if not isinstance(name, str) or not name:
        raise NotRecomputed("the document names no case")
    candidates = []
    journal = doc.get("journal")
    if isinstance(journal, str) and (root / journal).resolve().is_relative_to(root):
        try:
            with open(root / journal, "rb") as fh:
                header = json.loads(fh.readline())
            if isinstance(header, dict) and isinstance(header.get("manifest"), str):
                named = (root / header["manifest"]).resolve()
                if named.name == "manifest.py" and named.parent.name == name:
                    candidates.append(named)
        except (OSError, ValueError):
            pass
    candidates.append((root / "cases" / name / "manifest.py").resolve())
    failures = []
    for path in dict.fromkeys(candidates):
        if not (path.is_relative_to(root) and path.is_file()):
            continue
        try:
            return load_case(path, root)
        except ManifestError as exc:
            failures.append(str(exc))
    if failures:
        raise NotRecomputed(f"case {name!r} does not load: {failures[-1]}")
    raise CaseNotHere(f"case {name!r} is not in this checkout")


def recomputed_errors(doc: Mapping[str, Any], root: Path) -> tuple[list[str], list[str]]:
    """(errors, notes): what differs from a recomputation from the trials. NotRecomputed where
    the claims and verdict cannot be recomputed here (the case not in this checkout, or its
    manifest not loading)."""
    case_fields, plan, trials = doc["case"], doc["plan"], doc["trials"]
    measured = stats.analyze(trials, plan["arms"], case_fields["baseline"],
                             case_fields["failure_outcomes"], case_fields["exposure"]["unit"],
                             case_fields["exposure"]["per"])
    measured = plain(measured)
    errors = []
    for key, ours in (("summary", measured["arms"]), ("comparisons", measured["comparisons"]),
                      ("crash_sites", measured["crash_sites"]), ("per_gpu", measured["per_gpu"])):
        if key in doc:
            errors += differences(doc[key], ours, key)
    notes: list[str] = []
    if "claims" not in doc:  # recorded before the harness decided claims
        return errors, notes
    case = case_of(doc, root)  # NotRecomputed: the caller says why, and fails unless told
    options = plan.get("options") or {}
    # The journal's header as far as deciding reads it: the document keeps its plan, options
    # (the decisions as the design's stopping result) and device.
    header = RunHeader.from_json({"case": doc["case"]["name"], "plan": plan, "options": options,
                                  "stopping_result": options.get("stopping"),
                                  "device": doc.get("device") or {}}, "the document's plan")
    stopped = (doc.get("completion") or {}).get("complete") is False
    claims = capped(plain(decide_claims(case, header, trials, stopped=stopped)))
    errors += differences(doc["claims"], claims, "claims")
    ours = {**doc, "summary": measured["arms"], "comparisons": measured["comparisons"],
            "crash_sites": measured["crash_sites"], "per_gpu": measured["per_gpu"],
            "claims": claims}
    ours.pop("known_rates_plan", None)
    ours.pop("floor", None)  # its name before it was the known-rates plan
    ours = with_plan_and_verdict(case, ours, options, root)
    for key in ("known_rates_plan", "floor"):
        if key in doc or key in ours:
            errors += differences(doc.get(key), ours.get(key), key)
    errors += differences(doc.get("verdict"), ours["verdict"], "verdict")
    return errors, notes


# A Markdown link or picture whose target is a file beside it: ](name.png)
_LOCAL_LINK = re.compile(r"\]\((?!https?:|mailto:|#)([^)\s]+)\)")


def named_files_errors(path: Path, doc: Mapping[str, Any], root: Path) -> list[str]:
    """Every file a result document or its Markdown names, and every file written beside it
    (``<stem>.*``: its Markdown and pictures), must exist and hold something: a report killed
    mid-write, or a full disk, leaves a 0-byte picture that an issue would attach."""
    errors = []
    journal = doc.get("journal")
    # The journal is named relative to the repository that recorded the document: checked for
    # a document inside this one (a copy elsewhere has left its journal behind).
    if (isinstance(journal, str) and find_repo_root(root.resolve()) is not None
            and path.resolve().is_relative_to(root.resolve())):
        where = root / journal
        if not where.is_file() or where.stat().st_size == 0:
            errors.append(f"journal: {journal} {'is empty' if where.is_file() else 'is missing'}")
        else:
            errors += journal_errors(where, journal, doc)
    stem = path.name[: -len(".json")] if path.name.endswith(".json") else path.stem
    for sibling in sorted(path.parent.glob(f"{glob_escape(stem)}.*")):
        if sibling != path and sibling.is_file() and sibling.stat().st_size == 0:
            errors.append(f"{sibling.name}: an empty file beside the document")
    markdown = path.with_name(stem + ".md")
    if markdown.is_file():
        for target in _LOCAL_LINK.findall(markdown.read_text(encoding="utf-8", errors="replace")):
            where = markdown.parent / target
            if not where.is_file():
                errors.append(f"{markdown.name}: names {target}, which is missing")
            elif where.stat().st_size == 0:
                errors.append(f"{markdown.name}: names {target}, which is empty")
    return errors


def journal_errors(where: Path, name: str, doc: Mapping[str, Any]) -> list[str]:
    """The document's journal read as `record` reads it: a broken chain, end record or seal
    named; a document of a completed run whose journal has lost its end record (its last lines
    removed after the document was recorded) named too."""
    try:
        contents = journal_format.read(where)
    except JournalError as exc:
        return [f"journal: {exc}"]
    if (doc.get("completion") or {}).get("complete") and "ended" not in contents.header:
        return [f"journal: {name} holds {len(contents.trials)} trial(s) and no end record, and "
                f"the document says its run completed with {len(doc.get('trials') or [])}: the "
                f"journal's last lines were removed after it was recorded"]
    return []


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)
