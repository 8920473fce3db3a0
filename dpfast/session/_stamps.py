"""A file's *stamp*: what the result cache's fingerprint and the column cache compare to
know that a file source's file is the one they read before
(:meth:`dpfast.session._source.Source.stamps`).

Size and modification time alone can be restored after a rewrite (``os.utime``); the
status-change time cannot (the kernel sets it to now on every write and every ``utime``),
a file written elsewhere and moved in has another inode, and the format's own metadata --
rewritten on every write -- is digested too: a Parquet file's footer (schema, row groups,
column statistics), a DuckDB file's headers (checkpoint counter, metadata pointers), a
WAL's last 4 KiB.  Reading that metadata costs one small read per file per call.
"""

from __future__ import annotations

import hashlib
import os
from typing import TypeAlias

__all__ = ["Stamp", "content_mark", "file_stamp"]

#: a file's stamp: ``[abspath, size, mtime_ns, ctime_ns, inode, device, content mark]``
Stamp: TypeAlias = list[str | int]

#: bytes at the head of a DuckDB database file that hold its headers (the main header and
#: the two alternating database headers, each a 4 KiB block: each checkpoint rewrites one)
_DUCKDB_HEADERS = 3 * 4096
#: the largest Parquet footer read for a stamp (a larger one: its last bytes)
_MAX_FOOTER = 1 << 24


def content_mark(path: str, size: int) -> str:
    """A digest of the part of a file its format rewrites on every write: a Parquet file's
    footer (metadata and its length, the last bytes), a DuckDB file's headers (the first
    12 KiB); for another file (a WAL) its last 4 KiB."""
    with open(path, "rb") as f:
        if path.endswith(".parquet") and size >= 12:
            f.seek(size - 8)
            tail = f.read(8)
            n = min(int.from_bytes(tail[:4], "little"), _MAX_FOOTER, size - 8)
            f.seek(size - 8 - n)
            data = f.read(n + 8)
        elif path.endswith(".wal"):
            f.seek(max(0, size - 4096))
            data = f.read(4096)
        else:
            data = f.read(_DUCKDB_HEADERS)
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def file_stamp(path: str) -> Stamp:
    """``[abspath, size, mtime_ns, ctime_ns, inode, device, content mark]`` of a file: a
    rewrite changes the status-change time and (written elsewhere and moved in) the inode,
    which ``os.utime`` cannot restore, and the format's own metadata
    (:func:`content_mark`)."""
    st = os.stat(path)
    return [os.path.abspath(path), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino,
            st.st_dev, content_mark(path, st.st_size)]
