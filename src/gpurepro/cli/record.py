"""`python -m gpurepro record JOURNAL...`: a run's journal(s) recorded into one result
document, its report and the results index; the last steps of `case` and `run` too."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..case.model import Case
from ..errors import EXIT_ERROR, EXIT_OK
from ..model.files import folder_lock, remove_stale
from ..model.result import Result
from ..record.result import case_for_journal, record_journals
from ..report.index import indexed_folder, write_index
from ..run.journal import read, refuse_unchained
from .args import repository_root, say, show


def record_report_index(case: Case, journals: list[Path], root: Path, out: Path | None = None,
                        force: bool = False,
                        manifest_changed: Mapping[str, Any] | None = None) -> Path | None:
    """The last steps of every run and of `record`: the result document, then its report,
    then the results index that lists it."""
    # One record at a time into one folder: of two `record --force` to one name, the document
    # and its report are both the last one's. What a killed record left there goes first.
    folder = (out or journals[0]).parent
    with folder_lock(folder):
        for stale in remove_stale(folder):
            say(f"note: removed {stale.name}, left by a record that was stopped while writing")
        recorded = record_journals(case, journals, root, out, force=force,
                                   manifest_changed=manifest_changed)
        if recorded is None:
            return None
        out, doc = recorded
        from ..report.markdown import write_report

        # The document just recorded, typed once: what its report and the lines below read.
        result = Result.of(doc)
        written = write_report(result, out)
    show(f"result: {out}")
    for kind, path in written.items():
        show(f"{kind}: {path}")
    assert result.verdict is not None, "record writes the verdict"
    show("verdict: " + result.verdict.status)
    for s in result.verdict.sentences:
        show(f"  - {s}")
    _refresh_index(out, root)
    return out


def _refresh_index(out: Path, root: Path) -> None:
    """Rewrite the results index (results/README.md) that lists the new document, if any."""
    folder = indexed_folder(out, root)
    if folder is None:
        return
    try:
        path, changed = write_index(folder)
    except OSError as exc:
        say(f"the results index could not be rewritten ({exc}); run python -m gpurepro index")
        return
    if changed:
        show(f"index: {path}")


def cmd_record(args: argparse.Namespace) -> int:
    root = repository_root()
    journals = [Path(j) for j in args.journal]
    for j in journals:
        refuse_unchained(read(j), str(j), args.old_journal)
    header = read(journals[0]).header

    # Checked before anything is imported: a manifest inside the repository, the run's own.
    case, changed = case_for_journal(header, root, str(journals[0]), args.case,
                                     args.manifest_changed)
    out = record_report_index(case, journals, root, Path(args.out) if args.out else None,
                              force=args.force, manifest_changed=changed)
    return EXIT_OK if out else EXIT_ERROR
