"""Files copied into a log as they grow, each line with its time.

A step that runs for minutes without saying anything (a dkms build under
TCG writes only its make.log) shows where its time goes only if its own
log is read while it runs: ``Follow`` does, for every file matching a
pattern, and stamps each line with the seconds since a given start.
"""

from __future__ import annotations

import glob
import os
import threading
import time
from types import TracebackType
from typing import BinaryIO, TextIO


class Follow:
    """While in a ``with`` block, every file matching ``pattern`` is read
    every ``interval`` s and its new whole lines written to ``log`` as
    ``SECONDS LINE``, seconds since ``t0`` (time.monotonic()). What a file
    held when the block began is not copied (an earlier command's build
    log). A file first seen, or read again from its start because it was
    replaced (another inode: dkms removes its build directory before a
    build) or became shorter (truncated), has a ``# PATH`` line before its
    first line copied. The last lines are read when the block ends."""

    def __init__(self, pattern: str, log: TextIO, t0: float, interval: float = 2.0) -> None:
        self.pattern, self.log, self.t0, self.interval = pattern, log, t0, interval
        # each file followed, held open: a file put in its place cannot
        # reuse its inode, so a replacement is always told apart
        self.files: dict[str, BinaryIO] = {}
        self.partial: dict[str, bytes] = {}
        self.named: set[str] = set()  # files whose current lines follow a ``# PATH``
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Follow:
        for path in glob.glob(self.pattern):
            try:
                f = open(path, "rb")  # closed in __exit__
            except OSError:
                continue
            f.seek(0, os.SEEK_END)
            self.files[path], self.partial[path] = f, b""
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.stop.set()
        self.thread.join()
        self.read()
        for path, f in self.files.items():
            self._copy(path, f.read(), last=True)
            f.close()
        self.log.flush()

    def _run(self) -> None:
        while not self.stop.wait(self.interval):
            self.read()

    def _copy(self, path: str, data: bytes, last: bool = False) -> None:
        """Write ``path``'s whole lines of what it held back and ``data``;
        with ``last``, its unfinished line too."""
        *lines, rest = (self.partial.get(path, b"") + data).split(b"\n")
        if last and rest:
            lines, rest = [*lines, rest], b""
        self.partial[path] = rest
        if lines and path not in self.named:
            self.log.write(f"# {path}\n")
            self.named.add(path)
        for line in lines:
            self.log.write(f"{time.monotonic() - self.t0:7.1f} {line.decode(errors='replace')}\n")

    def read(self) -> None:
        """Copy what each matching file gained since the last read."""
        for path in sorted(glob.glob(self.pattern)):
            f = self.files.get(path)
            try:
                st = os.stat(path)
                held = os.fstat(f.fileno()) if f is not None else None
                if f is None or held is None or (st.st_dev, st.st_ino) != (held.st_dev, held.st_ino):
                    if f is not None:  # replaced: the old file's last lines, then the new one
                        self._copy(path, f.read(), last=True)
                        f.close()
                        del self.files[path]
                    f = self.files[path] = open(path, "rb")  # noqa: SIM115 (closed in __exit__)
                    self.named.discard(path)
                elif st.st_size < f.tell():  # truncated: written anew in place
                    self._copy(path, b"", last=True)
                    f.seek(0)
                    self.named.discard(path)
                self._copy(path, f.read())
            except OSError:
                continue  # gone between the listing and the open
        self.log.flush()
