"""Scrub: rewrite a committed result document or journal so it holds nothing private.

The rules are the run stage's (``env.privacy.portable_value``): paths inside the checkout relative to it,
paths into any other checkout (an absolute path up to a build/, cases/ or native/ component)
relative too, home directories as ``~``, environment variables with secret-looking names
dropped and secret-looking tokens masked; with ``redact``, also the hostname (the field and every
whole-token mention of it). Everything else is left as it was, in the same key order and the
same layout as the writer's (``document.write_document``: ``indent=1``; ``journal.Journal``: one
sorted, compact JSON object per line). The file is replaced atomically, and only if a rule
changed something. Standard library only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..env import privacy
from ..model.files import write_atomic
from ..run import journal

# What other modules use; the rest is this module's own.
__all__ = ["scrub_file"]

JOURNAL_SUFFIX = ".journal.jsonl"


def scrub_value(value: Any, root: Path, redact: bool, hostname: str | None = None) -> Any:
    """``value`` (a document, a journal header or a trial record) with every rule applied.
    ``hostname`` is the one to redact (default: the one the value's own fingerprint names)."""
    if hostname is None:
        hostname = _hostname(value)
    out = privacy.portable_value(value, root, redact, hostname=hostname or "", foreign=True)
    if redact:
        environment = out.get("environment") if isinstance(out, dict) else None
        if isinstance(environment, dict) and "host" in environment:
            environment["host"] = {**environment["host"], "hostname": "redacted"}
            environment["redacted"] = True
    return out


def _hostname(value: Any) -> str | None:
    try:
        host = value["environment"]["host"]["hostname"]
    except (KeyError, TypeError):
        return None
    return host if isinstance(host, str) and host != "redacted" else None


def scrub_file(path: Path, root: Path, redact: bool) -> bool:
    """Rewrite a result document (.json) or a journal (.journal.jsonl) in place by the rules
    above; True if it changed. Lines of a journal that are not JSON (a torn last line) stay."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.name.endswith(JOURNAL_SUFFIX):
        new = _scrub_journal(text, root, redact)
    else:
        doc = json.loads(text)
        scrubbed = scrub_value(doc, root, redact)
        new = text if scrubbed == doc else json.dumps(scrubbed, indent=1, sort_keys=False,
                                                      allow_nan=False) + "\n"
    if new == text:
        return False
    write_atomic(path, new)
    return True


def _scrub_journal(text: str, root: Path, redact: bool) -> str:
    """Each line scrubbed; in a journal with the hash chain, every record's ``chain`` is
    computed again over the scrubbed lines (it is a checksum of what the file says, and the
    scrubbed file says less)."""
    hostname: str | None = None
    lines = []
    chain: str | None = None
    last_end: tuple[Any, str] | None = None  # the last end record's (trials, chain head)
    for line in text.splitlines(keepends=True):
        try:
            obj = json.loads(line)
        except ValueError:
            lines.append(line)  # blank, or torn by an interrupted write: left as it is
            continue
        if not isinstance(obj, dict):
            lines.append(line)
            continue
        if hostname is None:
            hostname = _hostname(obj)  # the header's fingerprint; trial lines use it too
        scrubbed = scrub_value(obj, root, redact, hostname or "")
        if journal.SEAL_KEY in obj:  # the seal is the harness's, computed again at the end
            scrubbed[journal.SEAL_KEY] = obj[journal.SEAL_KEY]
        if chain is not None and scrubbed.get("kind") == journal.END_KIND and "head" in obj:
            scrubbed = {**scrubbed, "trials": obj.get("trials"), "head": chain}
            last_end = (obj.get("trials"), chain)
        if chain is not None and journal.CHAIN_KEY in scrubbed:
            scrubbed = {**scrubbed, journal.CHAIN_KEY: journal.chain_next(chain, scrubbed)}
            chain = scrubbed[journal.CHAIN_KEY]
        if scrubbed == obj:
            lines.append(line)
        else:
            end = line[len(line.rstrip("\r\n")):]
            lines.append(json.dumps(scrubbed, sort_keys=True, separators=(",", ":")) + end)
        if not chain and scrubbed.get("kind") == journal.HEADER_KIND and \
                int(scrubbed.get("journal_format") or 0) >= journal.CHAIN_FORMAT:
            chain = journal.chain_start(lines[-1].encode())
    if lines and last_end is not None:
        # The header's seal names the last end record's trials and chain head, as written now.
        first = lines[0].encode()
        at = journal.seal_offset(first)
        if at is not None and first[at:at + journal.SEAL_WIDTH] != journal.UNSEALED.encode():
            seal = journal.seal_text(*last_end).encode()
            lines[0] = (first[:at] + seal + first[at + journal.SEAL_WIDTH:]).decode()
    return "".join(lines)
