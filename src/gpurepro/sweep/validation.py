"""A release sweep's document checked whole: its schema and privacy (gpurepro.record.validation),
then what its schema cannot say, each kind's consistency (``bisection.consistency_errors``,
``matrix.consistency_errors``: its points, results and boundaries what the rest gives)."""

from __future__ import annotations

from typing import Any

from ..errors import RecordError
from ..record.validation import privacy_errors, schema_errors, validation_errors
from . import bisection, matrix


def sweep_errors(doc: Any) -> list[str]:
    """Every problem of a document, as 'path/to/field: message' (empty when valid): a
    bisection's or a matrix's with its consistency, any other as gpurepro.record.validation
    finds it."""
    schema = str(doc.get("schema", "")) if isinstance(doc, dict) else ""
    if schema.startswith("gpurepro/matrix"):
        return schema_errors(doc) + matrix.consistency_errors(doc) + privacy_errors(doc)
    if schema.startswith("gpurepro/bisect"):
        return schema_errors(doc) + bisection.consistency_errors(doc) + privacy_errors(doc)
    return validation_errors(doc)


def validate_sweep(doc: Any, where: str = "sweep document") -> None:
    """Raise RecordError naming every problem of a sweep's document (``sweep_errors``)."""
    errors = sweep_errors(doc)
    if errors:
        raise RecordError(f"{where} does not match the schema:\n  " + "\n  ".join(errors[:20]))
