"""The commit a result document names: one whose manifest is the one the run ran.

A journal's fingerprint names a commit (the checkout's HEAD, or ``GPUREPRO_COMMIT``), and its
header the sha256 of the manifest the trials ran. Record never writes a commit whose manifest
is another: the named commit where its ``cases/<case>/manifest.py`` has that sha256; else,
from the history HEAD reaches, the newest commit before the run started that holds it, or the
first after (gpurepro.env.commits.nearest_to); else none, said plainly. The commit the run
named is kept beside it, with how the commit was found (``environment.repository.manifest``).

What the history gave is written beside the journal (``<run>.commit``, one JSON line), and a
later record reads it from there: a clone whose history is shallow (CI's may be), or a tree
without git, records the same document. Where its commit is in the history, it is checked
again; one that does not hold the run's manifest is refused.
"""

from __future__ import annotations

import calendar
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..env import commits
from ..errors import RecordError
from ..model.journal import RunHeader

# What other modules use; the rest is this module's own.
__all__ = [
    "AFTER", "BEFORE", "find", "Found", "manifest_path", "NAMED", "NONE", "note", "pin_path",
    "repository", "write_pin"
]

PIN_SUFFIX = ".commit"
# How the commit was found; the notes below say each in words.
NAMED, BEFORE, AFTER, NONE = "named", "newest-before-run", "first-after-run", "none"
UNRECORDED, UNCHECKED = "unrecorded", "unchecked"


@dataclass(frozen=True)
class Found:
    """What record writes: the commit to check out (None: none known), the one the run named,
    how the first was found, and whether it came from the history here (then worth pinning)."""

    commit: str | None
    named: str | None
    manifest_sha256: str | None
    found: str
    from_history: bool = False

    def pin(self) -> dict[str, Any]:
        return {"commit": self.commit, "found": self.found, "manifest_sha256": self.manifest_sha256,
                "named": self.named}


def pin_path(journal: Path) -> Path:
    """``<run>.commit`` beside ``<run>.journal.jsonl`` (not .json: results/ holds documents)."""
    name = journal.name
    stem = name[: -len(".journal.jsonl")] if name.endswith(".journal.jsonl") else journal.stem
    return journal.with_name(stem + PIN_SUFFIX)


def manifest_path(run: RunHeader) -> str:
    """The run's manifest, relative to the repository, as its header names it."""
    return run.manifest or f"cases/{run.case}/manifest.py"


def _started(run: RunHeader) -> int | None:
    try:
        return calendar.timegm(time.strptime(str(run.started_at), "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return None


def find(run: RunHeader, root: Path, journal: Path | None) -> Found:
    """The commit a document of this journal names (see the module's docstring)."""
    named = run.repository.get("commit")
    want = run.manifest_sha256
    if not want:
        return Found(named, named, None, UNRECORDED)
    pinned = _read_pin(journal, want, named) if journal is not None else None
    if pinned is not None:
        _check_pin(pinned, root, manifest_path(run))
        return pinned
    path = manifest_path(run)
    if not commits.own_repository(root):
        return Found(None, named, want, UNCHECKED)
    full = commits.resolve(root, named) if named else None
    if full and commits.manifest_at(root, full, path) == want:
        return Found(full, named, want, NAMED, from_history=True)
    if commits.shallow(root):
        return Found(None, named, want, UNCHECKED)
    started = _started(run)
    chosen = commits.nearest_to(commits.holders(root, path, want), started)
    if chosen is None:
        return Found(None, named, want, NONE, from_history=True)
    how = BEFORE if started is not None and chosen.time <= started else AFTER
    return Found(chosen.sha, named, want, how, from_history=True)


def _read_pin(journal: Path, want: str, named: str | None) -> Found | None:
    path = pin_path(journal)
    try:
        pin = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise RecordError(f"{path}: not the commit record of a run ({exc})") from None
    if not isinstance(pin, dict) or pin.get("manifest_sha256") != want or pin.get("named") != named:
        raise RecordError(f"{path} is another run's: it names manifest "
                          f"{str(pin.get('manifest_sha256') if isinstance(pin, dict) else None)[:12]}… "
                          f"and commit {pin.get('named') if isinstance(pin, dict) else None}, the "
                          f"journal {want[:12]}… and {named}")
    return Found(pin.get("commit"), named, want, str(pin.get("found")))


def _check_pin(pinned: Found, root: Path, path: str) -> None:
    """A pinned commit that this history holds must hold the run's manifest."""
    if pinned.commit is None or not commits.own_repository(root):
        return
    full = commits.resolve(root, pinned.commit)
    if full is not None and commits.manifest_at(root, full, path) != pinned.manifest_sha256:
        raise RecordError(f"the commit record beside the journal names {pinned.commit}, whose "
                          f"{path} is not the manifest the run ran; remove it and record again")


def write_pin(found: Found, journal: Path) -> Path | None:
    """Keep what the history gave beside the journal, once; None when there is nothing to keep
    or it is kept already."""
    path = pin_path(journal)
    if not found.from_history or path.exists():
        return None
    path.write_text(json.dumps(found.pin(), sort_keys=True) + "\n")
    return path


def repository(run: RunHeader, found: Found, path: str) -> dict[str, Any]:
    """The document's ``environment.repository``: the run's record with the commit found in
    place of the one named, and how (``manifest``)."""
    repo = dict(run.repository)
    repo["commit"] = found.commit
    repo["manifest"] = {"path": path, "sha256": found.manifest_sha256, "named_commit": found.named,
                        "found": found.found, "note": note(found, path)}
    return repo


def _short(commit: str | None) -> str:
    return (commit or "")[:12]


def note(found: Found, path: str) -> str:
    """How the commit was found, in one sentence."""
    sha = f"sha256 {_short(found.manifest_sha256)}…"
    named = (f"the run named {_short(found.named)}, which does not hold the {path} it ran"
             if found.named else "the run named no commit")
    if found.found == NAMED:
        return f"{_short(found.commit)}, the commit the run named, holds the {path} it ran ({sha})"
    if found.found == BEFORE:
        return (f"{named}; {_short(found.commit)} is the newest commit before the run that holds "
                f"it ({sha})")
    if found.found == AFTER:
        return (f"{named}; no commit before the run holds it, and {_short(found.commit)}, "
                f"committed after the run started, is the first that does ({sha})")
    if found.found == NONE:
        return f"{named}; no commit of the history holds it ({sha})"
    if found.found == UNRECORDED:
        return (f"the journal predates manifest hashes: {_short(found.named) or 'no commit'} is "
                f"the commit the run named, not checked against the manifest it ran")
    return (f"not checked: the history where this was recorded is shallow or missing; record "
            f"the journal again in a full clone to name the commit whose {path} is the run's "
            f"({sha}; the run named {_short(found.named) or 'none'})")
