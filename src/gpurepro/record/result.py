"""Journal(s) -> one result document, without ever replacing a result by accident.

The report is drawn from the document afterwards, by whoever asked for it (the command line):
recording knows nothing of reports.
"""

from __future__ import annotations

import datetime
import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..case.load import checkout_targets, find_case, load_case
from ..case.model import Case
from ..errors import JournalError, ManifestError, UsageError
from ..model.journal import RunHeader
from ..run.journal import Contents, merge, read, result_name
from . import provenance

# What other modules use; the rest is this module's own.
__all__ = ["case_for_journal", "record_journals", "with_checkout_facts"]


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def case_for_journal(header: Mapping[str, Any], root: Path, where: str,
                     case_arg: str | None = None,
                     manifest_changed: bool = False) -> tuple[Case, dict[str, Any] | None]:
    """The case a journal is recorded with, and (with ``manifest_changed``) what the document
    says about a manifest that is not the run's.

    A journal attached to an issue is something people record: the manifest it names (or
    ``--case``) is imported only if it is a file inside the repository and, where the header
    holds the run's ``manifest_sha256``, only if the file's sha256 is that one. Both are
    checked before anything is imported; a mismatch is refused in one line unless
    ``manifest_changed`` says to record with the manifest as it is now (re-recording committed
    journals after their manifests changed), which the document then records."""
    case_field = header.get("case")
    name = case_field.get("name") if isinstance(case_field, Mapping) else case_field
    named = case_arg or header.get("manifest") or str(name)
    root = root.resolve()
    try:
        candidate = Path(named) if case_arg is None and header.get("manifest") else find_case(named, root)
    except ManifestError:
        candidate = Path(str(named))
    path = (candidate if candidate.is_absolute() else root / candidate).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        raise UsageError(f"{where}: its manifest {named} is not a file inside the repository; "
                         f"record imports only manifests inside it (--case NAME picks a case "
                         f"under cases/)")
    want = header.get("manifest_sha256")
    if case_arg is None and want and not (path.name == "manifest.py"
                                          and path.parent.name == str(name)):
        # A sha256 holds a file to its bytes, not to being a manifest: any .py file of the
        # checkout has one. Only a case's manifest.py, in a folder of the case's name, is
        # imported by what a journal's header says.
        raise UsageError(f"{where}: its header names {named} as its manifest, which is not a "
                         f"manifest.py in a folder named {name!r}; record imports no other file "
                         f"(--case NAME picks a case under cases/)")
    if case_arg is None and not want and not (path.name == "manifest.py"
                                              and path.parent.name == str(name)):
        # No sha256 to hold the file to (a journal from before the run identity): only a
        # case's own manifest is imported, never another .py file the header names.
        own = (root / "cases" / str(name) / "manifest.py").resolve()
        if not (own.is_file() and own.parent.parent == root / "cases"):
            raise UsageError(f"{where}: its header names {named} as its manifest, which is not "
                             f"a case's manifest.py, and holds no manifest_sha256 to check it "
                             f"by; record it with --case NAME (a case under cases/)")
        path = own
    rel = str(path.relative_to(root))
    have = hashlib.sha256(path.read_bytes()).hexdigest()
    note = None
    if want and have != want:
        if not manifest_changed:
            raise UsageError(f"{where}: {rel} (sha256 {have[:12]}…) is not the manifest this run "
                             f"used ({str(want)[:12]}…); record it with the manifest as it is now "
                             f"only with --manifest-changed (the document records it)")
        note = {"run_manifest_sha256": want, "recorded_with": rel}
    return load_case(path, root), note


def journal_notes(contents: Contents, where: str) -> list[str]:
    """What `record` says about a journal's lines: the hash chain it predates, lines that
    repeat a trial. A repeated trial with another record is refused (which one is the run's?)."""
    notes = []
    if not contents.chained:
        notes.append(f"note: {where} predates the journal's hash chain (format "
                     f"{contents.header.get('journal_format', 1)}): its lines are read as before, "
                     f"without a check that none was edited")
    contradicting = [r for r in contents.repeated if "another record" in r]
    if contradicting:
        raise JournalError(f"{where}: {contradicting[0]}"
                           + (f" (and {len(contradicting) - 1} more)" if len(contradicting) > 1 else "")
                           + "; one trial cannot have two outcomes")
    notes += [f"note: {where}: {r}; the first stands" for r in contents.repeated]
    return notes


# The rule for a journal's times: a run cannot have started before gpurepro existed (2020), nor
# later than a day after the recording machine's clock (a day of slack for clocks that differ).
EARLIEST = datetime.datetime(2020, 1, 1, tzinfo=datetime.UTC)
CLOCK_SLACK = datetime.timedelta(days=1)


def refuse_implausible_times(header: Mapping[str, Any], trials: list[dict[str, Any]],
                             where: str) -> None:
    """A journal whose timestamps fall outside EARLIEST … now + CLOCK_SLACK (a node whose clock
    was never set says 1970) is refused in one line naming the first one."""
    latest = datetime.datetime.now(datetime.UTC) + CLOCK_SLACK
    stamps = [("the header's started_at", header.get("started_at"))]
    stamps += [(f"resume {i + 1}'s at", r.get("at")) for i, r in enumerate(header.get("resumed") or [])]
    stamps += [(f"trial {t.get('index')}'s started_at", t.get("started_at")) for t in trials]
    stamps.append(("the end record's at", (header.get("ended") or {}).get("at")))
    for what, stamp in stamps:
        if stamp is None:
            continue
        try:
            when = datetime.datetime.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ").replace(
                tzinfo=datetime.UTC)
        except ValueError:
            raise JournalError(f"{where}: {what} {str(stamp)[:40]!r} is not a UTC timestamp "
                               f"(YYYY-MM-DDTHH:MM:SSZ)") from None
        if not EARLIEST <= when <= latest:
            raise JournalError(f"{where}: {what} is {stamp}, outside {EARLIEST:%Y-%m-%d} to a day "
                               f"after this machine's clock: the clock of the machine that ran it "
                               f"was wrong, or the journal was edited; nothing was recorded")


def record_journals(case: Case, journals: list[Path], root: Path, out: Path | None = None,
                    force: bool = False, manifest_changed: Mapping[str, Any] | None = None,
                    ) -> tuple[Path, dict[str, Any]] | None:
    """Write the result document for one journal or several shards; return where, and the
    document. None when the analysis packages are missing here (said in one line).

    An existing document is never replaced unless ``force``: a committed result holds
    analyses that a re-record from another checkout may not be able to redo."""
    try:
        from .document import build_document, write_document
    except ImportError as exc:
        _say(f"analysis packages are missing here ({exc.name}); the journal is complete. "
             f"Record it where gpurepro is installed: python -m gpurepro record "
             f"{' '.join(map(str, journals))}")
        return None
    if len(journals) > 1:
        header, trials = merge(journals)
    else:
        contents = read(journals[0])
        header, trials = contents.header, contents.trials
        for note in journal_notes(contents, str(journals[0])):
            _say(note)
        if contents.torn_bytes:
            _say(f"{journals[0]}: its last line is torn ({contents.torn_bytes} bytes, a write cut "
                 f"short); the document covers the {len(trials)} complete records")
    refuse_implausible_times(header, trials, str(journals[0]))
    planned = len(header["plan"]["order"])
    if len(trials) < planned and not header.get("options", {}).get("stopping"):
        _say(f"note: the journal holds {len(trials)} of {planned} planned trials; the document "
             f"covers those (continue the run with --resume to complete it)")
    if out is None:
        out = journals[0].parent / f"{result_name(header)}.json"
    if out.exists() and not force:
        raise _exists(out)
    found = provenance.find(RunHeader.from_json(header), root, journals[0])
    doc = build_document(case, header, trials, root, journals[0].resolve(), manifest_changed,
                         found)
    try:
        # One atomic create: of two records to one name, one wins and the other is refused
        # here, before it writes anything (its Markdown included).
        write_document(doc, out, replace=force)
    except FileExistsError:
        raise _exists(out) from None
    if provenance.write_pin(found, journals[0]) is not None:
        _say(f"commit: {doc['environment']['repository']['manifest']['note']} "
             f"(kept in {provenance.pin_path(journals[0])})")
    elif found.found != provenance.NAMED:
        _say(f"commit: {doc['environment']['repository']['manifest']['note']}")
    return out, doc


def _exists(out: Path) -> UsageError:
    return UsageError(f"{out} exists; record never replaces a result: write elsewhere with "
                      f"--out PATH, or replace it with --force")


def with_checkout_facts(doc: Mapping[str, Any], root: Path) -> Mapping[str, Any]:
    """A result document as its report reads it: one recorded before its record kept the
    case's build targets (``case.targets``) gets those of the case in the checkout at
    ``root``, where it has the case, so that it renders as it always did; a newer one is
    read as recorded."""
    case = doc.get("case")
    if not isinstance(case, Mapping) or "targets" in case or not isinstance(case.get("name"), str):
        return doc
    targets = checkout_targets(case["name"], root)
    return doc if targets is None else {**doc, "case": {**case, "targets": targets}}
