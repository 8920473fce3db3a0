"""Timing, JSON and the check of the performance gate (no benchmark definitions here)."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

# A setup returns (baseline, candidate, teardown); each call of baseline/candidate is one
# timed unit of work.
Setup = Callable[[bool], tuple[Callable[[], object], Callable[[], object], Callable[[], None]]]


@dataclass(frozen=True)
class Entry:
    """One gated figure: ``ratio = baseline time / dpfast time`` (higher is better)."""

    name: str
    what: str
    baseline: str
    setup: Setup
    needs: tuple[str, ...] = ()  # optional modules; the entry is skipped without them
    min_rounds: int = 0  # at least this many rounds (cheap entries that bursts of load hit)


@dataclass
class Result:
    name: str
    what: str
    baseline: str
    ratio: float | None  # None: skipped
    ratios: list[float] = field(default_factory=list)
    spread: float = 0.0  # (max - min) / median of the per-round ratios
    seconds: float = 0.0  # dpfast's median time per unit
    note: str = ""


def _time(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def measure(entry: Entry, *, quick: bool, rounds: int) -> Result:
    """Median over ``rounds`` of (baseline time / dpfast time), timed back to back."""
    for mod in entry.needs:
        try:
            __import__(mod)
        except ImportError:
            return Result(entry.name, entry.what, entry.baseline, None,
                          note=f"skipped: {mod} not installed")
    rounds = max(rounds, entry.min_rounds)
    base, cand, teardown = entry.setup(quick)
    try:
        base()
        cand()  # warm-up: kernels loaded, caches and pages touched
        ratios, times = [], []
        for r in range(rounds):
            if r % 2:  # alternate the order so neither side always runs second
                tc, tb = _time(cand), _time(base)
            else:
                tb, tc = _time(base), _time(cand)
            ratios.append(tb / tc)
            times.append(tc)
    finally:
        teardown()
    med = statistics.median(ratios)
    spread = (max(ratios) - min(ratios)) / med if med > 0 else 0.0
    return Result(entry.name, entry.what, entry.baseline, med, ratios, spread,
                  statistics.median(times))


def run_suite(entries: Sequence[Entry], *, quick: bool = False, rounds: int | None = None,
              only: Sequence[str] | None = None,
              progress: Callable[[str], None] | None = None) -> list[Result]:
    """Measure every entry (or those named in ``only``); at least 5 rounds each (an
    entry's ``min_rounds`` if more)."""
    rounds = max(5, rounds or (5 if quick else 9))
    if only:
        unknown = set(only) - {e.name for e in entries}
        if unknown:
            raise ValueError(f"only: unknown benchmark(s) {sorted(unknown)}; "
                             f"choose from {[e.name for e in entries]}")
        entries = [e for e in entries if e.name in only]
    out = []
    for e in entries:
        if progress:
            progress(e.name)
        out.append(measure(e, quick=quick, rounds=rounds))
    return out


def host_info() -> dict[str, object]:
    """What the ratios depend on: CPU SIMD flags, the ChaCha20 path, cores, Python."""
    flags: list[str] = []
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags") and not flags:
                    have = set(line.split(":", 1)[1].split())
                    flags = [f for f in ("sse2", "avx2", "avx512f", "avx512bw") if f in have]
                elif line.startswith("model name") and not model:
                    model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    from dpfast import _native

    return {"cpu": model, "simd_flags": flags, "chacha20_path": _native.simd_level(),
            "cores": os.cpu_count(), "machine": platform.machine(),
            "python": platform.python_version()}


def results_to_json(results: Sequence[Result], *, quick: bool) -> dict[str, object]:
    return {
        "format": 1,
        "quick": quick,
        "host": host_info(),
        "entries": {
            r.name: {"ratio": r.ratio, "ratios": r.ratios, "spread": r.spread,
                     "seconds": r.seconds, "what": r.what, "baseline": r.baseline,
                     "note": r.note}
            for r in results
        },
    }


def results_from_json(data: dict[str, object]) -> list[Result]:
    """The results stored by :func:`results_to_json` (for re-checking saved runs)."""
    entries = data["entries"]
    if not isinstance(entries, dict):
        raise ValueError("not a dpfast bench JSON object (no 'entries' mapping)")
    out = []
    for name, e in entries.items():
        out.append(Result(name, e.get("what", ""), e.get("baseline", ""), e.get("ratio"),
                          list(e.get("ratios", [])), float(e.get("spread", 0.0)),
                          float(e.get("seconds", 0.0)), e.get("note", "")))
    return out


def load_json(path: str) -> dict[str, object]:
    """A results file (``--json``: one host's ``entries``) or a baseline file (one host's
    ``entries``, or ``baselines``: one section per SIMD level, see :func:`baseline_for`)."""
    with open(path) as fh:
        data = json.load(fh)
    if not isinstance(data, dict) or not (isinstance(data.get("entries"), dict)
                                          or isinstance(data.get("baselines"), dict)):
        raise ValueError(f"{path}: not a dpfast bench JSON file (no 'entries')")
    return data


#: the ChaCha20 path (:func:`dpfast._native.simd_level`) -> the SIMD level's name
SIMD_LEVELS = {3: "avx512", 2: "avx2", 1: "portable"}


def simd_level(host: dict[str, object]) -> str:
    """The SIMD level a host's ratios were measured at (``avx512``, ``avx2``,
    ``portable``): its ChaCha20 path, which the samplers' speed follows."""
    path = host.get("chacha20_path")
    return SIMD_LEVELS.get(path, f"path {path}") if isinstance(path, int) else "unknown"


def baseline_sections(data: dict[str, object]) -> dict[str, dict[str, object]]:
    """The baselines of a baseline file by SIMD level: ``{"baselines": {level: section}}``
    (format 2), or the one host of a format-1 file (a results file saved with ``--json``)
    under its own level."""
    many = data.get("baselines")
    if isinstance(many, dict):
        return {str(k): v for k, v in many.items() if isinstance(v, dict)}
    host = data.get("host")
    return {simd_level(host if isinstance(host, dict) else {}): data}


def baseline_for(data: dict[str, object], here: dict[str, object] | None = None
                 ) -> tuple[dict[str, object] | None, str]:
    """The section of baseline file ``data`` measured on a host like this one (the same
    SIMD level and core count), or ``None`` and a one-line reason naming what differs and
    which hosts the file has baselines for.  Ratios of another SIMD level or core count are
    not like for like: such a host is not gated."""
    here = host_info() if here is None else here
    sections = baseline_sections(data)
    level = simd_level(here)
    have = ", ".join(f"{k} ({_cores(v)} cores)" for k, v in sorted(sections.items()))
    section = sections.get(level)
    if section is None:
        return None, (f"this host's SIMD level is {level} ({here.get('cores')} cores); the "
                      f"baseline file has baselines for {have or 'no host'} only")
    there = section.get("host")
    if isinstance(there, dict) and "cores" in there and there["cores"] != here["cores"]:
        return None, (f"this host has {here['cores']} cores, the {level} baseline "
                      f"{there['cores']}; the file has baselines for {have}")
    return section, ""


def _cores(section: dict[str, object]) -> object:
    host = section.get("host")
    return host.get("cores", "?") if isinstance(host, dict) else "?"


def with_section(data: dict[str, object] | None, section: dict[str, object]
                 ) -> dict[str, object]:
    """Baseline file ``data`` (or none yet) with ``section`` stored for its host's SIMD
    level, replacing that level's previous baseline and keeping the others (format 2)."""
    sections = dict(baseline_sections(data)) if data is not None else {}
    host = section.get("host")
    sections[simd_level(host if isinstance(host, dict) else {})] = section
    return {"format": 2, "baselines": dict(sorted(sections.items()))}


@dataclass(frozen=True)
class Verdict:
    name: str
    ratio: float | None
    baseline_ratio: float | None
    tolerance: float
    ok: bool
    text: str


def confirmed(first: Sequence[Verdict], again: Sequence[Verdict]) -> list[Verdict]:
    """The verdicts once the entries that failed were timed a second time (``again``): an
    entry is a regression only when its second timing falls below its floor too (a burst
    of load on a shared host moves one timing, a regression moves both); the second
    timing's verdict replaces the first, with the first ratio in its text.  Entries not
    re-timed keep their verdict."""
    second = {v.name: v for v in again}
    out = []
    for v in first:
        w = second.get(v.name)
        if v.ok or w is None:
            out.append(v)
            continue
        first_ratio = "skipped" if v.ratio is None else f"{v.ratio:.3g}"
        out.append(Verdict(w.name, w.ratio, w.baseline_ratio, w.tolerance, w.ok,
                           f"{w.text} (re-timed; first timing {first_ratio})"))
    return out


def check(results: Sequence[Result], baseline: dict[str, object], *,
          tolerance: float) -> tuple[list[Verdict], list[str]]:
    """Compare ``results`` with a baseline JSON; returns verdicts and warnings.

    The baseline is the file's section for this host's SIMD level (:func:`baseline_for`).
    An entry fails when ``ratio < baseline_ratio * (1 - tol)``, where ``tol`` is the
    entry's own ``tolerance`` in the baseline file (chosen from the measured run-to-run
    spread) if it has one, else ``tolerance``.  Skipped entries and entries missing from
    the baseline never fail.  A host with no baseline of its SIMD level and core count is
    not gated: every verdict passes, marked ``not gated``, and the first warning says why
    (the ratios are then not like for like).
    """
    if not 0 <= tolerance < 1:
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance}")
    here = host_info()
    section, why = baseline_for(baseline, here)
    if section is None:
        verdicts = [Verdict(r.name, r.ratio, None, tolerance, True,
                            r.note if r.ratio is None else "not gated (host differs)")
                    for r in results]
        return verdicts, [f"baseline host differs: {why}; not gated"]
    warnings = []
    there = section.get("host", {})
    for key in ("simd_flags",):
        if isinstance(there, dict) and key in there and there[key] != here[key]:
            warnings.append(f"baseline host differs: {key} {there[key]} there, {here[key]} "
                            "here (same ChaCha20 path and cores: gated)")
    entries = section["entries"]
    verdicts = []
    for r in results:
        b = entries.get(r.name) if isinstance(entries, dict) else None
        if r.ratio is None:
            verdicts.append(Verdict(r.name, None, None, tolerance, True, r.note or "skipped"))
            continue
        if not isinstance(b, dict) or b.get("ratio") is None:
            verdicts.append(Verdict(r.name, r.ratio, None, tolerance, True, "no baseline"))
            continue
        tol = float(b.get("tolerance", tolerance))
        floor = float(b["ratio"]) * (1 - tol)
        ok = r.ratio >= floor
        text = "ok" if ok else f"REGRESSION: below {floor:.3g} (baseline -{tol:.0%})"
        verdicts.append(Verdict(r.name, r.ratio, float(b["ratio"]), tol, ok, text))
    return verdicts, warnings
