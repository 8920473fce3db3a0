"""Audit a release pipeline on neighbouring datasets (record/replay).

``dpfast.testing`` runs a release on a dataset ``D`` and on a neighbour ``D'`` (``D`` plus
or minus one adversarial person) with the **same generator key**, so that every cell and
every key gets the same noise on both, and checks what the release's guarantee allows one
person to change (Re:cord-play, 2026; see docs/security.md, "The neighbour audit"):

* :func:`audit` -- (a) identical control flow and failures, (b) additive cells within the
  stated sensitivity, (c) published keys differing only by the person's keys;
* :func:`publication_rate` -- (d) the person's own keys published no more often than δ;
* :func:`adversarial_people`, :func:`with_person`, :func:`without_person` -- neighbours
  whose person has extreme or non-finite values, many keys, new keys, many rows, or rows
  that make an engine fail;
* :func:`release_paths` -- the registry of dpfast's own release paths (every public
  release function, every :class:`dpfast.Session` method and SQL form, the local-DP
  clients), which dpfast's test suite audits; :func:`register` adds one;
* :func:`check_refused` -- for a path whose query is an attack: both runs refused before
  the charge (the same exception, nothing published, nothing charged).
* :class:`Chosen` -- a choice a release makes from its own DP output (a tuning's
  recommended bounds): where D and D' choose differently the audit compares what was
  published before it and not the release that follows (:attr:`AuditReport.branched`).

Nothing in dpfast imports this module (it imports the release layers it audits).
"""

from __future__ import annotations

from dpfast.testing._audit import (
    DEFAULT_KEY,
    AuditError,
    AuditReport,
    audit,
    check_refused,
    replay,
)
from dpfast.testing._observe import Cells, Chosen, Observation, Raised, observe
from dpfast.testing._people import KINDS, Person, adversarial_people, with_person, without_person
from dpfast.testing._rate import PublicationRate, publication_rate
from dpfast.testing._registry import (
                                    BOUNDS,
                                    KEYS,
                                    NOT_RELEASES,
                                    Case,
                                    ReleasePath,
                                    audit_records,
                                    public_release_names,
                                    record_cases,
                                    register,
                                    release_paths,
)

__all__ = ["audit", "AuditReport", "AuditError", "DEFAULT_KEY", "replay", "check_refused",
           "observe",
           "Observation", "Cells", "Chosen", "Raised", "adversarial_people", "Person", "KINDS",
           "with_person", "without_person", "publication_rate", "PublicationRate",
           "release_paths", "ReleasePath", "Case", "register", "public_release_names",
           "audit_records", "record_cases", "KEYS", "BOUNDS", "NOT_RELEASES"]
