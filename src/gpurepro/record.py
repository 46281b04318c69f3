"""Record: a run's journal -> one result document, decided, schema-checked, written atomically.

The record stage's public names, from the modules that do each job:

- ``document``: the document assembled from the journal (``build_document``), and written once
  it validates (``write_document``);
- ``verdict``: the claims decided (``decide_claims``) and the verdict composed from them
  (``compose_verdict``); the case's verdict reads ``analysis.Analysis``;
- ``validation``: the schema and what no schema can say (``validation_errors``,
  ``meaning_errors``, ``validate_document``, ``RecordError``);
- ``atomic``: ``write_atomic``.

``recording.record_journals`` runs the stage: journal(s) -> document -> report, never replacing
a result.
"""

from __future__ import annotations

from .analyze.verdict import compose_verdict, decide_claims
from .document import SCHEMA_ID, build_document, run_analyses, write_document
from .errors import RecordError
from .run.atomic import write_atomic
from .run.journal import result_name
from .validation import (
    load_schema,
    meaning_errors,
    schema_path,
    validate_document,
    validation_errors,
)

__all__ = ["SCHEMA_ID", "RecordError", "build_document", "compose_verdict", "decide_claims",
           "load_schema", "meaning_errors", "result_name", "run_analyses", "schema_path",
           "validate_document", "validation_errors", "write_atomic", "write_document"]
