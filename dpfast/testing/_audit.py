"""The neighbour audit: record/replay of one release on D and on a neighbour D'.

A release of dpfast addresses its noise by (generator key, release id, part, key): with the
same generator key and the same release ids, every cell and every key of D and of D' gets
the *same* noise.  So the difference between the two runs is exactly what one person
changes, and it can be checked against what the release states (Re:cord-play, 2026):

(a) the same control flow and the same failures: both runs succeed with the same shape
    (types, names, events, public parameters), or both raise the same exception type with
    the same message -- a failure whose occurrence or text depends on the person is a
    channel around the noise;
(b) for additive noise, every published cell moves by at most the stated per-cell
    sensitivity (plus the output grid's rounding), all cells together by at most the
    stated L1 and L2 sensitivities;
(c) the published keys differ only by keys the person holds (public keys: not at all).

Release ids: a raw 32-byte key draws a fresh release id from ``os.urandom`` per release
(:func:`dpfast.tables.keynoise.fresh_release_id`), so that one key never replays noise.
:func:`replay` records the ids the first run draws and replays them, in order, in the
second run (a deterministic sequence derived from ``key``), which is what makes the noise of
D and D' identical.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

from dpfast.tables import keynoise as _keynoise
from dpfast.testing._observe import Cells, Chosen, Observation, Raised, observe

__all__ = ["audit", "replay", "AuditReport", "AuditError", "DEFAULT_KEY", "run_observed",
           "check_refused"]

#: the generator key of an audit when none is given (fixed: an audit is reproducible)
DEFAULT_KEY = hashlib.blake2b(b"dpfast.testing audit key v1", digest_size=32).digest()
_FRESH_BIT = 1 << 127
_LOCK = threading.RLock()


class AuditError(AssertionError):
    """A neighbour audit found a difference that the release's guarantee does not allow."""


@contextlib.contextmanager
def replay(key: bytes) -> Iterator[None]:
    """Within the block, raw-key releases draw their release ids from a sequence derived
    from ``key`` (the same sequence each time the block is entered) instead of
    ``os.urandom``: two runs of the same release code replay the same noise.

    For audits and tests only (the ids are no longer fresh: two blocks with one key reuse
    noise).  Not thread-safe against releases made by other threads meanwhile.
    """
    key = _check_key(key)
    counter = iter(range(1 << 62))

    def fixed_release_id() -> int:
        n = next(counter)
        digest = hashlib.blake2b(n.to_bytes(8, "little"), key=key, digest_size=16).digest()
        return int.from_bytes(digest, "little") | _FRESH_BIT

    with _LOCK:
        saved = _keynoise.fresh_release_id
        _keynoise.fresh_release_id = fixed_release_id
        try:
            yield
        finally:
            _keynoise.fresh_release_id = saved


def _check_key(key: Any) -> bytes:
    if not isinstance(key, (bytes, bytearray)) or len(key) != 32:
        raise TypeError("key must be 32 bytes (e.g. os.urandom(32))")
    return bytes(key)


def run_observed(release: Callable[[Any, bytes], Any], data: Any, key: bytes,
                 sensitivity: Any = None) -> Observation:
    """Run ``release(data, key)`` under :func:`replay` and observe what it returns or
    raises (an exception is an outcome, not an error of the audit)."""
    with replay(key):
        try:
            result = release(data, key)
        except Exception as exc:  # the failure is what the analyst observes
            result = exc
        return observe(result, sensitivity)


@dataclasses.dataclass
class AuditReport:
    """What one neighbour audit found.

    Attributes
    ----------
    name : str
        What was audited (the release path's name, when given).
    on_d, on_d_prime : Observation
        What each run published (or raised).
    findings : list of str
        Every violation, one line each (empty: the audit passed).
    cells_checked : int
        Number of published cells whose movement was checked against the sensitivity.
    branched : str
        Where the runs took different choices from their own DP output
        (:class:`dpfast.testing.Chosen`: ``"name: value on D != value on D'"``), after
        which nothing was compared; empty when they did not.
    """

    name: str
    on_d: Observation
    on_d_prime: Observation
    findings: list[str]
    cells_checked: int = 0
    branched: str = ""

    @property
    def passed(self) -> bool:
        return not self.findings

    def check(self) -> AuditReport:
        """Raise :class:`AuditError` listing the findings, if any; else return self."""
        if self.findings:
            raise AuditError(f"neighbour audit of {self.name or 'a release'} failed:\n  "
                             + "\n  ".join(self.findings))
        return self


def audit(release: Callable[[Any, bytes], Any], D: Any, D_prime: Any, *,
          key: bytes | None = None, sensitivity: Any = None, person_keys: Any = (),
          name: str = "", raises: bool = True) -> AuditReport:
    """Run ``release`` on a dataset and on a neighbour with the same generator key, and
    check what one person may change.

    Parameters
    ----------
    release : callable
        ``release(data, rng)`` makes the release on ``data`` with the generator key
        ``rng`` (32 bytes: pass it as ``rng=`` to every dpfast release it makes, or to the
        :class:`dpfast.Session` it builds) and returns what the analyst sees: a release,
        an array, a tuple of them, ... (see :func:`dpfast.testing.observe`).  Everything
        else the analyst sees (a ledger's rows, a printed message) belongs in the returned
        value too.  An exception it raises is an outcome.
    D, D_prime : any
        Neighbouring datasets: ``D_prime`` is ``D`` with one person added or removed
        (:func:`dpfast.testing.with_person`, :func:`dpfast.testing.without_person`).
    key : bytes, optional
        The generator key of both runs (32 bytes; default a fixed key).
    sensitivity : number or dict, optional
        The per-cell sensitivity (or a dict of ``linf``/``l1``/``l2``) of published values
        the release does not state itself (plain arrays, scalars), or overriding what it
        states.
    person_keys : iterable
        The keys the added or removed person holds: the only keys whose publication may
        differ between the runs where keys are selected privately.
    name : str
        Named in the report.
    raises : bool
        Raise :class:`AuditError` on a finding (default); False returns the report.

    Returns
    -------
    AuditReport

    Notes
    -----
    The checks are those of the module docstring: (a) identical control flow and failures,
    (b) additive cells within the stated sensitivity, (c) published keys differing only by
    the person's keys.  That keys are published *only as often as δ allows* is a
    statistical property of many runs: :func:`dpfast.testing.publication_rate`.  The audit
    is sound only for releases whose noise is addressed by key (every release of dpfast):
    for a release that draws noise sequentially, the same key does not give the same noise
    to a cell, and (b) fails without a privacy defect.
    """
    key = DEFAULT_KEY if key is None else _check_key(key)
    obs_d = run_observed(release, D, key, sensitivity)
    obs_p = run_observed(release, D_prime, key, sensitivity)
    findings: list[str] = []
    branched: list[str] = []
    checked = compare(obs_d, obs_p, set(_norm_keys(person_keys)), findings, branched)
    report = AuditReport(name, obs_d, obs_p, findings, checked, "; ".join(branched))
    return report.check() if raises else report


def check_refused(report: AuditReport, refused: type[BaseException]) -> AuditReport:
    """Check that both runs of ``report`` were refused before the charge: each raised
    ``refused`` (the same message on D and D', :func:`audit`'s check (a)), published no
    table, and returned nothing else that is not empty (a session's ledger rows: nothing
    was charged).  Raises :class:`AuditError`; returns ``report``."""
    want = f"{refused.__module__}.{refused.__qualname__}"
    findings = list(report.findings)
    for side, obs in (("D", report.on_d), ("D'", report.on_d_prime)):
        raised = [x for x in obs.shape if isinstance(x, Raised)]
        if not raised:
            findings.append(f"on {side}: not refused (expected {want})")
        findings += [f"on {side}: raised {r.type} ({r.message[:200]}), expected {want}"
                     for r in raised if r.type != want]
        if obs.tables:
            findings.append(f"on {side}: published {len(obs.tables)} table(s) while refused")
        findings += [f"on {side}: {entry[0]} is not empty ({entry[2]!r}): charged while "
                     "refused" for entry in obs.shape
                     if isinstance(entry, tuple) and entry[0] and len(entry) == 3
                     and entry[1] in ("tuple", "list", "dict") and entry[2]]
    if findings:
        raise AuditError(f"refusal audit of {report.name or 'a release'} failed:\n  "
                         + "\n  ".join(findings))
    return report


def _norm_keys(keys: Any) -> list[Any]:
    from dpfast.testing._observe import _scalar

    return [_scalar(k) for k in keys]


def compare(a: Observation, b: Observation, person_keys: set[Any],
            findings: list[str], branched: list[str] | None = None) -> int:
    """Append to ``findings`` what distinguishes the two observations beyond what one
    person holding ``person_keys`` may change; returns the number of cells checked.

    Where the shapes first differ at a :class:`~dpfast.testing.Chosen` of the same name
    (a choice made from the release's own DP output), the tables before it are compared
    and the rest is not; the choice is appended to ``branched``."""
    i = next((i for i, (x, y) in enumerate(zip(a.shape, b.shape)) if x != y), None)
    if i is not None:
        x, y = a.shape[i], b.shape[i]
        if isinstance(x, Chosen) and isinstance(y, Chosen) and x.name == y.name and \
                x.tables_before == y.tables_before:
            if branched is not None:
                branched.append(f"{x.name}: {x.value!r} on D != {y.value!r} on D'")
            return sum(_compare_table(ta, tb, person_keys, findings) for ta, tb in
                       zip(a.tables[:x.tables_before], b.tables[:y.tables_before]))
    if a.shape != b.shape:
        if a.raised or b.raised:
            findings.append(f"(a) control flow differs: on D {_outcome(a)}; on D' {_outcome(b)}")
        else:
            diff = next(((x, y) for x, y in zip(a.shape, b.shape) if x != y),
                        (len(a.shape), len(b.shape)))
            findings.append(f"(a) the shape of the result differs: {diff[0]!r} vs {diff[1]!r}")
        return 0
    checked = 0
    for ta, tb in zip(a.tables, b.tables):
        checked += _compare_table(ta, tb, person_keys, findings)
    return checked


def _outcome(o: Observation) -> str:
    r = o.raised
    return "success" if r is None else f"{r.type}: {r.message[:300]}"


def _compare_table(ta: Cells, tb: Cells, person_keys: set[Any], findings: list[str]) -> int:
    where = ta.name or "the result"
    ka, kb = set(ta.cells), set(tb.cells)
    moved = (ka ^ kb) - person_keys
    if moved and not ta.selected:
        findings.append(f"(c) {where}: public keys differ on D and D': {_few(moved)}")
    elif moved:
        findings.append(f"(c) {where}: keys the person does not hold were published on one "
                        f"side only: {_few(moved)}")
    if not ta.additive:
        return 0
    diffs = []
    for k in ka & kb:
        va, vb = ta.cells[k], tb.cells[k]
        if not (isinstance(va, float) and isinstance(vb, float)):
            continue
        if va == vb:
            diffs.append(0.0)
            continue
        d = abs(va - vb)
        if not math.isfinite(d):
            findings.append(f"(b) {where}[{k!r}]: {va!r} on D, {vb!r} on D'")
            continue
        if ta.censored > 0.0 and 0.0 in (va, vb):  # below the floor on one side only
            v = max(va, vb)
            if ta.linf is not None and not v < ta.censored + ta.linf + ta.tolerance:
                findings.append(f"(b) {where}[{k!r}]: {va!r} on D, {vb!r} on D': a cell "
                                f"censored below {ta.censored!r} on one side moved beyond "
                                f"the stated sensitivity {ta.linf!r}")
            diffs.append(max(0.0, v - ta.censored))
            continue
        diffs.append(d)
        if ta.linf is not None and d > ta.linf + ta.tolerance:
            findings.append(f"(b) {where}[{k!r}] moved by {d!r} > the stated sensitivity "
                            f"{ta.linf!r} (+ grid {ta.tolerance!r})")
    n = len(diffs)
    if ta.l1 is not None and math.isfinite(ta.l1) and sum(diffs) > ta.l1 + n * ta.tolerance:
        findings.append(f"(b) {where}: the cells moved by {sum(diffs)!r} in L1 > the stated "
                        f"{ta.l1!r}")
    l2 = math.sqrt(sum(d * d for d in diffs))
    if ta.l2 is not None and math.isfinite(ta.l2) and \
            l2 > ta.l2 + math.sqrt(n) * ta.tolerance:
        findings.append(f"(b) {where}: the cells moved by {l2!r} in L2 > the stated {ta.l2!r}")
    return n


def _few(keys: set[Any]) -> str:
    shown = sorted(keys, key=repr)[:5]
    return ", ".join(map(repr, shown)) + (f" (+{len(keys) - 5} more)" if len(keys) > 5 else "")
