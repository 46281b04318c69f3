"""A rerun that checks itself against the document it reruns (``--rerun-of RESULT.json``, or
``GPUREPRO_RERUN_OF``, which the issue comment's rerun block sets).

After the build, the artifacts the trials will use are compared with the document's, name by
name and sha256 by sha256, and so are the runtime wheels: how many are identical, and each that
differs with both hashes. After the record, the rerun's verdict is compared with the
document's: the same status and no claim decided the other way is **reproduced**, anything else
**not reproduced**; a rerun that could not run its trials (no CUDA driver, a GPU that cannot run
the case, a failed build, a harness error, arguments this commit does not take) **could not
run**. Each has an exit status of its own (``EXIT_REPRODUCED``, ``EXIT_NOT_REPRODUCED``,
``EXIT_COULD_NOT_RUN``: 0, 6 and 125, git bisect run's "skip"), so that ``git bisect run``
works on a case (docs/running.md).

Standard library only: `run` reads a document on a GPU node with nothing else installed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError

# What other modules use; the rest is this module's own.
__all__ = [
    "artifact_hashes", "compare_hashes", "compare_verdicts", "DECIDED", "decisions", "Expected",
    "HashCheck", "read_expected", "VARIABLE", "wheel_hashes"
]

VARIABLE = "GPUREPRO_RERUN_OF"
DECIDED = ("supported", "contradicted")


@dataclass(frozen=True)
class Expected:
    """What the document a rerun reruns says: its artifacts, wheels, verdict and decisions."""

    path: Path
    case: str
    target: str | None
    artifacts: Mapping[str, str]  # artifact name -> sha256
    wheels: Mapping[str, str]  # runtime wheel file -> sha256
    python: str | None  # the Python its runtime wheels were for
    status: str
    decisions: Mapping[str, str]  # claim -> supported / contradicted / not_decided


def read_expected(given: str, case: str, cwd: Path) -> Expected:
    """The document ``given`` names (relative to ``cwd``), as a rerun of ``case`` expects it,
    or a UsageError in one line saying why it is none."""
    path = Path(given)
    path = path if path.is_absolute() else cwd / path
    what = f"--rerun-of {given}"
    if not path.is_file():
        raise UsageError(f"{what}: no such file; give the result document the rerun repeats")
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{what}: not a JSON result document ({exc})") from None
    if not isinstance(doc, dict) or not str(doc.get("schema", "")).startswith("gpurepro/result") \
            or not isinstance(doc.get("case"), dict) or not isinstance(doc.get("verdict"), dict):
        raise UsageError(f"{what}: not a gpurepro result document")
    named = doc["case"].get("name")
    if named != case:
        raise UsageError(f"{what}: a document of {named!r}, not of {case!r}")
    runtime: dict[str, Any] = doc["runtime"] if isinstance(doc.get("runtime"), dict) else {}
    return Expected(
        path=path, case=case, target=(doc.get("device") or {}).get("target"),
        artifacts={str(k): str(v.get("sha256")) for k, v in (doc.get("artifacts") or {}).items()
                   if isinstance(v, dict)},
        wheels={str(k): str(v.get("sha256")) for k, v in (runtime.get("wheels") or {}).items()
                if isinstance(v, dict)},
        python=runtime.get("python"),
        status=str(doc["verdict"].get("status")),
        decisions=decisions(doc))


def decisions(doc: Mapping[str, Any]) -> dict[str, str]:
    return {str(c.get("name")): str(c.get("decision")) for c in doc.get("claims") or []
            if isinstance(c, dict)}


@dataclass(frozen=True)
class HashCheck:
    """Files compared by name and sha256: identical, differing (name, rebuilt, document's),
    only in the document, only in the rebuild."""

    what: str  # "artifacts", "runtime wheels"
    identical: tuple[str, ...]
    differ: tuple[tuple[str, str, str], ...]
    only_document: tuple[tuple[str, str], ...]
    only_rebuilt: tuple[tuple[str, str], ...]

    @property
    def all_identical(self) -> bool:
        return not (self.differ or self.only_document or self.only_rebuilt)

    def lines(self, document: str) -> list[str]:
        total = len(self.identical) + len(self.differ) + len(self.only_document)
        out = [f"rerun check: {len(self.identical)} of {total} {self.what} identical to "
               f"{document}'s"]
        out += [f"  differs: {name}: rebuilt sha256 {mine}, the document's {theirs}"
                for name, mine, theirs in self.differ]
        out += [f"  not rebuilt: {name} (the document's sha256 {theirs})"
                for name, theirs in self.only_document]
        out += [f"  not in the document: {name} (rebuilt sha256 {mine})"
                for name, mine in self.only_rebuilt]
        return out


def compare_hashes(what: str, rebuilt: Mapping[str, str], document: Mapping[str, str]) -> HashCheck:
    names = sorted(set(rebuilt) | set(document))
    return HashCheck(
        what=what,
        identical=tuple(n for n in names if n in rebuilt and rebuilt[n] == document.get(n)),
        differ=tuple((n, rebuilt[n], document[n]) for n in names
                     if n in rebuilt and n in document and rebuilt[n] != document[n]),
        only_document=tuple((n, document[n]) for n in names if n not in rebuilt),
        only_rebuilt=tuple((n, rebuilt[n]) for n in names if n not in document))


def artifact_hashes(artifacts: Mapping[str, Any]) -> dict[str, str]:
    """Name -> sha256 of a build index's (or a journal header's) artifacts."""
    return {str(k): str(v["sha256"]) for k, v in artifacts.items()}


def wheel_hashes(index: Mapping[str, Any] | None) -> dict[str, str]:
    """Wheel file -> sha256 of a runtime index (gpurepro.building.runtime)."""
    return {str(w["file"]): str(w["sha256"]) for w in ((index or {}).get("wheels") or {}).values()}


@dataclass(frozen=True)
class VerdictCheck:
    """The rerun's verdict against the document's."""

    status: str  # the rerun's
    expected: str  # the document's
    alike: tuple[str, ...]  # claims decided the same way in both
    flipped: tuple[tuple[str, str, str], ...]  # claim, the document's decision, the rerun's
    only_document: tuple[str, ...]  # decided in the document, not in the rerun

    @property
    def reproduced(self) -> bool:
        return self.status == self.expected and not self.flipped

    def line(self, document: str, artifacts: HashCheck | None) -> str:
        if self.reproduced:
            said = (f"rerun check: reproduced: verdict {self.status}, as {document}'s; "
                    f"{_count(len(self.alike), 'claim')} decided alike")
            if self.only_document:
                said += f", {len(self.only_document)} decided there and not here"
        else:
            why = ([] if self.status == self.expected else
                   [f"verdict {self.status}, the document's {self.expected}"])
            why += [f"{name} {mine} here, {theirs} there" for name, theirs, mine in self.flipped]
            said = f"rerun check: not reproduced: {'; '.join(why)}"
        if artifacts is not None and not artifacts.all_identical:
            changed = len(artifacts.differ) + len(artifacts.only_document) + len(
                artifacts.only_rebuilt)
            said += f" (with {_count(changed, 'artifact')} not identical to the document's: above)"
        return said


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def compare_verdicts(rerun: Mapping[str, Any], expected: Expected) -> VerdictCheck:
    mine = decisions(rerun)
    both = [n for n in expected.decisions if expected.decisions[n] in DECIDED
            and mine.get(n) in DECIDED]
    return VerdictCheck(
        status=str(rerun["verdict"]["status"]), expected=expected.status,
        alike=tuple(n for n in both if mine[n] == expected.decisions[n]),
        flipped=tuple((n, expected.decisions[n], mine[n]) for n in both
                      if mine[n] != expected.decisions[n]),
        only_document=tuple(n for n in expected.decisions if expected.decisions[n] in DECIDED
                            and mine.get(n) not in DECIDED))
