"""Bearer tokens of ``dpfast serve``: made with :mod:`secrets` (256 bits), shown once,
stored only as their SHA-256 in the service's state file (:mod:`dpfast.serve.store`),
compared in constant time, revocable.

Kinds: ``analyst`` (names a registered analyst of the ledger: queries, own usage),
``admin`` (usage of all, the ledger, its verification) and ``ingest`` (names a local-DP
collection: posts report batches to it only).

A token is ``dpf_`` and 43 URL-safe characters (32 random bytes).  The hash is a plain
SHA-256: a token has 256 bits of entropy, so no slow hash is needed against guessing; the
row is looked up by the digest and the digest compared with :func:`hmac.compare_digest`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import secrets

from .store import StateStore

__all__ = ["KINDS", "Principal", "authenticate", "digest", "make_token", "revoke"]

KINDS = ("analyst", "admin", "ingest")
PREFIX = "dpf_"
_BYTES = 32


@dataclasses.dataclass(frozen=True)
class Principal:
    """Who a valid token names: ``kind`` (analyst, admin, ingest) and ``name`` (the
    analyst, ``admin``, or the collection)."""

    kind: str
    name: str


def digest(token: str) -> str:
    """The stored form of ``token``: its SHA-256, hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def make_token(store: StateStore, kind: str, name: str) -> str:
    """A new token of ``kind`` for ``name``; only its hash is stored.  The caller shows
    it once."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    token = PREFIX + secrets.token_urlsafe(_BYTES)
    store.add_token(digest(token), kind, name)
    return token


def revoke(store: StateStore, kind: str, name: str) -> int:
    """Revoke every live token of ``(kind, name)``; returns how many were revoked."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return store.revoke(kind, name)


def authenticate(store: StateStore, token: str | None) -> Principal | None:
    """The principal of a live ``token``, else None (missing, malformed, unknown or
    revoked)."""
    if not token or not token.startswith(PREFIX) or len(token) > 128:
        return None
    d = digest(token)
    row = store.token(d)
    if row is None or not hmac.compare_digest(row[0].encode(), d.encode()):
        return None
    if row[3] is not None:
        return None
    return Principal(row[1], row[2])
