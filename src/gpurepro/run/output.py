"""A trial's standard output and error, kept within caps in bytes: a driver that prints
gigabytes (or one line of a gigabyte) costs the harness a few megabytes, and the record says
how much was dropped.

stdout: the first ``STDOUT_HEAD_BYTES`` of lines (the start event) and the last
``STDOUT_TAIL_BYTES`` (the last heartbeat, the final record, the check), each line at most
``LINE_BYTES`` (the rest of a longer line is dropped); the lines in between are dropped and
counted. stderr: its last ``STDERR_TAIL_BYTES`` (the crash record and a Python driver's frames
come last). Standard library only.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable

# What other modules use; the rest is this module's own.
__all__ = ["CappedLines", "CappedTail", "pump_lines", "pump_tail"]

STDOUT_HEAD_BYTES = 1 << 20
STDOUT_TAIL_BYTES = 1 << 20
STDERR_TAIL_BYTES = 1 << 20
LINE_BYTES = 256 << 10
CHUNK = 1 << 16


class CappedLines:
    """The head and the tail of a stream of lines, within their byte caps."""

    def __init__(self, head: int = STDOUT_HEAD_BYTES, tail: int = STDOUT_TAIL_BYTES):
        self.head_cap, self.tail_cap = head, tail
        self._head: list[bytes] = []
        self._head_bytes = 0
        self._tail: deque[bytes] = deque()
        self._tail_bytes = 0
        self.dropped_bytes = 0  # of whole lines dropped between head and tail, and of long lines
        self.dropped_lines = 0

    def add(self, line: bytes) -> None:
        if not self._tail and self._head_bytes + len(line) <= self.head_cap:
            self._head.append(line)
            self._head_bytes += len(line)
            return
        self._tail.append(line)
        self._tail_bytes += len(line)
        while len(self._tail) > 1 and self._tail_bytes > self.tail_cap:
            gone = self._tail.popleft()
            self._tail_bytes -= len(gone)
            self.dropped_bytes += len(gone)
            self.dropped_lines += 1

    def lines(self) -> list[str]:
        return [b.decode("utf-8", errors="replace") for b in (*self._head, *self._tail)]


class CappedTail:
    """The last ``cap`` bytes of a stream."""

    def __init__(self, cap: int = STDERR_TAIL_BYTES):
        self.cap = cap
        self._buf = bytearray()
        self.dropped_bytes = 0

    def add(self, chunk: bytes) -> None:
        self._buf += chunk
        if len(self._buf) > 2 * self.cap:
            cut = len(self._buf) - self.cap
            del self._buf[:cut]
            self.dropped_bytes += cut

    def text(self) -> str:
        extra = max(0, len(self._buf) - self.cap)
        return bytes(self._buf[extra:]).decode("utf-8", errors="replace")

    @property
    def dropped(self) -> int:
        return self.dropped_bytes + max(0, len(self._buf) - self.cap)


def pump_lines(fd: int, sink: Callable[[bytes], None], line_max: int = LINE_BYTES) -> int:
    """Read ``fd`` to its end in chunks, handing ``sink`` each line (with its newline) of at
    most ``line_max`` bytes; a longer line is cut there. Returns the bytes cut off lines."""
    dropped = 0
    pending = b""
    skipping = False  # inside a line already cut: drop up to its newline
    while chunk := _read(fd):
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                piece = chunk[start:]
                if skipping:
                    dropped += len(piece)
                else:
                    pending += piece
                    if len(pending) > line_max:
                        sink(pending[:line_max] + b"\n")
                        dropped += len(pending) - line_max
                        pending, skipping = b"", True
                break
            piece, start = chunk[start:nl + 1], nl + 1
            if skipping:
                dropped += len(piece)
                skipping = False
                continue
            line, pending = pending + piece, b""
            if len(line) > line_max + 1:
                sink(line[:line_max] + b"\n")
                dropped += len(line) - line_max - 1
            else:
                sink(line)
    if pending and not skipping:
        sink(pending)
    return dropped


def pump_tail(fd: int, keep: CappedTail) -> None:
    while chunk := _read(fd):
        keep.add(chunk)


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, CHUNK)
    except OSError:
        return b""
