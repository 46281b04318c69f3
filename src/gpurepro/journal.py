"""Journal: one JSON line per finished trial, appended and flushed as the run goes.

The first line is a header (case, plan, fingerprint, artifacts, options); every later line is
one trial record. A run interrupted by Ctrl-C, a killed harness or a lost machine keeps every
trial that finished, and ``--resume`` continues from the journal. A torn last line (the harness
killed mid-write) is ignored on reading. Standard library only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

HEADER_KIND = "gpurepro.journal"
TRIAL_KIND = "trial"
STOPPING_KIND = "stopping"  # the sequential-stopping decisions, appended when a run ends


class JournalError(ValueError):
    pass


class Journal:
    def __init__(self, path: Path):
        self.path = Path(path)

    def create(self, header: Mapping[str, Any]) -> None:
        if self.path.exists():
            raise JournalError(f"{self.path} exists; use --resume to continue it")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._append({"kind": HEADER_KIND, **header})

    def append_trial(self, record: Mapping[str, Any]) -> None:
        self._append({"kind": TRIAL_KIND, **record})

    def append_stopping(self, decisions: Mapping[str, Any]) -> None:
        self._append({"kind": STOPPING_KIND, **decisions})

    def _append(self, obj: Mapping[str, Any]) -> None:
        line = json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n"
        # One write of a whole line, then fsync: a crash of the harness loses at most the
        # line being written, which the reader drops.
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def read(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        header: dict[str, Any] | None = None
        stopping: dict[str, Any] | None = None
        trials: list[dict[str, Any]] = []
        for obj in _objects(self.path):
            if obj.get("kind") == HEADER_KIND:
                if header is None:
                    header = obj
            elif obj.get("kind") == TRIAL_KIND:
                trials.append(obj)
            elif obj.get("kind") == STOPPING_KIND:
                stopping = obj
        if header is None:
            raise JournalError(f"{self.path}: no journal header")
        if stopping is not None:  # the last one written (a resumed run writes it again)
            header = {**header, "stopping_result": {k: v for k, v in stopping.items() if k != "kind"}}
        # A trial index appears once; if a resumed run re-ran one, the first record stands.
        seen: set[int] = set()
        unique = []
        for t in trials:
            if t["index"] not in seen:
                seen.add(t["index"])
                unique.append(t)
        return header, unique


def _objects(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                obj = json.loads(line)
            except ValueError:
                continue  # torn final line from an interrupted write
            if isinstance(obj, dict):
                yield obj


def merge(journals: list[Path]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Merge shards of one plan (one per GPU or per call) into one header and trial list."""
    if not journals:
        raise JournalError("no journals to merge")
    header, trials = Journal(journals[0]).read()
    by_index = {t["index"]: t for t in trials}
    for path in journals[1:]:
        other_header, other = Journal(path).read()
        if other_header.get("plan", {}).get("seed") != header.get("plan", {}).get("seed") or (
            other_header.get("plan", {}).get("order") != header.get("plan", {}).get("order")
        ):
            raise JournalError(f"{path}: a different plan than {journals[0]}; cannot merge")
        for t in other:
            by_index.setdefault(t["index"], t)
    return header, [by_index[i] for i in sorted(by_index)]


def _slug(text: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text or "none").strip("-") or "none"


def result_name(header: Mapping[str, Any]) -> str:
    device = header.get("device") or {}
    host = header.get("environment", {}).get("host", {})
    hostname = "redacted" if header.get("environment", {}).get("redacted") else host.get("hostname")
    stamp = str(header.get("started_at", "")).replace("-", "").replace(":", "")
    return f"{stamp}_{_slug(device.get('name') or 'no-gpu')}_{_slug(hostname)}"
