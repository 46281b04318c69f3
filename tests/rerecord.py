"""Re-record every committed journal under results/ with the code of this checkout.

A move or refactor proves itself behaviour-identical when every committed journal re-records to
the committed document (`tests/record/test_rerecord.py`). Three fields describe the checkout that
records rather than the run, and are taken from the committed document when comparing:
`created_at` (when it was recorded), `analyses` (the case's analyses of its built artifacts,
which a checkout without those builds cannot redo) and `case.manifest_sha256` (the manifest file
that recorded it). Committed journals are re-recorded with their case's manifest as it is now,
which is `record --manifest-changed` (`record.result.case_for_journal`): a changed manifest is
named in the re-recorded document (`case.manifest_changed`), a field the committed document
gets only when it is written again.

    python tests/rerecord.py            # list the documents that differ (exit 1 if any)
    python tests/rerecord.py --write    # re-record them: document, Markdown and pictures

`--write` is for a change that means to change what documents say (a verdict sentence, a new
field): it keeps each document's analyses and rewrites the rest with today's code.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from gpurepro.record import document, provenance  # noqa: E402
from gpurepro.record.result import case_for_journal  # noqa: E402
from gpurepro.run import journal  # noqa: E402

# Fields of a document that describe the recording checkout, not the run (see the docstring).
CHECKOUT_FIELDS = ("created_at", "analyses", "manifest_sha256", "manifest_changed")


def committed_journals(root: Path = ROOT) -> list[Path]:
    """Every run journal under results/ that has its document beside it."""
    return sorted(j for j in root.glob("results/*/*.journal.jsonl")
                  if j.with_name(j.name.replace(".journal.jsonl", ".json")).is_file())


def document_of(path: Path) -> Path:
    return path.with_name(path.name.replace(".journal.jsonl", ".json"))


def rerecord(path: Path, root: Path = ROOT) -> tuple[dict[str, Any], dict[str, Any]]:
    """(re-recorded document, committed document) for one committed journal; the re-recorded
    one carries the committed analyses (the artifacts need not be built here)."""
    committed = json.loads(document_of(path).read_text())
    contents = journal.read(path)
    # `record --manifest-changed`: the committed journals ran with earlier manifests.
    case, changed = case_for_journal(contents.header, root, str(path), manifest_changed=True)
    saved = document.run_analyses
    document.run_analyses = lambda *_args, **_kw: committed["analyses"]
    try:
        doc = document.build_document(case, contents.header, contents.trials, root, path.resolve(),
                                      changed)
    finally:
        document.run_analyses = saved
    return doc, committed


def normalized(doc: dict[str, Any], committed: dict[str, Any]) -> str:
    """The document's text with the checkout's fields taken from the committed one."""
    doc = json.loads(json.dumps(doc))
    doc["created_at"] = committed["created_at"]
    doc["analyses"] = committed["analyses"]
    doc["case"]["manifest_sha256"] = committed["case"]["manifest_sha256"]
    if "manifest_changed" in committed["case"]:
        doc["case"]["manifest_changed"] = committed["case"]["manifest_changed"]
    else:
        doc["case"].pop("manifest_changed", None)
    return json.dumps(doc, indent=1, allow_nan=False) + "\n"


def differences(root: Path = ROOT) -> Iterator[tuple[Path, list[str]]]:
    """(document, top-level keys that differ) for every committed journal whose re-record is not
    byte-identical to its document."""
    for path in committed_journals(root):
        doc, committed = rerecord(path, root)
        if normalized(doc, committed) != document_of(path).read_text():
            keys = [k for k in doc if json.dumps(doc.get(k)) != json.dumps(committed.get(k))
                    and k not in CHECKOUT_FIELDS]
            yield document_of(path), keys or ["(formatting)"]


def render_difference(path: Path, out: Path) -> list[str]:
    """One committed journal's document rendered again into ``out``: the names of the files
    (Markdown, pictures, pyperf suite) that are not byte-identical to the committed ones, or
    missing."""
    from gpurepro.report.markdown import write_report

    doc = json.loads(document_of(path).read_text())
    target = out / path.parent.name / document_of(path).name
    target.parent.mkdir(parents=True, exist_ok=True)
    differing = []
    for written in write_report(doc, target).values():
        committed = document_of(path).parent / written.name
        if not committed.is_file() or committed.read_bytes() != written.read_bytes():
            differing.append(f"{path.parent.name}/{written.name}")
    return differing


def render_differences(out: Path, root: Path = ROOT) -> list[str]:
    """Each committed document rendered again into ``out`` (``render_difference``)."""
    return [name for path in committed_journals(root) for name in render_difference(path, out)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true",
                    help="re-record the documents that differ and render every document's Markdown "
                         "and pictures again")
    args = ap.parse_args(argv)
    changed = list(differences())
    for path, keys in changed:
        print(f"{path.relative_to(ROOT)}: {', '.join(keys)}")
    if not args.write:
        return 1 if changed else 0
    from gpurepro.report.markdown import write_report

    for path, _keys in changed:
        j = path.with_name(path.name.replace(".json", ".journal.jsonl"))
        doc, _committed = rerecord(j)
        document.write_document(doc, path)
        write_report(doc, path)
        print(f"re-recorded {path.relative_to(ROOT)}")
    # The commit each run's manifest was found at, kept beside its journal as `record` keeps
    # it: a shallow clone then re-records the same documents.
    for j in committed_journals():
        pinned = provenance.write_pin(provenance.find(journal.read(j).run, ROOT, j), j)
        if pinned is not None:
            print(f"kept {pinned.relative_to(ROOT)}")
    # A change to the report alone (a new section) leaves the documents as they are: their
    # Markdown and pictures are rendered again from the committed documents.
    for j in committed_journals():
        path = document_of(j)
        if path not in {p for p, _ in changed}:
            write_report(json.loads(path.read_text()), path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
