"""Keys loaded where they are used: on the driver and on every worker, from a file or an
environment variable, so that no key material travels inside the task graph.

Whoever can read a task graph that carries a key (the scheduler, its dashboard, a pickled
graph on disk, any worker) can regenerate -- and so remove -- the noise it keys.  A
:class:`WorkerKey` carries only *where* the key is (a path or a variable name); each
process reads the 32 bytes itself.

One worker key serves any number of releases without ever repeating noise: each release
draws a fresh release id on the driver (:func:`dpfast.tables.keynoise.fresh_release_id`)
that its graph carries, and every process noises (or bounds) with the release generator
of (loaded key, release id), :func:`dpfast.tables.keynoise.keyed_generator`.
"""

from __future__ import annotations

import binascii
import dataclasses
import os

__all__ = ["WorkerKey", "key_from_file", "key_from_env"]


def _parse(raw: bytes, where: str) -> bytes:
    """32 raw bytes, or 64 hexadecimal digits (surrounding whitespace ignored)."""
    if len(raw) == 32:
        return raw
    text = raw.strip()
    if len(text) == 64:
        try:
            return binascii.unhexlify(text)
        except (binascii.Error, ValueError):
            pass
    raise ValueError(f"{where} must hold a 32-byte key (32 raw bytes or 64 hex digits), "
                     f"got {len(raw)} bytes")


@dataclasses.dataclass(frozen=True)
class WorkerKey:
    """Where a 32-byte key is: ``kind`` ``"file"`` (``where`` a path) or ``"env"``
    (``where`` a variable name).  Picklable, holds no secret; :meth:`load` reads it."""

    kind: str
    where: str

    def load(self) -> bytes:
        """Read the key in this process (ValueError/OSError if missing or malformed)."""
        if self.kind == "file":
            with open(self.where, "rb") as f:
                return _parse(f.read(), f"key file {self.where!r}")
        value = os.environ.get(self.where)
        if value is None:
            raise ValueError(f"environment variable {self.where!r} (the key) is not set in "
                             f"this process (pid {os.getpid()})")
        return _parse(value.encode("ascii", "replace"), f"environment variable {self.where!r}")

    def __repr__(self) -> str:
        return f"WorkerKey({self.kind}={self.where!r})"


def key_from_file(path: str | os.PathLike) -> WorkerKey:
    """A key every process reads from ``path`` (32 raw bytes or 64 hex digits).

    Pass it as ``rng=`` to :mod:`dpfast.dask` functions; the file must be readable at the
    same path on the driver and on every worker.
    """
    p = os.fspath(path)
    if not isinstance(p, str):
        raise TypeError("path must be a str path")
    return WorkerKey("file", p)


def key_from_env(name: str) -> WorkerKey:
    """A key every process reads from the environment variable ``name`` (64 hex digits).

    Set it in the environment of the driver and of every worker before they start.
    """
    if not isinstance(name, str) or not name:
        raise TypeError("name must be a non-empty str")
    return WorkerKey("env", name)
