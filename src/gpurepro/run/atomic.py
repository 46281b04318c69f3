"""Files written whole or not at all: a temporary file beside the target, synced, then renamed
over it (``write_atomic``, ``atomic_path``) or linked to it only if no file has that name yet
(``create_atomic``: one atomic create, so two writers of one name cannot both win)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _temporary(path: Path) -> Path:
    """A name beside ``path`` that no other writer uses, ending in ``path``'s own suffix (so a
    writer that picks its format by the name, as matplotlib and pyperf do, picks the same)."""
    return path.with_name(f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp{path.suffix}")


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_path(path: Path, replace: bool = True, nonempty: bool = True) -> Iterator[Path]:
    """A temporary path to write ``path``'s content to; when the block ends without an error
    the file is synced and takes ``path``'s place (``replace=False``: only if nothing has that
    name, else ``FileExistsError``). On an error (or, with ``nonempty``, an empty file: what a
    writer cut short by a full disk may leave) nothing changes: no temporary file is left
    behind and ``path`` keeps what it held."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path)
    try:
        yield tmp
        if not tmp.is_file() or (nonempty and tmp.stat().st_size == 0):
            raise OSError(f"{path}: nothing was written (an empty file is never put in place)")
        _sync(tmp)
        if replace:
            os.replace(tmp, path)
        else:
            os.link(tmp, path)  # fails with FileExistsError when the name is taken
    finally:  # a failed write (full disk, a killed writer's rename never came) leaves no trace
        tmp.unlink(missing_ok=True)


def write_atomic(path: Path, text: str) -> None:
    """``text`` as the whole content of ``path``, replacing what was there."""
    with atomic_path(path, nonempty=False) as tmp:
        tmp.write_text(text, encoding="utf-8")


def create_atomic(path: Path, text: str) -> None:
    """``text`` as a new file ``path``; ``FileExistsError`` when the name is taken, however
    many writers try at once (the content is written before the name appears)."""
    with atomic_path(path, replace=False) as tmp:
        tmp.write_text(text, encoding="utf-8")
