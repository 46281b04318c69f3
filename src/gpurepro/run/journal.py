"""Journal: an append-only log of a run, one JSON line per finished trial.

The first line is a header with the run's identity (case, sha256 of the manifest, sha256 of the
plan, a run id) and what the run needs to continue (plan, options, fingerprint, artifacts);
every later line is one trial record (or, at the end, the sequential-stopping decisions). The
lines are handed on typed (``Contents.run``, ``Contents.records``: gpurepro.model.journal).

Guarantees, each tested in tests/e2e/test_faults.py:
- a record is one ``write`` of a whole line followed by fsync; a short write (a full disk) is
  rolled back, so the file always ends on a line boundary unless the writer was killed inside
  that one write;
- a writer holds an exclusive ``flock`` for as long as the run goes: a second harness (two
  resumes of one journal) is refused instead of running the same trials again;
- resuming checks the identity (the same case, manifest and plan) and cuts a torn last line
  back to the last complete one, saying so, before it appends anything;
- a new journal appears under its name only once its lock is held and its header written
  (created beside it and linked into place): a lock that cannot be taken names the file and
  leaves nothing behind;
- every line after the header carries ``chain``, the sha256 of the line before it (its chain
  value; the header's bytes for the first) and of the line itself without ``chain``: a line
  edited, repeated, moved or removed, or an edited header, breaks the chain at a line that is
  named. Journals from before the chain (format 2 and older) are read as before, and say so
  (``Contents.chained``); one whose lines carry the chain but whose header says format 2 or
  older (a format lowered to turn the check off) is refused;
- a run whose execution finished ends with an end record (format 4) that carries, from
  format 5, the number of trials journaled and the chain value before it (the chain's head);
  the same pair is then written into the header's ``sealed`` field (a fixed-width slot that the
  chain does not cover, written in place): a complete journal whose last lines were removed,
  its end record with them, is named instead of read as a stopped run, and one rechained after
  an edit no longer matches its seal;
- from format 6 the slot holds, until the seal replaces it, the open run's token (random), and
  the header (under the chain) the token's sha256 (``seal_lock``): writing the seal destroys
  the token, so a completed journal cut back and its seal overwritten (with spaces, or any
  token made up) reads as neither a complete run nor a stopped one, and is refused. In format
  5 a blank slot is a run that has not ended, and such a journal is read as it was;
- a tail of NUL bytes (and line breaks among them), which a crash leaves on some file systems
  where the last write's blocks were allocated and never written, is a torn tail like an
  unterminated last line.

What this protects against: accidents (a torn write, a full disk, a copy cut short) and naive
edits (a line changed, removed, repeated, moved, the header changed, a completed run cut back
with its seal overwritten). Not against a forger: a checksum without a secret can be computed
again by anyone who edits the file (the chain, the end record, the seal and a new token with
its lock alike), and whoever kept the token of a journal from before its run ended can write it
back. The defence against a forger is `validate` recomputing every figure, claim and verdict
from the trials, and a rerun.

Standard library only.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import JournalError, JournalMismatch
from ..model.journal import RunHeader, TrialRecord
from .stops import stops_held

# What other modules use; the rest is this module's own.
__all__ = [
    "CHAIN_FORMAT", "CHAIN_KEY", "chain_next", "chain_start", "check_trials", "Contents",
    "END_FORMAT", "END_KIND", "FORMAT", "HEADER_KIND", "Journal", "LOCK_KEY", "lock_of",
    "merge", "OPEN_PREFIX", "open_slot", "parse", "plan_sha256", "read", "refuse_unchained",
    "result_name", "RunHeader", "SEAL_KEY", "seal_offset", "seal_text", "SEAL_WIDTH",
    "TrialRecord", "UNSEALED", "verify_identity"
]

HEADER_KIND = "gpurepro.journal"
TRIAL_KIND = "trial"
STOPPING_KIND = "stopping"  # the sequential-stopping decisions, appended when a run ends
# A cluster run's jobs, tasks and nodes as the submitting side last saw them (cluster.py);
# appended when they change, the last one stands.
SCHEDULER_KIND = "scheduler"
# A resume: when, on which device and driver, and whether --other-device let it continue there.
RESUMED_KIND = "resumed"
# The run's execution finished (every planned trial, or its design stopped it): a journal of
# format 4 or later without one was stopped (or is still running).
END_KIND = "end"
# 2: identity (manifest_sha256, plan_sha256, run_id) in the header; 3: the hash chain; 4: the
# end record; 5: the end record's trial count and chain head, and the header's seal; 6: the
# seal's slot holds the open run's token until the seal replaces it, the token's sha256 in the
# header (under the chain)
FORMAT = 6
END_FORMAT = 4
SEAL_FORMAT = 5
LOCK_FORMAT = 6
SEAL_KEY = "sealed"
# The seal's slot in the header: "<trials> <chain head>" padded with spaces to a fixed width,
# so that writing it in place changes no other byte of the file.
SEAL_WIDTH = 96
UNSEALED = " " * SEAL_WIDTH
_SEAL_PREFIX = f'"{SEAL_KEY}":"'.encode()
# Format 6: while the run has not ended the slot holds "open <token>" (a random token), and the
# header's LOCK_KEY its sha256. Writing the seal destroys the token: a journal whose run ended
# cannot be made to read as a stopped one again by an edit that computes no hash (its slot
# blanked, or any token written there, is refused), so a cut-back complete journal is named.
LOCK_KEY = "seal_lock"
OPEN_PREFIX = "open "
IDENTITY_FORMAT = 2  # the oldest format that can be resumed
CHAIN_FORMAT = 3
CHAIN_KEY = "chain"


def plan_sha256(plan: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(plan, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _line(obj: Mapping[str, Any]) -> bytes:
    """One record as its line. JSON has no NaN or infinity (``record`` refuses them, and so
    does every other reader that follows the standard): a record holding one is refused here,
    before anything is written, naming where it is."""
    try:
        text = json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except ValueError:
        raise JournalError(f"{_described(obj)} holds a number JSON cannot carry (NaN or "
                           f"infinity) at {nonfinite_path(obj)}; nothing was written") from None
    return (text + "\n").encode()


def nonfinite_path(obj: Any, path: str = "") -> str | None:
    """Where the first NaN or infinity in ``obj`` is, as a path of keys and indices."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return path or "the top level"
    items = (obj.items() if isinstance(obj, Mapping)
             else enumerate(obj) if isinstance(obj, (list, tuple)) else ())
    for key, value in items:
        found = nonfinite_path(value, f"{path}.{key}" if path else str(key))
        if found:
            return found
    return None


def chain_start(header_line: bytes) -> str:
    """The chain value before the first record: the header line's own bytes, hashed (with its
    seal's slot as it was before the seal was written: the seal is written last)."""
    at = seal_offset(header_line)
    if at is not None:
        header_line = header_line[:at] + UNSEALED.encode() + header_line[at + SEAL_WIDTH:]
    return hashlib.sha256(header_line).hexdigest()


def seal_offset(header_line: bytes) -> int | None:
    """Where the seal's value starts in the header line (None: a header without a seal)."""
    at = header_line.find(_SEAL_PREFIX)
    if at < 0:
        return None
    at += len(_SEAL_PREFIX)
    if header_line[at + SEAL_WIDTH: at + SEAL_WIDTH + 1] != b'"':
        return None  # not the slot the writer made: the chain start then covers it as it is
    return at


def seal_text(trials: int, head: str) -> str:
    return f"{trials} {head}".ljust(SEAL_WIDTH)


def open_slot(token: str) -> str:
    """The seal's slot of a format-6 journal whose run has not ended."""
    return f"{OPEN_PREFIX}{token}".ljust(SEAL_WIDTH)


def lock_of(token: str) -> str:
    """What the header's LOCK_KEY holds for the open run's ``token``."""
    return hashlib.sha256(token.encode()).hexdigest()


def _seal_of(header: Mapping[str, Any], where: str) -> tuple[int, str] | None:
    """The header's seal as (trials, head); None while the run has not ended (format 6: the
    slot holds the token whose sha256 the header's lock holds)."""
    value = header.get(SEAL_KEY)
    lock = header.get(LOCK_KEY)
    if lock is not None:
        if isinstance(value, str) and value.startswith(OPEN_PREFIX):
            if lock_of(value[len(OPEN_PREFIX):].rstrip(" ")) == lock:
                return None
            raise JournalMismatch(
                f"{where}: its header's seal slot holds another token than the run's own "
                f"({SEAL_KEY} was edited): it is neither a complete run nor a stopped one")
        if value == UNSEALED:
            raise JournalMismatch(
                f"{where}: its header's seal slot is blank where the run's open token or its "
                f"seal must be: a completed run's seal was overwritten (its last lines cut "
                f"back?); it is not a stopped run to resume")
    elif value == UNSEALED:
        return None
    parts = value.split() if isinstance(value, str) and len(value) == SEAL_WIDTH else []
    if len(parts) != 2 or not parts[0].isdigit() or not re.fullmatch(r"[0-9a-f]{64}", parts[1]):
        raise JournalMismatch(f"{where}: its header's seal ({SEAL_KEY}) is damaged: "
                              f"{str(value).strip()[:80]!r}")
    return int(parts[0]), parts[1]


def chain_next(previous: str, obj: Mapping[str, Any]) -> str:
    """The chain value of a record (without its ``chain``) that follows ``previous``."""
    body = {k: v for k, v in obj.items() if k != CHAIN_KEY}
    return hashlib.sha256(previous.encode() + b"\n" + _line(body)).hexdigest()


def _described(obj: Any) -> str:
    if isinstance(obj, Mapping) and obj.get("kind") == HEADER_KIND:
        return "the journal's header"
    if isinstance(obj, dict) and obj.get("kind") == TRIAL_KIND:
        return f"trial {obj.get('index')} ({obj.get('arm')}, {obj.get('outcome')})"
    return f"a {obj.get('kind') if isinstance(obj, dict) else 'non-object'} record"


@dataclass
class Contents:
    header: dict[str, Any]
    trials: list[dict[str, Any]]
    torn_bytes: int = 0  # bytes after the last complete line (a write cut short)
    duplicates: int = 0  # trial lines whose index was already journaled
    # The chain value of the last complete record (None: a journal from before the chain)
    chain: str | None = None
    # Repeated trial lines of a journal without the chain: "line N repeats trial I (same|...)"
    repeated: tuple[str, ...] = ()

    @property
    def chained(self) -> bool:
        """Whether every line was checked against the hash chain (format 3 and later)."""
        return self.chain is not None

    @property
    def run(self) -> RunHeader:
        """The header, typed (gpurepro.model.journal)."""
        return RunHeader.from_json(self.header)

    @property
    def records(self) -> tuple[TrialRecord, ...]:
        """The trials, typed, in the order journaled."""
        return tuple(TrialRecord.from_json(t, f"trial {i}") for i, t in enumerate(self.trials))


def parse(data: bytes, where: str) -> Contents:
    """Parse a journal's bytes; only an unterminated last line may be incomplete, or a tail
    of NUL bytes (with line breaks among them) that a crash left where the last write's blocks
    were allocated and never written (some file systems): both are a torn tail, from the start
    of the line they begin in."""
    kept = len(data.rstrip(b"\x00\n"))
    nul = data.find(b"\x00", kept)  # the first NUL of a tail of NULs and line breaks
    cut = data.rfind(b"\n", 0, nul) + 1 if nul >= 0 else data.rfind(b"\n") + 1
    body, torn = data[:cut], len(data) - cut
    header: dict[str, Any] | None = None
    stopping: dict[str, Any] | None = None
    scheduler: dict[str, Any] | None = None
    trials: list[dict[str, Any]] = []
    seen: dict[int, dict[str, Any]] = {}
    duplicates = 0
    repeated: list[str] = []
    resumed: list[dict[str, Any]] = []
    ended: dict[str, Any] | None = None
    ends: list[tuple[int, str]] = []  # (trials, head) of each end record (format 5)
    chain: str | None = None
    for number, raw in enumerate(body.splitlines(keepends=True), 1):
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
            if isinstance(obj.get("journal_format"), int) and obj["journal_format"] >= CHAIN_FORMAT:
                chain = chain_start(raw)
            continue
        elif header is None:
            raise JournalError(f"{where}: not a gpurepro journal (line 1 is no journal header)")
        if chain is None and isinstance(obj, dict) and CHAIN_KEY in obj:
            raise JournalMismatch(
                f"{where}: line {number} carries the hash chain, but the header says format "
                f"{header.get('journal_format', 1)}, from before the chain: the header's format "
                f"was lowered (which would turn the chain's check off)")
        if chain is not None and kind == END_KIND and isinstance(obj, dict) \
                and isinstance(obj.get("trials"), int) and obj.get("head") is not None \
                and (obj["trials"] != len(trials) or obj["head"] != chain):
            raise JournalMismatch(
                f"{where}: line {number}, the end record, says the run journaled "
                f"{obj['trials']} trial(s) before it, and {len(trials)} are there"
                + ("" if obj["trials"] != len(trials) else " with other lines (its chain head "
                   "differs)") + ": lines before it were removed or changed")
        if chain is not None:
            expected = chain_next(chain, obj) if isinstance(obj, dict) else None
            if expected is None or obj.get(CHAIN_KEY) != expected:
                raise JournalMismatch(
                    f"{where}: line {number} ({_described(obj)}) breaks the journal's hash "
                    f"chain: that line was edited, repeated or moved, or a line before it "
                    f"(the header included) was edited or removed")
            chain = expected
            obj = {k: v for k, v in obj.items() if k != CHAIN_KEY}
        if kind == TRIAL_KIND and isinstance(obj.get("index"), int):
            if obj["index"] in seen:
                duplicates += 1  # the first record of an index stands
                same = seen[obj["index"]] == obj
                repeated.append(f"line {number} repeats trial {obj['index']}"
                                + (" (the same record)" if same else
                                   f" with another record ({seen[obj['index']].get('outcome')} "
                                   f"first, {obj.get('outcome')} here)"))
                continue
            seen[obj["index"]] = obj
            trials.append(obj)
            ended = None  # an end record stands only for the trials before it
        elif kind == STOPPING_KIND:
            stopping = obj  # the last one written stands
        elif kind == SCHEDULER_KIND:
            scheduler = obj
        elif kind == RESUMED_KIND:
            resumed.append({k: v for k, v in obj.items() if k != "kind"})
        elif kind == END_KIND:
            ended = {k: v for k, v in obj.items() if k != "kind"}
            if isinstance(obj.get("trials"), int) and obj.get("head"):
                ends.append((obj["trials"], obj["head"]))
        else:
            raise JournalError(f"{where}: line {number} is neither a trial nor a stopping record")
    if header is None:
        raise JournalError(f"{where}: empty or not a gpurepro journal")
    seal = _seal_of(header, where) if chain is not None and SEAL_KEY in header else None
    if seal is not None and seal not in ends:
        raise JournalMismatch(
            f"{where}: its header says the run ended with {seal[0]} trial(s) journaled, and "
            + (f"no end record is there ({len(trials)} trial(s)): its last lines were removed"
               if not ends else
               f"its end record says {ends[-1][0]} (chain head {ends[-1][1][:12]}…, the seal "
               f"{seal[1][:12]}…): its lines were changed and their chain computed again")
            + "; it is not a stopped run to resume")
    if stopping is not None:
        header = {**header, "stopping_result": {k: v for k, v in stopping.items() if k != "kind"}}
    if scheduler is not None:
        header = {**header, "scheduler_state": {k: v for k, v in scheduler.items() if k != "kind"}}
    if resumed:
        header = {**header, "resumed": resumed}
    if ended is not None:
        header = {**header, "ended": ended}
    return Contents(header, trials, torn, duplicates, chain, tuple(repeated))


def read(path: Path) -> Contents:
    """Read a journal without taking it over (for `record`)."""
    path = Path(path)
    if path.is_dir():
        raise JournalMismatch(f"{path} is a folder, not a journal file")
    return parse(path.read_bytes(), str(path))


class Journal:
    """A journal opened for writing: locked, appended to, closed."""

    def __init__(self, path: Path, fd: int, chain: str | None = None):
        self.path = path
        self._fd = fd
        self._chain = chain  # the last record's chain value; None: a journal without the chain
        self._seal_at: int | None = None  # the offset of the header's seal slot (format 5)
        self._indices: set[int] = set()  # the trials journaled (for the end record's count)

    # -- opening

    @classmethod
    def create(cls, path: Path, header: Mapping[str, Any]) -> Journal:
        """A new journal: written and locked under a name of its own beside ``path``, then
        linked to ``path`` (refused if that exists), so the name never shows an empty or
        unlocked journal."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            raise _exists(path)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.creating")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o644)
        journal = cls(path, fd)
        try:
            journal._lock()
            token = os.urandom(32).hex()
            line = _line({"kind": HEADER_KIND, "journal_format": FORMAT, **header,
                          LOCK_KEY: lock_of(token), SEAL_KEY: open_slot(token)})
            journal._write(line)
            journal._chain = chain_start(line)
            journal._seal_at = seal_offset(line)
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise _exists(path) from None
        except BaseException:
            journal.close()
            raise
        finally:
            tmp.unlink(missing_ok=True)
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
        journal._chain = contents.chain
        first = data[: data.find(b"\n") + 1]
        if contents.chained and SEAL_KEY in contents.header:
            journal._seal_at = seal_offset(first)
        journal._indices = {t["index"] for t in contents.trials}
        return journal, contents

    def _lock(self) -> None:
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise JournalError(f"{self.path} is being written by another gpurepro run; "
                               f"wait for it to end (or stop it) before resuming") from None
        except OSError as exc:  # a file system without working flock (some network ones)
            failed = JournalError(f"{self.path}: cannot lock the journal ({exc.strerror or exc}); "
                                  f"a run needs a file system with working flock: put the "
                                  f"journal on a local disk (--journal PATH or --out-dir)")
            failed.errno = exc.errno  # type: ignore[attr-defined]  # for ShardJournal
            raise failed from None

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
        if isinstance(record.get("index"), int):
            self._indices.add(record["index"])

    def append_stopping(self, decisions: Mapping[str, Any]) -> None:
        self._append({"kind": STOPPING_KIND, **decisions})

    def append_scheduler(self, state: Mapping[str, Any]) -> None:
        self._append({"kind": SCHEDULER_KIND, **state})

    def append_resumed(self, resumed: Mapping[str, Any]) -> None:
        self._append({"kind": RESUMED_KIND, **resumed})

    def append_end(self, ended: Mapping[str, Any]) -> None:
        """The run's execution finished: the end record (the trials journaled, the chain's
        head before it), then the same pair written into the header's seal."""
        head = self._chain
        count = len(self._indices)
        self._append({"kind": END_KIND, **ended, "trials": count,
                      **({"head": head} if head is not None else {})})
        if self._seal_at is not None and head is not None:
            self._seal(seal_text(count, head))

    def _seal(self, text: str) -> None:
        """Write the seal into the header's slot in place (the journal's descriptor appends:
        O_APPEND makes pwrite append on Linux, so through a second one)."""
        assert self._seal_at is not None
        fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            if os.pwrite(fd, text.encode(), self._seal_at) != SEAL_WIDTH:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
            os.fsync(fd)
        finally:
            os.close(fd)

    def _append(self, obj: Mapping[str, Any]) -> None:
        chain = chain_next(self._chain, obj) if self._chain is not None else None
        # A stop that arrives after the line is written and before the chain follows it
        # would chain the stop's own last record (a cluster run saves its scheduler state
        # when stopped) from the line before, and the journal would read as edited.
        with stops_held():
            self._write(_line(obj if chain is None else {**obj, CHAIN_KEY: chain}))
            if chain is not None:
                self._chain = chain

    def _write(self, line: bytes) -> None:
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
    if header.get("journal_format", 1) < IDENTITY_FORMAT:
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


def refuse_unchained(contents: Contents, where: str, allowed: bool) -> None:
    """A journal from before the hash chain (format 2 or older) is read only when asked for
    (``--old-journal``): nothing checks its lines, and a newer journal whose header's format
    was lowered reads the same."""
    if not contents.chained and not allowed:
        raise JournalMismatch(
            f"{where} is a journal of format {contents.header.get('journal_format', 1)}, from "
            f"before the hash chain: nothing checks that its lines were not edited (a newer "
            f"journal's format lowered reads the same); give --old-journal to read it as it is")


def _exists(path: Path) -> JournalError:
    return JournalError(f"{path} exists; continue it with --resume {path}")


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
    if header.get("name_suffix"):  # two runs started in the same second get two names
        stamp += f"-{_slug(str(header['name_suffix']))}"
    where = device.get("name") or "no-gpu"
    if header.get("cluster"):  # a cluster run: its partitions, not the submitting node's GPU
        where = "slurm-" + "-".join(header["cluster"]["partitions"])
    return f"{stamp}_{_slug(where)}_{_slug(hostname)}"
