"""A performance-regression gate: dpfast's speed as ratios against baselines timed in the
same process, compared with a committed baseline file.

``dpfast bench`` (see :mod:`dpfast.cli.bench`) runs :func:`run_suite`, prints a table, writes
JSON and, with ``--check``, exits 1 when a ratio falls more than its tolerance below the
baseline.  Ratios (not seconds) make the gate portable across shared, noisy machines: each
round times the baseline and dpfast back to back, so background load hits both alike, and
the reported figure is the median of the per-round ratios.
"""

from dpfast.perf.runner import (
    Entry,
    Result,
    baseline_for,
    baseline_sections,
    check,
    confirmed,
    host_info,
    load_json,
    results_from_json,
    results_to_json,
    run_suite,
    simd_level,
    with_section,
)
from dpfast.perf.suite import ENTRIES

__all__ = ["ENTRIES", "Entry", "Result", "baseline_for", "baseline_sections", "check",
           "confirmed",
           "host_info", "load_json", "results_from_json", "results_to_json", "run_suite",
           "simd_level", "with_section"]
