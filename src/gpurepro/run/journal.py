"""Journal: an append-only log of a run, one JSON line per finished trial.

The first line is a header with the run's identity (case, sha256 of the manifest, sha256 of the
plan, a run id) and what the run needs to continue (plan, options, fingerprint, artifacts);
every later line is one trial record (or, at the end, the sequential-stopping decisions).

Guarantees, each tested in tests/test_faults.py:
- a record is one ``write`` of a whole line followed by fsync; a short write (a full disk) is
  rolled back, so the file always ends on a line boundary unless the writer was killed inside
  that one write;
- a writer holds an exclusive ``flock`` for as long as the run goes: a second harness (two
  resumes of one journal) is refused instead of running the same trials again;
- resuming checks the identity (the same case, manifest and plan) and cuts a torn last line
  back to the last complete one, saying so, before it appends anything.

Standard library only.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import JournalError, JournalMismatch

HEADER_KIND = "gpurepro.journal"
TRIAL_KIND = "trial"
STOPPING_KIND = "stopping"  # the sequential-stopping decisions, appended when a run ends
# A cluster run's jobs, tasks and nodes as the submitting side last saw them (cluster.py);
# appended when they change, the last one stands.
SCHEDULER_KIND = "scheduler"
FORMAT = 2  # 2: identity (manifest_sha256, plan_sha256, run_id) in the header


def plan_sha256(plan: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(plan, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _line(obj: Mapping[str, Any]) -> bytes:
    return (json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n").encode()


@dataclass
class Contents:
    header: dict[str, Any]
    trials: list[dict[str, Any]]
    torn_bytes: int = 0  # bytes after the last complete line (a write cut short)
    duplicates: int = 0  # trial lines whose index was already journaled


def parse(data: bytes, where: str) -> Contents:
    """Parse a journal's bytes; only an unterminated last line may be incomplete."""
    cut = data.rfind(b"\n") + 1
    body, torn = data[:cut], len(data) - cut
    header: dict[str, Any] | None = None
    stopping: dict[str, Any] | None = None
    scheduler: dict[str, Any] | None = None
    trials: list[dict[str, Any]] = []
    seen: set[int] = set()
    duplicates = 0
    for number, raw in enumerate(body.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise JournalError(f"{where}: line {number} is not a JSON record ({exc}); "
                               f"the journal is damaged") from None
        kind = obj.get("kind") if isinstance(obj, dict) else None
        if kind == HEADER_KIND and header is None and number == 1:
            header = obj
        elif header is None:
            raise JournalError(f"{where}: not a gpurepro journal (line 1 is no journal header)")
        elif kind == TRIAL_KIND and isinstance(obj.get("index"), int):
            if obj["index"] in seen:
                duplicates += 1  # the first record of an index stands
                continue
            seen.add(obj["index"])
            trials.append(obj)
        elif kind == STOPPING_KIND:
            stopping = obj  # the last one written stands
        elif kind == SCHEDULER_KIND:
            scheduler = obj
        else:
            raise JournalError(f"{where}: line {number} is neither a trial nor a stopping record")
    if header is None:
        raise JournalError(f"{where}: empty or not a gpurepro journal")
    if stopping is not None:
        header = {**header, "stopping_result": {k: v for k, v in stopping.items() if k != "kind"}}
    if scheduler is not None:
        header = {**header, "scheduler_state": {k: v for k, v in scheduler.items() if k != "kind"}}
    return Contents(header, trials, torn, duplicates)


def read(path: Path) -> Contents:
    """Read a journal without taking it over (for `record`)."""
    path = Path(path)
    if path.is_dir():
        raise JournalMismatch(f"{path} is a folder, not a journal file")
    return parse(path.read_bytes(), str(path))


class Journal:
    """A journal opened for writing: locked, appended to, closed."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self._fd = fd

    # -- opening

    @classmethod
    def create(cls, path: Path, header: Mapping[str, Any]) -> Journal:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
        except FileExistsError:
            raise JournalError(f"{path} exists; continue it with --resume {path}") from None
        journal = cls(path, fd)
        journal._lock()
        journal._append({"kind": HEADER_KIND, "journal_format": FORMAT, **header})
        return journal

    @classmethod
    def resume(cls, path: Path) -> tuple[Journal, Contents]:
        """Take a journal over to continue it: locked, torn tail cut, contents parsed."""
        path = Path(path)
        if path.is_dir():
            found = sorted(p.name for p in path.glob("*.journal.jsonl"))[:5]
            hint = f" (journals there: {', '.join(found)})" if found else ""
            raise JournalMismatch(f"--resume needs a journal file; {path} is a folder{hint}")
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        journal = cls(path, fd)
        try:
            journal._lock()
            data = b""
            while chunk := os.pread(fd, 1 << 20, len(data)):
                data += chunk
            contents = parse(data, str(path))
            if contents.torn_bytes:
                os.ftruncate(fd, len(data) - contents.torn_bytes)
                os.fsync(fd)
        except BaseException:
            journal.close()
            raise
        return journal, contents

    def _lock(self) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise JournalError(f"{self.path} is being written by another gpurepro run; "
                               f"wait for it to end (or stop it) before resuming") from None

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # releases the lock
            self._fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- appending

    def append_trial(self, record: Mapping[str, Any]) -> None:
        self._append({"kind": TRIAL_KIND, **record})

    def append_stopping(self, decisions: Mapping[str, Any]) -> None:
        self._append({"kind": STOPPING_KIND, **decisions})

    def append_scheduler(self, state: Mapping[str, Any]) -> None:
        self._append({"kind": SCHEDULER_KIND, **state})

    def _append(self, obj: Mapping[str, Any]) -> None:
        line = _line(obj)
        size = os.fstat(self._fd).st_size
        try:
            written = os.write(self._fd, line)
            if written != len(line):  # a full disk (or a file-size limit) cut the write short
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
            os.fsync(self._fd)
        except OSError:
            # Leave the file on a line boundary: the partial line is no record.
            try:
                os.ftruncate(self._fd, size)
            except OSError:
                pass
            raise


def verify_identity(header: Mapping[str, Any], case_name: str, manifest_sha256: str | None,
                    where: str) -> None:
    """A resume continues the same case, manifest and plan, or refuses."""
    if header.get("journal_format", 1) < FORMAT:
        raise JournalMismatch(f"{where} was written by an older gpurepro without a run identity; "
                              f"it can be recorded (gpurepro record) but not resumed")
    if header.get("case") != case_name:
        raise JournalMismatch(f"{where} is a journal of case {header.get('case')!r}, "
                              f"not of {case_name!r}")
    if manifest_sha256 and header.get("manifest_sha256") != manifest_sha256:
        raise JournalMismatch(f"{where}: the manifest of {case_name} changed since this run "
                              f"started; a resumed run must run the same case definition")
    if plan_sha256(header.get("plan", {})) != header.get("plan_sha256"):
        raise JournalMismatch(f"{where}: its plan does not match the plan hash in its header")


def check_trials(contents: Contents, where: str) -> None:
    """Every trial line must belong to the header's plan (index in range, same arm)."""
    order = contents.header.get("plan", {}).get("order", [])
    for t in contents.trials:
        i = t.get("index")
        if not isinstance(i, int) or not 0 <= i < len(order) or order[i].get("arm") != t.get("arm"):
            raise JournalMismatch(f"{where}: trial record {i} ({t.get('arm')}) is not part of "
                                  f"this journal's plan")


def merge(journals: list[Path]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Merge shards of one plan (one per GPU or per call) into one header and trial list."""
    if not journals:
        raise JournalError("no journals to merge")
    first = read(journals[0])
    header, by_index = first.header, {t["index"]: t for t in first.trials}
    for path in journals[1:]:
        other = read(path)
        if (plan_sha256(other.header.get("plan", {})) != plan_sha256(header.get("plan", {}))):
            raise JournalMismatch(f"{path}: a different plan than {journals[0]}; cannot merge")
        for t in other.trials:
            by_index.setdefault(t["index"], t)
    return header, [by_index[i] for i in sorted(by_index)]


def _slug(text: str | None) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text or "none").strip("-") or "none"


def result_name(header: Mapping[str, Any]) -> str:
    device = header.get("device") or {}
    host = header.get("environment", {}).get("host", {})
    hostname = "redacted" if header.get("environment", {}).get("redacted") else host.get("hostname")
    stamp = str(header.get("started_at", "")).replace("-", "").replace(":", "")
    where = device.get("name") or "no-gpu"
    if header.get("cluster"):  # a cluster run: its partitions, not the submitting node's GPU
        where = "slurm-" + "-".join(header["cluster"]["partitions"])
    return f"{stamp}_{_slug(where)}_{_slug(hostname)}"
