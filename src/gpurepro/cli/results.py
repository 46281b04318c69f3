"""The commands that read or write documents: `record`, `report`, `validate`, `scrub`,
`index`, `compare`, `issue`, `calibrate`, `new`, `env`, and the matrix's stages.

A file that is not what the command reads (a folder, a binary file, not JSON, a benchmark or a
matrix document) is one line and exit 2, never a traceback. What a command produces (a verdict
per document, the files written, a table) goes to stdout (``show``); notes on the way to stderr
(``say``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import EXIT_ERROR, EXIT_OK, CompareError, InvalidDocument, IssueError, UsageError
from ..model.files import write_atomic
from ..model.result import Result
from ..project import URL_VARIABLE, repository_url
from ..record.recompute import (
    CaseNotHere,
    NotRecomputed,
    named_files_errors,
    recomputed_errors,
)
from ..record.result import with_checkout_facts
from ..record.validation import validate_document, validation_errors
from ..report.comment import issue_body, read_result
from ..report.compare import compare, markdown, plot
from ..report.index import index_path, is_current, is_generated
from ..report.markdown import write_report
from ..report.tables import code
from ..sweep.table import matrix_markdown, verdict_line
from ..sweep.validation import sweep_errors, validate_sweep
from .args import repository_root, say, show

# What other modules use; the rest is this module's own.
__all__ = ["cmd_compare", "cmd_issue", "cmd_report", "cmd_validate"]

# The checkout this package runs from (src/gpurepro/cli/ in it).
CHECKOUT = Path(__file__).resolve().parents[3]


def _read_document(path: Path, what: str = "result document",
                   written_by: str = "`gpurepro record`") -> dict[str, Any]:
    """A JSON document from a file, or one line saying why it is not one."""
    if path.is_dir():
        raise UsageError(f"{path} is a folder; give a {what} (.json)")
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"{path} is not a text file; give a {what} (.json)") from None
    except ValueError as exc:
        raise UsageError(f"{path} is not JSON ({exc}); a {what} is written by {written_by}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path} holds JSON but not a {what} (no object at the top)")
    return doc



def cmd_report(args: argparse.Namespace) -> int:
    path = Path(args.result)
    doc = _read_document(path)
    if str(doc.get("schema", "")).startswith("gpurepro/bench"):
        raise UsageError(f"{path} is a benchmark document; `report` renders case results "
                         f"(benchmarks are summarised in docs/benchmarks.md)")
    if str(doc.get("schema", "")).startswith("gpurepro/matrix"):
        raise UsageError(f"{path} is a toolchain matrix document; `python -m gpurepro matrix "
                         f"table {path}` renders it")
    if str(doc.get("schema", "")).startswith("gpurepro/bisect"):
        raise UsageError(f"{path} is a bisection document; `python -m gpurepro bisect "
                         f"{(doc.get('case') or {}).get('name')} --table {path}` renders it")
    validate_document(doc, str(path))
    target = path
    if args.out_dir:
        out_dir = Path(args.out_dir)
        if out_dir.exists() and not out_dir.is_dir():
            raise UsageError(f"--out-dir {out_dir}: not a folder")
        out_dir.mkdir(parents=True, exist_ok=True)
        target = out_dir / path.name
    for kind, p in write_report(Result.of(doc), target).items():
        show(f"{kind}: {p}")
    return EXIT_OK


def cmd_validate(args: argparse.Namespace) -> int:
    paths: list[Path] = []
    for p in args.paths or ["results"]:
        p = Path(p)
        if p.is_dir():
            paths += sorted(x for x in p.rglob("*.json") if not x.name.endswith(".pyperf.json"))
        elif p.exists():
            paths.append(p)
        else:
            raise UsageError(f"{p}: no such file or folder")
    bad = 0
    root = repository_root()
    for p in paths:
        notes: list[str] = []
        try:
            errors, notes = document_errors(p, _read_document(p), root, args.schema_only)
        except UsageError as exc:
            errors = [str(exc)]
        if errors:
            bad += 1
            show(f"INVALID {p}:")
            for e in errors[:20]:
                show(f"  {e}")
        else:
            show(f"ok      {p}" + "".join(f" ({n})" for n in notes))
    show(f"{len(paths) - bad} of {len(paths)} documents valid")
    stale = _stale_indexes(args.paths or ["results"])
    return EXIT_OK if bad == 0 and not stale else EXIT_ERROR


def document_errors(path: Path, doc: Mapping[str, Any], root: Path, schema_only: bool = False,
                    files: bool = True, schema_checked: bool = False
                    ) -> tuple[list[str], list[str]]:
    """(errors, notes) of one document, as `validate` finds them: the schema, then, for a case
    result, the claims, verdict and summaries recomputed from its trials as `record` would
    (a note where its case is not in this checkout) and, with ``files``, the files it names
    beside it (each there and not empty). ``schema_checked``: the caller found no schema or
    privacy error already (validation_errors), so that pass is not made twice."""
    notes: list[str] = []
    errors = [] if schema_checked else sweep_errors(doc)
    if errors or not _is_result(doc):
        return errors, notes
    # The trials say what the document says: recomputed as `record` would.

    if schema_only:
        notes.append("schema only: claims and verdict not recomputed")
    else:
        try:
            errors, notes = recomputed_errors(doc, root)
        except CaseNotHere as exc:  # a note: nothing here to recompute it with
            notes.append(f"claims and verdict not recomputed: {exc}")
        except NotRecomputed as exc:  # a manifest that does not load: never ok
            errors = [f"claims and verdict not recomputed: {exc} (--schema-only "
                      f"checks the schema alone)"]
    return errors + (named_files_errors(path, doc, root) if files else []), notes


def _is_result(doc: Mapping[str, Any]) -> bool:
    schema = str(doc.get("schema", ""))
    return schema.startswith("gpurepro/result") or not schema


def _stale_indexes(folders: list[str]) -> int:
    """How many results indexes (results/README.md) differ from what their documents give."""
    root_results = (repository_root() / "results").resolve()
    stale = 0
    for folder in map(Path, folders):
        if not folder.is_dir():
            continue
        index = index_path(folder)
        if folder.resolve() != root_results and not is_generated(index):
            continue
        if not is_current(folder):
            stale += 1
            where = "" if folder.resolve() == root_results and str(folder) == "results" else f" {folder}"
            say(f"{index} is out of date: run python -m gpurepro index{where}")
    return stale


def cmd_compare(args: argparse.Namespace) -> int:
    """Result documents of one case side by side; 1 with --fail-on-change when a decided claim
    flipped."""
    docs = [_read_document(Path(p)) for p in args.results]
    try:
        result = compare(docs, args.results, any_conditions=args.any_conditions)
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    print(json.dumps(result.to_json(), indent=2) if args.json else markdown(result))
    if args.plot:
        drawn = plot(result, Path(args.plot))
        say(f"plot: {args.plot}" if drawn else "plot: nothing to draw (no arm with exposure in two runs)")
    return EXIT_ERROR if args.fail_on_change and result.flipped else EXIT_OK


def _matrix_block(path: Path, doc: Mapping[str, Any]) -> tuple[str, str, str]:
    """A <details> block with a toolchain matrix document's table, and its one-line verdict
    for the head, for `issue --matrix`."""
    try:
        matrix = _read_document(path, "matrix document", "`gpurepro matrix assemble`")
    except (OSError, UsageError) as exc:
        raise UsageError(f"--matrix {path}: not a readable matrix document ({exc})") from None
    if not str(matrix.get("schema", "")).startswith("gpurepro/matrix"):
        raise UsageError(f"--matrix {path}: not a matrix document (schema gpurepro/matrix/...)")
    case = (matrix.get("case") or {}).get("name") if isinstance(matrix.get("case"), dict) else None
    if case != doc["case"].get("name"):
        raise UsageError(f"--matrix {path}: a matrix of {case!r}, not of {doc['case'].get('name')!r}")
    validate_sweep(matrix, f"--matrix {path}")
    # The matrix's Markdown and verdict line escape its documents' strings (a tool's refusal, a
    # GPU's name) as a report's are (matrix/table.py); the comment is checked whole after.
    return (f"Toolchain matrix ({path.name}; attach it beside the result)",
            matrix_markdown(matrix),
            f"**Toolchain matrix** ({code(path.name)}): {verdict_line(matrix)}")


def _postable(path: Path, doc: Mapping[str, Any], allow_invalid: bool) -> list[str]:
    """What `validate` would find wrong with a result document to post, checked as it checks:
    the schema (arm and case names by pattern, every field where its type says; whatever the
    document says after that is escaped), then its claims, verdict and summaries recomputed
    from its trials. A schema error is refused (InvalidDocument, one line); a recomputation
    error is refused too unless ``allow_invalid``, and then returned for the comment's head
    to say. The files beside it are the attachments': one missing or empty is left out of
    them and said here."""
    again = f"python -m gpurepro validate {path} lists every problem"
    errors = validation_errors(doc)
    if errors:
        raise InvalidDocument(f"{path} does not match the schema: {errors[0]}{_more(errors)}; "
                              f"no comment is made of it ({again})")
    root = repository_root()
    errors, notes = document_errors(path, doc, root, files=False, schema_checked=True)
    if errors and not allow_invalid:
        raise InvalidDocument(f"{path} does not validate: {errors[0]}{_more(errors)}; no comment "
                              f"is made of it ({again}; --allow-invalid makes one that says so)")
    for note in [*notes, *named_files_errors(path, doc, root)]:
        say(f"note: {path}: {note}")
    if errors:
        say(f"note: {path} does not validate ({len(errors)} "
            f"problem{'s' if len(errors) > 1 else ''}): the comment's head says so")
    return errors


def _more(errors: list[str]) -> str:
    return f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""


def cmd_issue(args: argparse.Namespace) -> int:
    """The body of a GitHub comment for a result document (printed, or written to --out)."""
    path = Path(args.result)
    doc = _read_document(path)
    schema = str(doc.get("schema", ""))
    if schema.startswith("gpurepro/result") or (not schema and isinstance(doc.get("case"), dict)):
        invalid = _postable(path, doc, args.allow_invalid)
    else:
        invalid = []
    extra: list[tuple[str, str]] = []
    extra_head: list[str] = []
    if args.matrix:
        summary, table, line = _matrix_block(Path(args.matrix), doc)
        extra.append((summary, table))
        extra_head.append(line)
    try:
        # A document recorded before it kept its case's targets reads them from the checkout
        # the package runs from, as its comment always did; it is typed here, once.
        result = read_result(with_checkout_facts(doc, CHECKOUT), path)
        body = issue_body(result, path, extra_blocks=extra, extra_head=extra_head,
                          invalid=invalid)
    except IssueError as exc:
        raise UsageError(str(exc)) from None

    if repository_url() is None:
        say(f"note: no repository URL is configured, so the rerun has no clone step: set "
            f"{URL_VARIABLE}=<the URL to clone gpurepro from> (or [project.urls] Repository in "
            f"pyproject.toml) and run issue again")
    if args.out:
        write_atomic(Path(args.out), body)
        say(f"issue comment: {args.out} ({len(body)} characters)")
    else:
        sys.stdout.write(body)
    return EXIT_OK


# ---------------------------------------------------------------- parser


