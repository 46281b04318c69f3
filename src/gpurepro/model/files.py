"""Files written whole or not at all, and read back by their content. Standard library only.

Writing: a temporary file beside the target, synced, then renamed over it (``write_atomic``,
``write_bytes_atomic``, ``atomic_path``) or linked to it only if no file has that name yet
(``create_atomic``: one atomic create, so two writers of one name cannot both win);
``folder_lock`` makes the writers of several files in one folder take turns. Reading:
``sha256_file``, the digest every artifact, wheel and journal is known by."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# A temporary's name: hidden, the writer's pid, a random part, ".tmp" and (for a picture) the
# target's suffix. A document's temporary does not end in ".json", so a writer killed before
# its rename (SIGKILL) leaves nothing that reads as a document (the results index lists
# *.json); ``remove_stale`` removes what such a writer left.
_TEMPORARY = re.compile(r"^\..+\.(\d+)\.[0-9a-f]{8}\.tmp(\.[A-Za-z0-9]+)?$")


def _temporary(path: Path) -> Path:
    """A name beside ``path`` that no other writer uses, ending in ``path``'s own suffix where
    the writer picks its format by the name (matplotlib does); never in ``.json``."""
    suffix = "" if path.suffix == ".json" else path.suffix
    return path.with_name(f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}.tmp{suffix}")


def remove_stale(folder: Path) -> list[Path]:
    """Remove the temporaries in ``folder`` whose writer is no longer running; return them."""
    removed: list[Path] = []
    try:
        entries = list(Path(folder).iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = _TEMPORARY.match(entry.name)
        if not m or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # its writer may still be writing
        except ProcessLookupError:
            pass
        except PermissionError:
            continue  # alive, another user's
        try:
            entry.unlink()
            removed.append(entry)
        except OSError:
            pass
    return removed


def sha256_file(path: Path) -> str:
    """The sha256 of the file's content, read in blocks of a MiB."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive flock on ``folder`` itself (no lock file is left in it), held for the
    block: writers of several files there (a document, its Markdown, its pictures) one at a
    time, so that the set is one writer's."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


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


def write_bytes_atomic(path: Path, data: bytes, replace: bool = True) -> None:
    """``data`` as the whole content of ``path``. Where the file system gives unnamed files
    (Linux's O_TMPFILE), the content is written and synced into one with no name, which is then
    linked beside ``path`` and renamed over it (or linked to ``path`` itself when
    ``replace=False``): a writer killed at any moment (SIGKILL) leaves no empty or torn file
    under any name, at most a whole hidden temporary that ``remove_stale`` removes. Elsewhere,
    as ``atomic_path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        _write_unnamed(path, data, replace)
    except _NoUnnamedFiles:  # no O_TMPFILE here, on this file system, or no /proc to name one
        with atomic_path(path, replace=replace, nonempty=False) as tmp:
            tmp.write_bytes(data)


class _NoUnnamedFiles(Exception):
    pass


def _write_unnamed(path: Path, data: bytes, replace: bool) -> None:
    try:
        fd = os.open(path.parent, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o644)
    except (AttributeError, OSError):
        raise _NoUnnamedFiles() from None
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
        # linkat(AT_SYMLINK_FOLLOW) of /proc's link to the descriptor names the unnamed file
        # (a folder's descriptor given, so that os.link calls linkat and not link).
        unnamed = f"/proc/self/fd/{fd}"
        if not os.path.exists(unnamed):
            raise _NoUnnamedFiles()
        if not replace:
            os.link(unnamed, path.name, dst_dir_fd=folder)  # FileExistsError: the name is taken
            return
        tmp = _temporary(path)
        os.link(unnamed, tmp.name, dst_dir_fd=folder)
        try:
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
    finally:
        os.close(folder)
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    """``text`` as the whole content of ``path``, replacing what was there."""
    write_bytes_atomic(path, text.encode("utf-8"))


def create_atomic(path: Path, text: str) -> None:
    """``text`` as a new file ``path``; ``FileExistsError`` when the name is taken, however
    many writers try at once (the content is written before the name appears)."""
    data = text.encode("utf-8")
    if not data:
        raise OSError(f"{path}: nothing was written (an empty file is never put in place)")
    write_bytes_atomic(path, data, replace=False)
